// The initiating-rank ladder: which rank's own fault started the failure, and why
// (docs/initiating-rank.md names each rung and its evidence).
#include "rank_ladder.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <map>
#include <set>

#include "firstfault/util/strings.h"

namespace firstfault {

using correlator_detail::rank_or;

namespace {

// Consistency checks that compare ranks name, on each rank that raises, one rank that differs
// from it. Two kinds (docs/initiating-rank.md):
// - `peer_rank`: every rank runs the check against all others and names the first that differs
//   (TORCH_DISTRIBUTED_DEBUG fingerprints, DDP's model check). When one rank is odd, every other
//   rank names it, so a rank named by at least two ranks, and by more ranks than all other named
//   ranks together, is the odd one, even in an excerpt that shows only a few ranks.
// - `reference_rank`: only ranks that differ from a reference raise (ZeRO-3's "disagreement
//   between rank0 and rankN"): the reference is the odd one only when more than half of the
//   job's other ranks disagree with it.
// Only lines whose own number (`self_rank`, when given) is the line's rank vote: a subgroup's
// numbering is not the job's.
struct PeerVote {
  int rank = -1;
  std::vector<int> voters;
};
PeerVote vote_on_peers(const std::vector<const Event*>& roots, int world) {
  std::map<int, std::set<int>> named, referenced;  // named rank -> ranks that named it
  for (const Event* ev : roots) {
    if (const std::string* self = ev->capture("self_rank"); self && rank_or(self, -1) != ev->rank) continue;
    if (int p = rank_or(ev->capture("peer_rank"), -1); p >= 0 && p != ev->rank) named[p].insert(ev->rank);
    if (int p = rank_or(ev->capture("reference_rank"), -1); p >= 0 && p != ev->rank) referenced[p].insert(ev->rank);
  }
  PeerVote best;
  for (const auto& [peer, voters] : named) {
    size_t others = 0;  // votes for any other rank, not counting the votes the candidate itself cast
    for (const auto& [q, vq] : named)
      if (q != peer) others += vq.size() - vq.count(peer);
    if (voters.size() >= 2 && voters.size() > others) best = PeerVote{peer, std::vector<int>(voters.begin(), voters.end())};
  }
  if (best.rank >= 0) return best;
  for (const auto& [ref, voters] : referenced) {
    int n = static_cast<int>(voters.size());
    if (n >= 2 && 2 * n > world - 1 && n > static_cast<int>(best.voters.size()))
      best = PeerVote{ref, std::vector<int>(voters.begin(), voters.end())};
  }
  return best;
}

std::string ranks_of(const std::set<int>& s) { return format_ranges(std::vector<int>(s.begin(), s.end())); }

}  // namespace

Correlator::RankLadder::RankLadder(const Correlator& c, const Hits& top, const Collectives& coll,
                                   const LauncherVerdict& launcher, const OwnErrors& own)
    : c_(c), top_(top), coll_(coll), launcher_(launcher), own_(own) {
  for (size_t r = 0; r < top.entry->refs.size(); ++r)
    if (top.entry->refs[r].role == Role::kRoot)
      for (const Event* ev : top.by_ref[r]) roots_.push_back(ev);
  std::sort(roots_.begin(), roots_.end(), [&](const Event* a, const Event* b) { return c_.earlier(*a, *b); });
  for (const Event* ev : roots_)
    if (ev->rank >= 0) ranked_roots_.push_back(ev);
  // Events of other failure modes that happened first would contradict a launcher verdict.
  for (size_t def = 0; def < c_.events_by_def_.size(); ++def)
    if (c_.t_.own_timeout[def])
      for (const Event& ev : c_.events_by_def_[def])
        if (!first_cascade_ || c_.earlier(ev, *first_cascade_)) first_cascade_ = &ev;
}

RankDecision Correlator::RankLadder::decide() const {
  if (!ranked_roots_.empty()) return from_ranked_roots();
  for (auto rung : {&RankLadder::job_wide_unprefixed, &RankLadder::from_odd_op, &RankLadder::from_collective_sequence,
                    &RankLadder::from_peer_of_lone_timeout, &RankLadder::from_context_rank,
                    &RankLadder::from_own_error_line, &RankLadder::launcher_tie, &RankLadder::from_launcher,
                    &RankLadder::out_of_step, &RankLadder::unranked_root})
    if (auto dec = (this->*rung)()) return *dec;
  return from_silence();
}

std::string Correlator::RankLadder::name_of_ref(const Event* ev) const {
  for (size_t r = 0; r < top_.entry->refs.size(); ++r)
    if (top_.entry->refs[r].def == ev->def) return top_.entry->refs[r].name;
  return c_.lib_.patterns[ev->def].name;
}

Role Correlator::RankLadder::role_of_ref(const Event* ev) const {
  for (size_t r = 0; r < top_.entry->refs.size(); ++r)
    if (top_.entry->refs[r].def == ev->def) return top_.entry->refs[r].role;
  return Role::kContext;
}

RankDecision Correlator::RankLadder::from_ranked_roots() const {
  RankDecision dec;
  const Event* first = ranked_roots_.front();
  std::vector<int> order;
  for (const Event* ev : ranked_roots_)
    if (std::find(order.begin(), order.end(), ev->rank) == order.end()) order.push_back(ev->rank);
  dec.first_evidence = c_.to_evidence(*first, name_of_ref(first), role_of_ref(first));
  dec.method = "root-event";
  if (top_.entry->job_scope) {
    // A configuration or version error: every rank hits it, whichever printed it first.
    dec.method = "job-wide";
    dec.confidence = 0.6;
    dec.candidates = order;
    dec.reason = fmt::format("{} is a configuration error every rank of the job hits; rank {} printed it first, "
                             "which says nothing about where the fault is",
                             top_.entry->id, first->rank);
  } else if (order.size() == 1) {
    dec.rank = first->rank;
    dec.confidence = 0.9;
    dec.reason = fmt::format("rank {} is the only rank with a root event ({})", first->rank, name_of_ref(first));
    if (first_cascade_ && first_cascade_->rank != first->rank && c_.earlier(*first, *first_cascade_))
      dec.reason += ", and it comes before the first collective timeout on another rank";
  } else {
    // Several ranks hit it: decide by time, and say when it is job-wide.
    const Event* second = nullptr;
    for (const Event* ev : ranked_roots_)
      if (ev->rank != first->rank) {
        second = ev;
        break;
      }
    bool separated = second && first->time.valid() && second->time.valid() && first->time.kind != Timestamp::kBoot &&
                     std::llabs(c_.event_key(*second) - c_.event_key(*first)) >= 1000;
    std::set<int> distinct(order.begin(), order.end());
    PeerVote vote = vote_on_peers(ranked_roots_, coll_.world);
    if (vote.rank >= 0) {
      dec.rank = vote.rank;
      dec.method = "peer-vote";
      dec.confidence = 0.8;
      dec.candidates = order;
      dec.reason = fmt::format("ranks {} each found that rank {} differs from them; the odd one out is rank {}",
                               format_ranges(vote.voters), vote.rank, vote.rank);
      if (auto it = std::find_if(ranked_roots_.begin(), ranked_roots_.end(),
                                 [&](const Event* ev) { return ev->rank == vote.rank; });
          it != ranked_roots_.end())
        dec.first_evidence = c_.to_evidence(**it, name_of_ref(*it), role_of_ref(*it));
    } else if (!separated && launcher_.told_in_summary(*first) && launcher_.rank && distinct.count(*launcher_.rank)) {
      dec = from_summary_root_cause(order);
    } else if (!separated && coll_.world > 1 && static_cast<int>(distinct.size()) >= coll_.world) {
      dec.rank.reset();
      dec.method = "job-wide";
      dec.confidence = 0.6;
      dec.candidates = order;
      dec.reason = fmt::format("every rank ({}) hit it at about the same time: a job-wide cause, not one rank",
                               ranks_of(distinct));
    } else {
      dec.rank = first->rank;
      dec.confidence = separated ? 0.75 : 0.45;
      dec.candidates = order;
      dec.reason = separated ? fmt::format("rank {} hit it first ({} ranks hit it; the next was rank {})", first->rank,
                                           order.size(), second->rank)
                             : fmt::format("{} ranks hit it at about the same time; rank {} printed it first",
                                           order.size(), first->rank);
    }
  }
  if (launcher_.rank && dec.rank && *launcher_.rank != *dec.rank)
    dec.reason += fmt::format("; {} names rank {}, but rank {}'s own root event is earlier evidence", launcher_.name,
                              *launcher_.rank, *dec.rank);
  return dec;
}

// The ranks' root events are told only inside torchrun's failure summary, whose order is the
// ranks' order: its Root Cause, picked by the workers' error-file times, is the first to fail.
RankDecision Correlator::RankLadder::from_summary_root_cause(const std::vector<int>& order) const {
  RankDecision dec;
  dec.rank = launcher_.rank;
  dec.method = "root-event";
  dec.confidence = 0.7;
  dec.candidates = order;
  auto own = std::find_if(ranked_roots_.begin(), ranked_roots_.end(), [&](const Event* ev) { return ev->rank == *dec.rank; });
  dec.first_evidence = c_.to_evidence(**own, name_of_ref(*own), role_of_ref(*own));
  dec.reason = fmt::format("{} ranks hit it; their errors are told only in torchrun's failure summary, which lists them "
                           "in rank order, and its \"Root Cause (first observed failure)\", the earliest by the "
                           "workers' error-file times, is rank {}",
                           order.size(), *dec.rank);
  return dec;
}

RankDecision Correlator::RankLadder::with_root_evidence() const {
  RankDecision dec;
  if (!roots_.empty()) dec.first_evidence = c_.to_evidence(*roots_.front(), name_of_ref(roots_.front()), Role::kRoot);
  return dec;
}

// Unprefixed output of a configuration error: no rank to name, and none is at fault, whatever
// the timeouts, context lines or launcher say about ranks.
std::optional<RankDecision> Correlator::RankLadder::job_wide_unprefixed() const {
  if (roots_.empty() || !top_.entry->job_scope) return std::nullopt;
  RankDecision dec = with_root_evidence();
  dec.method = "job-wide";
  dec.confidence = 0.6;
  dec.reason = fmt::format("{} is a configuration error every rank of the job hits; the log does not say "
                           "which rank printed it",
                           top_.entry->id);
  return dec;
}

std::vector<int> Correlator::RankLadder::collective_suspects(const Event** raised) const {
  std::vector<int> suspects(coll_.behind.begin(), coll_.behind.end());
  for (int r : coll_.missing)
    if (std::find(suspects.begin(), suspects.end(), r) == suspects.end()) suspects.push_back(r);
  // Several ranks never reached the collective (a launcher tore a whole node down at once):
  // the one of them that printed an error of its own is where it started.
  *raised = nullptr;
  if (suspects.size() > 1) {
    const std::map<int, const Event*>& own = own_.get();
    std::vector<int> hit;
    for (int r : suspects)
      if (own.count(r)) hit.push_back(r);
    if (hit.size() == 1) {
      *raised = own.at(hit.front());
      auto at = std::find(suspects.begin(), suspects.end(), hit.front());
      std::rotate(suspects.begin(), at, at + 1);
    }
  }
  return suspects;
}

// The suspect's own counter line (correlator_detail::kCounterPatterns) whose last enqueued work
// is below the stuck collective.
std::optional<Evidence> Correlator::RankLadder::status_line_behind(int suspect) const {
  for (auto name : correlator_detail::kCounterPatterns)
    if (auto def = c_.lib_.find_pattern(name))
      for (const Event& ev : c_.events_by_def_[*def])
        if (ev.rank == suspect && ev.capture("enqueued") && to_int(*ev.capture("enqueued")).value_or(-1) < coll_.seq)
          return c_.to_evidence(ev, name, Role::kCascade);
  return std::nullopt;
}

int64_t Correlator::RankLadder::enqueued_of(int rank) const {
  auto it = coll_.enqueued.find(rank);
  return it == coll_.enqueued.end() ? 0 : it->second;
}

std::optional<Evidence> Correlator::RankLadder::last_line_of(int rank) const {
  auto it = c_.ranks_.find(rank);
  const TailLine* last = it != c_.ranks_.end() ? it->second.newest() : nullptr;
  if (!last) return std::nullopt;
  Evidence e;
  e.pattern = "last line of the rank";
  e.role = "context";
  e.file = last->input < c_.inputs_.size() ? c_.inputs_[last->input].path : "";
  e.line = last->line_no;
  e.rank = rank;
  e.host = it->second.host;
  e.time = c_.in_job_year(it->second.last_time);
  e.text = last->text;
  return e;
}

// The ranks that timed out name, by their sequence numbers or by their absence, the rank that
// never reached the collective they wait in.
std::optional<RankDecision> Correlator::RankLadder::from_collective_sequence() const {
  const Event* raised = nullptr;
  std::vector<int> suspects = collective_suspects(&raised);
  if (suspects.empty()) return std::nullopt;
  RankDecision dec = with_root_evidence();
  const int suspect = suspects.front();
  dec.rank = suspect;
  dec.candidates = suspects;
  dec.confidence = suspects.size() == 1 ? 0.8 : 0.5;
  std::string opdesc = coll_.op.empty() ? "a collective" : coll_.op;
  std::string seqdesc = coll_.seq >= 0 ? fmt::format(" SeqNum {}", coll_.seq) : "";
  // The deciding line: the suspect's own earlier timeout, its status line, or its last line
  // when it said nothing.
  auto own = coll_.own_seq.find(suspect);
  const bool earlier_timeout = own != coll_.own_seq.end() && own->second < coll_.seq;
  if (earlier_timeout)
    if (auto line = coll_.timeout_line.find({suspect, own->second}); line != coll_.timeout_line.end())
      dec.first_evidence = c_.to_evidence(*line->second, c_.lib_.patterns[line->second->def].name, Role::kCascade);
  if (!dec.first_evidence) dec.first_evidence = status_line_behind(suspect);
  if (!dec.first_evidence) dec.first_evidence = last_line_of(suspect);
  if (earlier_timeout) {
    dec.method = "nccl-sequence";
    dec.reason = fmt::format("{} rank(s) timed out in {}{}; rank {} timed out earlier, at SeqNum {}, so it never "
                             "got as far",
                             coll_.reporters.size(), opdesc, seqdesc, suspect, own->second);
  } else if (coll_.behind.count(suspect)) {
    dec.method = "nccl-sequence";
    dec.reason = fmt::format("{} rank(s) timed out in {}{}; rank {}'s last enqueued work is {}, so it never reached it",
                             coll_.reporters.size(), opdesc, seqdesc, suspect, enqueued_of(suspect));
  } else {
    dec.method = "missing-from-timeout";
    dec.reason = fmt::format("ranks {} timed out in {}{}; rank {} reported no timeout, so it never reached the collective",
                             ranks_of(coll_.reporters), opdesc, seqdesc, suspect);
    // With no NCCL init line the job's size is a guess (the highest rank seen); a missing
    // rank that printed nothing at all may just be outside a pasted excerpt.
    if (coll_.init_world == 0 && !c_.ranks_.count(suspect)) {
      dec.confidence = std::min(dec.confidence, 0.5);
      dec.reason += fmt::format(" (the job's size is taken from the highest rank seen and rank {} printed nothing, so "
                                "it may only be missing from this log)",
                                suspect);
    }
  }
  // The suspect's own last sign of life, when the entry recognises it (e.g. "Training completed").
  for (size_t r = 0; r < top_.entry->refs.size(); ++r) {
    if (top_.entry->refs[r].role != Role::kContext) continue;
    for (const Event* ev : top_.by_ref[r])
      if (ev->rank == suspect) {
        dec.reason += fmt::format("; rank {} logged {} at {}:{}", ev->rank, top_.entry->refs[r].name,
                                  ev->input < c_.inputs_.size() ? c_.inputs_[ev->input].path : "", ev->line);
        if (!dec.first_evidence || dec.first_evidence->pattern == "last line of the rank")
          dec.first_evidence = c_.to_evidence(*ev, top_.entry->refs[r].name, Role::kContext);
        break;
      }
  }
  if (raised) {
    dec.confidence = 0.7;
    dec.reason += fmt::format("; of the {} ranks that never got there, only rank {} printed an error of its own",
                              suspects.size(), raised->rank);
    dec.first_evidence = c_.to_evidence(*raised, c_.lib_.patterns[raised->def].name, Role::kContext);
  }
  if (launcher_.rank && *launcher_.rank != suspect)
    dec.reason += fmt::format("; {} names rank {} (a weak verdict: it picks the earliest whole second)", launcher_.name,
                              *launcher_.rank);
  return dec;
}

// A two-rank job: the root line carries no rank, and the one rank that said anything of its own
// timed out waiting in a collective. It waited for the other rank, which is where the root came
// from (a 2-GPU DeepSpeed fine-tune: rank 0's plain OOM traceback, then rank 1's watchdog timeout,
// real-log round 86b). One timeout alone names a missing rank only when the job has two ranks: in
// a bigger job it could as well be any of the others.
std::optional<RankDecision> Correlator::RankLadder::from_peer_of_lone_timeout() const {
  if (roots_.empty() || coll_.reporters.size() != 1 || coll_.world != 2 || !coll_.ahead.empty()) return std::nullopt;
  const int waiting = *coll_.reporters.begin();
  RankDecision dec = with_root_evidence();
  dec.rank = 1 - waiting;
  dec.candidates = {*dec.rank};
  dec.method = "missing-from-timeout";
  dec.confidence = 0.5;
  dec.reason = fmt::format("the root event carries no rank; in this two-rank job rank {} timed out waiting in {}, so "
                           "the root is rank {}'s",
                           waiting, coll_.op.empty() ? "a collective" : coll_.op, *dec.rank);
  if (coll_.init_world == 0) dec.reason += " (the job's size is taken from the highest rank seen)";
  return dec;
}

// The root line carries no rank, but the entry's own context lines name exactly one (e.g.
// "current device: 0" next to an ECC error in a one-GPU server log).
std::optional<RankDecision> Correlator::RankLadder::from_context_rank() const {
  std::set<int> rs;
  for (size_t r = 0; r < top_.entry->refs.size(); ++r)
    if (top_.entry->refs[r].role == Role::kContext)
      for (const Event* ev : top_.by_ref[r])
        if (ev->rank >= 0) rs.insert(ev->rank);
  if (roots_.empty() || rs.size() != 1) return std::nullopt;
  RankDecision dec = with_root_evidence();
  dec.rank = *rs.begin();
  dec.method = "root-event";
  dec.confidence = 0.5;
  dec.reason = fmt::format("the root line carries no rank; the entry's context lines name only rank {}", *rs.begin());
  return dec;
}

// The entry has no root event (a cascade-only diagnosis: "cause not in the log"), but one rank
// printed an error of its own while the others show only consequences: the usual "one rank
// raised, the rest lost their communicator" (an exception no entry knows).
std::optional<RankDecision> Correlator::RankLadder::from_own_error_line() const {
  if (!roots_.empty()) return std::nullopt;
  auto own = c_.suspect_from_error_lines(own_.get(), launcher_.rank, launcher_.name);
  if (!own || !own->rank || own->candidates.size() != 1 || c_.ranks_.size() < 2) return std::nullopt;
  return own;
}

// Several processes printed the root error without a rank prefix and the launcher saw several
// ranks fail: its "Root Cause" is just the lowest rank of a tie.
std::optional<RankDecision> Correlator::RankLadder::launcher_tie() const {
  if (!launcher_.rank || roots_.size() < 2 || launcher_.failed_ranks.size() < 2) return std::nullopt;
  RankDecision dec = with_root_evidence();
  dec.method = "none";
  dec.candidates.assign(launcher_.failed_ranks.begin(), launcher_.failed_ranks.end());
  dec.reason = fmt::format("{} processes hit it and the log does not say which rank printed which; {} lists ranks {} as failed",
                           roots_.size(), launcher_.name, ranks_of(launcher_.failed_ranks));
  return dec;
}

std::optional<RankDecision> Correlator::RankLadder::from_launcher() const {
  if (!launcher_.rank) return std::nullopt;
  RankDecision dec = with_root_evidence();
  dec.rank = launcher_.rank;
  dec.method = "launcher-verdict";
  dec.confidence = 0.5;
  dec.reason = fmt::format("{} names rank {} (no root event carries a rank)", launcher_.name, *launcher_.rank);
  return dec;
}

// Some ranks timed out in a later collective than the others: out of step, no one rank missing.
std::optional<RankDecision> Correlator::RankLadder::out_of_step() const {
  if (coll_.ahead.empty()) return std::nullopt;
  RankDecision dec = with_root_evidence();
  dec.method = "none";
  dec.reason = fmt::format("ranks {} timed out in {} SeqNum {}, but rank(s) {} timed out later, at SeqNum {}: they "
                           "got past it, so the ranks are out of step and no one rank is shown to be missing",
                           ranks_of(coll_.reporters), coll_.op.empty() ? "a collective" : coll_.op, coll_.seq,
                           ranks_of(coll_.ahead), coll_.own_seq.at(*coll_.ahead.begin()));
  return dec;
}

std::optional<RankDecision> Correlator::RankLadder::unranked_root() const {
  if (roots_.empty()) return std::nullopt;
  RankDecision dec = with_root_evidence();
  dec.method = "none";
  dec.reason = "the root event carries no rank and the log does not map it to one";
  dec.confidence = 0;
  return dec;
}

// A desync: at the SeqNum where the others wait in one collective, one rank waits in another
// (an ALLREDUCE of one element while the rest wait in _ALLGATHER_BASE: it left the loop the
// others are still in). Its last progress line, when it has one, says where it was.
std::optional<RankDecision> Correlator::RankLadder::from_odd_op() const {
  if (coll_.odd_op.size() != 1) return std::nullopt;
  int odd = *coll_.odd_op.begin();
  RankDecision dec;
  dec.rank = odd;
  dec.method = "op-mismatch";
  dec.confidence = 0.75;
  std::set<int> others = coll_.reporters;
  others.erase(odd);
  dec.reason = fmt::format("ranks {} timed out in {} SeqNum {}; rank {} timed out in {} at the same SeqNum, so it issued "
                           "a different collective (the ranks are out of step)",
                           ranks_of(others), coll_.call, coll_.seq, odd, coll_.odd_op_name);
  if (auto line = coll_.timeout_line.find({odd, coll_.seq}); line != coll_.timeout_line.end())
    dec.first_evidence = c_.to_evidence(*line->second, c_.lib_.patterns[line->second->def].name, Role::kCascade);
  if (auto it = c_.ranks_.find(odd); it != c_.ranks_.end() && !it->second.last_progress.empty())
    dec.reason += fmt::format("; its last progress: {}", truncate_utf8(trim(it->second.last_progress), 160));
  return dec;
}

// Silence: the rank that fell behind in progress, or went quiet first.
RankDecision Correlator::RankLadder::from_silence() const {
  RankDecision dec = with_root_evidence();
  int64_t max_step = -1;
  for (const auto& [r, rs] : c_.ranks_) max_step = std::max(max_step, rs.last_step);
  std::vector<std::pair<int64_t, int>> behind;
  for (const auto& [r, rs] : c_.ranks_)
    if (rs.last_step >= 0 && rs.last_step < max_step) behind.push_back({rs.last_step, r});
  std::sort(behind.begin(), behind.end());
  if (behind.empty() || c_.ranks_.size() < 2) {
    dec.method = "none";
    dec.reason = "no event in the log singles out one rank";
    return dec;
  }
  dec.rank = behind.front().second;
  dec.method = "silence";
  dec.confidence = behind.size() == 1 ? 0.55 : 0.35;
  for (auto& b : behind) dec.candidates.push_back(b.second);
  dec.reason = fmt::format("rank {} stopped at step {} while others reached step {}", behind.front().second,
                           behind.front().first, max_step);
  return dec;
}

}  // namespace firstfault
