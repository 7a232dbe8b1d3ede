#include <catch2/catch.hpp>

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
  // Every positive sample of the library, embedded among noise lines.
  std::string block;
  for (const auto& p : lib.patterns)
    for (const auto& s : p.positive) block += "step 10 loss 1.0\n" + s + "\n";
  std::vector<size_t> a, b;
  with.for_each_candidate_line(block, [&](size_t off) { a.push_back(off); });
  without.for_each_candidate_line(block, [&](size_t off) { b.push_back(off); });
  // Every line that RE2 matches must be a candidate.
  std::vector<int> hits;
  for (size_t off : b) {
    size_t nl = block.find('\n', off);
    std::string_view line(block.data() + off, (nl == std::string::npos ? block.size() : nl) - off);
    without.match(line, hits);
    if (!hits.empty()) CHECK(std::find(a.begin(), a.end(), off) != a.end());
  }
}
