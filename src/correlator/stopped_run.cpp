// A log whose training progress stopped while the job went on printing for a long time, then
// ended with no error line and no completion marker, is not a clean run: the job sat idle (a
// hang) and was ended from outside without a message (docs/initiating-rank.md, "A log that
// stops in training"). Verdict `incomplete`.
//
// A log that merely ends on a progress line is not enough: most pasted logs of healthy runs are
// excerpts that end in training (19 of the 122 healthy logs in testdata/ and the rounds), and
// none of the failed jobs of rounds 37-39 read as clean would be caught by that alone.
#include <algorithm>

#include "correlator_steps.h"

namespace firstfault {

namespace {
// How long a job must keep printing after its last progress line before the log counts as
// stopped in training: longer than any step, checkpoint save or evaluation pass of a healthy run
// prints nothing for, shorter than the default NCCL timeout that would end a real hang.
constexpr int64_t kIdleAfterProgressMs = 10 * 60 * 1000;

bool comparable(const Timestamp& a, const Timestamp& b) {
  return a.valid() && b.valid() && a.kind == b.kind && a.kind != Timestamp::kBoot;
}
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
    return rs.progress_at_end && comparable(rs.progress_time, rs.last_time) &&
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

  auto rebased = [&](const Timestamp& t) { return t.kind == Timestamp::kNoYear && ref_year_ ? with_year(t, ref_year_) : t; };
  Evidence& e = s.last_progress;
  e.pattern = "last progress line";
  e.role = "context";
  e.file = newest->progress_input < inputs_.size() ? inputs_[newest->progress_input].path : "";
  e.line = newest->progress_line_no;
  e.rank = newest_rank;
  e.host = newest->host;
  e.text = newest->last_progress;
  e.time = rebased(newest->progress_time);
  s.idle_minutes = (idlest->last_time.ms - idlest->progress_time.ms) / 60000;
  if (first_time_.valid()) s.first_time = rebased(first_time_);
  Timestamp last;
  for (const auto& [r, rs] : ranks_)
    if (rs.last_time.valid() && (!last.valid() || (rs.last_time.kind == last.kind && rs.last_time.ms > last.ms))) last = rs.last_time;
  if (unranked_.last_time.valid() && (!last.valid() || (unranked_.last_time.kind == last.kind && unranked_.last_time.ms > last.ms)))
    last = unranked_.last_time;
  if (last.valid()) s.last_time = rebased(last);
  return s;
}

}  // namespace firstfault
