// Precision guard: logs of jobs that finished successfully (testdata/healthy/, see its README.md)
// must never be diagnosed. They are full of lines that look alarming but are normal: NCCL INFO
// initialisation, deprecation warnings, fp16 loss-scale overflow skips, a docker veth in NCCL's
// interface list, corrected PCIe errors, a monitor killed with `kill -9`, pre-2.4 NCCL wording.
// "clean" and "unrecognized" are both fine; "diagnosed" means an entry is too broad.
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "firstfault/app/pipeline.h"
#include "test_support.h"

using namespace firstfault;

namespace {

std::vector<std::string> healthy_logs() {
  std::vector<std::string> out;
  for (const auto& de : std::filesystem::directory_iterator(test::source_dir() + "/testdata/healthy"))
    if (de.is_regular_file() && de.path().extension() == ".log") out.push_back(de.path().string());
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

TEST_CASE("healthy: no log of a successful job is diagnosed") {
  test::RepoEngine engine;
  const Library& lib = engine.lib;
  const Matcher& matcher = engine.matcher;
  std::vector<std::string> logs = healthy_logs();
  REQUIRE(logs.size() >= 8);
  for (const std::string& path : logs) {
    JobResult r = analyze_paths({path}, matcher, {});
    const Diagnosis& d = r.diagnosis;
    std::string name = std::filesystem::path(path).filename().string();
    INFO(name << ": verdict " << d.verdict << (d.entry ? " as " + d.entry->id : std::string())
              << (d.initiating.first_evidence ? " from line " + std::to_string(d.initiating.first_evidence->line) + ": " +
                                                    d.initiating.first_evidence->text
                                              : std::string()));
    // The file was read in full and is a real log, not a stub.
    CHECK(r.problems.empty());
    CHECK(d.total_lines >= 200);
    CHECK(d.verdict != "diagnosed");
    CHECK((d.verdict == "clean" || d.verdict == "unrecognized"));
    CHECK(d.alternatives.empty());
  }
}

TEST_CASE("healthy: a reward function's [Error] lines that the run trains past leave it clean, and are shown") {
  test::RepoEngine engine;
  JobResult r = analyze_paths({test::source_dir() + "/testdata/healthy/verl-grpo-reward-format-errors.log"}, engine.matcher, {});
  CHECK(r.diagnosis.verdict == "clean");
  REQUIRE(r.diagnosis.outlived_error);
  CHECK(r.diagnosis.outlived_error->text.find("[Error] </answer> appears 0 times") != std::string::npos);
}

TEST_CASE("healthy: the corpus exercises the noise it is meant to cover") {
  // If a regeneration dropped these lines, the test above would pass without proving anything.
  test::RepoEngine engine;
  const Library& lib = engine.lib;
  const Matcher& matcher = engine.matcher;
  std::vector<std::string> logs = healthy_logs();
  auto seen = [&](const std::string& pattern) {
    auto def = lib.find_pattern(pattern);
    REQUIRE(def);
    std::vector<int> hits;
    for (const std::string& path : logs) {
      std::ifstream in(path);
      std::string line;
      while (std::getline(in, line)) {
        matcher.match(line, hits);
        if (std::find(hits.begin(), hits.end(), static_cast<int>(*def)) != hits.end()) return true;
      }
    }
    return false;
  };
  // Root patterns of entries that used to fire on these logs: each must still be met by a line.
  CHECK(seen("nccl-socket-virtual-interface/socket_uses_virtual_iface"));
  CHECK(seen("pcie-aer-corrected-storm/aer_corrected"));
  CHECK(seen("xid-63-row-remap-pending/xid63"));
  CHECK(seen("torchrun-rdzv-endpoint-no-port/nport_join_attempt"));
  CHECK(seen("nccl-init-hang/nccl_init_activity"));
  // Normal noise that entries use as context: fp16 overflow skips, the tokenizers fork warning,
  // NCCL's rank map.
  CHECK(seen("fp16-loss-scale-at-minimum/lsmin_overflow_ds"));
  CHECK(seen("tokenizers-fork-deadlock/tokfork_warning"));
  CHECK(seen("nccl_comm_init_rank"));
}
