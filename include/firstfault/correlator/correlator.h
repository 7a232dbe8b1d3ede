#pragma once
// Stage 5 (correlator): keeps a per-rank timeline of events and decides which entries the
// evidence supports, the initiating rank and why, and who is collateral.
// See docs/initiating-rank.md for the evidence ladder.
#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <unordered_set>
#include <vector>

#include "firstfault/attribution/line_attributor.h"
#include "firstfault/correlator/diagnosis.h"
#include "firstfault/signatures/library.h"
#include "firstfault/util/shared_text.h"

namespace firstfault {

// Bounds (docs/reliability.md). Counts stay exact beyond them; only stored detail is dropped.
inline constexpr size_t kMaxEventsPerPattern = 4096;
// Stored event detail is bounded in bytes for the whole job, not only per pattern (4,096 events
// of 2 KiB for each of ~2,000 patterns would be 16 GB): up to kEventBudget bytes events are kept
// as they come (per-pattern cap aside); past it, only a pattern's first kMinEventsPerPattern
// events and, for collective timeouts and cascades, the first event of each rank, texts cut to
// kEventTextOverBudget, until kEventHardBudget. The cost counted is the heap's (event_cost()).
// Counts stay exact; what was dropped is reported. A line's text is stored once for all the
// patterns that match it (SharedText). 7.5/13 MiB keeps the timeouts of a 4,096-rank job that
// desynchronised (tests/unit/scenario_test.cpp; 7/12 lost some) and holds a log that wakes
// every pattern under 64 MiB (docs/performance.md).
inline constexpr size_t kEventBudget = size_t{15} << 19;
inline constexpr size_t kEventHardBudget = size_t{13} << 20;
inline constexpr size_t kMinEventsPerPattern = 4;
inline constexpr size_t kEventTextOverBudget = 160;
inline constexpr size_t kMaxRanks = 1 << 17;
inline constexpr size_t kMaxEventText = 2048;

struct Event {
  size_t def = 0;
  int rank = -1;
  int local_rank = -1;
  std::string host;
  int64_t pid = -1;
  Timestamp time;
  uint32_t input = 0;
  uint32_t body_at = 0;  // where the text past the line's rank/host/time prefix starts (0: unknown)
  uint64_t line = 0;
  uint64_t order = 0;  // arrival order across the whole job
  SharedText text;  // shared by the events of one line
  Captures captures;

  const std::string* capture(std::string_view name) const {
    for (const auto& [k, v] : captures)
      if (k == name) return &v;
    return nullptr;
  }
};

// What a correlator needs to know of each pattern of a library. Built once and shared by every
// job's correlators (triage runs thousands of small jobs on one library).
struct CorrelatorTables {
  // `tail_patterns` are progress patterns applied to each rank's last lines at the end
  // (Matcher::tail_patterns()).
  CorrelatorTables(const Library& lib, std::vector<size_t> tail_patterns);
  std::vector<bool> referenced;   // pattern used by at least one entry
  std::vector<bool> has_step;     // pattern captures `step` (progress must stay current)
  std::vector<bool> own_timeout;  // pattern reports its own rank's collective timeout
  // Used as cascade or teardown by some entry and as root by none: a line it matches reports a
  // consequence (an aborted communicator, a peer that went away, a launcher's kill).
  std::vector<bool> consequence;
  std::vector<bool> cascade;  // of those, the ones a rank prints itself (not a launcher's teardown)
  // Lines that say which process is which rank (NCCL's communicator init, Ray Train's worker
  // ranks): every process's first one is kept past the event budget, or a 4,096-rank job's
  // kernel events and unprefixed NCCL lines could not be mapped to ranks.
  std::vector<bool> identity;
  // What names the rank a collective waits for: each rank's own timeout, its counters, and who
  // is which rank. Past the budget these keep each rank's first event until the hard bound;
  // other per-rank patterns (cascades) stop halfway there, so that lines printed early in a big
  // job (every rank's init) cannot use up the room its last lines (the timeouts) need.
  std::vector<bool> essential;
  // Named by entries only in `absent:`: its count is kept exact, and only its first
  // kMinEventsPerPattern events are stored (mark_counted_only()).
  std::vector<bool> counted_only;
  std::vector<size_t> tail_defs;
  // server_request_served: summed up as it is read (Correlator::AnsweredRequests), never stored,
  // since a server answers far more requests than any pattern's event bound (4,096) keeps.
  std::optional<size_t> served_request;
  void mark_counted_only(const Library& lib);
};

class Correlator {
 public:
  Correlator(const Library& lib, std::shared_ptr<const CorrelatorTables> tables);
  explicit Correlator(const Library& lib, std::vector<size_t> tail_patterns = {})
      : Correlator(lib, std::make_shared<const CorrelatorTables>(lib, std::move(tail_patterns))) {}

