#include "firstfault/matcher/matcher.h"

#include <algorithm>
#include <unordered_map>
#include <utility>

namespace firstfault {

Matcher::Matcher(const Library& lib) : lib_(lib) {
  std::vector<bool> referenced(lib_.patterns.size(), false), scanned(lib_.patterns.size(), false);
  for (const Entry& e : lib_.entries)
    for (const PatternRef& r : e.refs) {
      referenced[r.def] = true;
      // A last resort's words are read on the job's few error lines at the end
      // (Correlator::read_error_words), not on every line: "dataset" or "NVLink" sit in
      // countless healthy lines.
      if (e.match.last_resort == 0 || r.role != Role::kRoot) scanned[r.def] = true;
    }
  // Entries often define the same regex under their own names (a NCCL transport line, say):
  // scanning and confirming it once per line instead of once per copy saves work on the lines
  // that match most often.
  std::unordered_map<std::string_view, size_t> group_of;
  for (size_t i = 0; i < lib_.patterns.size(); ++i) {
    if (!referenced[i] && lib_.patterns[i].name.rfind("progress_", 0) == 0) {
      tail_defs_.push_back(i);
      continue;
    }
    if (referenced[i] && !scanned[i]) continue;
    if (lib_.patterns[i].name == "error_hedge_line") continue;  // read on a last resort's lines only
    auto [it, fresh] = group_of.emplace(lib_.patterns[i].regex, line_groups_.size());
    if (fresh) line_groups_.emplace_back();
    line_groups_[it->second].push_back(i);
  }
  group_of_def_.assign(lib_.patterns.size(), -1);
  for (size_t g = 0; g < line_groups_.size(); ++g) {
    for (size_t def : line_groups_[g]) group_of_def_[def] = static_cast<int>(g);
    const PatternDef& p = lib_.patterns[line_groups_[g].front()];
    DigitSets sets;
    std::optional<std::string> blind = digit_closed(p.regex, &sets);
    digit_closed_.push_back(blind);  // for the prefilter, which needs every group's form too
    digit_blind_.push_back(blind && *blind == p.regex && p.capture_names.size() <= MatchMemo::kMaxGroups);
    digit_classes_.push_back(digit_blind_.back() || !blind ? std::nullopt : digit_classes(sets));
  }
}
Matcher::~Matcher() = default;

std::vector<const PatternDef*> Matcher::line_patterns() const {
  std::vector<const PatternDef*> defs;
  for (const auto& group : line_groups_) defs.push_back(&lib_.patterns[group.front()]);
  return defs;
}

Status Matcher::compile(bool use_prefilter) {
  use_prefilter_ = use_prefilter;
  // With a prefilter at hand (compiled into the binary for the built-in library) the set is
  // only needed for odd lines (longer than a block, or an unterminated last line), so it is
  // compiled when first needed: ~18 ms of start-up saved.
  if (use_prefilter && prefilter(false)) return Status::Ok();
  return compile_set();
}

Status Matcher::compile_set() const {
  std::call_once(set_once_, [this] {
    RE2::Options opt;
    opt.set_log_errors(false);
    opt.set_max_mem(int64_t{1} << 30);  // the set's program and DFA grow with the library (1,900 patterns need more than 256 MiB); memory is touched only as used
    auto set = std::make_unique<RE2::Set>(opt, RE2::UNANCHORED);
    for (const auto& group : line_groups_) {
      std::string err;
      if (set->Add(lib_.patterns[group.front()].regex, &err) < 0) {
        set_status_ = Error{"pattern '" + lib_.patterns[group.front()].name + "': " + err};
        return;
      }
    }
    if (!set->Compile()) {
      set_status_ = Error{"RE2 could not compile the pattern set (out of memory)"};
      return;
    }
    set_ = std::move(set);
  });
  return set_status_;
}

const Prefilter* Matcher::prefilter(bool may_compile) const {
  if (!use_prefilter_) return nullptr;
  if (const Prefilter* p = ready_.load(std::memory_order_acquire)) return p;
  std::lock_guard<std::mutex> lock(prefilter_mu_);
  if (prefilter_) return prefilter_.get();
  // Loading (embedded or cached) is tried once; compiling once, when first allowed.
  if (may_compile ? compile_tried_ : load_tried_) return nullptr;
  load_tried_ = true;
  compile_tried_ = compile_tried_ || may_compile;
  prefilter_ = Prefilter::load(line_patterns(), may_compile, &digit_closed_);
  ready_.store(prefilter_.get(), std::memory_order_release);
  return prefilter_.get();
}

const Prefilter* Matcher::prefilter_after(uint64_t bytes, uint64_t threshold) const {
  if (const Prefilter* p = ready_.load(std::memory_order_acquire)) return p;
  uint64_t seen = bytes_seen_.fetch_add(bytes, std::memory_order_relaxed) + bytes;
  return prefilter(seen > threshold);
}

void Matcher::match(std::string_view body, std::vector<int>& hits) const {
  hits.clear();
  RE2::Set::ErrorInfo info{};
  re2::StringPiece text(body.data(), body.size());
  std::vector<int> set_hits;
  (void)compile_set();  // without a set (it failed to compile) every regex is tried below
  if (!set_ || (!set_->Match(text, &set_hits, &info) && info.kind != RE2::Set::kNoError)) {
    // The set's DFA ran out of memory on this input: fall back to one regex at a time, so a
    // pathological line costs time, never a missed match.
    set_hits.clear();
    for (size_t i = 0; i < line_groups_.size(); ++i) {
      const RE2* re = lib_.patterns[line_groups_[i].front()].re.get();
      if (re && RE2::PartialMatch(text, *re)) set_hits.push_back(static_cast<int>(i));
    }
  }
  for (int i : set_hits) report_group(static_cast<size_t>(i), hits);
  std::sort(hits.begin(), hits.end());
}

void Matcher::report_group(size_t group, std::vector<int>& hits) const {
  for (size_t def : line_groups_[group]) hits.push_back(static_cast<int>(def));
}

namespace {
// Whether `text`, each digit read as its class, equals `key` (already read so).
bool same_classes(std::string_view text, std::string_view key, const std::array<char, 10>& cls) {
  if (text.size() != key.size()) return false;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c >= '0' && c <= '9') c = cls[static_cast<size_t>(c - '0')];
    if (c != key[i]) return false;
  }
  return true;
}
// Asking for one group makes RE2 skip its DFA on a line-sized text and run OnePass/BitState,
// which keep no per-regex cache: the DFA caches of ~1,000 regexes were most of the memory of a
// long triage run.
bool search(const RE2& re, const re2::StringPiece& text, size_t from, bool has_group) {
  if (!has_group) return re.Match(text, from, text.size(), RE2::UNANCHORED, nullptr, 0);
  re2::StringPiece group[2];
  return re.Match(text, from, text.size(), RE2::UNANCHORED, group, 2);
}
}  // namespace

