#include "firstfault/matcher/prefilter.h"

#include <spdlog/spdlog.h>

#include <algorithm>
#include <array>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>

#include "firstfault/util/huge_pages.h"
#include "firstfault/util/resident.h"

#ifdef FIRSTFAULT_HAVE_HYPERSCAN
#include <hs/hs.h>
#include <re2/re2.h>

#include <mutex>
#endif

namespace firstfault {

// Rewrites an RE2 pattern into one that matches, on raw bytes, every line the RE2 pattern
// matches on the line's body:
// - anchors and word boundaries go (the body starts after prefixes the raw line still has);
// - a token that can match one multi-byte UTF-8 character (., [^...], \S, \W, \D, \p..) may
//   cover several bytes, so a bounded count on it becomes unbounded and a single one becomes "+";
// - named groups become plain groups and lazy quantifiers greedy (Hyperscan has neither).
std::string relax_for_bytes(const std::string& re) {
  std::string out;
  size_t i = 0;
  const size_t n = re.size();
  auto quantifier_at = [&](size_t j) { return j < n && (re[j] == '*' || re[j] == '+' || re[j] == '?' || re[j] == '{'); };
  // After a wide token: replace a following quantifier by an unbounded one, or add "+".
  auto widen = [&]() {
    if (!quantifier_at(i)) {
      out += '+';
      return;
    }
    if (re[i] == '{') {
      size_t close = re.find('}', i);
      if (close == std::string::npos) return;
      bool from_zero = re[i + 1] == '0';
      out += from_zero ? "*" : "+";
      i = close + 1;
    } else {
      out += re[i] == '+' ? "+" : "*";
      ++i;
    }
    if (i < n && re[i] == '?') ++i;
  };
  while (i < n) {
    char c = re[i];
    if (c == '\\' && i + 1 < n) {
      char e = re[i + 1];
      // Assertions go: the body's edges are not the raw line's, and dropping one only widens.
      if (e == 'A' || e == 'z' || e == 'Z' || e == 'b' || e == 'B') {
        i += 2;
        continue;
      }
      size_t len = 2;
      if ((e == 'p' || e == 'P') && i + 2 < n && re[i + 2] == '{') len = re.find('}', i) - i + 1;
      out.append(re, i, len);
      i += len;
      if (e == 'S' || e == 'W' || e == 'D' || e == 'p' || e == 'P') widen();
      continue;
    }
    if (c == '[') {
      size_t j = i + 1;
      bool negated = j < n && re[j] == '^';
      if (negated) ++j;
      if (j < n && re[j] == ']') ++j;
      while (j < n && re[j] != ']') {
        if (re[j] == '\\') ++j;
        else if (re[j] == '[' && j + 1 < n && re[j + 1] == ':') {
          size_t k = re.find(":]", j + 2);
          if (k != std::string::npos) j = k + 1;
        }
        ++j;
      }
      // A class with a non-ASCII member ([‘'"]) is a set of characters to RE2 but, read byte by
      // byte, one of single bytes: its bytes would neither match a multi-byte character nor, negated,
      // let one pass. Any run of bytes stands in for it (the prefilter may only widen).
      bool non_ascii = std::any_of(re.begin() + static_cast<long>(i), re.begin() + static_cast<long>(std::min(j + 1, n)),
                                   [](char b) { return static_cast<unsigned char>(b) >= 0x80; });
      if (non_ascii) {
        out += "[\\s\\S]";
        i = j + 1;
        widen();
        continue;
      }
      out.append(re, i, j + 1 - i);
      i = j + 1;
      if (negated) widen();
      continue;
    }
    if (c == '.') {
      out += '.';
      ++i;
      widen();
      continue;
    }
    if (c == '^' || c == '$') {
      ++i;
      continue;
    }
    if (c == '(' && re.compare(i, 3, "(?P") == 0) {
      size_t close = re.find('>', i);
      if (close != std::string::npos) {
        out += "(?:";
        i = close + 1;
        continue;
      }
    }
    out += c;
    ++i;
    if ((c == '*' || c == '+' || c == '?' || c == '}') && i < n && re[i] == '?') ++i;  // lazy -> greedy
  }
  return out;
}

namespace {

constexpr uint16_t kAllDigits = 0x3ff;

// The ASCII digits in [lo, hi], as bits 0..9.
uint16_t digits_in(unsigned lo, unsigned hi) {
  uint16_t bits = 0;
  for (unsigned c = std::max(lo, unsigned{'0'}); c <= std::min(hi, unsigned{'9'}); ++c) bits |= uint16_t(1u << (c - '0'));
  return bits;
}

// Reads `\xHH` or `\x{H...}` at re[i] == '\\'; returns the code point and moves i past it.
std::optional<unsigned> hex_escape(const std::string& re, size_t& i) {
  size_t j = i + 2, end;
  if (j < re.size() && re[j] == '{') {
    end = re.find('}', j);
    if (end == std::string::npos) return std::nullopt;
    ++j;
  } else {
    end = std::min(j + 2, re.size());
  }
  if (j == end) return std::nullopt;
  unsigned v = 0;
  for (size_t k = j; k < end; ++k) {
    char c = re[k];
    int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
    if (d < 0 || v > 0x10ffff) return std::nullopt;
    v = v * 16 + static_cast<unsigned>(d);
  }
  i = end + (re[i + 2] == '{' ? 1 : 0);
  return v;
}

// The digits a POSIX class ([:name:]) holds; nullopt for a name not known here.
std::optional<uint16_t> posix_digits(std::string_view name) {
  if (name.size() > 1 && name[0] == '^') {
    auto inner = posix_digits(name.substr(1));
    if (!inner) return std::nullopt;
    return static_cast<uint16_t>(kAllDigits & ~*inner);
  }
  for (std::string_view all : {"alnum", "digit", "xdigit", "word", "graph", "print", "ascii"})
    if (name == all) return kAllDigits;
  for (std::string_view none : {"alpha", "blank", "cntrl", "lower", "punct", "space", "upper"})
    if (name == none) return uint16_t{0};
  return std::nullopt;
}

}  // namespace

// Rewrites an RE2 pattern so that it cannot tell one ASCII digit from another, keeping every
// line it matched: a literal digit becomes [0-9], and a character class that holds some digits
// but not all also takes the others. The result matches a line iff it matches the line with
// every digit replaced by '0', so a prefilter answer holds for all lines of one digit template.
// Repetition counts ({2,3}) and group names stay as written. Octal escapes and \Q..\E are not
// read: the caller treats such a pattern as matching every line.
std::optional<std::string> digit_closed(const std::string& re, DigitSets* sets) {
  std::string out;
  // Each way the pattern tells digits apart, for digit_classes(): a class's digits, a literal.
  auto note = [&](uint16_t digits, bool known = true) {
    if (!sets) return;
    if (!known) sets->unknown = true;
    else if (digits != 0 && digits != kAllDigits) sets->sets.push_back(digits);
  };
  const size_t n = re.size();
  size_t i = 0;
  while (i < n) {
    char c = re[i];
    if (c == '\\') {
      if (i + 1 >= n) return std::nullopt;
      char e = re[i + 1];
      if ((e >= '0' && e <= '9') || e == 'Q' || e == 'E') return std::nullopt;
      if (e == 'x') {
        size_t start = i;
        auto v = hex_escape(re, i);
        if (!v) return std::nullopt;
        if (*v >= '0' && *v <= '9') {
          out += "[0-9]";
          note(static_cast<uint16_t>(1u << (*v - '0')));
        } else {
          out.append(re, start, i - start);
        }
        continue;
      }
      if (e == 'p' || e == 'P') {  // a Unicode class: which digits it holds is not worked out here
        size_t len = 3;
        if (i + 2 < n && re[i + 2] == '{') {
          size_t close = re.find('}', i);
          if (close == std::string::npos) return std::nullopt;
          len = close - i + 1;
        }
        out += "(?:" + re.substr(i, len) + "|[0-9])";
        note(0, false);
        i += len;
        continue;
      }
      out.append(re, i, 2);
      i += 2;
      continue;
    }
    if (c == '[') {
      size_t j = i + 1;
      bool negated = j < n && re[j] == '^';
      if (negated) ++j;
      uint16_t digits = 0;
      bool unknown = false;
      bool first = true;
      // One item of the class: its first code point (or -1 for a class escape, whose digits
      // are added to `digits` directly).
      auto item = [&](size_t& k) -> long {
        if (re[k] == '[' && k + 1 < n && re[k + 1] == ':') {
          size_t close = re.find(":]", k + 2);
          if (close == std::string::npos) {
            unknown = true;
            return -1;
          }
          auto d = posix_digits(std::string_view(re).substr(k + 2, close - k - 2));
          if (d) digits |= *d;
          else unknown = true;
          k = close + 2;
          return -1;
        }
        if (re[k] != '\\') return static_cast<unsigned char>(re[k++]);
        if (k + 1 >= n) {
          unknown = true;
          return -1;
        }
        char e = re[k + 1];
        if (e == 'x') {
          auto v = hex_escape(re, k);
          if (!v) unknown = true;
          return v ? static_cast<long>(*v) : -1;
        }
        if (e >= '0' && e <= '9') {
          unknown = true;
          k += 2;
          return -1;
        }
        k += 2;
        switch (e) {
          case 'd': case 'w': case 'S': digits = kAllDigits; return -1;
          case 'D': case 'W': case 's': return -1;
          case 'p': case 'P':
            if (k < n && re[k] == '{') {
              size_t close = re.find('}', k);
              k = close == std::string::npos ? n : close + 1;
            } else {
              ++k;
            }
            unknown = true;
            return -1;
          case 'n': return '\n';
          case 't': return '\t';
          case 'r': return '\r';
          case 'f': return '\f';
          case 'v': return '\v';
          case 'a': return '\a';
          default: return static_cast<unsigned char>(e);
        }
      };
      while (j < n && (re[j] != ']' || first)) {
        first = false;
        long lo = item(j);
        if (j == std::string::npos || j > n) return std::nullopt;
        if (lo < 0) continue;
        long hi = lo;
        if (j + 1 < n && re[j] == '-' && re[j + 1] != ']') {
          ++j;
          hi = item(j);
          if (hi < 0) {
            unknown = true;
            continue;
          }
        }
        if (hi >= lo) digits |= digits_in(static_cast<unsigned>(lo), static_cast<unsigned>(hi));
      }
      if (j >= n) return std::nullopt;  // unterminated class
      std::string cls = re.substr(i, j + 1 - i);
      i = j + 1;
      if (negated) digits = static_cast<uint16_t>(kAllDigits & ~digits);
      note(digits, !unknown);
      if (!unknown && (digits == 0 || digits == kAllDigits)) out += cls;
      else out += "(?:" + cls + "|[0-9])";
      continue;
    }
    if (c == '{') {  // a repetition count is syntax, not digits to match
      size_t k = i + 1;
      while (k < n && re[k] >= '0' && re[k] <= '9') ++k;
      bool count = k > i + 1;
      if (count && k < n && re[k] == ',') {
        ++k;
        while (k < n && re[k] >= '0' && re[k] <= '9') ++k;
      }
      if (count && k < n && re[k] == '}') {
        out.append(re, i, k + 1 - i);
        i = k + 1;
        continue;
      }
    }
    if (c == '(' && re.compare(i, 3, "(?P") == 0) {  // a group name may hold digits
      size_t close = re.find('>', i);
      if (close == std::string::npos) return std::nullopt;
      out.append(re, i, close + 1 - i);
      i = close + 1;
      continue;
    }
    if (c >= '0' && c <= '9') {
      out += "[0-9]";
      note(static_cast<uint16_t>(1u << (c - '0')));
    } else {
      out += c;
    }
    ++i;
  }
  return out;
}

std::optional<std::array<char, 10>> digit_classes(const std::string& re) {
  DigitSets sets;
  if (!digit_closed(re, &sets)) return std::nullopt;
  return digit_classes(sets);
}

std::optional<std::array<char, 10>> digit_classes(const DigitSets& sets) {
  if (sets.unknown || sets.sets.size() > 64) return std::nullopt;
  // Digits in the same sets are alike to the pattern: each maps to the smallest such digit.
  std::array<uint64_t, 10> member{};
  for (size_t k = 0; k < sets.sets.size(); ++k)
    for (int d = 0; d < 10; ++d)
      if (sets.sets[k] & (1u << d)) member[static_cast<size_t>(d)] |= uint64_t{1} << k;
  std::array<char, 10> rep{};
  for (int d = 0; d < 10; ++d) {
    int e = 0;
    while (member[static_cast<size_t>(e)] != member[static_cast<size_t>(d)]) ++e;
    rep[static_cast<size_t>(d)] = static_cast<char>('0' + e);
  }
  return rep;
}

#ifdef FIRSTFAULT_HAVE_HYPERSCAN
namespace {

// FNV-1a over the rewritten patterns and the Hyperscan version: the cache key.
std::string cache_key(const std::vector<std::string>& regexes) {
  uint64_t h = 1469598103934665603ull;
  auto mix = [&](std::string_view s) {
    for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
    h = (h ^ 0xff) * 1099511628211ull;
  };
  mix(hs_version());
  for (const auto& r : regexes) mix(r);
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

std::filesystem::path cache_dir() {
  if (const char* d = std::getenv("FIRSTFAULT_CACHE_DIR"); d && *d) return d;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return std::filesystem::path(x) / "firstfault";
  if (const char* home = std::getenv("HOME"); home && *home) return std::filesystem::path(home) / ".cache" / "firstfault";
  return {};
}

class HyperscanPrefilter : public Prefilter {
 public:
  ~HyperscanPrefilter() override {
    if (db_) hs_free_database(db_);
    if (proto_scratch_) hs_free_scratch(proto_scratch_);
  }

  static std::unique_ptr<Prefilter> make(const std::vector<const PatternDef*>& patterns, bool may_compile,
                                         const std::vector<std::optional<std::string>>* closed) {
    auto p = std::unique_ptr<HyperscanPrefilter>(new HyperscanPrefilter());
    p->count_ = static_cast<int>(patterns.size());
    const std::vector<std::string> relaxed = relax_all(patterns, closed);
    p->locators_.reserve(relaxed.size());
    for (const std::string& r : relaxed) p->locators_.emplace_back(r);
    std::string key = cache_key(relaxed);
    // 1. Compiled into the binary at build time (the usual case for the built-in library).
    std::string_view builtin = builtin_prefilter_db();
    if (builtin.size() > key.size() + 1 && builtin.substr(0, key.size()) == key && builtin[key.size()] == '\n')
      p->db_ = usable(builtin.substr(key.size() + 1), &p->proto_scratch_);
    drop_embedded_pages(builtin);  // deserialized into the heap (or not ours): not read again
    // 2. The on-disk cache (extra --signatures libraries, or a binary built for another CPU).
    std::filesystem::path dir = cache_dir();
    std::filesystem::path file = dir.empty() ? "" : dir / ("prefilter-" + key + ".hsdb");
    if (!p->db_ && !file.empty()) {
      std::ifstream in(file, std::ios::binary);
      if (in) {
        std::stringstream ss;
        ss << in.rdbuf();
        p->db_ = usable(ss.str(), &p->proto_scratch_);
      }
    }
    // 3. Compiling ~650 patterns takes about a second: only for inputs large enough to repay it.
    if (!p->db_) {
      if (!may_compile || !(p->db_ = compile_db(relaxed))) return nullptr;
      if (!file.empty()) {
        char* bytes = nullptr;
        size_t len = 0;
        std::error_code ec;
        std::filesystem::create_directories(dir, ec);
        if (!ec && hs_serialize_database(p->db_, &bytes, &len) == HS_SUCCESS) {
          std::filesystem::path tmp = file;
          tmp += ".tmp" + std::to_string(::getpid());
          std::ofstream(tmp, std::ios::binary).write(bytes, static_cast<std::streamsize>(len));
          std::filesystem::rename(tmp, file, ec);  // atomic: concurrent runs never see half a file
          std::free(bytes);
        }
      }
    }
    if (!p->proto_scratch_ && hs_alloc_scratch(p->db_, &p->proto_scratch_) != HS_SUCCESS) return nullptr;
    return p;
  }

  static std::vector<std::string> relax_all(const std::vector<const PatternDef*>& patterns,
                                            const std::vector<std::optional<std::string>>* closed = nullptr) {
    std::vector<std::string> relaxed;
    // Digit-blind, so one scan answers for every line of a digit template (TemplateScanner). A
    // pattern whose syntax digit_closed() does not read is a candidate on every line.
    for (size_t i = 0; i < patterns.size(); ++i) {
      std::optional<std::string> blind =
          closed && i < closed->size() ? (*closed)[i] : digit_closed(patterns[i]->regex);
      relaxed.push_back(blind ? relax_for_bytes(*blind) : std::string("[\\s\\S]"));
    }
    return relaxed;
  }

  // Databases go to huge-page-backed mappings (util/huge_pages.h): deserialising the built-in one
  // into fresh 4 KiB pages was most of start-up. Set before any database exists, by both places
  // that make one, so that none is ever freed by another allocator than the one that made it.
  static void use_huge_page_databases() {
    static std::once_flag once;
    std::call_once(once, [] { hs_set_database_allocator(alloc_huge_backed, free_huge_backed); });
  }

  static hs_database_t* compile_db(const std::vector<std::string>& relaxed) {
    use_huge_page_databases();
    std::vector<const char*> ptrs;
    std::vector<unsigned> flags, ids;
    for (size_t i = 0; i < relaxed.size(); ++i) {
      ptrs.push_back(relaxed[i].c_str());
      flags.push_back(HS_FLAG_PREFILTER | HS_FLAG_ALLOWEMPTY);
      ids.push_back(static_cast<unsigned>(i));
    }
    hs_database_t* db = nullptr;
    hs_compile_error_t* err = nullptr;
    if (hs_compile_multi(ptrs.data(), flags.data(), ids.data(), static_cast<unsigned>(ptrs.size()), HS_MODE_BLOCK,
                         nullptr, &db, &err) != HS_SUCCESS) {
      spdlog::debug("prefilter disabled: hyperscan: {}", err ? err->message : "?");
      if (err) hs_free_compile_error(err);
      return nullptr;
    }
    return db;
  }

  // A serialized database, if it loads and runs on this CPU (one compiled on a machine with
  // other instruction sets is refused at scan time, so try one scan). The scratch that scan
  // used is handed back in `scratch`: allocating a second one was ~3% of start-up.
  static hs_database_t* usable(std::string_view bytes, hs_scratch_t** scratch) {
    use_huge_page_databases();
    hs_database_t* db = nullptr;
    if (hs_deserialize_database(bytes.data(), bytes.size(), &db) != HS_SUCCESS) return nullptr;
    hs_scratch_t* s = nullptr;
    bool ok = hs_alloc_scratch(db, &s) == HS_SUCCESS &&
              hs_scan(db, "\n", 1, 0, s, [](unsigned, unsigned long long, unsigned long long, unsigned, void*) { return 0; },
                      nullptr) == HS_SUCCESS;
    if (!ok) {
      if (s) hs_free_scratch(s);
      hs_free_database(db);
      return nullptr;
    }
    if (*scratch) hs_free_scratch(*scratch);
    *scratch = s;
    return db;
  }

  static std::string serialized(const std::vector<const PatternDef*>& patterns) {
    std::vector<std::string> relaxed = relax_all(patterns);
    hs_database_t* db = compile_db(relaxed);
    if (!db) return "";
    char* bytes = nullptr;
    size_t len = 0;
    std::string out;
    if (hs_serialize_database(db, &bytes, &len) == HS_SUCCESS) {
      out = cache_key(relaxed) + "\n" + std::string(bytes, len);
      std::free(bytes);
    }
    hs_free_database(db);
    return out;
  }

  std::optional<size_t> leftmost(int pattern, std::string_view text) const override {
    // Run once per new template. A LazyRegex compiles in the least memory the relaxed pattern
    // fits in: a fixed 256 KiB each cost 76 MB on a log that wakes every pattern (issue 27).
    const RE2* re = locators_[static_cast<size_t>(pattern)].get();
    if (!re || text.empty()) return size_t{0};  // cannot tell: every position stays possible
    re2::StringPiece whole(text.data(), text.size()), match;
    if (!re->Match(whole, 0, whole.size(), RE2::UNANCHORED, &match, 1)) return std::nullopt;
    return static_cast<size_t>(match.data() - text.data());
  }

  void scan(std::string_view block, Candidates& out) const override {
    // Hyperscan scratch space is per thread; clone the prototype once per thread. The holder
    // frees it when the thread ends (reader threads come and go; a raw pointer leaked 77 KB per
    // thread, found by the ASan test run).
    struct Scratch {
      hs_scratch_t* ptr = nullptr;
      const HyperscanPrefilter* owner = nullptr;
      ~Scratch() {
        if (ptr) hs_free_scratch(ptr);
      }
    };
    thread_local Scratch tls;
    if (tls.owner != this) {
      if (tls.ptr) hs_free_scratch(tls.ptr);
      tls.ptr = nullptr;
      if (hs_clone_scratch(proto_scratch_, &tls.ptr) != HS_SUCCESS) tls.ptr = nullptr;
      tls.owner = this;
    }
    hs_scratch_t* scratch = tls.ptr;
    thread_local std::vector<int> pats;
    pats.clear();
    State st{block, &out, std::string_view::npos, 0, pats};
    if (!scratch || block.size() > 0xffffffffu ||
        hs_scan(db_, block.data(), static_cast<unsigned>(block.size()), 0, scratch, on_match, &st) != HS_SUCCESS) {
      // Should not happen; fall back to "every line is a candidate for every pattern".
      out.clear();
      for (int i = 0; i < count_; ++i) out.patterns.push_back(i);
      size_t start = 0;
      while (start < block.size()) {
        out.lines.push_back({start, 0, static_cast<uint32_t>(count_)});
        size_t nl = block.find('\n', start);
        if (nl == std::string_view::npos) break;
        start = nl + 1;
      }
      return;
    }
    st.flush();
    // Matches arrive in end-offset order; should one not, restore line order and merge.
    auto by_start = [](const Candidate& a, const Candidate& b) { return a.line_start < b.line_start; };
    if (!std::is_sorted(out.lines.begin(), out.lines.end(), by_start)) {
      std::stable_sort(out.lines.begin(), out.lines.end(), by_start);
      Candidates merged;
      for (size_t i = 0; i < out.lines.size();) {
        size_t j = i;
        std::vector<int> all;
        while (j < out.lines.size() && out.lines[j].line_start == out.lines[i].line_start) {
          const Candidate& c = out.lines[j++];
          all.insert(all.end(), out.patterns.begin() + c.first, out.patterns.begin() + c.first + c.count);
        }
        std::sort(all.begin(), all.end());
        all.erase(std::unique(all.begin(), all.end()), all.end());
        merged.lines.push_back({out.lines[i].line_start, static_cast<uint32_t>(merged.patterns.size()),
                                static_cast<uint32_t>(all.size())});
        merged.patterns.insert(merged.patterns.end(), all.begin(), all.end());
        i = j;
      }
      out.lines.swap(merged.lines);
      out.patterns.swap(merged.patterns);
    }
  }

 private:
  HyperscanPrefilter() = default;

  struct State {
    std::string_view block;
    Candidates* out;
    size_t line_start;  // npos: no current line
    size_t line_end;
    std::vector<int>& pats;

    void flush() {
      if (line_start == std::string_view::npos) return;
      std::sort(pats.begin(), pats.end());
      pats.erase(std::unique(pats.begin(), pats.end()), pats.end());
      out->lines.push_back({line_start, static_cast<uint32_t>(out->patterns.size()), static_cast<uint32_t>(pats.size())});
      out->patterns.insert(out->patterns.end(), pats.begin(), pats.end());
      pats.clear();
      line_start = std::string_view::npos;
    }
  };

  static int on_match(unsigned id, unsigned long long, unsigned long long to, unsigned, void* ctx) {
    auto* st = static_cast<State*>(ctx);
    size_t end = static_cast<size_t>(to);  // one past the match's last byte
    if (st->line_start != std::string_view::npos && end <= st->line_end + 1 && end > st->line_start) {
      if (st->pats.empty() || st->pats.back() != static_cast<int>(id)) st->pats.push_back(static_cast<int>(id));
      return 0;
    }
    st->flush();
    // The line holding the match's last byte (patterns never span lines: RE2 sees one line).
    size_t last = end == 0 ? 0 : end - 1;
    const char* base = st->block.data();
    const void* prev = last == 0 ? nullptr : memrchr(base, '\n', last);
    st->line_start = prev ? static_cast<size_t>(static_cast<const char*>(prev) - base) + 1 : 0;
    const void* next = std::memchr(base + last, '\n', st->block.size() - last);
    st->line_end = next ? static_cast<size_t>(static_cast<const char*>(next) - base) : st->block.size();
    st->pats.push_back(static_cast<int>(id));
    return 0;
  }

  // RE2 forms of the relaxed patterns, compiled when a template first needs one (leftmost()).
  std::vector<LazyRegex> locators_;

  int count_ = 0;
  hs_database_t* db_ = nullptr;
  hs_scratch_t* proto_scratch_ = nullptr;
};

}  // namespace

std::unique_ptr<Prefilter> Prefilter::load(const std::vector<const PatternDef*>& patterns, bool may_compile,
                                           const std::vector<std::optional<std::string>>* closed) {
  return HyperscanPrefilter::make(patterns, may_compile, closed);
}

std::string Prefilter::compile_serialized(const std::vector<const PatternDef*>& patterns) {
  return HyperscanPrefilter::serialized(patterns);
}

#else

std::unique_ptr<Prefilter> Prefilter::load(const std::vector<const PatternDef*>&, bool,
                                           const std::vector<std::optional<std::string>>*) {
  return nullptr;
}
std::string Prefilter::compile_serialized(const std::vector<const PatternDef*>&) { return ""; }

#endif

}  // namespace firstfault
