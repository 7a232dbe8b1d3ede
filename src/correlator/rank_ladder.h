#pragma once
// The initiating-rank ladder (docs/initiating-rank.md): each rung is one named step that either
// decides or passes to the next. Internal to the correlator.
#include <optional>
#include <string>
#include <vector>

#include "correlator_steps.h"

namespace firstfault {

class Correlator::RankLadder {
 public:
  RankLadder(const Correlator& c, const Hits& top, const Collectives& coll, const LauncherVerdict& launcher,
             const OwnErrors& own);
  // Climbs the ladder for the diagnosed entry `top`.
  RankDecision decide() const;

 private:
  // Rung 1: root events that carry ranks (one rank, a peer vote, job-wide, or first by time).
  RankDecision from_ranked_roots() const;
  // The rungs used when no root event carries a rank, in the order they are tried.
  std::optional<RankDecision> job_wide_unprefixed() const;
  std::optional<RankDecision> from_odd_op() const;
  std::optional<RankDecision> from_collective_sequence() const;
  std::optional<RankDecision> from_peer_of_lone_timeout() const;
  std::optional<RankDecision> from_context_rank() const;
  std::optional<RankDecision> from_own_error_line() const;
  std::optional<RankDecision> launcher_tie() const;
  std::optional<RankDecision> from_launcher() const;
  std::optional<RankDecision> out_of_step() const;
  std::optional<RankDecision> unranked_root() const;
  RankDecision from_silence() const;

  // A decision that starts from the entry's first root line as its evidence, when there is one.
  RankDecision with_root_evidence() const;
  RankDecision from_summary_root_cause(const std::vector<int>& order) const;
  // The ranks that never reached the stuck collective, the one that raised an error of its own first.
  std::vector<int> collective_suspects(const Event** raised) const;
  std::optional<Evidence> status_line_behind(int suspect) const;
  int64_t enqueued_of(int rank) const;
  std::optional<Evidence> last_line_of(int rank) const;
  std::string name_of_ref(const Event* ev) const;
  Role role_of_ref(const Event* ev) const;

  const Correlator& c_;
  const Hits& top_;
  const Collectives& coll_;
  const LauncherVerdict& launcher_;
  const OwnErrors& own_;
  std::vector<const Event*> roots_;         // the entry's root events, earliest first
  std::vector<const Event*> ranked_roots_;  // ... of them, those that carry a rank
  const Event* first_cascade_ = nullptr;    // the job's first collective timeout
};

}  // namespace firstfault