  // Called for every line (after attribution) to keep the per-rank timeline. With `view_lasts`
  // the line's bytes stay valid until settle_tails(), so only a view is kept until then.
  void observe_line(const Attribution& a, std::string_view line, uint32_t input, uint64_t line_no,
                    bool view_lasts = false);
  // Copies the lines kept as views; call before their buffer is reused (LineFeed: block end).
  void settle_tails();
  void add_event(Event ev);
  // Whether another event of `def` would be stored; when not, count_event() keeps the count
  // exact without building the event.
  bool wants_event(size_t def) const { return may_store(def) || t_.has_step[def] || def == t_.served_request; }
  void count_event(size_t def);
  // Whether an event of `def` would only move its rank's progress counter (a `step` capture,
  // and nothing to store); then add_step() does that without building the event.
  bool only_steps(size_t def) const {
    return t_.has_step[def] && (!t_.referenced[def] || !may_store(def));
  }
  // With `view_lasts`, as for observe_line(): the line is copied at settle_tails().
  void add_step(size_t def, int rank, std::string_view step, std::string_view line, bool view_lasts = false);
  void set_inputs(std::vector<InputSummary> inputs) { inputs_ = std::move(inputs); }
  // Dates year-less times when no line of the job has a year: the year of the newest input's
  // modification time (ms since 1970, UTC), one less for a time later than that (a log is
  // written before its file's last change, as syslog readers assume).
  void set_file_time(int64_t mtime_ms) { file_time_ms_ = mtime_ms; }

  // This correlator reads one of `parts` ranges of a file at the same time as the others: it
  // gets that share of the job's event budget, so the job's bound holds while they all run
  // (absorb() applies the whole budget again when they are merged).
  void share_event_budget(size_t parts) { scale_event_budget(1, std::max<size_t>(parts, 1)); }
  // `num`/`den` of both budgets (watch: its snapshots copy the correlator).
  void scale_event_budget(size_t num, size_t den) {
    event_budget_ = kEventBudget / den * num;
    event_hard_budget_ = kEventHardBudget / den * num;
  }

  // Appends the state of a correlator that read the *following* part of the same input
  // (parallel reading of one large file); its line numbers are shifted by `line_offset`.
  void absorb(Correlator&& later, uint64_t line_offset);

  Diagnosis finish();

  // The diagnosis of everything seen so far, leaving this correlator untouched so more lines can
  // follow (`watch`). finish() resolves ranks in place, so this runs it on a copy.
  Diagnosis snapshot() const;

