#pragma once
// The result of analysing one job: what the renderers print. Plain data, no behaviour.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "firstfault/attribution/timestamp.h"
#include "firstfault/correlator/traceback.h"
#include "firstfault/matcher/matcher.h"
#include "firstfault/signatures/library.h"

namespace firstfault {

struct Evidence {
  std::string pattern;  // pattern name as the entry calls it
  std::string role;     // root | cascade | teardown | context
  std::string file;
  uint64_t line = 0;
  int rank = -1;
  std::string host;
  int64_t pid = -1;     // the process its prefix named (-1: none); keeps interleaved tracebacks apart
  Timestamp time;
  std::string text;     // the raw log line (capped)
  Captures captures;
};

struct LauncherHint {
  int rank = -1;       // the rank the launcher names
  std::string source;  // which launcher message, in words
  Evidence line;       // the line naming it
};

struct Candidate {
  std::string id;
  double confidence = 0;
  bool has_root = false;
};

struct RankSummary {
  int rank = -1;
  std::string host;
  std::string role;          // initiating | affected (hit the cause itself) | collateral | quiet | unknown
  std::optional<Evidence> first_event;  // first root/cascade/teardown event of this rank
  std::string last_line;
  std::string last_file;
  uint64_t last_line_no = 0;
  Timestamp last_time;
  int64_t last_step = -1;
  std::string last_progress;
  uint64_t lines = 0;
};

struct InputSummary {
  std::string path;
  uint64_t bytes = 0;
  uint64_t lines = 0;
  uint64_t long_lines = 0;  // lines longer than the matching cap (kept head only)
  std::string compression;
  std::string error;        // empty when the input was read completely
  std::string skipped{};    // why it was not read, when on purpose: "binary file (NUL byte at offset 8)"
  // The file's name gives a rank (rank3.log, worker-2): how many lines carry a rank of their own,
  // and how many of those another one (the first such rank kept), to say when they disagree.
  uint64_t lines_with_rank = 0, lines_with_other_rank = 0;
  int other_rank = -1;
  int name_rank = -1;
};

// "its name says rank 3, but most of its lines are rank 5's (the lines' ranks are used)" when
// more than half of the file's lines that name a rank name another one; "" otherwise.
std::string name_rank_note(const InputSummary& in);

struct RankDecision {
  std::optional<int> rank;
  std::string host;
  std::string method;       // root-event | peer-vote | nccl-sequence | missing-from-timeout | first-error | launcher-verdict | silence | job-wide | none
  std::string reason;
  double confidence = 0;
  std::vector<int> candidates;  // in order of suspicion, when the evidence is weak
  std::optional<Evidence> first_evidence;
};

struct Collateral {
  std::vector<int> ranks;
  std::string summary;
  std::string op;
  int64_t seq = -1;
};

// What a scheduler should do with the job: the entry's `action:`, with the host and GPU to leave
// out when one is bad (action/action.h decides it).
struct Action {
  ActionKind kind = ActionKind::kInvestigate;
  std::vector<std::string> exclude_hosts;  // restart-excluding only: the failed host
  std::vector<std::string> exclude_gpus;   // restart-excluding only: "0000:bd:00" (PCI) or "cuda:3"
  std::string reason;                      // one sentence, from the entry and the evidence
};

struct Limits {
  bool truncated = false;
  std::vector<std::string> dropped;  // what a bound dropped, e.g. "events of pattern X beyond 4096"
};

// A log whose training progress stopped long before its last line, with no error line and no
// completion marker (verdict `incomplete`): the job sat idle, a hang, and was ended from outside
// without a message. docs/initiating-rank.md, "A log that stops in training".
struct StoppedRun {
  Evidence last_progress;      // the newest progress line of the log (with its time)
  std::vector<int> ranks;      // ranks whose last lines show progress
  std::vector<int> behind;     // ranks whose last progress step is lower than the others'
  std::optional<Timestamp> first_time, last_time;  // the log's first and last wall-clock times
  int64_t idle_minutes = 0;    // from the last progress line to the last line of its rank
};

// A host whose clock disagrees with the reference host's, estimated from moments every rank
// reports at once (Correlator::estimate_clock_skew, docs/initiating-rank.md "Clocks").
struct ClockSkew {
  std::string host;       // this host's clock ...
  std::string reference;  // ... against this one's
  int64_t offset_ms = 0;  // runs this far ahead (negative: behind)
  size_t samples = 0;     // collectives whose timeouts both hosts reported
};

struct Diagnosis {
  // diagnosed | unrecognized | incomplete | clean, or error when no input yielded a line (app/pipeline.h):
  // nothing to diagnose, and `inputs` carries each reason.
  std::string verdict;
  const struct Entry* entry = nullptr;
  double confidence = 0;
  RankDecision initiating;
  std::vector<Evidence> evidence;  // the top entry's evidence, strongest first (capped)
  std::vector<Candidate> alternatives;
  Collateral collateral;
  std::vector<int> affected_ranks;  // other ranks with a root event of their own (not collateral)
  std::vector<RankSummary> ranks;
  std::vector<InputSummary> inputs;
  std::optional<Evidence> first_error;  // first error-looking line when unrecognized
  // When unrecognized: the rank the launcher saw fail first (torchrun's Root Cause block,
  // mpirun's first failed process), if the log has one: where to read next.
  std::optional<LauncherHint> launcher_first_failure;
  // When unrecognized: a low-confidence initiating rank read from error lines alone (the only
  // rank with an error of its own, or the first one); method `first-error` or `job-wide`.
  std::optional<RankDecision> suspect;
  // The Python traceback that the decisive line (the initiating evidence, else the suspect's or
  // the first error) closes, when the log has it: its frames and the user's own frame.
  std::optional<Traceback> traceback;
  std::optional<StoppedRun> stopped;  // verdict `incomplete` only
  // Verdict `clean` or `incomplete` although error lines were printed: the first of them, every
  // one of which the run went on past (Correlator::outlived). Shown, never hidden.
  std::optional<Evidence> outlived_error;
  std::vector<ClockSkew> clock_skew;  // hosts whose clocks run off, as used to order their events
  Action action;
  Limits limits;
  uint64_t total_lines = 0;
  uint64_t total_bytes = 0;
  uint64_t skipped_inputs = 0;  // inputs not read on purpose (binary files); counted in `inputs` too

  // The decisive line of a diagnosis: the initiating rank's first evidence, else the top
  // entry's strongest. The text, the JSON, the action's exclusions and triage's fleet view all
  // show this one.
  const Evidence* decisive_evidence() const {
    if (initiating.first_evidence) return &*initiating.first_evidence;
    return evidence.empty() ? nullptr : &evidence.front();
  }
};

}  // namespace firstfault
