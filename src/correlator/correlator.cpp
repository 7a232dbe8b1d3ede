#include "firstfault/correlator/correlator.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <set>

#include "correlator_steps.h"
#include "firstfault/correlator/traceback.h"
#include "firstfault/reader/log_reader.h"
#include "firstfault/util/line_template.h"
#include "firstfault/util/pci.h"
#include "firstfault/util/strings.h"

namespace firstfault {

namespace {
// The exception of a failed import, as the traceback's last line names it.
bool names_failed_import(const Event& exception_line) {
  static const RE2 kImportFailure(R"(\b(?:ModuleNotFoundError|ImportError)\b)");
  return RE2::PartialMatch(exception_line.text.view(), kImportFailure);
}

// A line whose peeled prefix ends in a record of Python's logging in its default format
// (logging.BASIC_FORMAT "%(levelname)s:%(name)s:%(message)s", or with the time in the logger's
// place) at ERROR or CRITICAL.
bool is_python_logging_record(const Event& ev) {
  static const RE2 kRecord(R"((?:^|[\s\])])(?:ERROR|CRITICAL):(?:[\w.]+|\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d+):\s*$)");
  std::string_view text = ev.text.view();
  return ev.body_at > 0 && ev.body_at <= text.size() && RE2::PartialMatch(text.substr(0, ev.body_at), kRecord);
}
}  // namespace

using correlator_detail::rank_or;
using correlator_detail::to_int_or;
using correlator_detail::world_or;
using correlator_detail::below_in_traceback_window;
using correlator_detail::kTracebackWindowLines;
using correlator_detail::kLinesAfterFrame;

namespace {

// A line in which a rank reports that it timed out waiting in a collective or transfer
// (NCCL watchdog, Gloo): any pattern that captures `timeout_ms` and does not name another rank.
bool is_nccl_timeout_def(const Library& lib, size_t def) {
  const auto& caps = lib.patterns[def].capture_names;
  auto has = [&](const char* c) { return std::find(caps.begin(), caps.end(), c) != caps.end(); };
  return has("timeout_ms") && !has("rank");
}

}  // namespace

CorrelatorTables::CorrelatorTables(const Library& lib, std::vector<size_t> tail_patterns)
    : referenced(lib.patterns.size(), false),
      has_step(lib.patterns.size(), false),
      own_timeout(lib.patterns.size(), false),
      consequence(lib.patterns.size(), false),
      cascade(lib.patterns.size(), false),
      identity(lib.patterns.size(), false),
      essential(lib.patterns.size(), false),
      counted_only(lib.patterns.size(), false),
      tail_defs(std::move(tail_patterns)) {
  for (auto name : {"nccl_comm_init_rank", "nccl_init_start_rank", "ray_train_process_group_rank", "ray_train_worker_rank"})
    if (auto def = lib.find_pattern(name)) identity[*def] = essential[*def] = true;
  for (auto name : correlator_detail::kCounterPatterns)
    if (auto def = lib.find_pattern(name)) essential[*def] = true;
  for (const auto& [name, what] : correlator_detail::kLauncherFirstFailure)
    if (auto def = lib.find_pattern(name)) consequence[*def] = true;
  std::vector<bool> as_root(lib.patterns.size(), false);
  for (const Entry& e : lib.entries)
    for (const PatternRef& r : e.refs) {
      referenced[r.def] = true;
      if (r.role == Role::kRoot) as_root[r.def] = true;
      if (r.role == Role::kCascade || r.role == Role::kTeardown) consequence[r.def] = true;
      if (r.role == Role::kCascade) cascade[r.def] = true;
    }
  for (size_t i = 0; i < lib.patterns.size(); ++i)
    if (as_root[i]) consequence[i] = cascade[i] = false;
  for (size_t i = 0; i < lib.patterns.size(); ++i) {
    const auto& caps = lib.patterns[i].capture_names;
    has_step[i] = std::find(caps.begin(), caps.end(), "step") != caps.end();
    own_timeout[i] = is_nccl_timeout_def(lib, i);
    if (own_timeout[i]) essential[i] = true;
  }
  mark_counted_only(lib);  // after `essential` is whole: an essential pattern keeps its events
  served_request = lib.find_pattern("server_request_served");
}

// A pattern that entries name only in `absent:` (progress that rules out a hang at start-up) is
// read by its count alone: a million progress lines need no stored events.
void CorrelatorTables::mark_counted_only(const Library& lib) {
  std::vector<bool> in_absent(lib.patterns.size(), false), elsewhere(lib.patterns.size(), false);
  for (const Entry& e : lib.entries)
    for (size_t k = 0; k < e.refs.size(); ++k) {
      const size_t def = e.refs[k].def;
      const bool absent = std::find(e.match.absent.begin(), e.match.absent.end(), k) != e.match.absent.end();
      (absent ? in_absent : elsewhere)[def] = true;
    }
  for (size_t i = 0; i < lib.patterns.size(); ++i) counted_only[i] = in_absent[i] && !elsewhere[i] && !essential[i];
}

Correlator::Correlator(const Library& lib, std::shared_ptr<const CorrelatorTables> tables)
    : lib_(lib),
      events_by_def_(lib.patterns.size()),
      count_by_def_(lib.patterns.size(), 0),
      tables_(std::move(tables)),
      t_(*tables_),
      dropped_noted_(lib.patterns.size(), false) {}

void Correlator::count_event(size_t def) {
  ++count_by_def_[def];
  note_dropped(def);
}

void Correlator::note_dropped(size_t def) {
  if (dropped_noted_[def]) return;  // hot: every line of a pattern past its bound comes here
  dropped_noted_[def] = true;
  if (t_.counted_only[def]) return;  // its count is exact, and the count is all an entry reads
  if (std::find(limits_.dropped.begin(), limits_.dropped.end(), lib_.patterns[def].name) == limits_.dropped.end()) {
    limits_.truncated = true;
    limits_.dropped.push_back(lib_.patterns[def].name);
  }
}

void Correlator::note_step(int rank, std::string_view step, std::string_view text, bool view_lasts) {
  auto v = to_int(step);
  if (!v) return;
  if (RankState* rs = rank_state(rank)) {
    rs->last_step = *v;
    rs->last_step_order = order_;
    keep_last(*rs, rs->last_progress, rs->progress_pending, text.substr(0, 300), view_lasts);
  }
}

void Correlator::add_step(size_t def, int rank, std::string_view step, std::string_view text, bool view_lasts) {
  ++count_by_def_[def];
  note_step(rank, step, text, view_lasts);
  if (t_.referenced[def]) note_dropped(def);
}

Correlator::RankState* Correlator::add_rank_state(int rank) {
  if (rank < 0) return nullptr;
  size_t r = static_cast<size_t>(rank);
  if (ranks_.size() >= kMaxRanks || r >= (kMaxRanks << 4)) {
    ranks_truncated_ = true;
    return nullptr;
  }
  RankState* rs = &ranks_[rank];
  if (r >= rank_index_.size()) rank_index_.resize(r + 1, nullptr);
  rank_index_[r] = rs;
  return rs;
}

void Correlator::observe_line(const Attribution& a, std::string_view line, uint32_t input, uint64_t line_no,
                              bool view_lasts) {
  ++order_;
  if (a.time.kind == Timestamp::kFull && ref_year_ == 0) ref_year_ = year_of(a.time);
  if (!first_time_.valid() && a.time.valid() && a.time.kind != Timestamp::kBoot) first_time_ = a.time;
  // A launcher's line about a rank names it for events, but is not that rank's own output.
  RankState* rs = a.about_rank ? nullptr : a.rank < 0 ? &unranked_ : rank_state(a.rank);
  if (!rs) return;
  ++rs->lines;
  if (rs->host.empty() && !a.host.empty()) rs->host = std::string(a.host);
  if (a.time.valid() && a.time.kind != Timestamp::kBoot) rs->last_time = a.time;
  // Blank lines are not kept (an inline loop: find_first_not_of calls memchr per byte).
  size_t first = 0;
  while (first < line.size() && (line[first] == ' ' || line[first] == '\t' || line[first] == '\r' || line[first] == '\n'))
    ++first;
  if (first == line.size()) return;
  // Keep the last few lines (bounded, reusing their buffers): the last line of the rank and
  // where its last progress counter is read at the end.
  size_t cap = ranks_.size() > kLargeJobRanks ? kLargeJobTailLines : kTailLines;
  TailLine* t;
  if (rs->tail.size() < cap) {
    rs->tail.emplace_back();
    rs->tail.back().text.reserve(kTailLineBytes);
    rs->tail_next = rs->tail.size() % cap;
    t = &rs->tail.back();
  } else {
    // The cap falls to 4 once the job passes 1,024 ranks: a tail filled before that is longer
    // than the cap and its next slot may be past its end.
    if (rs->tail_next >= rs->tail.size()) rs->tail_next = 0;
    t = &rs->tail[rs->tail_next];
    if (++rs->tail_next == rs->tail.size()) rs->tail_next = 0;  // no division on every line
  }
  keep_last(*rs, t->text, t->pending, line.substr(0, std::min(line.size(), kTailLineBytes)), view_lasts);
  t->input = input;
  t->line_no = line_no;
}

void Correlator::keep_last(RankState& rs, std::string& text, std::string_view& pending, std::string_view line,
                           bool view_lasts) {
  // Most such lines are replaced by later lines of the same block: while the block is in memory
  // only a view is kept, copied by settle_tails() at the block's end.
  if (view_lasts) {
    pending = line;
    if (!rs.unsettled) {
      rs.unsettled = true;
      unsettled_.push_back(&rs);
    }
  } else {
    text.assign(line);
    pending = {};
  }
}

void Correlator::settle_tails() {
  for (RankState* rs : unsettled_) {
    if (rs->progress_pending.data() != nullptr) {
      rs->last_progress.assign(rs->progress_pending);
      rs->progress_pending = {};
    }
    for (TailLine& t : rs->tail) {
      if (t.pending.data() == nullptr) continue;
      t.text.assign(t.pending);
      t.pending = {};
    }
    rs->unsettled = false;
  }
  unsettled_.clear();
}

namespace {
// The path of an endpoint without its query string ("/search?q=1" -> "/search").
std::string endpoint_of(const Event& access_line) {
  const std::string* path = access_line.capture("path");
  return path ? path->substr(0, path->find('?')) : std::string();
}
}  // namespace

void Correlator::add_event(Event ev) {
  ev.order = order_;
  size_t def = ev.def;
  ++count_by_def_[def];
  // Progress counters are kept per rank, not as events (they can be millions of lines); a
  // pattern no entry uses (the engine's progress_* patterns) stores nothing else.
  if (const std::string* step = ev.capture("step")) {
    note_step(ev.rank, *step, ev.text);
    if (!t_.referenced[def]) return;
  }
  if (def == t_.served_request) {
    answered_.note(ev.input, endpoint_of(ev), ev.line);
    return;
  }
  store_event(std::move(ev));
}

namespace {
// Whose event it is, for keeping one per rank past the budget: its rank, else (an unprefixed
// NCCL line, rank resolved later from its host and pid) a key of its process, kept negative.
int rank_key(const Event& ev) {
  if (ev.rank >= 0 || ev.pid < 0) return ev.rank;
  size_t h = std::hash<std::string>{}(ev.host) * 1000003u ^ static_cast<size_t>(ev.pid);
  return -2 - static_cast<int>(h & 0x3fffffff);
}

// What an event costs the heap, so that the budget bounds the process and not only the text:
// strings past the small-string buffer in full, malloc's 16 bytes per block, and the event twice
// for the doubling of its pattern's list (the hostile log of docs/performance.md held 51 MB
// against a 20 MiB count before). Charging the list's actual growth instead let 13% more events
// into the same budget, and the process grew by as much: the budget is the process's bound.
// Its text is not in it: the first event of its line to be stored charges that (SharedText).
size_t event_cost(const Event& ev) {
  auto str = [](const std::string& s) { return s.capacity() > 15 ? s.capacity() + 1 + kMallocBlockOverhead : 0; };
  size_t n = 2 * sizeof(Event) + str(ev.host);
  if (ev.captures.capacity() > 0) n += ev.captures.capacity() * sizeof(ev.captures[0]) + kMallocBlockOverhead;
  for (const auto& [k, v] : ev.captures) n += str(k) + str(v);
  return n;
}
// A node of an unordered_set<int> and its share of the buckets.
constexpr size_t kRankSetEntryBytes = 16 + kMallocBlockOverhead + sizeof(void*);
}  // namespace

bool Correlator::rank_has_event(size_t def, int key) {
  if (ranks_stored_.empty()) ranks_stored_.resize(events_by_def_.size());
  auto& seen = ranks_stored_[def];
  if (seen.empty()) {  // built on the pattern's first event past the budget, and counted in it
    for (const Event& e : events_by_def_[def]) seen.insert(rank_key(e));
    event_bytes_ += seen.size() * kRankSetEntryBytes;
  }
  return seen.count(key) > 0;
}

bool Correlator::store_event(Event&& ev) {
  size_t def = ev.def;
  auto& list = events_by_def_[def];
  if (list.size() >= (t_.counted_only[def] ? kMinEventsPerPattern : kMaxEventsPerPattern)) {
    note_dropped(def);
    return false;
  }
  if (event_bytes_ >= event_budget_) {
    // Past the budget: a pattern's first events, then, for the patterns that tell which ranks
    // only observed the failure (collective timeouts, cascades), each rank's first event: the
    // set of ranks that timed out is what names the missing rank. Until the hard bound.
    bool first_of_pattern = list.size() < kMinEventsPerPattern;
    size_t bound = t_.essential[def] ? event_hard_budget_ : event_budget_ + (event_hard_budget_ - event_budget_) / 4;
    bool first_of_rank = event_bytes_ < bound && rank_set_pattern(def) && !rank_has_event(def, rank_key(ev));
    if (!first_of_pattern && !first_of_rank) {
      ++budget_dropped_;
      note_dropped(def);
      return false;
    }
    if (ev.text.size() > kEventTextOverBudget) {
      ev.text = SharedText(truncate_utf8(ev.text, kEventTextOverBudget));
      ++budget_cut_;
    }
  } else if (ev.text.size() > kMaxEventText) {
    ev.text = SharedText(truncate_utf8(ev.text, kMaxEventText));
    ++texts_cut_;
  }
  event_bytes_ += event_cost(ev) + ev.text.charge_once();
  // Kept once built (the pattern's first event past the budget builds it from the stored list).
  if (!ranks_stored_.empty() && !ranks_stored_[def].empty() && ranks_stored_[def].insert(rank_key(ev)).second)
    event_bytes_ += kRankSetEntryBytes;
  list.push_back(std::move(ev));
  return true;
}

int64_t Correlator::time_key(const Timestamp& t) const {
  return in_job_year(t).ms;
}

Timestamp Correlator::in_job_year(const Timestamp& t) const {
  if (t.kind != Timestamp::kNoYear) return t;
  if (ref_year_) return with_year(t, ref_year_);
  if (file_time_ms_) {
    Timestamp file;
    file.kind = Timestamp::kFull;
    file.ms = file_time_ms_;
    int year = year_of(file);
    Timestamp dated = with_year(t, year);
    // A day of slack: log times are local, the modification time is UTC.
    return dated.ms > file_time_ms_ + 86400000LL ? with_year(t, year - 1) : dated;
  }
  return t;
}

bool Correlator::earlier(const Event& a, const Event& b) const {
  bool ta = a.time.kind == Timestamp::kFull || a.time.kind == Timestamp::kNoYear;
  bool tb = b.time.kind == Timestamp::kFull || b.time.kind == Timestamp::kNoYear;
  // Year-less times are comparable with full ones only once a year is known.
  if (ta && tb && (a.time.kind == b.time.kind || ref_year_ || file_time_ms_)) {
    int64_t ka = event_key(a), kb = event_key(b);
    // One-second resolution on most formats: within a second, arrival order decides.
    if (std::llabs(ka - kb) >= 1000) return ka < kb;
  }
  if (a.input == b.input) return a.line < b.line;
  return a.order < b.order;
}

// A Python traceback runs from a header to the exception line that closes it: the same rank's
// first exception line after the header, within the few dozen lines a traceback takes, or
// further down when frame lines run from the header to it without a gap (a deep stack: uvicorn's
// and Starlette's middleware put 36 frames, 75 lines, above a rejected request's exception).
const Event* Correlator::traceback_closing_exception(const Event& header, const ErrorLines& e) const {
  auto exception_def = lib_.find_pattern("error_exception_line");
  if (!exception_def) return nullptr;
  const Event* closing = nullptr;
  for (const Event& ev : events_by_def_[*exception_def])
    if (below_in_traceback_window(header, ev, kMaxTracebackLines) && (!closing || ev.line < closing->line)) closing = &ev;
  if (!closing || closing->line <= header.line + kTracebackWindowLines) return closing;
  return closing->line <= end_of_frames_below(header, e) + kLinesAfterFrame ? closing : nullptr;
}

// The last frame line of the run of frames that starts right below `header` (each frame within
// kLinesAfterFrame lines of the one before: its code line, a caret line, a repeat notice).
uint64_t Correlator::end_of_frames_below(const Event& header, const ErrorLines& e) const {
  auto stream = e.frame_lines.find({header.input, header.rank});
  uint64_t end = header.line;
  if (stream == e.frame_lines.end()) return end;
  const std::vector<uint64_t>& frames = stream->second;
  for (auto it = std::upper_bound(frames.begin(), frames.end(), header.line); it != frames.end() && *it <= end + kLinesAfterFrame; ++it)
    end = *it;
  return end;
}

Correlator::ErrorLines Correlator::error_lines() const {
  ErrorLines e;
  if (auto frame = lib_.find_pattern("py_traceback_frame")) {
    for (const Event& ev : events_by_def_[*frame]) e.frame_lines[{ev.input, ev.rank}].push_back(ev.line);
    for (auto& [stream, lines] : e.frame_lines) std::sort(lines.begin(), lines.end());
  }
  for (auto name : {"error_exception_line", "error_fatal_line", "error_generic_line", "py_traceback_header"})
    if (auto def = lib_.find_pattern(name))
      for (const Event& ev : events_by_def_[*def]) {
        e.lines.push_back(&ev);
        e.error_at.insert({ev.input, ev.line});
      }
  // Lines an error pattern catches but that are known to be harmless (error_benign_line), and
  // the head of a stack c10 printed under a warning or info line (the line feed reports
  // c10_warning_stack only then).
  for (auto name : {"error_benign_line", "c10_warning_stack"})
    if (auto def = lib_.find_pattern(name))
      for (const Event& ev : events_by_def_[*def]) e.benign.insert({ev.input, ev.line});
  ignore_finalizer_tracebacks(e);
  ignore_rejections_served_after(e);
  ignore_logged_import_failures(e);
  // A line in which a component says an optional step failed and it went on, or one failed
  // attempt of a step it retries that the run outlived: its own words (an undefined symbol, a
  // CUDA OOM) are no root or cascade of any entry.
  if (auto def = lib_.find_pattern("optional_step_went_on"))
    for (const Event& ev : events_by_def_[*def]) e.ignore(ev, ev);
  if (auto def = lib_.find_pattern("retried_attempt_line"))
    for (const Event& ev : events_by_def_[*def])
      if (outlived(ev) || retry_succeeded_after(ev)) e.ignore(ev, ev);
  // A traceback is one error, told by the exception that closes it (harmless when that is:
  // KeyboardInterrupt); its header counts on its own only where the paste lost the exception.
  if (auto hdr = lib_.find_pattern("py_traceback_header"))
    for (const Event& h : events_by_def_[*hdr])
      if (const Event* closing = traceback_closing_exception(h, e)) {
        if (e.is_benign(*closing)) e.mark_harmless(h, *closing);
        e.benign.insert({h.input, h.line});
      }
  add_headless_tracebacks(e, kTracebackWindowLines);
  mark_teardown_after_completion(e);
  mark_shutdown_after_stop_signal(e);
  mark_outgrown_startup_warnings(e);
  return e;
}

// A later line of the same input and rank saying the retried connect went through (to the
// same address when both name one).
bool Correlator::retry_succeeded_after(const Event& attempt) const {
  auto def = lib_.find_pattern("retry_succeeded_line");
  if (!def) return false;
  const std::string* peer = attempt.capture("peer");
  return std::any_of(events_by_def_[*def].begin(), events_by_def_[*def].end(), [&](const Event& ok) {
    const std::string* ok_peer = ok.capture("peer");
    return ok.input == attempt.input && ok.rank == attempt.rank && ok.line > attempt.line &&
           (!peer || !ok_peer || *peer == *ok_peer);
  });
}

void Correlator::ErrorLines::mark_harmless(const Event& from, const Event& to) {
  for (const Event* ev : lines)
    if (ev->input == from.input && ev->rank == from.rank && ev->line >= from.line && ev->line <= to.line)
      benign.insert({ev->input, ev->line});
}

void Correlator::ErrorLines::ignore(const Event& from, const Event& to) {
  mark_harmless(from, to);
  uint64_t& last = ignored[{from.input, from.rank, from.line}];
  last = std::max(last, to.line);
}

// The traceback Python printed under "Exception ignored in: ..." (a finalizer that raised at
// exit): Python ignored it, so nothing in it, header to exception, fails anything.
void Correlator::ignore_finalizer_tracebacks(ErrorLines& e) const {
  if (auto hdr = lib_.find_pattern("py_exception_ignored"))
    for (const Event& h : events_by_def_[*hdr])
      if (const Event* closing = traceback_closing_exception(h, e)) e.ignore(h, *closing);
}

// A request a server rejected and logged with its traceback (vLLM's "Error in preprocessing
// prompt inputs", answered with a 400; uvicorn's "Exception in ASGI application" under the access
// line of the request's error status), or on one line without one, is harmless when the server
// went on serving: a request answered later in the same input, to the same endpoint when the
// access line above the header names it. A log that ends at the rejection shows a deployment whose
// requests fail (real-log round 79c: a base model without a chat template); so does one in which
// only another service in the file answers (r76a: a RAG proxy's every chat request failed while
// its search service answered).
void Correlator::ignore_rejections_served_after(ErrorLines& e) const {
  auto hdr = lib_.find_pattern("server_request_rejected");
  if (!hdr) return;
  const AnsweredRequests& answered = answered_;
  const auto failed = failed_requests();
  for (const Event& h : events_by_def_[*hdr]) {
    const Event* closing = traceback_closing_exception(h, e);
    if (!closing) closing = &h;
    std::optional<std::string> endpoint = endpoint_failed_above(h, failed);
    if (answered.last_after(closing->input, endpoint) > closing->line) e.ignore(h, *closing);
  }
}

// An optional import the code caught and logged ('try: import wandb / except ImportError:
// logging.exception("Unable to import wandb.")'): Python's logging prints its record in the
// default format ("ERROR:root:<message>", a prefix the attributor peels) and the traceback on
// the next lines. The program went on without the module; a module it needed fails again,
// uncaught, with no record above it (real-log round 82f).
void Correlator::ignore_logged_import_failures(ErrorLines& e) const {
  auto hdr = lib_.find_pattern("py_traceback_header");
  if (!hdr) return;
  // Only the error lines right above a header can be its record: the regex reads those alone.
  std::map<std::tuple<uint32_t, int, uint64_t>, const Event*> records;
  for (const Event& h : events_by_def_[*hdr])
    if (h.line > 0) records.emplace(std::tuple{h.input, h.rank, h.line - 1}, nullptr);
  for (const Event* ev : e.lines)
    if (auto slot = records.find({ev->input, ev->rank, ev->line}); slot != records.end() && is_python_logging_record(*ev))
      slot->second = ev;
  for (const Event& h : events_by_def_[*hdr]) {
    auto record = h.line > 0 ? records.find({h.input, h.rank, h.line - 1}) : records.end();
    if (record == records.end() || !record->second) continue;
    const Event* closing = traceback_closing_exception(h, e);
    if (closing && names_failed_import(*closing)) e.ignore(*record->second, *closing);
  }
}

void Correlator::AnsweredRequests::note(uint32_t input, const std::string& endpoint, uint64_t line) {
  uint64_t& last = any[input];
  last = std::max(last, line);
  uint64_t& last_here = by_endpoint[{input, endpoint}];
  last_here = std::max(last_here, line);
}

uint64_t Correlator::AnsweredRequests::last_after(uint32_t input, const std::optional<std::string>& endpoint) const {
  if (endpoint) {
    auto it = by_endpoint.find({input, *endpoint});
    return it == by_endpoint.end() ? 0 : it->second;
  }
  auto it = any.find(input);
  return it == any.end() ? 0 : it->second;
}

// The access lines of requests answered with a 4xx/5xx (server_request_failed), by (input, line).
std::map<std::pair<uint32_t, uint64_t>, const Event*> Correlator::failed_requests() const {
  std::map<std::pair<uint32_t, uint64_t>, const Event*> at;
  if (auto failed = lib_.find_pattern("server_request_failed"))
    for (const Event& f : events_by_def_[*failed]) at.emplace(std::pair{f.input, f.line}, &f);
  return at;
}

// The endpoint of the request whose error status uvicorn logged on one of the few lines above
// `header`, by the same process where both lines name theirs.
std::optional<std::string> Correlator::endpoint_failed_above(
    const Event& header, const std::map<std::pair<uint32_t, uint64_t>, const Event*>& failed) const {
  constexpr uint64_t kAccessLineAbove = 3;
  for (uint64_t up = 1; up <= kAccessLineAbove && up < header.line; ++up) {
    auto it = failed.find({header.input, header.line - up});
    if (it != failed.end() && (it->second->pid < 0 || header.pid < 0 || it->second->pid == header.pid))
      return endpoint_of(*it->second);
  }
  return std::nullopt;
}

// The root lines of an entry that only describes a job stopped before it trained (`no_progress`),
// in a job that trained: warnings it started past (slurmstepd's "couldn't chdir ... going to /tmp
// instead" before a 16-rank run that trained to its end). Harmless here, for the verdict and for
// generic entries alike.
void Correlator::mark_outgrown_startup_warnings(ErrorLines& e) const {
  if (!job_made_progress()) return;
  for (const Entry& entry : lib_.entries) {
    if (!entry.match.no_progress) continue;
    for (const PatternRef& r : entry.refs)
      if (r.role == Role::kRoot)
        for (const Event& ev : events_by_def_[r.def]) e.benign.insert({ev.input, ev.line});
  }
}

namespace {
// Keeps in `first[key]` the lowest line given for it.
template <class Key>
void keep_first_line(std::map<Key, uint64_t>& first, const Key& key, uint64_t line) {
  auto [it, fresh] = first.try_emplace(key, line);
  if (!fresh) it->second = std::min(it->second, line);
}
// A step of NCCL's communicator teardown named in an error: the proxy's Close operation
// ("Failed to execute operation Close from rank N", proxy.cc) or the destroy/abort calls.
bool names_nccl_teardown_step(std::string_view text) {
  return text.find("operation Close") != std::string_view::npos || text.find("ncclCommDestroy") != std::string_view::npos ||
         text.find("ncclCommAbort") != std::string_view::npos;
}
// A line of an NCCL error report: NCCL's own, or PyTorch's about an NCCL result.
bool is_nccl_report_line(std::string_view text) {
  for (std::string_view mark : {"NCCL", "nccl", "Proxy Service", "Last error"})
    if (text.find(mark) != std::string_view::npos) return true;
  return false;
}
}  // namespace

// A rank that said its training completed ("Training completed", "exits successfully") and then
// printed NCCL warnings was tearing down: ncclCommDestroy and the process exit close sockets and
// deregister buffers whose peers have already gone ("socket state (9) is not ready", "deregister
// IPC buffer ... failed"). Those warnings are no failure. Rank 0's marker, or an unranked one,
// speaks for the whole run (MLPerf's run_stop, the trainer's summary are logged by rank 0 only),
// so the other ranks' NCCL warnings later in the same file are teardown too. An error of another
// kind after the marker (a final checkpoint that cannot be written) still counts.
void Correlator::mark_teardown_after_completion(ErrorLines& e) const {
  auto marker = lib_.find_pattern("job_completion_marker");
  if (!marker || events_by_def_[*marker].empty()) return;
  std::map<std::pair<uint32_t, int>, uint64_t> completed_at;  // (input, rank) -> first marker line
  std::map<uint32_t, uint64_t> run_completed_at;              // input -> rank 0's or an unranked marker
  for (const Event& ev : events_by_def_[*marker]) {
    keep_first_line(completed_at, {ev.input, ev.rank}, ev.line);
    if (ev.rank <= 0) keep_first_line(run_completed_at, ev.input, ev.line);
  }
  auto completed_before = [&](const Event& ev) {
    auto own = completed_at.find({ev.input, ev.rank});
    auto run = run_completed_at.find(ev.input);
    return (own != completed_at.end() && ev.line > own->second) || (run != run_completed_at.end() && ev.line > run->second);
  };
  // A rank whose NCCL teardown step itself failed after the run completed (the proxy's Close,
  // ncclCommDestroy/Abort): its whole NCCL error report is teardown, the watchdog's [E] line and
  // the ncclResult line with it (an MLPerf run on 32 GPUs whose rank 30 could not close its proxy
  // connections after run_stop success, round 85f). Every event is looked at, not only the error
  // lines: the Close line is an entry's root without being an error line.
  std::set<std::pair<uint32_t, int>> failed_teardown;
  for (const auto& events : events_by_def_)
    for (const Event& ev : events)
      if (names_nccl_teardown_step(ev.text.view()) && completed_before(ev)) failed_teardown.insert({ev.input, ev.rank});
  auto teardown = [&](const Event& ev) {
    std::string_view text = ev.text.view();
    return text.find("NCCL WARN ") != std::string_view::npos ||
           (failed_teardown.count({ev.input, ev.rank}) && is_nccl_report_line(text));
  };
  for (const Event* ev : e.lines)
    if (completed_before(*ev) && teardown(*ev)) e.benign.insert({ev->input, ev->line});
  for (const auto& events : events_by_def_)
    for (const Event& ev : events)
      if (completed_before(ev) && teardown(ev)) e.after_completion.insert({ev.input, ev.line});
}

// A server's engine that logged a stop signal (server_stop_signal_received) is shutting down on
// purpose: the errors printed after it in the same input are that shutdown (vLLM's API server
// raising EngineDeadError once the engine it was told to stop is gone), not a failure. Errors
// before it still count, and so do the lines of an input that logged no such signal.
void Correlator::mark_shutdown_after_stop_signal(ErrorLines& e) const {
  auto signal = lib_.find_pattern("server_stop_signal_received");
  if (!signal || events_by_def_[*signal].empty()) return;
  std::map<uint32_t, uint64_t> stopped_at;  // input -> its first stop signal
  for (const Event& ev : events_by_def_[*signal]) keep_first_line(stopped_at, ev.input, ev.line);
  for (const Event* ev : e.lines) {
    auto it = stopped_at.find(ev->input);
    if (it == stopped_at.end() || ev->line <= it->second) continue;
    e.benign.insert({ev->input, ev->line});
    e.after_completion.insert({ev->input, ev->line});
  }
}

// Traceback frames a paste kept without their header and without the exception that closed
// them (a log cut at both ends, processes' tracebacks interleaved line by line): still a crash
// report. The first frame of each such run counts as an error line.
void Correlator::add_headless_tracebacks(ErrorLines& e, uint64_t window) const {
  auto frame_def = lib_.find_pattern("py_traceback_frame");
  if (!frame_def) return;
  std::set<std::pair<uint32_t, uint64_t>> headers, exceptions;
  for (auto [name, into] : {std::pair{"py_traceback_header", &headers}, std::pair{"error_exception_line", &exceptions}})
    if (auto def = lib_.find_pattern(name))
      for (const Event& ev : events_by_def_[*def]) into->insert({ev.input, ev.line});
  auto any_in = [](const std::set<std::pair<uint32_t, uint64_t>>& lines, uint32_t input, uint64_t from, uint64_t to) {
    auto it = lines.lower_bound({input, from});
    return it != lines.end() && it->first == input && it->second <= to;
  };
  std::pair<uint32_t, uint64_t> last_counted{UINT32_MAX, 0};
  for (const Event& ev : events_by_def_[*frame_def]) {
    if (last_counted.first == ev.input && ev.line <= last_counted.second + window) continue;  // same run
    uint64_t from = ev.line > window ? ev.line - window : 0;
    if (any_in(headers, ev.input, from, ev.line) || any_in(exceptions, ev.input, ev.line, ev.line + window)) continue;
    e.lines.push_back(&ev);
    e.error_at.insert({ev.input, ev.line});
    last_counted = {ev.input, ev.line};
  }
}

void Correlator::keep_earliest(std::map<int, const Event*>& by_rank, const Event& ev) const {
  const Event*& slot = by_rank[ev.rank];
  if (!slot || earlier(ev, *slot)) slot = &ev;
}

// Lines some entry reads as a consequence (an aborted communicator, a reset connection, a
// launcher's kill), and those that report losing a peer (error_consequence_line), whichever entry
// knows them: not the error of the rank that printed them.
std::set<std::pair<uint32_t, uint64_t>> Correlator::consequence_lines() const {
  std::set<std::pair<uint32_t, uint64_t>> lines;
  if (auto def = lib_.find_pattern("error_consequence_line"))
    for (const Event& ev : events_by_def_[*def]) lines.insert({ev.input, ev.line});
  for (size_t def = 0; def < events_by_def_.size(); ++def)
    if (t_.consequence[def])
      for (const Event& ev : events_by_def_[def]) lines.insert({ev.input, ev.line});
  return lines;
}

std::map<int, const Event*> Correlator::own_error_lines(const ErrorLines& errors) const {
  // Once a rank has printed a cascade line, what it prints next (the stack under a store error,
  // the exit code in torchrun's summary) is more of the same.
  std::set<std::pair<uint32_t, uint64_t>> consequences = consequence_lines();
  std::map<int, const Event*> first_cascade;  // the first cascade line the rank itself printed
  if (auto def = lib_.find_pattern("error_consequence_line"))
    for (const Event& ev : events_by_def_[*def])
      if (ev.rank >= 0) keep_earliest(first_cascade, ev);
  for (size_t def = 0; def < events_by_def_.size(); ++def)
    if (t_.consequence[def] && t_.cascade[def])
      for (const Event& ev : events_by_def_[def])
        // A launcher's teardown line about the rank ("failed (exitcode: 1) local_rank: 3") may be
        // printed before the rank's own traceback reaches the log: it does not end the rank's errors.
        if (ev.rank >= 0) keep_earliest(first_cascade, ev);
  std::map<int, const Event*> own;
  for (const Event* ev : errors.lines) {
    if (ev->rank < 0 || errors.is_benign(*ev) || consequences.count({ev->input, ev->line})) continue;
    if (auto c = first_cascade.find(ev->rank); c != first_cascade.end() && !earlier(*ev, *c->second)) continue;
    keep_earliest(own, *ev);
  }
  return own;
}

std::optional<RankDecision> Correlator::suspect_from_error_lines(const std::map<int, const Event*>& own,
                                                                 std::optional<int> launcher_rank,
                                                                 const std::string& launcher_name) const {
  if (own.empty()) return std::nullopt;
  std::vector<const Event*> firsts;
  for (const auto& [r, ev] : own) firsts.push_back(ev);
  std::sort(firsts.begin(), firsts.end(), [&](const Event* a, const Event* b) { return earlier(*a, *b); });
  const Event* first = firsts.front();

  RankDecision s;
  s.method = "first-error";
  for (const Event* ev : firsts) s.candidates.push_back(ev->rank);
  s.first_evidence = to_evidence(*first, lib_.patterns[first->def].name, Role::kContext);
  bool launcher_agrees = launcher_rank && *launcher_rank == first->rank;
  std::string agreement = launcher_agrees ? fmt::format("; {} names it too", launcher_name) : "";
  if (firsts.size() == 1) {
    s.rank = first->rank;
    if (ranks_.size() <= 1) {
      s.confidence = 0.3;
      s.reason = fmt::format("rank {} is the only rank in the log{}", first->rank, agreement);
    } else {
      s.confidence = launcher_agrees ? 0.6 : 0.5;
      s.reason = fmt::format("rank {} is the only rank with an error line of its own "
                             "(the other ranks show none, or only consequences){}",
                             first->rank, agreement);
    }
  } else {
    const Event* second = firsts[1];
    bool separated = first->time.valid() && second->time.valid() && first->time.kind != Timestamp::kBoot &&
                     second->time.kind != Timestamp::kBoot &&
                     std::llabs(event_key(*second) - event_key(*first)) >= 1000;
    // The same message on every rank at about the same time is one job-wide cause; different
    // messages are one rank's error and what the others made of it.
    std::string shape = line_template(first->text);
    bool same_everywhere = std::all_of(firsts.begin(), firsts.end(),
                                       [&](const Event* ev) { return line_template(ev->text) == shape; });
    if (!separated && same_everywhere && own.size() >= ranks_.size()) {
      std::vector<int> all(s.candidates);
      std::sort(all.begin(), all.end());
      s.method = "job-wide";
      s.confidence = 0.4;
      s.reason = fmt::format("every rank ({}) raised the same error at about the same time: "
                             "a job-wide cause, not one rank",
                             format_ranges(all));
    } else {
      s.rank = first->rank;
      s.confidence = separated ? 0.4 : 0.3;
      if (launcher_agrees) s.confidence += 0.1;
      s.reason = separated ? fmt::format("rank {} printed the first error line, at least a "
                                         "second before rank {} ({} ranks printed errors){}",
                                         first->rank, second->rank, firsts.size(), agreement)
                           : fmt::format("{} ranks printed errors within a second and rank {} "
                                         "printed first{}",
                                         firsts.size(), first->rank, agreement);
    }
  }
  if (s.rank && launcher_rank && !launcher_agrees)
    s.reason += fmt::format("; {} names rank {} (the order in which it saw processes exit)", launcher_name, *launcher_rank);
  if (s.rank)
    if (auto it = ranks_.find(*s.rank); it != ranks_.end()) s.host = first->host.empty() ? it->second.host : first->host;
  return s;
}

Evidence Correlator::to_evidence(const Event& ev, const std::string& pattern, Role role) const {
  Evidence e;
  e.pattern = pattern;
  e.role = role_name(role);
  e.file = ev.input < inputs_.size() ? inputs_[ev.input].path : "";
  e.line = ev.line;
  e.rank = ev.rank;
  e.host = ev.host;
  e.pid = ev.pid;
  e.time = in_job_year(ev.time);
  e.text = ev.text;
  e.captures = ev.captures;
  return e;
}

namespace {
// A stall report lists the ranks that reached an op ("[ready ranks: 5, 6, 3, 1, 4, 0]") or the
// ranks it waits for ("[missing ranks: 1, 2, ..., 15]"). Either way, the only rank of 0..N-1 the
// list leaves out is the odd one: the one that never came, or the one that alone issued the op
// (rank-conditional code). N is the job's size as far as the log shows it (the highest rank
// listed or seen, or NCCL's nranks). -1 when none or several are left out, or the list has fewer
// than `min_listed` ranks (one missing rank of two says nothing about the other).
int the_one_rank_not_listed(const std::string& listed, int world_seen, size_t min_listed) {
  std::set<int> ready;  // the ranks listed
  for (size_t i = 0; i < listed.size();) {
    size_t j = listed.find_first_of("0123456789", i);
    if (j == std::string::npos) break;
    size_t k = listed.find_first_not_of("0123456789", j);
    std::string number = listed.substr(j, k == std::string::npos ? std::string::npos : k - j);
    int r = rank_or(&number, -1);
    if (r >= 0) ready.insert(r);
    i = k == std::string::npos ? listed.size() : k;
  }
  if (ready.size() < std::max<size_t>(min_listed, 1)) return -1;
  int world = std::max(world_seen, *ready.rbegin() + 1);
  if (world - static_cast<int>(ready.size()) != 1) return -1;
  for (int r = 0; r < world; ++r)
    if (!ready.count(r)) return r;
  return -1;
}

// srun names a task on a host ("srun: error: gpu017: task 46: Out Of Memory"). The task id is the
// global rank when srun started one process per rank, and the node index when it started one
// launcher per node; the job shows which when the rank of that number ran on the named host.
int rank_of_slurm_task(const Event& ev, const std::map<int, std::string>& host_of_rank) {
  const std::string* host = ev.capture("host");
  int task = rank_or(ev.capture("task"), -1);
  if (!host || task < 0) return -1;
  auto it = host_of_rank.find(task);
  return it != host_of_rank.end() && it->second == *host ? task : -1;
}
}  // namespace

bool Correlator::waited_in_collective(int rank) const {
  for (size_t def = 0; def < events_by_def_.size(); ++def)
    if (t_.own_timeout[def])
      for (const Event& ev : events_by_def_[def])
        if (ev.rank == rank) return true;
  return false;
}

void Correlator::resolve_times_and_ranks() {
  // host:pid -> rank from NCCL communicator init lines (the largest communicator is the world).
  std::map<std::pair<std::string, int64_t>, std::pair<int, int>> nccl_rank;  // -> (rank, nranks)
  std::map<std::pair<std::string, std::string>, int> bus_rank;              // (host, pci) -> rank
  std::set<std::string> hosts;
  for (const auto& [r, rs] : ranks_)
    if (!rs.host.empty()) hosts.insert(rs.host);
  for (auto name : {"nccl_comm_init_rank", "nccl_init_start_rank"}) {
    auto def = lib_.find_pattern(name);
    if (!def) continue;
    for (const Event& ev : events_by_def_[*def]) {
      int rank = rank_or(ev.capture("rank"), -1), nranks = world_or(ev.capture("nranks"), 0);
      if (rank < 0 || ev.host.empty()) continue;
      hosts.insert(ev.host);
      auto key = std::make_pair(ev.host, ev.pid);
      auto it = nccl_rank.find(key);
      if (it == nccl_rank.end() || nranks > it->second.second) nccl_rank[key] = {rank, nranks};
    }
  }
  // Ray Train states each worker's world rank outright: the worker's own process-group line (its
  // Ray prefix gives ip and pid; vLLM's Ray workers print their parallel-state rank the same way)
  // and the trainer's worker list (ip and pid in the text). The ip is absent from a prefix on the
  // driver's node, so a pid that one listed worker has maps alone.
  std::map<int64_t, int> ray_pid_rank;  // -1: several workers have the pid
  auto note_ray_worker = [&](const std::string& host, int64_t pid, int rank) {
    if (rank < 0 || pid < 0) return;
    if (!host.empty()) {
      hosts.insert(host);
      nccl_rank[{host, pid}] = {rank, std::numeric_limits<int>::max()};  // the world, whatever NCCL saw
    }
    auto [it, fresh] = ray_pid_rank.emplace(pid, rank);
    if (!fresh && it->second != rank) it->second = -1;
  };
  for (auto name : {"ray_train_process_group_rank", "vllm_parallel_state_rank"})
    if (auto def = lib_.find_pattern(name))
      for (const Event& ev : events_by_def_[*def]) note_ray_worker(ev.host, ev.pid, rank_or(ev.capture("rank"), -1));
  if (auto def = lib_.find_pattern("ray_train_worker_rank"))
    for (const Event& ev : events_by_def_[*def]) {
      const std::string* host = ev.capture("worker_host");
      note_ray_worker(host ? *host : std::string(), to_int_or(ev.capture("worker_pid"), -1), rank_or(ev.capture("world_rank"), -1));
    }
  // Second pass for bus ids: only world-communicator lines map a GPU to a global rank.
  if (auto def = lib_.find_pattern("nccl_comm_init_rank")) {
    for (const Event& ev : events_by_def_[*def]) {
      auto it = nccl_rank.find({ev.host, ev.pid});
      const std::string* bus = ev.capture("busid");
      if (it == nccl_rank.end() || !bus) continue;
      if (rank_or(ev.capture("rank"), -1) != it->second.first) continue;
      bus_rank[{ev.host, pci_bus_id(*bus)}] = it->second.first;
    }
  }
  std::map<int, std::string> host_of_rank;
  for (const auto& [host_pid, rank_world] : nccl_rank) host_of_rank.emplace(rank_world.first, host_pid.first);
  for (const auto& [r, rs] : ranks_)
    if (!rs.host.empty()) host_of_rank.emplace(r, rs.host);
  bool single_host = hosts.size() <= 1;
  // A job whose every ranked line comes from one rank (a single-GPU run with [rank0] prefixes):
  // its unranked lines are that rank's too. Not when that rank timed out waiting in a collective:
  // it waited for another rank, whose unprefixed lines these may be (a 2-GPU DeepSpeed run whose
  // only prefixed line is rank 1's watchdog timeout, below rank 0's plain OOM traceback, r86b).
  int only_rank = ranks_.size() == 1 && !waited_in_collective(ranks_.begin()->first) ? ranks_.begin()->first : -1;
  int world_seen = ranks_.empty() ? 0 : ranks_.rbegin()->first + 1;
  for (const auto& [key, rank_world] : nccl_rank)
    if (rank_world.second != std::numeric_limits<int>::max()) world_seen = std::max(world_seen, rank_world.second);
  for (auto& list : events_by_def_) {
    for (Event& ev : list) {
      if (int r = rank_or(ev.capture("rank"), -1); r >= 0) ev.rank = r;
      else if (const std::string* ready = ev.capture("ready_ranks")) {
        if (int odd = the_one_rank_not_listed(*ready, world_seen, 1); odd >= 0) ev.rank = odd;
      } else if (const std::string* missing = ev.capture("missing_ranks")) {
        if (int odd = the_one_rank_not_listed(*missing, world_seen, 2); odd >= 0) ev.rank = odd;
      }
      if (ev.rank < 0 && !ev.host.empty() && ev.pid >= 0) {
        auto it = nccl_rank.find({ev.host, ev.pid});
        if (it != nccl_rank.end()) ev.rank = it->second.first;
      }
      if (ev.rank < 0 && ev.host.empty() && ev.pid >= 0) {  // a Ray prefix without ip=
        auto it = ray_pid_rank.find(ev.pid);
        if (it != ray_pid_rank.end() && it->second >= 0) ev.rank = it->second;
      }
      if (ev.rank < 0 && !ev.host.empty()) {
        // A message naming a process (kernel OOM killer, launcher) on a host where NCCL showed
        // that process's rank.
        if (int pid = to_int_or(ev.capture("pid"), -1); pid >= 0) {
          auto it = nccl_rank.find({ev.host, pid});
          if (it != nccl_rank.end()) ev.rank = it->second.first;
        }
      }
      if (ev.rank < 0) ev.rank = rank_of_slurm_task(ev, host_of_rank);
      if (ev.rank < 0) {
        int lr = rank_or(ev.capture("local_rank"), ev.local_rank);
        if (lr >= 0 && single_host) ev.rank = lr;
      }
      if (ev.rank < 0) {
        if (const std::string* pci = ev.capture("pci")) {
          std::string bus = pci_bus_id(*pci);
          // With one host (or the host known from a syslog prefix) the bus id names the GPU.
          for (const auto& [hb, r] : bus_rank)
            if (hb.second == bus && (ev.host.empty() ? single_host : hb.first == ev.host)) ev.rank = r;
        }
      }
      if (ev.rank < 0 && only_rank >= 0 && single_host) ev.rank = only_rank;
      if (const std::string* h = ev.capture("host"); h && !h->empty() && ev.host.empty()) ev.host = *h;
      if (ev.host.empty()) {
        auto it = ranks_.find(ev.rank);
        if (it != ranks_.end()) ev.host = it->second.host;
      }
    }
  }
}

void Correlator::apply_tail_progress() {
  if (t_.tail_defs.empty()) return;
  LineAttributor attributor;
  for (auto& [r, rs] : ranks_) digest_tail_progress(rs, attributor);
  digest_tail_progress(unranked_, attributor);
}

// Reads the rank's last progress from its tail: the newest line with a progress counter, and the
// step interval from the one before it. Leaves the rank as it is when the tail holds none (false).
bool Correlator::digest_tail_progress(RankState& rs, LineAttributor& attributor) const {
  // Newest first: the first line with a progress counter is the rank's last progress.
  bool newest_seen = false;
  for (size_t k = 0; k < rs.tail.size(); ++k) {
    const TailLine& t = rs.tail[(rs.tail_next + rs.tail.size() - 1 - k) % rs.tail.size()];
    Attribution attribution = attributor.attribute(t.text);
    std::string_view body = attribution.body;
    std::string step;
    bool found = false;
    for (size_t def : t_.tail_defs) {
      const PatternDef& p = lib_.patterns[def];
      auto it = std::find(p.capture_names.begin(), p.capture_names.end(), "step");
      if (it == p.capture_names.end() || !p.re) continue;
      size_t n = p.capture_names.size();
      std::vector<re2::StringPiece> groups(n + 1);
      re2::StringPiece text(body.data(), body.size());
      if (!p.re->Match(text, 0, text.size(), RE2::UNANCHORED, groups.data(), static_cast<int>(n + 1))) continue;
      const auto& g = groups[static_cast<size_t>(it - p.capture_names.begin()) + 1];
      if (g.data()) {
        step.assign(g.data(), g.size());
        found = true;
        break;
      }
    }
    if (found && !newest_seen) {
      newest_seen = true;
      if (auto v = to_int(step)) {
        rs.last_step = *v;
        rs.last_progress = t.text;
        rs.progress_at_end = true;
        rs.progress_input = t.input;
        rs.progress_line_no = t.line_no;
        rs.progress_time = attribution.time;
      }
      if (!rs.progress_at_end || !rs.progress_time.valid()) break;
    } else if (found) {
      // The progress line before the newest: the job's step interval, as this rank saw it.
      if (attribution.time.valid() && attribution.time.kind == rs.progress_time.kind)
        rs.step_interval_ms = std::max<int64_t>(0, rs.progress_time.ms - attribution.time.ms);
      break;
    }
  }
  return newest_seen;
}

Diagnosis Correlator::snapshot() const {
  Correlator copy(*this);
  copy.rank_index_.clear();  // the copied index points into this object's map; rebuilt on demand
  return copy.finish();
}

// Appends the later tail (oldest first) so the newest lines win.
void Correlator::append_tail(RankState& into, RankState& later, uint64_t line_offset) const {
  for (size_t k = 0; k < later.tail.size(); ++k) {
    TailLine t = std::move(later.tail[(later.tail_next + k) % later.tail.size()]);
    t.text.shrink_to_fit();  // a part's tail buffers are reserved for reuse; the job's are final
    t.line_no += line_offset;
    size_t cap = std::max<size_t>(into.tail.size(), std::min(kTailLines, later.tail.size()));
    if (into.tail.size() < cap) {
      into.tail.push_back(std::move(t));
      into.tail_next = into.tail.size() % cap;
    } else {
      into.tail[into.tail_next] = std::move(t);
      into.tail_next = (into.tail_next + 1) % into.tail.size();
    }
  }
}

// Past kLargeJobRanks ranks each rank keeps kLargeJobTailLines lines, its progress read from the
// longer tail first (at 4,096 ranks sixteen lines each were 10 MB of a 64 MiB bound).
void Correlator::shorten_tails_of_large_job(LineAttributor& attributor) {
  if (large_job_tails_ || ranks_.size() <= kLargeJobRanks || t_.tail_defs.empty()) return;
  large_job_tails_ = true;
  for (auto& [r, rs] : ranks_) {
    digest_tail_progress(rs, attributor);
    trim_tail(rs, kLargeJobTailLines);
  }
}

// Keeps the newest `cap` lines, oldest first, so the next write replaces the oldest.
void Correlator::trim_tail(RankState& rs, size_t cap) {
  if (rs.tail.size() <= cap) return;
  std::vector<TailLine> kept;
  kept.reserve(cap);
  for (size_t k = rs.tail.size() - cap; k < rs.tail.size(); ++k)
    kept.push_back(std::move(rs.tail[(rs.tail_next + k) % rs.tail.size()]));
  rs.tail = std::move(kept);
  rs.tail_next = 0;
}

void Correlator::absorb(Correlator&& later, uint64_t line_offset) {
  uint64_t order_offset = order_;
  LineAttributor attributor;  // reads progress from tails shortened in a large job
  for (size_t def = 0; def < events_by_def_.size(); ++def) {
    count_by_def_[def] += later.count_by_def_[def];
    for (Event& ev : later.events_by_def_[def]) {
      ev.line += line_offset;
      ev.order += order_offset;
      store_event(std::move(ev));  // the job's bounds, not each part's
    }
  }
  for (const auto& [at, line] : later.answered_.by_endpoint) answered_.note(at.first, at.second, line + line_offset);
  budget_dropped_ += later.budget_dropped_;
  budget_cut_ += later.budget_cut_;
  for (auto& d : later.limits_.dropped)
    if (std::find(limits_.dropped.begin(), limits_.dropped.end(), d) == limits_.dropped.end()) limits_.dropped.push_back(d);
  limits_.truncated = limits_.truncated || later.limits_.truncated;
  ranks_truncated_ = ranks_truncated_ || later.ranks_truncated_;
  texts_cut_ += later.texts_cut_;
  for (auto& [r, lrs] : later.ranks_) {
    RankState* rs = rank_state(r);
    if (!rs) continue;
    rs->lines += lrs.lines;
    if (rs->host.empty()) rs->host = lrs.host;
    if (lrs.last_time.valid()) rs->last_time = lrs.last_time;
    if (lrs.last_step >= 0) {
      rs->last_step = lrs.last_step;
      rs->last_step_order = lrs.last_step_order + order_offset;
      rs->last_progress = lrs.last_progress;
    }
    const bool later_tail_full = lrs.tail.size() >= kTailLines;
    append_tail(*rs, lrs, line_offset);
    if (large_job_tails_) {
      // Sixteen lines of this part without progress: the rank's progress is no longer at its end.
      if (!digest_tail_progress(*rs, attributor) && later_tail_full) rs->progress_at_end = false;
      trim_tail(*rs, kLargeJobTailLines);
    }
  }
  shorten_tails_of_large_job(attributor);
  unranked_.lines += later.unranked_.lines;
  if (later.unranked_.last_time.valid()) unranked_.last_time = later.unranked_.last_time;
  append_tail(unranked_, later.unranked_, line_offset);
  if (!first_time_.valid()) first_time_ = later.first_time_;
  if (!ref_year_) ref_year_ = later.ref_year_;
  order_ += later.order_;
}

std::optional<Traceback> Correlator::traceback_of_decisive_line(const Diagnosis& d) const {
  const Evidence* decisive = d.initiating.first_evidence ? &*d.initiating.first_evidence
                             : d.suspect && d.suspect->first_evidence ? &*d.suspect->first_evidence
                             : d.first_error ? &*d.first_error
                                             : nullptr;
  auto header_def = lib_.find_pattern("py_traceback_header");
  auto frame_def = lib_.find_pattern("py_traceback_frame");
  if (!decisive || !header_def || !frame_def) return std::nullopt;
  auto input = std::find_if(inputs_.begin(), inputs_.end(), [&](const InputSummary& in) { return in.path == decisive->file; });
  if (input == inputs_.end()) return std::nullopt;
  uint32_t index = static_cast<uint32_t>(input - inputs_.begin());
  // A frame another process of the same rank printed is not part of this one's traceback.
  std::vector<TracebackLine> lines;
  auto same_stream = [&](const Event& ev) {
    return correlator_detail::in_traceback_above(ev, index, decisive->rank, decisive->pid, decisive->line);
  };
  for (const Event& ev : events_by_def_[*header_def])
    if (same_stream(ev)) lines.push_back({ev.line, true, {}});
  for (const Event& ev : events_by_def_[*frame_def])
    if (same_stream(ev)) {
      TracebackLine l{ev.line, false, {}};
      if (const std::string* f = ev.capture("file")) l.frame.file = *f;
      if (const std::string* n = ev.capture("lineno")) l.frame.lineno = std::strtoull(n->c_str(), nullptr, 10);
      if (const std::string* fn = ev.capture("func")) l.frame.func = *fn;
      l.frame.log_line = ev.line;
      lines.push_back(std::move(l));
    }
  return traceback_closed_at(lines, decisive->line);
}

}  // namespace firstfault