 private:
  // A rank's last few lines, newest last: where the progress patterns look at the end.
  static constexpr size_t kTailLines = 16;
  static constexpr size_t kTailLineBytes = 256;
  // A job of more than kLargeJobRanks ranks keeps kLargeJobTailLines per rank (a merged rank's
  // progress is read from its longer tail before it is cut: shorten_tails_of_large_job()).
  static constexpr size_t kLargeJobRanks = 1024;
  static constexpr size_t kLargeJobTailLines = 4;
  struct TailLine {
    std::string text;
    std::string_view pending;  // set: the line, not yet copied into text (settle_tails())
    uint32_t input = 0;
    uint64_t line_no = 0;
  };
  struct RankState {
    std::string host;
    bool unsettled = false;  // holds pending tail or progress lines (listed in unsettled_)
    uint64_t lines = 0;
    Timestamp last_time;
    std::vector<TailLine> tail;  // ring buffer of up to kTailLines
    size_t tail_next = 0;        // ring position of the next write
    int64_t last_step = -1;      // from events with a `step` capture
    bool progress_at_end = false;  // a progress line is among the last kTailLines (apply_tail_progress)
    uint32_t progress_input = 0;   // ... and where it is
    uint64_t progress_line_no = 0;
    Timestamp progress_time;       // ... and its time, when it has one
    int64_t step_interval_ms = 0;  // between its last two timed progress lines in the tail (0: unknown)
    uint64_t last_step_order = 0;
    std::string last_progress;
    std::string_view progress_pending;  // set: the newest progress line, not yet in last_progress
    const TailLine* newest() const {
      if (tail.empty()) return nullptr;
      return &tail[(tail_next + tail.size() - 1) % tail.size()];
    }
  };

  std::optional<Traceback> traceback_of_decisive_line(const Diagnosis& d) const;
  std::set<std::pair<uint32_t, uint64_t>> consequence_lines() const;

