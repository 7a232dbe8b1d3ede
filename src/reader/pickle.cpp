// Data-only pickle decoding (reader/pickle.h): a stack machine over the opcodes a pickler of
// plain containers emits, with every read bounds-checked.
#include "firstfault/reader/pickle.h"

#include <cstdint>
#include <cstring>
#include <string>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>

namespace firstfault {

namespace {

using nlohmann::json;

constexpr size_t kMaxValues = 4'000'000;
constexpr size_t kMaxDepth = 256;

class PickleMachine {
 public:
  explicit PickleMachine(std::string_view d) : d_(d) {}

  Result<json> run() {
    while (pos_ < d_.size()) {
      size_t at = pos_;
      auto op = static_cast<unsigned char>(d_[pos_++]);
      if (op == '.') {  // STOP
        if (stack_.empty()) return fail(at, "STOP on an empty stack");
        return std::move(stack_.back());  // nothing can reference the memo any more
      }
      if (!step(op)) return fail(at, error_.empty() ? fmt::format("opcode 0x{:02x} is not a data opcode", op) : error_);
      if (++values_ > kMaxValues) return fail(at, "more values than a dump holds");
    }
    return Error{"pickle ends without STOP (cut short)"};
  }

 private:
  Error fail(size_t at, const std::string& why) const { return Error{fmt::format("pickle at byte {}: {}", at, why)}; }

  bool take(size_t n, std::string_view& out) {
    if (d_.size() - pos_ < n) return bad("value runs past the end");
    out = d_.substr(pos_, n);
    pos_ += n;
    return true;
  }
  template <typename T>
  bool take_le(T& v) {
    std::string_view b;
    if (!take(sizeof(T), b)) return false;
    v = 0;
    for (size_t i = 0; i < sizeof(T); ++i) v |= static_cast<T>(static_cast<unsigned char>(b[i])) << (8 * i);
    return true;
  }
  bool bad(std::string why) {
    error_ = std::move(why);
    return false;
  }
  bool push(json v) {
    stack_.push_back(std::move(v));
    return true;
  }
  bool pop(json& v) {
    if (stack_.size() <= floor()) return bad("stack underflow");
    settle_memo(stack_.size() - 1);
    v = std::move(stack_.back());
    stack_.pop_back();
    return true;
  }
  size_t floor() const { return marks_.empty() ? 0 : marks_.back(); }
  // The values pushed since the last MARK, which is removed.
  bool since_mark(std::vector<json>& items) {
    if (marks_.empty()) return bad("no MARK");
    size_t m = marks_.back();
    marks_.pop_back();
    settle_memo(m);
    items.assign(std::make_move_iterator(stack_.begin() + static_cast<long>(m)), std::make_move_iterator(stack_.end()));
    stack_.resize(m);
    return true;
  }
  bool string_of(size_t n) {
    std::string_view s;
    return take(n, s) && push(json(std::string(s)));
  }
  template <typename L>
  bool string_len() {
    L n;
    return take_le(n) && string_of(n);
  }
  bool tuple_of(size_t n) {
    if (stack_.size() < floor() + n) return bad("stack underflow");
    settle_memo(stack_.size() - n);
    json t = json::array();
    for (size_t i = stack_.size() - n; i < stack_.size(); ++i) t.push_back(std::move(stack_[i]));
    stack_.resize(stack_.size() - n);
    return push(std::move(t));
  }
  bool long1() {
    uint8_t n;
    std::string_view b;
    if (!take_le(n) || !take(n, b)) return false;
    if (n > 8) return push(json(nullptr));  // beyond 64 bits: no counter in a dump is
    int64_t v = 0;
    for (size_t i = 0; i < n; ++i) v |= static_cast<int64_t>(static_cast<unsigned char>(b[i])) << (8 * i);
    if (n > 0 && n < 8 && (static_cast<unsigned char>(b[n - 1]) & 0x80)) v -= int64_t{1} << (8 * n);  // sign
    return push(json(v));
  }
  bool binfloat() {
    std::string_view b;
    if (!take(8, b)) return false;
    uint64_t bits = 0;
    for (int i = 0; i < 8; ++i) bits = (bits << 8) | static_cast<unsigned char>(b[static_cast<size_t>(i)]);  // big-endian
    double v;
    std::memcpy(&v, &bits, sizeof v);
    return push(json(v));
  }
  // A memoised list or dict is still being filled (APPENDS, SETITEMS follow while it is on top of
  // the stack): its memo copy is taken when it leaves the stack, complete.
  bool memo_put(uint64_t key) {
    if (stack_.size() <= floor()) return bad("memo of nothing");
    if (stack_.back().is_structured()) {
      open_memo_.emplace_back(stack_.size() - 1, key);
      open_at_[key] = stack_.size() - 1;
    }
    memo_[key] = stack_.back();
    return true;
  }
  // Before the stack shrinks to `size`: the open memo entries at or above it are final now.
  void settle_memo(size_t size) {
    while (!open_memo_.empty() && open_memo_.back().first >= size) {
      memo_[open_memo_.back().second] = stack_[open_memo_.back().first];
      open_at_.erase(open_memo_.back().second);
      open_memo_.pop_back();
    }
  }
  bool memo_get(uint64_t key) {
    if (auto open = open_at_.find(key); open != open_at_.end()) return push(stack_[open->second]);  // as it is now
    auto it = memo_.find(key);
    return it == memo_.end() ? bad("memo key never stored") : push(it->second);
  }
  bool set_items() {
    std::vector<json> kv;
    if (!since_mark(kv)) return false;
    if (kv.size() % 2) return bad("odd number of dict items");
    if (stack_.empty() || !stack_.back().is_object()) return bad("SETITEMS without a dict");
    for (size_t i = 0; i < kv.size(); i += 2) stack_.back()[key_of(kv[i])] = std::move(kv[i + 1]);
    return true;
  }
  bool set_item() {
    json v, k;
    if (!pop(v) || !pop(k)) return false;
    if (stack_.empty() || !stack_.back().is_object()) return bad("SETITEM without a dict");
    stack_.back()[key_of(k)] = std::move(v);
    return true;
  }
  bool appends() {
    std::vector<json> items;
    if (!since_mark(items)) return false;
    if (stack_.empty() || !stack_.back().is_array()) return bad("APPENDS without a list");
    for (auto& v : items) stack_.back().push_back(std::move(v));
    return true;
  }
  bool append() {
    json v;
    if (!pop(v)) return false;
    if (stack_.empty() || !stack_.back().is_array()) return bad("APPEND without a list");
    stack_.back().push_back(std::move(v));
    return true;
  }
  // REDUCE(callable, args): nothing is called; c10's wrappers carry the value as args[0].
  bool reduce() {
    json args, callable;
    if (!pop(args) || !pop(callable)) return false;
    return push(args.is_array() && !args.empty() ? std::move(args[0]) : json(nullptr));
  }
  bool global() {  // "module\nname\n", kept as a name
    size_t nl1 = d_.find('\n', pos_);
    size_t nl2 = nl1 == std::string_view::npos ? nl1 : d_.find('\n', nl1 + 1);
    if (nl2 == std::string_view::npos) return bad("GLOBAL without its names");
    std::string name = std::string(d_.substr(pos_, nl1 - pos_)) + "." + std::string(d_.substr(nl1 + 1, nl2 - nl1 - 1));
    pos_ = nl2 + 1;
    return push(json(name));
  }
  // Pickled strings are bytes that need not be UTF-8: dumped with replacement, never a throw.
  static std::string key_of(const json& k) {
    return k.is_string() ? k.get<std::string>() : k.dump(-1, ' ', false, json::error_handler_t::replace);
  }

