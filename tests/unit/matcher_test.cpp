#include <catch2/catch.hpp>

#include "firstfault/attribution/line_attributor.h"
#include "firstfault/matcher/matcher.h"
#include "firstfault/matcher/prefilter.h"
#include "firstfault/matcher/template_scanner.h"
#include "firstfault/reader/log_reader.h"

#include <re2/re2.h>
#include "firstfault/signatures/loader.h"

#include <algorithm>
#include <cstdlib>
#include <random>
#include <filesystem>
#include "test_support.h"

using namespace firstfault;

TEST_CASE("matcher: the set finds every matching pattern and extracts named captures") {
  Library lib = test::repo_library();
  Matcher m(lib);
  REQUIRE(m.compile(false).ok());
  std::vector<int> hits;
  std::string body =
      "[Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=6463, OpType=ALLREDUCE, NumelIn=1, "
      "NumelOut=1, Timeout(ms)=1800000) ran for 1800017 milliseconds before timing out.";
  m.match(body, hits);
  auto def = lib.find_pattern("nccl_watchdog_timeout");
  REQUIRE(def);
  REQUIRE(std::find(hits.begin(), hits.end(), static_cast<int>(*def)) != hits.end());
  Captures caps = m.extract(*def, body);
  std::map<std::string, std::string> c(caps.begin(), caps.end());
  CHECK(c["seq"] == "6463");
  CHECK(c["op"] == "ALLREDUCE");
  CHECK(c["timeout_ms"] == "1800000");
}

TEST_CASE("matcher: an ordinary training line matches nothing but progress") {
  Library lib = test::repo_library();
  Matcher m(lib);
  REQUIRE(m.compile(true).ok());
  std::vector<int> hits;
  m.match("loss 2.31 lr 3e-4 tokens/s 41234", hits);
  CHECK(hits.empty());
}

namespace {
// Every digit of `line` moved by `shift` (0 -> 0 + shift, ...): the same digit template.
std::string shift_digits(std::string_view line, int shift) {
  std::string out(line);
  for (char& c : out)
    if (c >= '0' && c <= '9') c = static_cast<char>('0' + (c - '0' + shift) % 10);
  return out;
}
}  // namespace