  // The rank's state (created on first sight); null for no rank or past kMaxRanks. The lookup of
  // a known rank is inline: it runs for every line.
  RankState* rank_state(int rank) {
    if (rank >= 0 && static_cast<size_t>(rank) < rank_index_.size() && rank_index_[static_cast<size_t>(rank)])
      return rank_index_[static_cast<size_t>(rank)];
    return add_rank_state(rank);
  }
  RankState* add_rank_state(int rank);
  void note_step(int rank, std::string_view step, std::string_view line, bool view_lasts = false);
  void note_dropped(size_t def);  // an event of `def` was counted but not stored
  // Keeps `line` as the rank's newest tail or progress line: a view in `pending` when the line
  // outlives this call until settle_tails() (`view_lasts`), else copied into `text` now.
  void keep_last(RankState& rs, std::string& text, std::string_view& pending, std::string_view line, bool view_lasts);
  void resolve_times_and_ranks();
  // Whether `rank` reported its own collective timeout (it waited for another rank).
  bool waited_in_collective(int rank) const;
  // Per-host clock offsets from the collective timeouts every rank reports at once (same SeqNum
  // and op: the watchdogs fire within a second of each other); hosts off by 2 s or more are
  // kept in host_offset_ms_, and earlier() compares their events on the reference clock.
  void estimate_clock_skew();
  const std::string& host_of(const Event& ev) const;
  // An event's time on the reference clock (time_key minus its host's estimated offset).
  int64_t event_key(const Event& ev) const;
  int64_t time_key(const Timestamp& t) const;
  // A year-less time moved into the job's year once one is known (else as printed).
  Timestamp in_job_year(const Timestamp& t) const;
  // A rank's (or the unranked lines') last progress line as evidence, where to look in a stopped run.
  Evidence last_progress_evidence(int rank, const RankState& rs) const;
  bool earlier(const Event& a, const Event& b) const;
  // The job's error lines (error_exception_line, error_fatal_line) and which of them are
  // harmless: error_benign_line, the exception closing a traceback under Python's
  // "Exception ignored in:" header, and a c10 stack under a warning or info line (c10_warning_stack).
  // Computed once per finish().
  struct ErrorLines {
    std::vector<const Event*> lines;
    std::set<std::pair<uint32_t, uint64_t>> benign;    // (input, line)
    std::set<std::pair<uint32_t, uint64_t>> error_at;  // (input, line) of every error line
    // The tracebacks Python printed under "Exception ignored in: ..." ((input, rank, first line)
    // -> last line), and single lines that say an optional step failed and the program went on
    // (optional_step_went_on) or a retried attempt the run outlived (retried_attempt_line):
    // nothing in them stopped the program, so no entry's root or cascade is read there.
    // Ordered, so a hostile log with thousands of them costs a lookup per event.
    std::map<std::tuple<uint32_t, int, uint64_t>, uint64_t> ignored;
    // NCCL's warnings a rank printed after it said its training completed (a teardown's sockets
    // and buffers whose peers already exited): (input, line). Nothing is read there either.
    std::set<std::pair<uint32_t, uint64_t>> after_completion;
    // The traceback frame lines ("  File ..., line N, in f") of each (input, rank), ascending:
    // how far a traceback runs below its header, however deep its stack.
    std::map<std::pair<uint32_t, int>, std::vector<uint64_t>> frame_lines;
    bool is_benign(const Event& ev) const { return benign.count({ev.input, ev.line}) > 0; }
    // The error lines of `from`'s input and rank, from `from` to `to`, are harmless; ignore()
    // also records them as a block in which no entry reads a root or cascade.
    void mark_harmless(const Event& from, const Event& to);
    void ignore(const Event& from, const Event& to);
    bool is_error(const Event& ev) const { return error_at.count({ev.input, ev.line}) > 0; }
    // Whether any error line of the job counts, by the rule that makes a verdict `unrecognized`
    // rather than `clean`: one not marked harmless (ignored tracebacks and teardown after
    // completion are marked so). What a `survivable` entry needs beside its warning.
    bool any_counting() const {
      return std::any_of(lines.begin(), lines.end(), [&](const Event* ev) { return !is_benign(*ev); });
    }
    bool in_ignored_block(const Event& ev) const {
      auto it = ignored.upper_bound({ev.input, ev.rank, ev.line});
      if (it == ignored.begin()) return false;
      --it;  // the last block of this input and rank that starts at or before the line
      const auto& [input, rank, from] = it->first;
      return input == ev.input && rank == ev.rank && ev.line >= from && ev.line <= it->second;
    }
  };
  ErrorLines error_lines() const;
  void add_headless_tracebacks(ErrorLines& e, uint64_t window) const;
  void mark_teardown_after_completion(ErrorLines& e) const;
  void mark_shutdown_after_stop_signal(ErrorLines& e) const;
  // The last request each input's servers answered with a 2xx (server_request_served), per input
  // and per input and endpoint: kept up to date line by line.
  struct AnsweredRequests {
    std::map<uint32_t, uint64_t> any;
    std::map<std::pair<uint32_t, std::string>, uint64_t> by_endpoint;
    void note(uint32_t input, const std::string& endpoint, uint64_t line);
    // Of the input's requests to `endpoint`, or of all of them without one; 0 when none.
    uint64_t last_after(uint32_t input, const std::optional<std::string>& endpoint) const;
  };
  AnsweredRequests answered_;
  std::map<std::pair<uint32_t, uint64_t>, const Event*> failed_requests() const;
  std::optional<std::string> endpoint_failed_above(const Event& header,
                                                   const std::map<std::pair<uint32_t, uint64_t>, const Event*>& failed) const;
  void mark_outgrown_startup_warnings(ErrorLines& e) const;
  bool retry_succeeded_after(const Event& attempt) const;
  void ignore_finalizer_tracebacks(ErrorLines& e) const;
  void ignore_rejections_served_after(ErrorLines& e) const;
  void ignore_logged_import_failures(ErrorLines& e) const;
  // Keeps in by_rank[ev.rank] the earlier of ev and what is there.
  void keep_earliest(std::map<int, const Event*>& by_rank, const Event& ev) const;
  // Each rank's first error line of its own: one that no cascade or teardown pattern claims,
  // that reports no lost peer (error_consequence_line), not benign, and before the rank's first
  // cascade line.
  std::map<int, const Event*> own_error_lines(const ErrorLines& errors) const;
  // For an unrecognised failure: the rank whose own error line comes first, from the ranks' own
  // error lines (own_error_lines) alone (docs/initiating-rank.md, "No entry matches").
  std::optional<RankDecision> suspect_from_error_lines(const std::map<int, const Event*>& own,
                                                       std::optional<int> launcher_rank,
                                                       const std::string& launcher_name) const;
  Evidence to_evidence(const Event& ev, const std::string& pattern, Role role) const;

