// Who only observed the failure (collateral) and who hit the cause too (affected), and the
// one-line summary of them: a step of Correlator::finish() after the rank ladder.
#include <fmt/format.h>

#include "correlator_steps.h"
#include "firstfault/util/strings.h"

namespace firstfault {

void Correlator::assign_collateral(Diagnosis& d, const Hits& top, const Collectives& coll) const {
  const std::optional<int>& initiating = d.initiating.rank;
  std::set<int> observers(coll.reporters.begin(), coll.reporters.end());
  for (size_t r = 0; r < top.entry->refs.size(); ++r) {
    Role role = top.entry->refs[r].role;
    if (role != Role::kCascade && role != Role::kTeardown) continue;
    for (const Event* ev : top.by_ref[r])
      if (ev->rank >= 0) observers.insert(ev->rank);
  }
  // A rank with a root event of its own hit the cause (several OOMs, a job-wide error): it did
  // not only observe the failure, even when the launcher's teardown names it too. Its own
  // collective timeout does not count (waiting is what collateral ranks do), nor a check that
  // names another rank as the one that differs (peer_rank, reference_rank: it observed that one).
  std::set<int> affected;
  for (size_t r = 0; r < top.entry->refs.size(); ++r)
    if (top.entry->refs[r].role == Role::kRoot)
      for (const Event* ev : top.by_ref[r]) {
        bool observed = t_.own_timeout[ev->def] || ev->capture("peer_rank") || ev->capture("reference_rank");
        if (ev->rank >= 0 && (!initiating || ev->rank != *initiating) && !observed) affected.insert(ev->rank);
      }
  for (int r : affected) observers.erase(r);
  if (initiating) observers.erase(*initiating);
  d.collateral.ranks.assign(observers.begin(), observers.end());
  d.affected_ranks.assign(affected.begin(), affected.end());
  d.collateral.op = coll.op;
  d.collateral.seq = coll.seq;
  if (!coll.reporters.empty()) {
    std::vector<int> rep;
    for (int r : coll.reporters)
      if (!initiating || r != *initiating) rep.push_back(r);
    std::string what = fmt::format("{}{}", coll.op.empty() ? "a collective" : coll.op,
                                   coll.seq >= 0 ? fmt::format(" SeqNum {}", coll.seq) : "");
    if (rep.empty()) {
      d.collateral.summary = fmt::format("only rank {} itself timed out in {}; no other rank reported an error", *initiating, what);
    } else {
      d.collateral.summary = fmt::format("{} {} timed out in {}", rep.size() == 1 ? "rank" : "ranks", format_ranges(rep), what);
    }
    if (initiating && !rep.empty()) {
      if (coll.reporters.count(*initiating)) d.collateral.summary += fmt::format(" (rank {} timed out too)", *initiating);
      else d.collateral.summary += fmt::format(" waiting for rank {}", *initiating);
    }
  } else if (!d.collateral.ranks.empty() || !affected.empty()) {
    std::string hit = affected.empty() ? ""
                      : fmt::format("{} {} hit the cause{}", affected.size() == 1 ? "rank" : "ranks",
                                    format_ranges(d.affected_ranks), initiating ? " too" : "");
    if (d.collateral.ranks.empty()) {
      d.collateral.summary = hit + "; no rank only observed it";
    } else {
      d.collateral.summary = fmt::format("{} {} only observed the failure (cascade or launcher teardown)",
                                         d.collateral.ranks.size() == 1 ? "rank" : "ranks",
                                         format_ranges(d.collateral.ranks));
      if (!hit.empty()) d.collateral.summary += "; " + hit;
    }
  } else {
    d.collateral.summary = "no other rank reported an error";
  }
}

}  // namespace firstfault