TEST_CASE("matcher: the prefilter never drops a line RE2 would match") {
  Library lib = test::repo_library();
  Matcher with(lib), without(lib);
  REQUIRE(with.compile(true).ok());
  REQUIRE(without.compile(false).ok());
  if (!with.has_prefilter()) {
    WARN("built without Hyperscan: no prefilter to test");
    return;
  }
  // Every positive and negative sample of the library, with its real prefixes, among noise
  // lines; then the same lines with their digits changed, which share their digit templates, so
  // the second time round the answers come from the template cache (TemplateScanner).
  std::string block;
  for (const auto& p : lib.patterns) {
    for (const auto& s : p.positive) block += "[rank3]:step 10 loss 1.0 lr 3e-4\n" + s + "\n";
    for (const auto& s : p.negative) block += s + "\n";
  }
  for (int shift : {1, 5, 9}) {
    std::string shifted;
    for_each_line(block, [&](std::string_view line) { shifted += shift_digits(line, shift) + "\n"; });
    block += shifted;
  }
  size_t missed = 0, lines = 0, candidates = 0, memo_reads = 0;
  std::vector<int> all_hits, pot_hits;
  auto check = [&](const std::vector<TemplateScanner::Line>& scanned) {
    for (const TemplateScanner::Line& line : scanned) {
      LineAttributor attributor;
      std::string_view body = attributor.attribute(line.text).body;
      without.match(body, all_hits);
      size_t body_offset = static_cast<size_t>(body.data() - line.text.data());
      with.match_potentials(body, line.patterns, line.starts, line.memos, line.count, body_offset, pot_hits);
      // The prefilter path must find exactly what the full set finds, and a memo of a template
      // (filled by an earlier line with other digits) must give the captures RE2 gives.
      if (pot_hits != all_hits) {
        ++missed;
        UNSCOPED_INFO("differs: " << line.text);
      }
      for (int def : pot_hits) {
        int group = with.group_of(static_cast<size_t>(def));
        for (uint32_t k = 0; line.memos && k < line.count; ++k) {
          if (line.patterns[k] != group || !line.memos[k].has_groups || !line.memos[k].describes(body_offset, body.size()))
            continue;
          ++memo_reads;
          if (with.extract(static_cast<size_t>(def), body, &line.memos[k]) != with.extract(static_cast<size_t>(def), body)) {
            ++missed;
            UNSCOPED_INFO("memo captures differ: " << line.text);
          }
        }
      }
      candidates += line.count > 0;
      ++lines;
    }
  };
  TemplateScanner scanner;
  check(scanner.scan(*with.prefilter(), block));
  INFO(candidates << " candidate lines of " << lines << "; " << scanner.stats().scanned << " templates scanned");
  CHECK(scanner.stats().scanned < lines / 2);  // the shifted copies came from the cache
  CHECK(memo_reads > 500);
  CHECK(missed == 0);
  // The same block again: now every template is located (its candidates checked and moved)
  // after its memos were filled; the answers must not change.
  check(scanner.scan(*with.prefilter(), block));
  CHECK(missed == 0);
  // A block of mostly new templates is not cached; the next blocks are scanned directly.
  std::string unique;
  for (const auto& p : lib.patterns)
    for (const auto& s : p.positive) unique += s + "\n";
  TemplateScanner bypassing;
  check(bypassing.scan(*with.prefilter(), unique));
  check(bypassing.scan(*with.prefilter(), unique));
  CHECK(bypassing.stats().bypassed_blocks == 1);
  CHECK(missed == 0);
  // More than a megabyte of new templates in one block: given up half-way, scanned directly.
  std::string many = unique;
  for (int i = 0; many.size() < (3u << 19); ++i) {
    std::string word;
    for (int v = i; v > 0 || word.empty(); v /= 26) word += static_cast<char>('a' + v % 26);
    many += "[rank1]: worker " + word + " loaded shard " + word + "\n";
  }
  TemplateScanner overflowing;
  check(overflowing.scan(*with.prefilter(), many));
  CHECK(overflowing.stats().bypassed_blocks == 1);
  CHECK(missed == 0);
}

TEST_CASE("matcher: digit_closed() patterns cannot tell digits apart and keep every match") {
  Library lib = test::repo_library();
  size_t checked = 0;
  for (const auto& p : lib.patterns) {
    std::optional<std::string> blind = digit_closed(p.regex);
    INFO(p.name << ": " << p.regex);
    REQUIRE(blind);  // every built-in pattern is read; otherwise it is a candidate on every line
    RE2 re(*blind);
    REQUIRE(re.ok());
    for (const auto& s : p.positive) {
      LineAttributor attributor;
      std::string_view body = attributor.attribute(s).body;
      if (!RE2::PartialMatch(body, *p.re)) continue;
      for (int shift : {0, 3, 7}) {
        INFO(s);
        CHECK(RE2::PartialMatch(shift_digits(body, shift), re));
      }
      ++checked;
    }
  }
  CHECK(checked > 500);
  // Syntax that is not digits stays as written; digit literals and partial classes widen.
  CHECK(digit_closed("a{2,3}(?P<n2>x)\\d[1-9]7\\x35") == "a{2,3}(?P<n2>x)\\d(?:[1-9]|[0-9])[0-9][0-9]");
  CHECK(digit_closed("[^0][a-z][^a-z]") == "(?:[^0]|[0-9])[a-z][^a-z]");
  CHECK_FALSE(digit_closed("\\1"));
  // The digit classes a pattern still tells apart.
  CHECK(digit_classes("[1-9]\\d*") == std::array<char, 10>{'0', '1', '1', '1', '1', '1', '1', '1', '1', '1'});
  CHECK(digit_classes("Xid 48") == std::array<char, 10>{'0', '0', '0', '0', '4', '0', '0', '0', '8', '0'});
  CHECK(digit_classes("\\d{3,}") == std::array<char, 10>{'0', '0', '0', '0', '0', '0', '0', '0', '0', '0'});
  CHECK_FALSE(digit_classes("\\pN"));
}

