#pragma once
// Internal to the correlator: what the steps of Correlator::finish() hand to each other.
// finish() (diagnosis_assembly.cpp) runs them in order: evaluate the entries
// (entry_evaluation.cpp), read the collective timeouts and the launcher's verdict
// (collectives.cpp), climb the initiating-rank ladder (rank_ladder.cpp), assign collateral
// and affected ranks (collateral.cpp), and summarise each rank.
#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "firstfault/correlator/correlator.h"
#include "firstfault/correlator/traceback.h"

namespace firstfault {

namespace correlator_detail {
int to_int_or(const std::string* s, int fallback);
// A rank or world size captured from a line; numbers no job can have (kMaxRankNumber) are
// ignored, so `world` and the ranks missing from a timeout stay bounded.
int rank_or(const std::string* s, int fallback);
int world_or(const std::string* s, int fallback);
// The patterns that report a rank's own collective counters (`enqueued`, `completed`): the
// watchdog's status line, the flight-recorder dump-signal line, a Flight Recorder dump read as
// text. A rank whose last enqueued work is below the stuck collective never issued it.
inline constexpr const char* kCounterPatterns[] = {"nccl_work_status", "nccl_dump_signal", "flight_recorder_pg_status"};
// Launchers' own lines that name the one rank whose failure they saw first, in the order
// launcher_verdict() trusts them. They are that rank's teardown, not its own error, whether or
// not an entry uses them (CorrelatorTables::consequence).
inline constexpr std::pair<const char*, const char*> kLauncherFirstFailure[] = {
    {"mpirun_noticed_rank", "mpirun's \"noticed that process rank\" line"},
    {"mpirun_first_failed", "mpirun's first failed process"},
    {"tgi_shard_failed_or_webserver", "TGI's \"Shard N failed to start\""},  // a shard is a TP rank
    {"paddle_launch_container_failed", "paddle.distributed.launch's \"Container rank N status failed\""}};
// How far below its header a Python traceback's closing exception is looked for: the few dozen
// lines a traceback takes (error lines, wrapper lines that open one).
inline constexpr uint64_t kTracebackWindowLines = 60;
// At most this many lines from one traceback frame line to the next, or to the exception after
// the last: the frame's code line, Python 3.11's caret line, '[Previous line repeated N more times]'.
inline constexpr uint64_t kLinesAfterFrame = 4;
// Whether `ev` can be a line of the traceback that closes at `line` of `input`: the same rank,
// above it by at most kMaxTracebackLines, and the same process when both lines name theirs
// (processes that share a rank interleave their tracebacks in one log: vLLM's engine core and a
// worker, "(EngineCore_DP0 pid=4956)" and "(Worker_TP2 pid=5094)").
inline bool in_traceback_above(const Event& ev, uint32_t input, int rank, int64_t pid, uint64_t line) {
  return ev.input == input && ev.rank == rank && ev.line < line && line - ev.line <= kMaxTracebackLines &&
         (pid < 0 || ev.pid < 0 || ev.pid == pid);
}
// Whether `ev` lies below `header` within `window` lines, in the same input and rank.
inline bool below_in_traceback_window(const Event& header, const Event& ev, uint64_t window = kTracebackWindowLines) {
  return ev.input == header.input && ev.rank == header.rank && ev.line > header.line &&
         ev.line <= header.line + window;
}
// Two times on the same wall clock (both full, or both year-less): boot-relative times and
// times of different kinds say nothing about which came first or how long apart.
inline bool comparable(const Timestamp& a, const Timestamp& b) {
  return a.valid() && b.valid() && a.kind == b.kind && a.kind != Timestamp::kBoot;
}
}  // namespace correlator_detail

// One entry's evaluation against the job's events.
struct Correlator::Hits {
  const Entry* entry = nullptr;
  std::vector<std::vector<const Event*>> by_ref;  // events per ref that satisfy capture rules
  bool supported = false;
  bool has_root = false;
  double confidence = 0;
  const Event* first_root = nullptr;
  const Event* first_any = nullptr;
};

// A job ended from outside (a time limit, a cancel: an entry with `ends_job_from_outside`) after
// its training had stopped progressing for far longer than a step takes: a hang.
struct Correlator::OutsideEnd {
  const Entry* end_entry = nullptr;  // what ended it (now context of the hang)
  Evidence end_line;
  int64_t idle_minutes = 0;     // from the newest progress line to the end
  int64_t threshold_minutes = 0;
};

// What the ranks' own collective timeouts (NCCL watchdog, Gloo, flight-recorder dumps) say:
// the collective most ranks are stuck in, and who is behind, ahead of it or missing from it.
struct Correlator::Collectives {
  int64_t seq = -1;
  std::string op;
  std::set<int> reporters;
  std::set<int> behind;  // last enqueued below the stuck seq, or timed out a little earlier
  std::map<int, int64_t> enqueued;
  std::map<int, int64_t> own_seq;  // ranks that timed out at another SeqNum: the lowest one
  std::map<std::pair<int, int64_t>, const Event*> timeout_line;  // (rank, SeqNum) -> its first watchdog line
  std::set<int> ahead;             // ... at a later one: they got past the stuck collective
  int world = 0;                   // the job's size: highest rank seen, NCCL init's nranks
  int init_world = 0;              // the size NCCL init printed, when it did
  std::vector<int> missing;        // ranks that reported no timeout while most others did
  // Reporters at the stuck SeqNum whose OpType differs from the others' (a desync: one rank
  // issued another collective, e.g. an ALLREDUCE while the rest wait in an ALLGATHER).
  std::set<int> odd_op;
  std::string odd_op_name;  // the odd rank's call, "ALLREDUCE" or "ALLREDUCE with NumelIn=1"
  std::string call;         // the others' call, in the same form
};

// The launcher's own verdict: torchrun's Root Cause block, mpirun's first failed process.
struct Correlator::LauncherVerdict {
  std::optional<int> rank;
  std::string name;              // how the output names the launcher's line
  const Event* event = nullptr;  // the line that names `rank`
  std::set<int> failed_ranks;    // every rank torchrun's summary lists as failed
  // torchrun's failure summary begins at its ChildFailedError line. The errors it quotes for
  // each rank (their error files' tracebacks) come in rank order, not time order: only its
  // "Root Cause" (the earliest error-file time) says which came first.
  const Event* summary_start = nullptr;
  bool told_in_summary(const Event& ev) const {
    return summary_start && ev.input == summary_start->input && ev.line > summary_start->line;
  }
};

// Each rank's first error line of its own: worked out at most once, and only where a step needs it.
struct Correlator::OwnErrors {
  const Correlator& correlator;
  const ErrorLines& errors;
  mutable std::optional<std::map<int, const Event*>> cache;
  const std::map<int, const Event*>& get() const {
    if (!cache) cache = correlator.own_error_lines(errors);
    return *cache;
  }
};

}  // namespace firstfault
