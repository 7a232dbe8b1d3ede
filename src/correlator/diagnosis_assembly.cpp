// The assembly of a Diagnosis: Correlator::finish() runs the steps in order (each in its own
// unit, correlator_steps.h) and fills in what the verdict needs.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "correlator_steps.h"
#include "firstfault/action/action.h"
#include "firstfault/reader/log_reader.h"
#include "firstfault/util/strings.h"
#include "rank_ladder.h"

namespace firstfault {

namespace correlator_detail {
int to_int_or(const std::string* s, int fallback) {
  if (!s || s->empty()) return fallback;
  auto v = to_int(*s);
  return v && *v >= INT32_MIN && *v <= INT32_MAX ? static_cast<int>(*v) : fallback;
}
int rank_or(const std::string* s, int fallback) {
  int v = to_int_or(s, -1);
  return v >= 0 && v <= kMaxRankNumber ? v : fallback;
}
int world_or(const std::string* s, int fallback) {
  int v = to_int_or(s, -1);
  return v >= 1 && v <= kMaxRankNumber + 1 ? v : fallback;
}
}  // namespace correlator_detail

std::string name_rank_note(const InputSummary& in) {
  if (in.name_rank < 0 || in.lines_with_other_rank * 2 <= in.lines_with_rank) return "";
  return fmt::format("its name says rank {}, but {} of its {} line(s) that name a rank name another (first: rank {}); "
                     "the lines' ranks are used",
                     in.name_rank, in.lines_with_other_rank, in.lines_with_rank, in.other_rank);
}

Diagnosis Correlator::finish() {
  Diagnosis d;
  d.inputs = inputs_;
  for (const auto& in : inputs_) {
    d.total_lines += in.lines;
    d.total_bytes += in.bytes;
    d.skipped_inputs += !in.skipped.empty();
  }
  resolve_times_and_ranks();
  estimate_clock_skew();
  d.clock_skew = clock_skew_;
  apply_tail_progress();
  report_limits(d);

  const ErrorLines errors = error_lines();
  std::vector<Hits> all = evaluate_entries(errors);
  // Only a job no entry explains with a root line of its own is read for a last resort's words.
  if (std::none_of(all.begin(), all.end(), [](const Hits& h) { return h.has_root; }) && read_error_words(errors))
    all = evaluate_entries(errors);
  const Collectives coll = analyse_collectives();
  const LauncherVerdict launcher = launcher_verdict();
  const OwnErrors own{*this, errors, std::nullopt};
  if (all.empty()) {
    explain_unrecognized(d, errors, launcher, own);
  } else {
    d.verdict = "diagnosed";
    const std::optional<OutsideEnd> ended = hang_before_outside_end(all);
    const Hits& top = all.front();
    d.entry = top.entry;
    d.confidence = top.confidence;
    for (size_t i = 1; i < all.size() && d.alternatives.size() < 3; ++i)
      d.alternatives.push_back({all[i].entry->id, all[i].confidence, all[i].has_root});
    list_evidence(d, top);
    d.initiating = RankLadder(*this, top, coll, launcher, own).decide();
    if (RankDecision& dec = d.initiating; dec.rank) {
      auto it = ranks_.find(*dec.rank);
      if (dec.first_evidence && !dec.first_evidence->host.empty()) dec.host = dec.first_evidence->host;
      else if (it != ranks_.end()) dec.host = it->second.host;
    }
    if (ended) note_outside_end(d, *ended);
    assign_collateral(d, top, coll);
  }
  summarise_ranks(d, errors);
  d.traceback = traceback_of_decisive_line(d);
  d.action = decide_action(d);
  return d;
}

namespace {

// Patterns named one by one in the dropped list; the rest are summed in one line, so that a log
// that matches every pattern cannot make the note itself hundreds of KB (issue 27).
constexpr size_t kListedDroppedPatterns = 8;

struct DroppedPattern {
  const std::string* name;
  uint64_t stored, matched;
};

// The patterns that dropped the most lines, at most kListedDroppedPatterns, in the order they
// were first noted; then "events of N more pattern(s)" with their totals.
void list_dropped_patterns(const std::vector<DroppedPattern>& all, std::vector<std::string>& out) {
  std::vector<size_t> by_loss(all.size());
  for (size_t i = 0; i < all.size(); ++i) by_loss[i] = i;
  auto loss = [&](size_t i) { return all[i].matched - std::min(all[i].stored, all[i].matched); };
  std::stable_sort(by_loss.begin(), by_loss.end(), [&](size_t a, size_t b) { return loss(a) > loss(b); });
  std::vector<bool> listed(all.size(), false);
  for (size_t k = 0; k < std::min(all.size(), kListedDroppedPatterns); ++k) listed[by_loss[k]] = true;
  uint64_t rest_stored = 0, rest_matched = 0;
  for (size_t i = 0; i < all.size(); ++i) {
    if (listed[i]) {
      out.push_back(fmt::format("events of pattern {}: {} of {} matched line(s) stored", *all[i].name, all[i].stored,
                                all[i].matched));
    } else {
      rest_stored += all[i].stored;
      rest_matched += all[i].matched;
    }
  }
  if (all.size() > kListedDroppedPatterns)
    out.push_back(fmt::format("events of {} more pattern(s): {} of {} matched line(s) stored",
                              all.size() - kListedDroppedPatterns, rest_stored, rest_matched));
}

}  // namespace

// Every bound that dropped stored detail is named in the output, never silent
// (docs/reliability.md); counts and line numbers stay exact past all of them.
void Correlator::report_limits(Diagnosis& d) const {
  d.limits.truncated = limits_.truncated;
  std::vector<DroppedPattern> patterns;
  for (const auto& name : limits_.dropped) {
    auto def = lib_.find_pattern(name);
    patterns.push_back({&name, def ? events_by_def_[*def].size() : 0, def ? count_by_def_[*def] : 0});
  }
  list_dropped_patterns(patterns, d.limits.dropped);
  if (budget_dropped_ || budget_cut_)
    d.limits.dropped.push_back(fmt::format(
        "the {:.3g} MiB bound on stored event detail was reached: {} matched line(s) not stored, {} stored with their "
        "text cut to {} bytes",
        static_cast<double>(event_budget_) / (1 << 20), budget_dropped_, budget_cut_, kEventTextOverBudget));
  if (ranks_truncated_) {
    d.limits.truncated = true;
    d.limits.dropped.push_back(
        fmt::format("ranks beyond the first {}: their lines were read but not summarised per rank", kMaxRanks));
  }
  uint64_t long_lines = 0;
  std::vector<std::string> long_files;
  for (const auto& in : inputs_)
    if (in.long_lines) {
      long_lines += in.long_lines;
      if (long_files.size() < 3) long_files.push_back(in.path);
    }
  if (long_lines) {
    d.limits.truncated = true;
    d.limits.dropped.push_back(fmt::format("{} line(s) longer than {} bytes (in {}{}): only their first {} bytes were matched",
                                           long_lines, kMaxLineBytes, fmt::join(long_files, ", "),
                                           long_files.size() < 3 ? "" : ", ...", kMaxLineBytes));
  }
  if (texts_cut_) {
    d.limits.truncated = true;
    d.limits.dropped.push_back(fmt::format("text of {} matched line(s) beyond {} bytes", texts_cut_, kMaxEventText));
  }
}

// No entry is supported: clean, unless a line reads as an error (then unrecognized, with the
// first error line and the rank whose own error came first) or the log ends while training made
// progress (incomplete). Error lines the run went on past (outlived) do not make it unrecognized;
// the first is kept as `outlived_error`.
void Correlator::explain_unrecognized(Diagnosis& d, const ErrorLines& errors, const LauncherVerdict& launcher,
                                     const OwnErrors& own) const {
  d.verdict = "clean";
  const Event* first_err = nullptr;
  bool all_outlived = true;
  for (const Event* ev : errors.lines)
    if (!errors.is_benign(*ev)) {
      if (!first_err || earlier(*ev, *first_err)) first_err = ev;
      if (all_outlived && !outlived(*ev)) all_outlived = false;
    }
  if (first_err && all_outlived) {  // the run went on past every one: none of them ended it
    d.outlived_error = to_evidence(*first_err, lib_.patterns[first_err->def].name, Role::kContext);
    first_err = nullptr;
  }
  if (first_err) {
    d.verdict = "unrecognized";
    d.first_error = to_evidence(*first_err, lib_.patterns[first_err->def].name, Role::kContext);
    // No entry fits, but the launcher may still say whose process failed first: the place
    // to read next (a hint, not an initiating rank: it is the order of exits it observed).
    if (launcher.rank && launcher.event)
      d.launcher_first_failure = LauncherHint{
          *launcher.rank, launcher.name,
          to_evidence(*launcher.event, lib_.patterns[launcher.event->def].name, Role::kTeardown)};
    d.suspect = suspect_from_error_lines(own.get(), launcher.rank, launcher.name);
    if (d.suspect) d.suspect->reason = "no entry knows this failure; " + d.suspect->reason;
  } else if (auto stopped = stopped_run()) {
    d.verdict = "incomplete";
    d.stopped = std::move(stopped);
  }
}

// A hang ended from outside: what ended it, and after how long, go with the decision, and its
// line is evidence.
void Correlator::note_outside_end(Diagnosis& d, const OutsideEnd& ended) const {
  d.initiating.reason += fmt::format("{}the job printed no progress for {} min (more than {} min: 30 min or 20 of its "
                                     "own steps) before {} ended it (line {}); that end is the consequence of the hang",
                                     d.initiating.reason.empty() ? "" : "; ", ended.idle_minutes,
                                     ended.threshold_minutes, ended.end_entry->id, ended.end_line.line);
  d.evidence.insert(d.evidence.begin(), ended.end_line);
  if (d.evidence.size() > 12) d.evidence.pop_back();
  // Where to look: the initiating rank's last progress line, not the scheduler's.
  auto it = d.initiating.rank ? ranks_.find(*d.initiating.rank) : ranks_.end();
  if (it != ranks_.end() && !it->second.last_progress.empty())
    d.initiating.first_evidence = last_progress_evidence(it->first, it->second);
}

// Evidence: root hits first (earliest first), then cascade, context, teardown; capped.
void Correlator::list_evidence(Diagnosis& d, const Hits& top) const {
  std::vector<std::pair<const Event*, size_t>> ev_refs;
  for (size_t r = 0; r < top.entry->refs.size(); ++r)
    for (const Event* ev : top.by_ref[r]) ev_refs.push_back({ev, r});
  auto role_rank = [](Role r) { return r == Role::kRoot ? 0 : r == Role::kCascade ? 1 : r == Role::kContext ? 2 : 3; };
  std::stable_sort(ev_refs.begin(), ev_refs.end(), [&](const auto& a, const auto& b) {
    int ra = role_rank(top.entry->refs[a.second].role), rb = role_rank(top.entry->refs[b.second].role);
    if (ra != rb) return ra < rb;
    return earlier(*a.first, *b.first);
  });
  for (const auto& [ev, r] : ev_refs) {
    if (d.evidence.size() >= 12) break;
    d.evidence.push_back(to_evidence(*ev, top.entry->refs[r].name, top.entry->refs[r].role));
  }
}

// One summary per rank: its last line, progress, first event and role in the failure. A rank's
// first event is the diagnosed entry's when that entry has one on the rank (so `timeline` and
// `diagnose` name the same line the same way), else the first of any entry's. The initiating
// rank is listed even when no line is prefixed with it (named only by a message, e.g. NCCL's
// "rank 3" in a socket error): with no lines of its own, its first event is the deciding line.
void Correlator::summarise_ranks(Diagnosis& d, const ErrorLines& errors) const {
  struct First {
    const Event* ev = nullptr;
    Role role = Role::kRoot;
  };
  // A generic entry reads only error lines that are not harmless, here as in its evaluation (a
  // last resort's words, "environment variable", also sit in warnings).
  auto first_events = [&](const Entry& e, std::map<int, First>& into) {
    for (const PatternRef& ref : e.refs) {
      if (ref.role == Role::kContext) continue;
      for (const Event& ev : events_by_def_[ref.def]) {
        if (ev.rank < 0) continue;
        if (e.match.generic && (!errors.is_error(ev) || errors.is_benign(ev))) continue;
        First& f = into[ev.rank];
        if (!f.ev || earlier(ev, *f.ev)) f = {&ev, ref.role};
      }
    }
  };
  std::map<int, First> of_entry, of_any;
  if (d.entry) first_events(*d.entry, of_entry);
  for (const Entry& e : lib_.entries) first_events(e, of_any);
  auto role_of = [&](int r) -> std::string {
    if ((d.initiating.rank && *d.initiating.rank == r) || (d.suspect && d.suspect->rank && *d.suspect->rank == r))
      return "initiating";
    if (std::binary_search(d.affected_ranks.begin(), d.affected_ranks.end(), r)) return "affected";
    if (std::binary_search(d.collateral.ranks.begin(), d.collateral.ranks.end(), r)) return "collateral";
    return "quiet";
  };
  for (const auto& [r, rs] : ranks_) {
    RankSummary s;
    s.rank = r;
    s.host = rs.host;
    s.lines = rs.lines;
    if (const TailLine* last = rs.newest()) {
      s.last_line = last->text;
      s.last_file = last->input < inputs_.size() ? inputs_[last->input].path : "";
      s.last_line_no = last->line_no;
    }
    s.last_time = in_job_year(rs.last_time);
    s.last_step = rs.last_step;
    s.last_progress = rs.last_progress;
    const First* first = nullptr;
    if (auto e = of_entry.find(r); e != of_entry.end()) first = &e->second;
    else if (auto a = of_any.find(r); a != of_any.end()) first = &a->second;
    if (first) s.first_event = to_evidence(*first->ev, lib_.patterns[first->ev->def].name, first->role);
    s.role = role_of(r);
    d.ranks.push_back(std::move(s));
  }
  const RankDecision& named = d.initiating.rank ? d.initiating : d.suspect ? *d.suspect : d.initiating;
  if (named.rank && !ranks_.count(*named.rank)) {
    RankSummary s;
    s.rank = *named.rank;
    s.host = named.host;
    s.role = "initiating";
    s.first_event = named.first_evidence;
    auto at = std::lower_bound(d.ranks.begin(), d.ranks.end(), s.rank, [](const RankSummary& a, int r) { return a.rank < r; });
    d.ranks.insert(at, std::move(s));
  }
}

}  // namespace firstfault
