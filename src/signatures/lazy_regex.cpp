// LazyRegex: compile on first use, in as little memory as the regex allows, and give the hot
// ones room for a DFA cache (firstfault/signatures/library.h says why).
#include <re2/re2.h>

#include "firstfault/signatures/library.h"

namespace firstfault {

namespace {

std::atomic<int64_t> g_hot_granted{0};

// The first budget from `from` (doubling) that the regex compiles in, up to 8 MiB. RE2 gives
// about 2/3 of the budget to the program and what the program leaves to the DFA cache; a DFA
// cache that fills is reset, and one that keeps filling hands the search to the NFA (same
// result, slower).
std::unique_ptr<RE2> compile(const std::string& pattern, int64_t from) {
  RE2::Options opt;
  opt.set_log_errors(false);
  std::unique_ptr<RE2> re;
  for (int64_t budget = from; budget <= (int64_t{8} << 20); budget *= 2) {
    opt.set_max_mem(budget);
    re = std::make_unique<RE2>(pattern, opt);
    if (re->ok() || re->error_code() != RE2::ErrorPatternTooLarge) break;
  }
  return re;
}

}  // namespace

LazyRegex::LazyRegex(std::string pattern) : state_(std::make_shared<State>()) { state_->pattern = std::move(pattern); }

const std::string& LazyRegex::pattern() const {
  static const std::string none;
  return state_ ? state_->pattern : none;
}

int64_t LazyRegex::hot_bytes_granted() { return g_hot_granted.load(std::memory_order_relaxed); }

const RE2* LazyRegex::get() const {
  if (!state_) return nullptr;
  State& s = *state_;
  if (!s.ready.load(std::memory_order_acquire)) {
    std::call_once(s.once, [&s] {
      auto re = compile(s.pattern, kColdRegexMemory);
      if (re->ok()) {
        s.small = std::move(re);
        s.current.store(s.small.get(), std::memory_order_release);
      } else {
        s.error = re->error();
        s.settled.store(true, std::memory_order_relaxed);
      }
      s.ready.store(true, std::memory_order_release);
    });
  }
  // Counting stops once the regex is settled, so the hot path is two loads of a line that is
  // no longer written.
  if (!s.settled.load(std::memory_order_relaxed) && s.uses.fetch_add(1, std::memory_order_relaxed) + 1 == kHotRegexUses)
    return upgrade(s);
  return s.current.load(std::memory_order_acquire);
}

const RE2* LazyRegex::upgrade(State& s) {
  std::lock_guard<std::mutex> lock(s.upgrade_mutex);
  if (g_hot_granted.fetch_add(kHotRegexMemory, std::memory_order_relaxed) + kHotRegexMemory <= kHotRegexPool) {
    auto re = compile(s.pattern, kHotRegexMemory);
    if (re->ok()) {
      s.big = std::move(re);
      s.current.store(s.big.get(), std::memory_order_release);
    }
  } else {
    g_hot_granted.fetch_sub(kHotRegexMemory, std::memory_order_relaxed);  // the pool is spent: stay small
  }
  s.settled.store(true, std::memory_order_relaxed);
  return s.current.load(std::memory_order_acquire);
}

const std::string& LazyRegex::error() const {
  static const std::string none;
  return get() || !state_ ? none : state_->error;
}

}  // namespace firstfault
