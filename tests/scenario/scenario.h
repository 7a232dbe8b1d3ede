#pragma once
// Writes realistic multi-rank logs with one failure injected on a chosen rank, for the
// initiating-rank tests (tests/unit/scenario_test.cpp) and the benchmarks (bench/).
#include <cstdint>
#include <string>
#include <vector>

namespace firstfault::scenario {

enum class Failure { kCudaOom, kXid79, kUnevenBatches, kDataLoaderStuck, kHostOomKill, kNcclIbError, kSilentHang,
                     kAppException,  // an exception no entry knows; the culprit's node is torn down, the rest time out
                     kNone };
enum class Layout { kTorchrun, kSlurmLabel, kOpenMpi, kFilePerRank };

struct Spec {
  int ranks = 8;
  int ranks_per_node = 8;
  Failure failure = Failure::kCudaOom;
  int culprit = 3;
  Layout layout = Layout::kTorchrun;
  bool shuffle = true;         // interleave ranks' lines randomly (per-rank order kept)
  int max_clock_skew_ms = 0;   // each host's clock is off by up to this much
  int steps = 20;              // progress lines per rank before the failure
  int noise_lines = 0;         // extra healthy lines per rank per step (for benchmarks)
  uint64_t seed = 1;
};

const char* failure_name(Failure f);
// The entry id firstfault should diagnose for this failure.
const char* expected_entry(Failure f);

// Writes the scenario under `dir` (one file job.log, or rank_N.log per rank); returns the paths.
std::vector<std::string> write(const Spec& spec, const std::string& dir);

}  // namespace firstfault::scenario