void Matcher::match_potentials(std::string_view body, const int* potentials, const uint32_t* starts, MatchMemo* memos,
                               size_t count, size_t body_offset, std::vector<int>& hits) const {
  hits.clear();
  re2::StringPiece text(body.data(), body.size());
  std::array<re2::StringPiece, MatchMemo::kMaxGroups + 1> spans;
  for (size_t k = 0; k < count; ++k) {
    size_t group = static_cast<size_t>(potentials[k]);
    const PatternDef& p = lib_.patterns[line_groups_[group].front()];
    const RE2* re = p.re.get();
    if (!re) continue;
    // No match starts before starts[k] in the line (TemplateScanner), so the search starts
    // there; RE2 still reads the text before it for ^ and \b.
    size_t from = starts && starts[k] > body_offset ? std::min<size_t>(starts[k] - body_offset, body.size()) : 0;
    bool matched;
    if (memos && digit_blind_[group]) {
      MatchMemo& m = memos[k];
      if (!m.describes(body_offset, body.size())) {
        size_t n = p.capture_names.size();
        m.body_offset = static_cast<int64_t>(body_offset);
        m.body_length = body.size();
        m.matched = re->Match(text, from, text.size(), RE2::UNANCHORED, spans.data(), static_cast<int>(n + 1));
        m.has_groups = true;
        for (size_t i = 0; i < n; ++i)
          m.groups[i] = spans[i + 1].data() ? std::pair<int32_t, int32_t>(static_cast<int32_t>(spans[i + 1].data() - body.data()),
                                                                         static_cast<int32_t>(spans[i + 1].size()))
                                            : std::pair<int32_t, int32_t>(-1, 0);
      }
      matched = m.matched;
    } else if (memos && digit_classes_[group]) {
      // The answer depends on the text from one byte before the search start (the context of
      // ^ and \b) to the end, and there only on each digit's class.
      const std::array<char, 10>& cls = *digit_classes_[group];
      std::string_view tail = body.substr(from > 0 ? from - 1 : 0);
      MatchMemo& m = memos[k];
      if (m.describes(body_offset, body.size()) && tail == m.raw) {  // the common case: the very same text
        matched = m.matched;
      } else if (m.describes(body_offset, body.size()) && same_classes(tail, m.key, cls)) {
        matched = m.matched;
        m.raw.assign(tail);
      } else {
        matched = search(*re, text, from, !p.capture_names.empty());
        m.body_offset = static_cast<int64_t>(body_offset);
        m.body_length = body.size();
        m.matched = matched;
        m.has_groups = false;
        m.raw.assign(tail);
        m.key.assign(tail);
        for (char& c : m.key)
          if (c >= '0' && c <= '9') c = cls[static_cast<size_t>(c - '0')];
      }
    } else {
      matched = search(*re, text, from, !p.capture_names.empty());
    }
    if (matched) report_group(group, hits);
  }
  std::sort(hits.begin(), hits.end());
}

