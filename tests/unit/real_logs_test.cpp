// Real logs from public bug reports (and healthy runs, for false alarms), kept in the repository (testdata/real/<case>/job.log, with
// expect.json: the thread's URL, the confirmed root cause, the entry and rank it maps to). Unlike
// ../shared/corpus they are always present, so CI checks them on every run.
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>

#include "firstfault/app/pipeline.h"
#include "test_support.h"

using namespace firstfault;

TEST_CASE("real logs: every case from a public bug report lands on its expected entry and rank") {
  test::RepoEngine engine;
  const Matcher& matcher = engine.matcher;
  std::vector<std::filesystem::path> cases;
  for (const auto& e : std::filesystem::directory_iterator(test::source_dir() + "/testdata/real"))
    if (e.is_directory()) cases.push_back(e.path());
  std::sort(cases.begin(), cases.end());
  REQUIRE(cases.size() >= 10);
  for (const auto& dir : cases) {
    std::ifstream in(dir / "expect.json");
    nlohmann::json expect = nlohmann::json::parse(in, nullptr, false);
    REQUIRE_FALSE(expect.is_discarded());
    REQUIRE(expect.contains("source"));
    Diagnosis d = analyze_paths({(dir / "job.log").string()}, matcher, {}).diagnosis;
    std::string got = d.entry ? d.entry->id : "<" + d.verdict + ">";
    INFO(dir.filename().string() << " (" << expect["source"].get<std::string>() << "): got " << got << " rank "
                                 << (d.initiating.rank ? std::to_string(*d.initiating.rank) : "null"));
    if (expect.contains("expected_verdict")) {
      CHECK(d.verdict == expect["expected_verdict"].get<std::string>());  // healthy runs: no false alarm
    } else if (expect["expected_id"].is_null()) {
      CHECK(d.verdict == "unrecognized");  // no entry fits, but it is a failure, not a clean run
    } else {
      // `also_accepted`: entries the thread supports just as well (with the reason in `why`).
      std::vector<std::string> ok{expect["expected_id"].get<std::string>()};
      if (expect.contains("also_accepted"))
        for (const auto& id : expect["also_accepted"]) ok.push_back(id.get<std::string>());
      CHECK(std::find(ok.begin(), ok.end(), got) != ok.end());
    }
    if (!expect["expected_rank"].is_null()) {
      REQUIRE(d.initiating.rank);
      CHECK(*d.initiating.rank == expect["expected_rank"].get<int>());
    }
  }
}