  // The steps of finish(), each in its own unit (src/correlator/, docs/architecture.md).
  struct Hits;             // one entry's evaluation (correlator_steps.h)
  struct Collectives;      // what the ranks' collective timeouts say (correlator_steps.h)
  struct LauncherVerdict;  // which rank the launcher saw fail first (correlator_steps.h)
  struct OwnErrors;        // each rank's own first error line, worked out on first use
  class RankLadder;        // the initiating-rank ladder (rank_ladder.h)
  std::vector<Hits> evaluate_entries(const ErrorLines& errors) const;  // entry_evaluation.cpp
  void score_entries(std::vector<Hits>& all, const Event* earliest_root) const;
  void rank_entries(std::vector<Hits>& all, const ErrorLines& errors) const;
  void keep_generic_only_without_specific(std::vector<Hits>& all) const;
  void rank_specializations_above(std::vector<Hits>& all) const;
  void give_way_to_wrapped_exceptions(std::vector<Hits>& all, const ErrorLines& errors) const;
  // Keeps, for an entry with match.same_traceback, the root events with one of those refs in
  // their own traceback, and those refs' events in a kept root's traceback.
  void keep_frames_of_root_tracebacks(Hits& h) const;
  bool outlived_warning(const Hits& h, const ErrorLines& errors) const;  // entry_evaluation.cpp
  bool finished_after_every_signal(const Hits& h, const ErrorLines& errors) const;  // entry_evaluation.cpp
  bool launcher_reported_failure() const;  // entry_evaluation.cpp
  bool run_said_finished() const;           // entry_evaluation.cpp
  // The exception line that closes the traceback under `header`, past the fixed window when the
  // header's frames run on to it (ErrorLines::frame_lines; correlator.cpp).
  const Event* traceback_closing_exception(const Event& header, const ErrorLines& e) const;
  uint64_t end_of_frames_below(const Event& header, const ErrorLines& e) const;
  bool read_error_words(const ErrorLines& errors);  // entry_evaluation.cpp
  std::vector<size_t> consequence_defs() const;
  void add_last_resort(std::vector<Hits>& all, const std::vector<Hits>& fallbacks, std::vector<Hits>& candidates) const;
  std::optional<Hits> hang_from_silence(bool run_finished) const;  // run_said_finished(), computed once
  // The silent-hang entry as a supported candidate with `confidence` (hang_from_silence, outside ends).
  std::optional<Hits> silent_hang(double confidence) const;
  Collectives analyse_collectives() const;  // collectives.cpp
  LauncherVerdict launcher_verdict() const;
  void explain_unrecognized(Diagnosis& d, const ErrorLines& errors, const LauncherVerdict& launcher,
                            const OwnErrors& own) const;  // diagnosis_assembly.cpp (with finish())
  void list_evidence(Diagnosis& d, const Hits& top) const;
  void assign_collateral(Diagnosis& d, const Hits& top, const Collectives& coll) const;  // collateral.cpp
  void report_limits(Diagnosis& d) const;    // diagnosis_assembly.cpp
  void summarise_ranks(Diagnosis& d, const ErrorLines& errors) const;
  std::optional<StoppedRun> stopped_run() const;  // stopped_run.cpp
  // Whether the run went on past `ev`: its rank (for an unranked line any rank; in a one-rank
  // log the unranked lines too) ends on a progress line after it in the same input, or says
  // after it that the run finished (job_completion_marker) (stopped_run.cpp).
  bool outlived(const Event& ev) const;
  bool finished_after(const Event& ev) const;  // a completion line follows it (stopped_run.cpp)
  struct OutsideEnd;  // a time limit or cancel that ended a job long idle (correlator_steps.h)
  std::optional<OutsideEnd> hang_before_outside_end(std::vector<Hits>& all) const;  // stopped_run.cpp
  void note_outside_end(Diagnosis& d, const OutsideEnd& ended) const;  // diagnosis_assembly.cpp
  void append_tail(RankState& into, RankState& later, uint64_t line_offset) const;
  bool digest_tail_progress(RankState& rs, LineAttributor& attributor) const;
  void shorten_tails_of_large_job(LineAttributor& attributor);
  static void trim_tail(RankState& rs, size_t cap);
  bool large_job_tails_ = false;  // shorten_tails_of_large_job() ran

