#include <catch2/catch.hpp>

#include "firstfault/attribution/line_attributor.h"
#include "firstfault/matcher/matcher.h"
#include "firstfault/signatures/loader.h"

#include <cstdlib>
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

TEST_CASE("matcher: the prefilter never drops a line RE2 would match") {
  Library lib = test::repo_library();
  Matcher with(lib), without(lib);
  REQUIRE(with.compile(true).ok());
  REQUIRE(without.compile(false).ok());
  if (!with.has_prefilter()) {
    WARN("built without Hyperscan: no prefilter to test");
    return;
  }
  // Every positive sample of the library, with its real prefixes, embedded among noise lines.
  std::string block;
  for (const auto& p : lib.patterns)
    for (const auto& s : p.positive) block += "[rank3]:step 10 loss 1.0 lr 3e-4\n" + s + "\n";
  Prefilter::Candidates cands;
  with.prefilter()->scan(block, cands);
  size_t start = 0, missed = 0, lines = 0, candidates = cands.lines.size();
  std::vector<int> all_hits, pot_hits;
  while (start < block.size()) {
    size_t nl = block.find('\n', start);
    std::string_view line(block.data() + start, nl - start);
    LineAttributor attributor;
    std::string_view body = attributor.attribute(line).body;
    without.match(body, all_hits);
    auto it = std::find_if(cands.lines.begin(), cands.lines.end(),
                           [&](const Prefilter::Candidate& c) { return c.line_start == start; });
    pot_hits.clear();
    if (it != cands.lines.end()) with.match_potentials(body, cands.patterns.data() + it->first, it->count, pot_hits);
    // The prefilter path must find exactly what the full set finds.
    if (pot_hits != all_hits) ++missed;
    ++lines;
    start = nl + 1;
  }
  INFO(candidates << " candidate lines of " << lines);
  CHECK(missed == 0);
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
