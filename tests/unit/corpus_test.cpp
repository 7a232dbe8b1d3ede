// The development corpus (../shared/corpus, real logs from public bug reports) must diagnose to an
// accepted entry, with the labelled initiating rank where the label gives one. The mapping from
// the corpus labels to our entry ids lives in tests/corpus/expectations.tsv.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "firstfault/app/pipeline.h"
#include "test_support.h"

using namespace firstfault;

TEST_CASE("corpus: every labelled real log lands on an accepted entry and rank") {
  std::string corpus = test::source_dir() + "/../shared/corpus";
  if (!std::filesystem::is_directory(corpus)) {
    WARN("../shared/corpus not present; skipping");
    return;
  }
  test::RepoEngine engine;
  const Matcher& matcher = engine.matcher;
  std::ifstream in(test::source_dir() + "/tests/corpus/expectations.tsv");
  REQUIRE(in);
  std::string line;
  int cases = 0, ok = 0;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream fields(line);
    std::string name, ids, rank;
    std::getline(fields, name, '\t');
    std::getline(fields, ids, '\t');
    std::getline(fields, rank, '\t');
    std::string log = corpus + "/" + name + "/log.txt";
    if (!std::filesystem::exists(log)) continue;
    ++cases;
    Diagnosis d = analyze_paths({log}, matcher, {}).diagnosis;
    std::string got = d.entry ? d.entry->id : "<" + d.verdict + ">";
    bool id_ok = ("," + ids + ",").find("," + got + ",") != std::string::npos;
    bool rank_ok = rank == "-" || (d.initiating.rank && std::to_string(*d.initiating.rank) == rank);
    INFO(name << ": got " << got << " rank " << (d.initiating.rank ? std::to_string(*d.initiating.rank) : "null")
              << ", accepted " << ids << " rank " << rank);
    CHECK(id_ok);
    CHECK(rank_ok);
    if (id_ok && rank_ok) ++ok;
  }
  INFO(ok << "/" << cases << " corpus cases correct");
  CHECK(cases > 0);
}
