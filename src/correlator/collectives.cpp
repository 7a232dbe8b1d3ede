// What the job's collective timeouts and its launcher say about ranks, before any entry's
// evidence is weighed: the second step of Correlator::finish(), read by the rank ladder and the
// collateral summary (docs/initiating-rank.md).
#include "correlator_steps.h"

#include <fmt/format.h>

#include "firstfault/util/strings.h"

namespace firstfault {

using correlator_detail::rank_or;
using correlator_detail::world_or;

namespace {
// A collective call as the watchdog shows it: its OpType, and its element count for the ops in
// which every rank passes the same count (an all-to-all or a gather may differ by rank).
std::string call_of(const std::string& op, const std::string* numel_in) {
  static const std::set<std::string> kSameCountOnEveryRank = {
      "ALLREDUCE", "BROADCAST", "REDUCE", "_ALLGATHER_BASE", "ALLGATHER", "_REDUCE_SCATTER_BASE", "REDUCE_SCATTER"};
  if (!numel_in || !kSameCountOnEveryRank.count(op)) return op;
  return fmt::format("{} with NumelIn={}", op, *numel_in);
}
}  // namespace

Correlator::Collectives Correlator::analyse_collectives() const {
  Collectives c;
  std::map<int64_t, std::set<int>> by_seq;
  std::map<int64_t, std::string> op_of;
  std::map<std::pair<int64_t, int>, std::string> op_at;  // (SeqNum, rank) -> OpType
  std::set<int> noseq_reporters;
  std::string noseq_op;
  for (size_t def = 0; def < events_by_def_.size(); ++def) {
    if (!t_.own_timeout[def]) continue;
    for (const Event& ev : events_by_def_[def]) {
      if (ev.rank < 0) continue;
      int64_t seq = ev.capture("seq") ? to_int(*ev.capture("seq")).value_or(-1) : -1;
      const std::string* op = ev.capture("op");
      if (seq < 0) {
        noseq_reporters.insert(ev.rank);
        if (op) noseq_op = *op;
        continue;
      }
      by_seq[seq].insert(ev.rank);
      c.timeout_line.emplace(std::pair{ev.rank, seq}, &ev);
      if (op) op_of[seq] = *op;
      if (op) op_at[{seq, ev.rank}] = call_of(*op, ev.capture("numel_in"));
    }
  }
  // A flight-recorder dump "due to a collective timeout from this local rank" is that rank's
  // own timeout (torch >= 2.4 may print it before, or instead of, the watchdog line): stuck at
  // the work after its last completed one, or, with no counter, in the same hang as the others.
  std::set<int> local_noseq;
  if (auto def = lib_.find_pattern("nccl_dump_signal"))
    for (const Event& ev : events_by_def_[*def]) {
      if (ev.rank < 0 || ev.capture("detector")) continue;
      int64_t done = ev.capture("completed") ? to_int(*ev.capture("completed")).value_or(-2) : -2;
      if (done >= -1) by_seq[done + 1].insert(ev.rank);
      else local_noseq.insert(ev.rank);
    }
  size_t best = 0;
  for (const auto& [seq, rs] : by_seq)
    if (rs.size() > best) {  // ties keep the lowest seq: the first collective that hung
      best = rs.size();
      c.seq = seq;
      c.reporters = rs;
      c.op = op_of[seq];
    }
  // At the stuck SeqNum, the call most reporters show (OpType, and the element count where every
  // rank must pass the same) is the collective; a few ranks with another one (at most an eighth
  // of them, at least one) issued a different call: a desync.
  if (c.seq >= 0) {
    std::map<std::string, std::set<int>> ranks_by_op;
    for (int r : c.reporters)
      if (auto it = op_at.find({c.seq, r}); it != op_at.end()) ranks_by_op[it->second].insert(r);
    if (ranks_by_op.size() == 2) {
      auto majority = ranks_by_op.begin(), minority = std::next(majority);
      if (majority->second.size() < minority->second.size()) std::swap(majority, minority);
      if (minority->second.size() <= std::max<size_t>(1, c.reporters.size() / 8) && majority->second.size() >= 2) {
        // Named as the log would tell them apart: by OpType, or by count when the op is the same.
        std::string op = majority->first.substr(0, majority->first.find(' '));
        std::string odd = minority->first.substr(0, minority->first.find(' '));
        c.op = op;
        c.call = op == odd ? majority->first : op;
        c.odd_op = minority->second;
        c.odd_op_name = op == odd ? minority->first : odd;
      }
    }
  }
  if (c.seq < 0 && !noseq_reporters.empty()) {
    c.reporters = noseq_reporters;
    c.op = noseq_op;
  }
  if (!c.reporters.empty()) c.reporters.insert(local_noseq.begin(), local_noseq.end());
  // The process group of the stuck collective, when a status line names it: counters of
  // another group (a rank's default PG while an expert-parallel group hung) say nothing about it.
  int64_t stuck_pg = -1;
  for (auto name : {"nccl_work_status", "flight_recorder_pending"})
    if (auto def = lib_.find_pattern(name); def && c.seq >= 0)
      for (const Event& ev : events_by_def_[*def])
        if (ev.capture("pg") && ev.capture("seq") && to_int(*ev.capture("seq")).value_or(-1) == c.seq)
          stuck_pg = to_int(*ev.capture("pg")).value_or(-1);
  for (auto name : correlator_detail::kCounterPatterns) {
    auto def = lib_.find_pattern(name);
    if (!def) continue;
    for (const Event& ev : events_by_def_[*def]) {
      if (ev.rank < 0) continue;
      if (stuck_pg >= 0 && ev.capture("pg") && to_int(*ev.capture("pg")).value_or(stuck_pg) != stuck_pg) continue;
      int64_t enq = ev.capture("enqueued") ? to_int(*ev.capture("enqueued")).value_or(-1) : -1;
      if (enq < 0) continue;
      auto it = c.enqueued.find(ev.rank);
      if (it == c.enqueued.end() || enq < it->second) c.enqueued[ev.rank] = enq;
    }
  }
  if (c.seq >= 0)
    for (const auto& [r, enq] : c.enqueued)
      if (enq < c.seq) c.behind.insert(r);
  // A rank that timed out too, but at another SeqNum, reached a collective: it is not missing.
  // A few works earlier, it is stuck behind the others (they completed works it never did);
  // later, it got past the collective the others wait in. Far apart, the numbers are likely
  // from different process groups and say nothing either way.
  constexpr int64_t kSameGroupWindow = 16;
  if (c.seq >= 0)
    for (const auto& [seq, rs] : by_seq)
      for (int r : rs)
        if (!c.reporters.count(r) && !c.own_seq.count(r)) {
          c.own_seq[r] = seq;
          if (seq < c.seq && c.seq - seq <= kSameGroupWindow) c.behind.insert(r);
          if (seq > c.seq && seq - c.seq <= kSameGroupWindow) c.ahead.insert(r);
        }
  int& world = c.world;
  for (const auto& [r, rs] : ranks_) world = std::max(world, r + 1);
  int& init_world = c.init_world;
  for (auto name : {"nccl_comm_init_rank", "nccl_init_start_rank"})
    if (auto def = lib_.find_pattern(name))
      for (const Event& ev : events_by_def_[*def]) init_world = std::max(init_world, world_or(ev.capture("nranks"), 0));
  world = std::max(world, init_world);
  for (int r : c.reporters) world = std::max(world, r + 1);
  if (c.reporters.size() >= 2 && world > 0) {
    for (int r = 0; r < world; ++r)
      if (!c.reporters.count(r) && !c.own_seq.count(r)) c.missing.push_back(r);
    if (c.missing.size() > std::max<size_t>(1, static_cast<size_t>(world) / 8)) c.missing.clear();
  }
  return c;
}

// torchrun's Root Cause block (rank line within a few lines of the header), else mpirun's first
// failed process.
Correlator::LauncherVerdict Correlator::launcher_verdict() const {
  LauncherVerdict v;
  if (auto hdr = lib_.find_pattern("elastic_root_cause_header"), rk = lib_.find_pattern("elastic_root_cause_rank");
      hdr && rk) {
    for (const Event& h : events_by_def_[*hdr])
      for (const Event& r : events_by_def_[*rk])
        if (r.input == h.input && r.line > h.line && r.line <= h.line + 8 && !v.rank) {
          v.rank = rank_or(r.capture("rank"), -1);
          v.name = "torchrun's \"Root Cause (first observed failure)\"";
          v.event = &r;
        }
    if (auto child = lib_.find_pattern("elastic_child_failed_error"); child && v.event)
      for (const Event& ev : events_by_def_[*child])
        if (ev.input == v.event->input && ev.line < v.event->line) v.summary_start = &ev;  // the last before it
  }
  // mpirun's, TGI's and Paddle's lines name one rank each: the first that carries one.
  auto first_ranked = [&](const char* pattern, const char* name) {
    if (v.rank) return;
    if (auto def = lib_.find_pattern(pattern))
      for (const Event& ev : events_by_def_[*def])
        if (int r = rank_or(ev.capture("rank"), -1); r >= 0) {
          v.rank = r;
          v.name = name;
          v.event = &ev;
          return;
        }
  };
  for (const auto& [pattern, name] : correlator_detail::kLauncherFirstFailure) first_ranked(pattern, name);
  // torchrun's agent logs "failed (exitcode: N) local_rank: K" for the worker whose failure it saw
  // first; its local rank is the job's rank when the job shows one host (the event's rank then).
  if (auto def = lib_.find_pattern("elastic_child_failed"); def && !v.rank) {
    const Event* first = nullptr;
    for (const Event& ev : events_by_def_[*def])
      if (ev.rank >= 0 && (!first || earlier(ev, *first))) first = &ev;
    if (first) {
      v.rank = first->rank;
      v.name = "torchrun's first \"failed (exitcode: ...) local_rank\" line";
      v.event = first;
    }
  }
  if (v.rank && *v.rank < 0) v.rank.reset();
  if (auto rk = lib_.find_pattern("elastic_root_cause_rank"))
    for (const Event& r : events_by_def_[*rk])
      if (int failed = rank_or(r.capture("rank"), -1); failed >= 0) v.failed_ranks.insert(failed);
  return v;
}

}  // namespace firstfault
