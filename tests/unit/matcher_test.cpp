#include <catch2/catch.hpp>

#include "firstfault/attribution/line_attributor.h"
#include "firstfault/matcher/matcher.h"
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