bool Matcher::groups(size_t def, std::string_view body, const MatchMemo* memo, std::vector<re2::StringPiece>& out) const {
  const PatternDef& p = lib_.patterns[def];
  size_t n = p.capture_names.size();
  out.assign(n + 1, re2::StringPiece());
  if (memo && memo->has_groups) {  // the caller passes a memo only when it describes this body
    if (!memo->matched) return false;
    for (size_t i = 0; i < n; ++i)
      if (memo->groups[i].first >= 0) out[i + 1] = re2::StringPiece(body.data() + memo->groups[i].first, memo->groups[i].second);
    return true;
  }
  const RE2* re = p.re.get();
  re2::StringPiece text(body.data(), body.size());
  return re && re->Match(text, 0, text.size(), RE2::UNANCHORED, out.data(), static_cast<int>(n + 1));
}

Captures Matcher::extract(size_t def, std::string_view body, const MatchMemo* memo) const {
  Captures out;
  const PatternDef& p = lib_.patterns[def];
  // Nothing to extract: no search. A search for group 0 alone would run RE2's forward and
  // reverse DFAs, whose caches, over a thousand patterns, were a third of a triage run's memory.
  if (std::all_of(p.capture_names.begin(), p.capture_names.end(), [](const std::string& n) { return n.empty(); }))
    return out;
  thread_local std::vector<re2::StringPiece> spans;
  if (!groups(def, body, memo, spans)) return out;
  // Sized exactly: stored events hold their captures, and growth by doubling was a third of that.
  auto present = [&](size_t i) { return !p.capture_names[i].empty() && spans[i + 1].data() != nullptr; };
  size_t n = 0;
  for (size_t i = 0; i < p.capture_names.size(); ++i) n += present(i);
  out.reserve(n);
  for (size_t i = 0; i < p.capture_names.size(); ++i) {
    if (!present(i)) continue;
    out.emplace_back(p.capture_names[i], std::string(spans[i + 1].data(), spans[i + 1].size()));
  }
  return out;
}

std::optional<std::string_view> Matcher::capture(size_t def, std::string_view body, std::string_view name,
                                                 const MatchMemo* memo) const {
  const PatternDef& p = lib_.patterns[def];
  auto it = std::find(p.capture_names.begin(), p.capture_names.end(), name);
  if (it == p.capture_names.end()) return std::nullopt;
  size_t index = static_cast<size_t>(it - p.capture_names.begin()) + 1;
  thread_local std::vector<re2::StringPiece> spans;
  if (!groups(def, body, memo, spans) || spans[index].data() == nullptr) return std::nullopt;
  return std::string_view(spans[index].data(), spans[index].size());
}

}  // namespace firstfault