TEST_CASE("matcher: the template scanner gives the same candidates as a direct prefilter scan, reusing templates") {
  test::RepoEngine engine;
  const Prefilter* pf = engine.matcher.prefilter(false);
  if (!pf) return;
  std::string block =
      "[rank0]: [2026-11-27 13:00:18] iteration       18/  500000 | lm loss: 2.482000E+00 | number of nan iterations:   0 |\n"
      "[rank1]: [2026-11-27 13:00:19] iteration       19/  500000 | lm loss: 2.481000E+00 | number of nan iterations:   2 |\n"
      "\n"
      "[rank1]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n"
      "last line without newline 7";
  TemplateScanner scanner;
  for (int round = 0; round < 2; ++round) {
    const auto& lines = scanner.scan(*pf, block);
    REQUIRE(lines.size() == 5);
    CHECK(lines[2].text.empty());
    CHECK(lines[4].text == "last line without newline 7");
    CHECK(lines[0].count == lines[1].count);  // one template: the same answer
    CHECK(lines[3].count > 0);
    for (const auto& l : lines)
      for (uint32_t k = 0; k < l.count; ++k) CHECK(l.starts[k] <= l.text.size());
  }
  CHECK(scanner.stats().scanned == 4);  // the second round and line 1 came from the cache
}

TEST_CASE("matcher: a template scanner reading one of N ranges of a file keeps 1/N of the cache") {
  // Issue 27: each thread of a file read in parallel has its own scanner; together they hold
  // one scanner's worth. Blocks of 100 new templates each (too few lines to be bypassed).
  test::RepoEngine engine;
  const Prefilter* pf = engine.matcher.prefilter(false);
  if (!pf) return;
  auto most_templates = [&](size_t parts) {
    TemplateScanner scanner;
    scanner.share_bounds(parts);
    size_t most = 0;
    for (int b = 0, i = 0; b < 60; ++b) {
      std::string block;
      for (int k = 0; k < 100; ++k, ++i) {
        std::string word;
        for (int v = i; v > 0 || word.empty(); v /= 26) word += static_cast<char>('a' + v % 26);
        block += "[rank1]: worker " + word + " loaded shard " + word + "\n";
      }
      scanner.scan(*pf, block);
      most = std::max(most, scanner.templates());
    }
    return most;
  };
  size_t whole = most_templates(1), half = most_templates(2);
  CHECK(whole > 4000);
  CHECK(half <= 2048 + 100);
}

TEST_CASE("matcher: the template scanner splits lines as memchr does, and a template has one id wherever its line ends") {
  test::RepoEngine engine;
  const Prefilter* pf = engine.matcher.prefilter(false);
  if (!pf) return;
  // Lines are found in the same pass that templates them: lengths around the 32-byte chunks and
  // around the 2048-byte template limit, ESC/CR inside, a line at the block's very end (where
  // the pass hands over to memchr) and the same line with other digits in the middle.
  std::mt19937 rng(11);
  const std::string alphabet = std::string("0123456789az :/.[]") + '\x1b' + '\r';
  std::uniform_int_distribution<size_t> pick(0, alphabet.size() - 1);
  for (int trial = 0; trial < 60; ++trial) {
    std::vector<std::string> lines;
    for (size_t len : {0, 1, 31, 32, 33, 63, 64, 65, 150, 2047, 2048, 2049, 2100}) {
      std::string line;
      for (size_t i = 0; i < len; ++i) line += alphabet[pick(rng)];
      lines.push_back(line);
    }
    std::shuffle(lines.begin(), lines.end(), rng);
    std::string last = "[rank" + std::to_string(trial) + "]: step " + std::to_string(trial * 7) + " of 90";
    lines.push_back(shift_digits(last, 3));
    lines.push_back(last);  // no newline after it
    std::string block;
    for (size_t i = 0; i < lines.size(); ++i) block += lines[i] + (i + 1 < lines.size() ? "\n" : "");
    TemplateScanner scanner;
    const auto& scanned = scanner.scan(*pf, block);
    REQUIRE(scanned.size() == lines.size());
    for (size_t i = 0; i < lines.size(); ++i) {
      INFO("trial " << trial << " line " << i << " of length " << lines[i].size());
      CHECK(scanned[i].text == lines[i]);
      LineHints expect = hints_of(lines[i]);
      CHECK(scanned[i].hints.may_have_escapes == expect.may_have_escapes);
      CHECK(scanned[i].hints.may_have_cr == expect.may_have_cr);
    }
    CHECK(scanned.back().template_id >= 0);
    CHECK(scanned.back().template_id == scanned[lines.size() - 2].template_id);
  }
}

