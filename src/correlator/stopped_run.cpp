// A log whose training progress stopped while the job went on printing for a long time, then
// ended with no error line and no completion marker, is not a clean run: the job sat idle (a
// hang) and was ended from outside without a message (docs/initiating-rank.md, "A log that
// stops in training"). Verdict `incomplete`.
//
// A log that merely ends on a progress line is not enough: most pasted logs of healthy runs are
// excerpts that end in training (19 of the 122 healthy logs in testdata/ and the rounds), and
// none of the failed jobs of rounds 37-39 read as clean would be caught by that alone.
//
// The converse, outlived(): an error line followed by its rank's progress to the end of the log,
// or by the run's report that it finished, did not end the run.
#include <algorithm>
#include <cstdio>

#include "correlator_steps.h"

namespace firstfault {

namespace {
// How long a job must keep printing after its last progress line before the log counts as
// stopped in training: longer than any step, checkpoint save or evaluation pass of a healthy run
// prints nothing for, shorter than the default NCCL timeout that would end a real hang.
constexpr int64_t kIdleAfterProgressMs = 10 * 60 * 1000;
}  // namespace

std::optional<StoppedRun> Correlator::stopped_run() const {
  // A run that says it finished (or a launcher that saw its workers succeed) ended normally,
  // whatever the last lines of one rank look like.
  if (auto def = lib_.find_pattern("job_completion_marker"); def && count_by_def_[*def] > 0) return std::nullopt;
  StoppedRun s;
  int64_t max_step = -1;
  const RankState* newest = nullptr;
  int newest_rank = -1;
  auto later = [](const RankState& a, const RankState& b) {
    if (a.last_time.valid() && b.last_time.valid() && a.last_time.kind == b.last_time.kind) return a.last_time.ms > b.last_time.ms;
    return false;
  };
  auto idle_after_progress = [](const RankState& rs) {
    return rs.progress_at_end && correlator_detail::comparable(rs.progress_time, rs.last_time) &&
           rs.last_time.ms - rs.progress_time.ms >= kIdleAfterProgressMs;
  };
  const RankState* idlest = nullptr;
  auto note_idle = [&](const RankState& rs) {
    if (idle_after_progress(rs) && (!idlest || rs.last_time.ms - rs.progress_time.ms > idlest->last_time.ms - idlest->progress_time.ms))
      idlest = &rs;
  };
  note_idle(unranked_);
  for (const auto& [r, rs] : ranks_) note_idle(rs);
  if (!idlest) return std::nullopt;
  for (const auto& [r, rs] : ranks_)
    if (rs.progress_at_end) {
      s.ranks.push_back(r);
      max_step = std::max(max_step, rs.last_step);
      if (!newest || later(rs, *newest)) {
        newest = &rs;
        newest_rank = r;
      }
    }
  for (const auto& [r, rs] : ranks_)
    if (rs.progress_at_end && rs.last_step < max_step) s.behind.push_back(r);
  if (!newest && unranked_.progress_at_end) newest = &unranked_;
  if (!newest) return std::nullopt;

  s.last_progress = last_progress_evidence(newest_rank, *newest);
  s.idle_minutes = (idlest->last_time.ms - idlest->progress_time.ms) / 60000;
  if (first_time_.valid()) s.first_time = in_job_year(first_time_);
  Timestamp last;
  for (const auto& [r, rs] : ranks_)
    if (rs.last_time.valid() && (!last.valid() || (rs.last_time.kind == last.kind && rs.last_time.ms > last.ms))) last = rs.last_time;
  if (unranked_.last_time.valid() && (!last.valid() || (unranked_.last_time.kind == last.kind && unranked_.last_time.ms > last.ms)))
    last = unranked_.last_time;
  if (last.valid()) s.last_time = in_job_year(last);
  return s;
}

// A completion line after it in the same file: of its rank or of none (a launcher's or the
// scheduler's); of rank 0, which logs the run's own end (MLPerf's run_stop, a trainer's summary);
// for an unranked line, of any rank.
bool Correlator::finished_after(const Event& ev) const {
  auto completion = lib_.find_pattern("job_completion_marker");
  return completion && std::any_of(events_by_def_[*completion].begin(), events_by_def_[*completion].end(),
                                   [&](const Event& done) {
                                     return done.input == ev.input && done.line > ev.line &&
                                            (ev.rank < 0 || done.rank <= 0 || done.rank == ev.rank);
                                   });
}

// An error line the run went on past did not end it (a reward checker's "[Error]", a logger's
// CRITICAL notice, a container entrypoint's failed clean-up): its rank, or the job's unranked
// lines, end on a progress line after it, or the run says after it that it finished. In a job of
// several ranks a ranked line needs its own rank's progress, or a completion line of its rank or
// rank 0 (finished_after): another rank's bar can run on for a while after this one died.
bool Correlator::outlived(const Event& ev) const {
  auto progress_after = [&](const RankState& rs) {
    return rs.progress_at_end && rs.progress_input == ev.input && rs.progress_line_no > ev.line;
  };
  if (finished_after(ev)) return true;
  if (ev.rank < 0)
    return progress_after(unranked_) ||
           std::any_of(ranks_.begin(), ranks_.end(), [&](const auto& r) { return progress_after(r.second); });
  auto it = ranks_.find(ev.rank);
  if (it != ranks_.end() && progress_after(it->second)) return true;
  return ranks_.size() <= 1 && progress_after(unranked_);
}

Evidence Correlator::last_progress_evidence(int rank, const RankState& rs) const {
  Evidence e;
  e.pattern = "last progress line";
  e.role = "context";
  e.file = rs.progress_input < inputs_.size() ? inputs_[rs.progress_input].path : "";
  e.line = rs.progress_line_no;
  e.rank = rank;
  e.host = rs.host;
  e.text = rs.last_progress;
  e.time = in_job_year(rs.progress_time);
  return e;
}

namespace {
// A job that printed progress every few seconds and then nothing for half an hour was not
// working: the threshold is 30 minutes or 20 of the job's own step intervals, whichever is
// longer (a slow job's checkpoint or evaluation pass can outlast 30 minutes of silence).
constexpr int64_t kHangMinMs = 30 * 60 * 1000;
constexpr int64_t kHangSteps = 20;

// The time an end message states itself (Slurm's "CANCELLED AT 2024-05-01T22:00:07"), for a line
// with no time of its own: a capture named `at` (or `at2`) in ISO form.
Timestamp stated_time(const Event& ev) {
  if (ev.time.valid()) return ev.time;
  for (const char* name : {"at", "at2"}) {
    const std::string* at = ev.capture(name);
    unsigned y, mo, d, h, mi, sec;
    if (at && std::sscanf(at->c_str(), "%4u-%2u-%2uT%2u:%2u:%2u", &y, &mo, &d, &h, &mi, &sec) == 6)
      return Timestamp{make_ms(y, mo, d, h, mi, sec, 0), Timestamp::kFull};
  }
  return {};
}
}  // namespace

std::optional<Correlator::OutsideEnd> Correlator::hang_before_outside_end(std::vector<Hits>& all) const {
  if (all.empty() || !all.front().entry->ends_job_from_outside || !all.front().first_root) return std::nullopt;
  const Event& end = *all.front().first_root;
  const Timestamp end_time = stated_time(end);
  if (!silent_hang(0) || !end_time.valid() || end_time.kind == Timestamp::kBoot) return std::nullopt;
  const RankState* newest = nullptr;
  int64_t interval = 0;
  auto consider = [&](const RankState& rs) {
    if (!rs.progress_at_end || !rs.progress_time.valid() || rs.progress_time.kind == Timestamp::kBoot) return;
    if (!newest || rs.progress_time.ms > newest->progress_time.ms) newest = &rs;
    interval = std::max(interval, rs.step_interval_ms);
  };
  consider(unranked_);
  for (const auto& [r, rs] : ranks_) consider(rs);
  if (!newest) return std::nullopt;
  int64_t idle = time_key(end_time) - time_key(newest->progress_time);
  int64_t threshold = std::max(kHangMinMs, kHangSteps * interval);
  if (idle < threshold) return std::nullopt;
  OutsideEnd out;
  out.end_entry = all.front().entry;
  out.end_line = to_evidence(end, lib_.patterns[end.def].name, Role::kContext);
  out.idle_minutes = idle / 60000;
  out.threshold_minutes = threshold / 60000;
  all.insert(all.begin(), std::move(*silent_hang(0.6)));
  return out;
}

}  // namespace firstfault