  bool step(unsigned char op) {
    switch (op) {
      case 0x80: { uint8_t proto; return take_le(proto); }                      // PROTO
      case 0x95: { uint64_t n; return take_le(n); }                              // FRAME
      case '(': if (marks_.size() >= kMaxDepth) return bad("nesting too deep");  // MARK
                marks_.push_back(stack_.size()); return true;
      case '}': return push(json::object());                                     // EMPTY_DICT
      case ']': return push(json::array());                                      // EMPTY_LIST
      case ')': return push(json::array());                                      // EMPTY_TUPLE
      case 'u': return set_items();
      case 's': return set_item();
      case 'e': return appends();
      case 'a': return append();
      case 't': { std::vector<json> items; return since_mark(items) && push(json(std::move(items))); }  // TUPLE
      case 'l': { std::vector<json> items; return since_mark(items) && push(json(std::move(items))); }  // LIST
      case 0x85: return tuple_of(1);
      case 0x86: return tuple_of(2);
      case 0x87: return tuple_of(3);
      case 'X': return string_len<uint32_t>();                                   // BINUNICODE
      case 0x8c: return string_len<uint8_t>();                                   // SHORT_BINUNICODE
      case 0x8d: return string_len<uint64_t>();                                  // BINUNICODE8
      case 'B': return string_len<uint32_t>();                                   // BINBYTES
      case 'C': return string_len<uint8_t>();                                    // SHORT_BINBYTES
      case 'J': { int32_t v; return take_le(v) && push(json(v)); }               // BININT
      case 'K': { uint8_t v; return take_le(v) && push(json(v)); }               // BININT1
      case 'M': { uint16_t v; return take_le(v) && push(json(v)); }              // BININT2
      case 0x8a: return long1();
      case 'G': return binfloat();
      case 'N': return push(json(nullptr));
      case 0x88: return push(json(true));
      case 0x89: return push(json(false));
      case 'q': { uint8_t k; return take_le(k) && memo_put(k); }                 // BINPUT
      case 'r': { uint32_t k; return take_le(k) && memo_put(k); }                // LONG_BINPUT
      case 0x94: return memo_put(memo_.size());                                  // MEMOIZE
      case 'h': { uint8_t k; return take_le(k) && memo_get(k); }                 // BINGET
      case 'j': { uint32_t k; return take_le(k) && memo_get(k); }                // LONG_BINGET
      case 'c': return global();
      case 0x93: { json name, mod; return pop(name) && pop(mod) && push(json(key_of(mod) + "." + key_of(name))); }  // STACK_GLOBAL
      case 'R': return reduce();
      case 'b': { json state; return pop(state); }                               // BUILD: keep the object
      case '0': { json v; return pop(v); }                                       // POP
      default: return false;
    }
  }

  std::string_view d_;
  size_t pos_ = 0;
  size_t values_ = 0;
  std::vector<json> stack_;
  std::vector<size_t> marks_;
  std::unordered_map<uint64_t, json> memo_;
  std::vector<std::pair<size_t, uint64_t>> open_memo_;  // (stack index, memo key) of containers being filled
  std::unordered_map<uint64_t, size_t> open_at_;         // the same, by key
  std::string error_;
};

}  // namespace

bool looks_like_pickle(std::string_view head) {
  return head.size() >= 3 && static_cast<unsigned char>(head[0]) == 0x80 && static_cast<unsigned char>(head[1]) >= 2 &&
         static_cast<unsigned char>(head[1]) <= 5;
}

Result<nlohmann::json> parse_pickle(std::string_view data) { return PickleMachine(data).run(); }

}  // namespace firstfault