#ifdef FIRSTFAULT_HAVE_HYPERSCAN
// Points the prefilter's on-disk cache at a fresh directory for one test.
struct FreshCache {
  test::TempDir dir;
  std::string old;
  bool had = false;
  FreshCache() {
    if (const char* v = std::getenv("FIRSTFAULT_CACHE_DIR")) old = v, had = true;
    ::setenv("FIRSTFAULT_CACHE_DIR", dir.path().c_str(), 1);
  }
  ~FreshCache() { had ? ::setenv("FIRSTFAULT_CACHE_DIR", old.c_str(), 1) : ::unsetenv("FIRSTFAULT_CACHE_DIR"); }
};

TEST_CASE("matcher: the built-in library's prefilter comes compiled into the binary (no cache, no compile)") {
  FreshCache cache;
  std::vector<LoadProblem> problems;
  Library lib = load_library({}, problems, {});
  REQUIRE(problems.empty());
  REQUIRE_FALSE(builtin_prefilter_db().empty());
  Matcher m(lib);
  REQUIRE(m.compile(true).ok());
  CHECK(m.prefilter(false) != nullptr);  // not allowed to compile: it must be the embedded one
  CHECK(std::filesystem::is_empty(cache.dir.path()));
}

TEST_CASE("matcher: a library with other patterns never uses the embedded prefilter; it compiles its own when allowed") {
  FreshCache cache;
  Library lib = test::repo_library();
  lib.patterns.front().regex += "|an extra alternative";
  Matcher m(lib);
  REQUIRE(m.compile(true).ok());
  CHECK(m.prefilter(false) == nullptr);  // the key differs, nothing cached: the RE2 set serves small inputs
  std::vector<int> hits;
  m.match("an extra alternative", hits);  // the set was compiled on demand
  CHECK(hits == std::vector<int>{0});
  REQUIRE(m.prefilter(true) != nullptr);  // a large input: compiled and cached
  CHECK_FALSE(std::filesystem::is_empty(cache.dir.path()));
  Matcher again(lib);
  REQUIRE(again.compile(true).ok());
  CHECK(again.prefilter(false) != nullptr);  // now from the cache
}
#endif

TEST_CASE("matcher: a class with a non-ASCII member is widened for the byte-wise prefilter, not copied") {
  // To RE2 [‘'] is two characters; byte by byte it would be four single bytes, matching no
  // three-byte ‘ and, negated, rejecting any character that shares a byte with it.
  CHECK(relax_for_bytes("not expanded with [‘'\"]\\.\\.\\.[’'\"]") == "not expanded with [\\s\\S]+\\.\\.\\.[\\s\\S]+");
  CHECK(relax_for_bytes("a[^‘]{2}b") == "a[\\s\\S]+b");
  CHECK(relax_for_bytes("a[^x]b") == "a[^x]+b");  // ASCII classes keep their exact form
}
