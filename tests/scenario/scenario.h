#pragma once
// Writes realistic multi-rank logs with one failure injected on a chosen rank, for the
// initiating-rank tests (tests/unit/scenario_test.cpp) and the benchmarks (bench/).
#include <cstdint>
#include <string>
#include <vector>

namespace firstfault::scenario {

enum class Failure {
  kCudaOom, kXid79, kUnevenBatches, kDataLoaderStuck, kHostOomKill, kNcclIbError, kSilentHang,
  kAppException,  // an exception no entry knows; the culprit's node is torn down, the rest time out
  kXid48,         // double-bit ECC: the culprit's CUDA call fails with an uncorrectable ECC error
  kXid94,         // contained ECC: the same symptom, the kernel says the error was contained
  kXid74,         // NVLink fatal error: NCCL's "unhandled cuda error" on the culprit
  kXid119,        // GSP RPC timeout: the culprit's GPU stops answering, it prints nothing
  kOpDesync,      // the seed failure: the culprit ran out of batches (bar at 100%) and waits in another op
  kSizeDesync,    // same SeqNum and op, another element count on the culprit
  kSlurmOom,      // the step's cgroup memory limit: srun names the task, sacct the state
  kK8sOomKilled,  // one rank per pod: the culprit's container is OOMKilled (`kubectl describe pod`)
  kNone
};
// kFilePerNode: one file per host (`gpu-node-007.log`), its ranks' lines interleaved with torchrun prefixes.
enum class Layout { kTorchrun, kSlurmLabel, kOpenMpi, kFilePerRank, kFilePerNode };
// Where the kernel's lines go: into the job log (syslog clock), or one file per host in the
// forms admins save them in (boot-relative dmesg, `dmesg -T`, `dmesg --time-format iso`,
// `journalctl -k`), named after the host.
enum class NodeLog { kInJobLog, kDmesgBoot, kDmesgHuman, kDmesgIso, kJournal };
// What ends a silent hang (Failure::kSilentHang): nothing (the log stops), the scheduler's time
// limit hours later, the fault-tolerance launcher's heartbeat monitor, or the NCCL watchdog.
enum class HangEnd { kNone, kTimeLimit, kHeartbeatMonitor, kWatchdog };

struct Spec {
  int ranks = 8;
  int ranks_per_node = 8;
  Failure failure = Failure::kCudaOom;
  int culprit = 3;
  Layout layout = Layout::kTorchrun;
  NodeLog node_log = NodeLog::kInJobLog;
  HangEnd hang_end = HangEnd::kNone;
  bool flight_recorder = false;  // every rank also writes a Flight Recorder dump (JSON) at the timeout
  bool shuffle = true;           // interleave ranks' lines randomly (per-rank order kept)
  int max_clock_skew_ms = 0;     // each host's clock is off by up to this much
  int steps = 20;                // progress lines per rank before the failure
  int noise_lines = 0;           // extra healthy lines per rank per step (for benchmarks)
  uint64_t seed = 1;
};

const char* failure_name(Failure f);
const char* node_log_name(NodeLog n);
const char* hang_end_name(HangEnd h);
// The entry id firstfault should diagnose for this scenario.
const char* expected_entry(const Spec& spec);
const char* expected_entry(Failure f);  // with the default node log and hang end

// Writes the scenario under `dir` (job.log or rank_N.log per rank, plus per-host kernel logs,
// sacct output and Flight Recorder dumps where the spec asks for them); returns the paths.
std::vector<std::string> write(const Spec& spec, const std::string& dir);

}  // namespace firstfault::scenario