  const Library& lib_;
  std::vector<std::vector<Event>> events_by_def_;
  std::vector<uint64_t> count_by_def_;
  std::shared_ptr<const CorrelatorTables> tables_;
  const CorrelatorTables& t_;  // *tables_
  std::vector<bool> dropped_noted_;  // pattern already listed in limits_.dropped
  std::map<int, RankState> ranks_;
  std::vector<RankState*> rank_index_;  // O(1) lookup on the hot path (map nodes are stable)
  std::vector<RankState*> unsettled_;   // ranks with tail lines kept as views
  // The lines that name no rank (a single-process log, a launcher's own output): their tail
  // shows whether an unranked log ends while training made progress (stopped_run()).
  RankState unranked_;
  Timestamp first_time_;  // the job's first wall-clock time, for how long a stopped run ran
  void apply_tail_progress();
  std::vector<InputSummary> inputs_;
  uint64_t order_ = 0;
  int ref_year_ = 0;  // the year of the job's first full timestamp
  std::map<std::string, int64_t> host_offset_ms_;  // estimate_clock_skew()
  std::vector<ClockSkew> clock_skew_;
  // The newest input file's modification time (set_file_time): dates year-less times when no
  // line has a year.
  int64_t file_time_ms_ = 0;
  Limits limits_;
  bool ranks_truncated_ = false;
  uint64_t texts_cut_ = 0;  // matched lines whose stored text hit kMaxEventText
  // The global bound on stored events (kEventBudget): bytes held, ranks with an event per
  // pattern (only for patterns past their first kMinEventsPerPattern events), and whether the
  // budget dropped anything.
  size_t event_bytes_ = 0;
  size_t event_budget_ = kEventBudget, event_hard_budget_ = kEventHardBudget;  // share_event_budget()
  std::vector<std::unordered_set<int>> ranks_stored_;
  uint64_t budget_dropped_ = 0, budget_cut_ = 0;  // events not stored / stored with a cut text, past the budget
  // Whether an event of `def` could still be stored (cheap: no rank known yet).
  bool may_store(size_t def) const {
    size_t n = events_by_def_[def].size();
    if (t_.counted_only[def]) return n < kMinEventsPerPattern;
    return n < kMaxEventsPerPattern && (n < kMinEventsPerPattern || event_bytes_ < event_hard_budget_);
  }
  // Stores `ev` if the bounds allow (cutting its text when past the budget); false when dropped.
  bool store_event(Event&& ev);
  // Whether any rank (or the unranked lines) reported training progress: a step counter moved.
  bool job_made_progress() const;
  // Whether `rank` already has a stored event of `def` (past the budget only).
  bool rank_has_event(size_t def, int key);
  // Patterns whose events say which ranks observed a failure: each rank's first is kept.
  bool rank_set_pattern(size_t def) const { return t_.own_timeout[def] || t_.cascade[def] || t_.identity[def]; }
};

}  // namespace firstfault
