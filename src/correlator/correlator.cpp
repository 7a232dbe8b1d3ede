#include "firstfault/correlator/correlator.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <set>

#include "firstfault/action/action.h"
#include "firstfault/reader/log_reader.h"
#include "firstfault/util/line_template.h"
#include "firstfault/util/pci.h"
#include "firstfault/util/strings.h"

namespace firstfault {

namespace {

int to_int_or(const std::string* s, int fallback) {
  if (!s || s->empty()) return fallback;
  auto v = to_int(*s);
  return v && *v >= INT32_MIN && *v <= INT32_MAX ? static_cast<int>(*v) : fallback;
}

// A rank or world size captured from a line; numbers no job can have (kMaxRankNumber) are
// ignored, so `world` and the ranks missing from a timeout stay bounded.
int rank_or(const std::string* s, int fallback) {
  int v = to_int_or(s, -1);
  return v >= 0 && v <= kMaxRankNumber ? v : fallback;
}
int world_or(const std::string* s, int fallback) {
  int v = to_int_or(s, -1);
  return v >= 1 && v <= kMaxRankNumber + 1 ? v : fallback;
}

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

// A line in which a rank reports that it timed out waiting in a collective or transfer
// (NCCL watchdog, Gloo): any pattern that captures `timeout_ms` and does not name another rank.
bool is_nccl_timeout_def(const Library& lib, size_t def) {
  const auto& caps = lib.patterns[def].capture_names;
  auto has = [&](const char* c) { return std::find(caps.begin(), caps.end(), c) != caps.end(); };
  return has("timeout_ms") && !has("rank");
}

}  // namespace

struct Correlator::Hits {
  const Entry* entry = nullptr;
  std::vector<std::vector<const Event*>> by_ref;  // events per ref that satisfy capture rules
  bool supported = false;
  bool has_root = false;
  double confidence = 0;
  const Event* first_root = nullptr;
  const Event* first_any = nullptr;
};

CorrelatorTables::CorrelatorTables(const Library& lib, std::vector<size_t> tail_patterns)
    : referenced(lib.patterns.size(), false),
      has_step(lib.patterns.size(), false),
      own_timeout(lib.patterns.size(), false),
      consequence(lib.patterns.size(), false),
      cascade(lib.patterns.size(), false),
      tail_defs(std::move(tail_patterns)) {
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
  }
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
  // A launcher's line about a rank names it for events, but is not that rank's own output.
  RankState* rs = a.about_rank ? nullptr : rank_state(a.rank);
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
  size_t cap = ranks_.size() > 1024 ? 4 : kTailLines;
  TailLine* t;
  if (rs->tail.size() < cap) {
    rs->tail.emplace_back();
    rs->tail.back().text.reserve(kTailLineBytes);
    rs->tail_next = rs->tail.size() % cap;
    t = &rs->tail.back();
  } else {
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
  auto& list = events_by_def_[def];
  if (list.size() >= kMaxEventsPerPattern) {
    note_dropped(def);
    return;
  }
  if (ev.text.size() > kMaxEventText) {
    ev.text = truncate_utf8(ev.text, kMaxEventText);
    ++texts_cut_;
  }
  list.push_back(std::move(ev));
}

int64_t Correlator::time_key(const Timestamp& t) const {
  if (t.kind == Timestamp::kNoYear && ref_year_) return with_year(t, ref_year_).ms;
  return t.ms;
}

bool Correlator::earlier(const Event& a, const Event& b) const {
  bool ta = a.time.kind == Timestamp::kFull || a.time.kind == Timestamp::kNoYear;
  bool tb = b.time.kind == Timestamp::kFull || b.time.kind == Timestamp::kNoYear;
  // Year-less times are comparable with full ones only once a year is known.
  if (ta && tb && (a.time.kind == b.time.kind || ref_year_)) {
    int64_t ka = time_key(a.time), kb = time_key(b.time);
    // One-second resolution on most formats: within a second, arrival order decides.
    if (std::llabs(ka - kb) >= 1000) return ka < kb;
  }
  if (a.input == b.input) return a.line < b.line;
  return a.order < b.order;
}

Correlator::ErrorLines Correlator::error_lines() const {
  ErrorLines e;
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
  // A Python traceback runs from a header to the exception line that closes it: the same rank's
  // first exception line after the header, within the few dozen lines a traceback takes.
  constexpr uint64_t kTracebackLines = 60;
  auto exception_def = lib_.find_pattern("error_exception_line");
  auto closing_exception = [&](const Event& h) -> const Event* {
    const Event* closing = nullptr;
    if (exception_def)
      for (const Event& ev : events_by_def_[*exception_def])
        if (ev.input == h.input && ev.rank == h.rank && ev.line > h.line && ev.line <= h.line + kTracebackLines &&
            (!closing || ev.line < closing->line))
          closing = &ev;
    return closing;
  };
  auto mark_block = [&](const Event& h, const Event& closing) {
    for (const Event* ev : e.lines)
      if (ev->input == h.input && ev->rank == h.rank && ev->line >= h.line && ev->line <= closing.line)
        e.benign.insert({ev->input, ev->line});
  };
  // The traceback Python printed under "Exception ignored in: ..." (a finalizer that raised at
  // exit): Python ignored it, so nothing in it, header to exception, fails anything.
  if (auto hdr = lib_.find_pattern("py_exception_ignored"))
    for (const Event& h : events_by_def_[*hdr])
      if (const Event* closing = closing_exception(h)) mark_block(h, *closing);
  // A traceback is one error, told by the exception that closes it (harmless when that is:
  // KeyboardInterrupt); its header counts on its own only where the paste lost the exception.
  if (auto hdr = lib_.find_pattern("py_traceback_header"))
    for (const Event& h : events_by_def_[*hdr])
      if (const Event* closing = closing_exception(h)) {
        if (e.is_benign(*closing)) mark_block(h, *closing);
        e.benign.insert({h.input, h.line});
      }
  return e;
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
                     std::llabs(time_key(second->time) - time_key(first->time)) >= 1000;
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
  e.time = ev.time.kind == Timestamp::kNoYear && ref_year_ ? with_year(ev.time, ref_year_) : ev.time;
  e.text = ev.text;
  e.captures = ev.captures;
  return e;
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
  // Ray prefix gives ip and pid) and the trainer's worker list (ip and pid in the text). The ip
  // is absent from a prefix on the driver's node, so a pid that one listed worker has maps alone.
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
  if (auto def = lib_.find_pattern("ray_train_process_group_rank"))
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
  bool single_host = hosts.size() <= 1;
  // A job whose every ranked line comes from one rank (a single-GPU run with [rank0] prefixes):
  // its unranked lines are that rank's too.
  int only_rank = ranks_.size() == 1 ? ranks_.begin()->first : -1;
  for (auto& list : events_by_def_) {
    for (Event& ev : list) {
      if (int r = rank_or(ev.capture("rank"), -1); r >= 0) ev.rank = r;
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
  for (auto& [r, rs] : ranks_) {
    // Newest first: the first line with a progress counter is the rank's last progress.
    for (size_t k = 0; k < rs.tail.size(); ++k) {
      const TailLine& t = rs.tail[(rs.tail_next + rs.tail.size() - 1 - k) % rs.tail.size()];
      std::string_view body = attributor.attribute(t.text).body;
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
      if (found) {
        if (auto v = to_int(step)) {
          rs.last_step = *v;
          rs.last_progress = t.text;
        }
        break;
      }
    }
  }
}

Diagnosis Correlator::snapshot() const {
  Correlator copy(*this);
  copy.rank_index_.clear();  // the copied index points into this object's map; rebuilt on demand
  return copy.finish();
}

void Correlator::absorb(Correlator&& later, uint64_t line_offset) {
  uint64_t order_offset = order_;
  for (size_t def = 0; def < events_by_def_.size(); ++def) {
    count_by_def_[def] += later.count_by_def_[def];
    for (Event& ev : later.events_by_def_[def]) {
      if (events_by_def_[def].size() >= kMaxEventsPerPattern) {
        if (std::find(limits_.dropped.begin(), limits_.dropped.end(), lib_.patterns[def].name) == limits_.dropped.end())
          limits_.dropped.push_back(lib_.patterns[def].name);
        limits_.truncated = true;
        break;
      }
      ev.line += line_offset;
      ev.order += order_offset;
      events_by_def_[def].push_back(std::move(ev));
    }
  }
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
    // Append the later tail (oldest first) so the newest lines win.
    for (size_t k = 0; k < lrs.tail.size(); ++k) {
      TailLine t = lrs.tail[(lrs.tail_next + k) % lrs.tail.size()];
      t.line_no += line_offset;
      size_t cap = std::max<size_t>(rs->tail.size(), std::min(kTailLines, lrs.tail.size()));
      if (rs->tail.size() < cap) {
        rs->tail.push_back(std::move(t));
        rs->tail_next = rs->tail.size() % cap;
      } else {
        rs->tail[rs->tail_next] = std::move(t);
        rs->tail_next = (rs->tail_next + 1) % rs->tail.size();
      }
    }
  }
  if (!ref_year_) ref_year_ = later.ref_year_;
  order_ += later.order_;
}

// Generic entries name a failure by its kind alone (an uncaught KeyError, a SIGABRT). A specific
// entry with a root event of its own says more, so they all give way to it. One that only saw
// consequences (a collective timeout, "cause not in the log") gives way to a generic root line
// printed before them (rank 3's KeyError, then the others' timeouts), not to one printed after
// (the watchdog's own abort, exit code -6, is a consequence of the timeout). A generic diagnosis
// never claims more than kGenericConfidence.
void Correlator::keep_generic_only_without_specific(std::vector<Hits>& all) const {
  constexpr double kGenericConfidence = 0.45;
  bool specific_root = false;
  const Event* first_specific = nullptr;  // the first line any specific entry saw
  for (const Hits& h : all)
    if (!h.entry->match.generic) {
      specific_root = specific_root || h.has_root;
      if (h.first_any && (!first_specific || earlier(*h.first_any, *first_specific))) first_specific = h.first_any;
    }
  all.erase(std::remove_if(all.begin(), all.end(),
                           [&](const Hits& h) {
                             if (!h.entry->match.generic) return false;
                             if (specific_root) return true;
                             return first_specific && !(h.first_root && earlier(*h.first_root, *first_specific));
                           }),
            all.end());
  for (Hits& h : all)
    if (h.entry->match.generic) h.confidence = std::min(h.confidence, kGenericConfidence);
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
  apply_tail_progress();
  // Every bound that dropped stored detail is named in the output, never silent
  // (docs/reliability.md); counts and line numbers stay exact past all of them.
  d.limits.truncated = limits_.truncated;
  for (const auto& name : limits_.dropped) {
    auto def = lib_.find_pattern(name);
    d.limits.dropped.push_back(fmt::format("events of pattern {} beyond the first {} ({} matched)", name,
                                           kMaxEventsPerPattern, def ? count_by_def_[*def] : 0));
  }
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

  const ErrorLines errors = error_lines();
  std::vector<size_t> error_line_defs;
  for (auto name : {"error_exception_line", "error_fatal_line", "error_generic_line"})
    if (auto def = lib_.find_pattern(name)) error_line_defs.push_back(*def);
  auto is_error_line_def = [&](size_t def) {
    return std::find(error_line_defs.begin(), error_line_defs.end(), def) != error_line_defs.end();
  };

  // ---- evaluate every entry ----
  std::vector<Hits> all, fallbacks;
  all.reserve(lib_.entries.size());
  const Event* earliest_root = nullptr;
  for (const Entry& e : lib_.entries) {
    Hits h;
    h.entry = &e;
    h.by_ref.resize(e.refs.size());
    for (size_t r = 0; r < e.refs.size(); ++r) {
      for (const Event& ev : events_by_def_[e.refs[r].def]) {
        bool ok = true;
        for (const CaptureRule& rule : e.match.captures) {
          if (rule.ref != r) continue;
          const std::string* v = ev.capture(rule.capture);
          if (!v || !RE2::FullMatch(*v, *rule.re)) ok = false;
        }
        // A generic entry reads a kind of error: only on a line that reads as an error and is not
        // known to be harmless (a cudaError name in a fallback warning, a library probe at INFO).
        if (ok && e.match.generic && (!errors.is_error(ev) || errors.is_benign(ev))) ok = false;
        // Any entry that reads the engine's error lines (a hang shown by an error) reads them as
        // the verdict does: a line known to be harmless is not one.
        if (ok && errors.is_error(ev) && errors.is_benign(ev) && is_error_line_def(e.refs[r].def)) ok = false;
        if (ok) h.by_ref[r].push_back(&ev);
      }
    }
    auto hit = [&](size_t r) { return !h.by_ref[r].empty(); };
    bool rule = std::all_of(e.match.require.begin(), e.match.require.end(), hit);
    if (!e.match.any.empty()) rule = rule && std::any_of(e.match.any.begin(), e.match.any.end(), hit);
    rule = rule && std::none_of(e.match.absent.begin(), e.match.absent.end(), hit);
    if (e.match.fallback) {
      if (rule) fallbacks.push_back(std::move(h));
      continue;
    }
    bool signal = false;
    for (size_t r = 0; r < e.refs.size(); ++r) {
      if (!hit(r)) continue;
      Role role = e.refs[r].role;
      if (role == Role::kRoot || role == Role::kCascade) signal = true;
      if (role == Role::kRoot) {
        h.has_root = true;
        for (const Event* ev : h.by_ref[r])
          if (!h.first_root || earlier(*ev, *h.first_root)) h.first_root = ev;
      }
      for (const Event* ev : h.by_ref[r])
        if (role != Role::kContext && (!h.first_any || earlier(*ev, *h.first_any))) h.first_any = ev;
    }
    h.supported = rule && signal;
    if (!h.supported) continue;
    // A generic entry's root (an exit code, an exception class) says nothing about which specific
    // entry's root came first.
    if (h.first_root && !e.match.generic && (!earliest_root || earlier(*h.first_root, *earliest_root)))
      earliest_root = h.first_root;
    all.push_back(std::move(h));
  }

  for (Hits& h : all) {
    const Entry& e = *h.entry;
    double c = h.has_root ? 0.55 : 0.25;
    int extra = 0;
    bool cascade = false;
    for (size_t r = 0; r < e.refs.size(); ++r) {
      if (h.by_ref[r].empty()) continue;
      Role role = e.refs[r].role;
      if (role == Role::kCascade) cascade = true;
      bool penalizing = std::find(e.match.penalize.begin(), e.match.penalize.end(), r) != e.match.penalize.end();
      if ((role == Role::kRoot || role == Role::kContext) && !penalizing) ++extra;
    }
    c += std::min(0.24, 0.08 * std::max(0, extra - 1));
    if (cascade && h.has_root) c += 0.05;
    for (size_t r : e.match.boost)
      if (!h.by_ref[r].empty()) c += 0.1;
    for (size_t r : e.match.penalize)
      if (!h.by_ref[r].empty()) c -= 0.2;
    if (!e.match.require_is_default && e.match.require.size() > 1) c += 0.05 * static_cast<double>(e.match.require.size() - 1);
    if (h.has_root && h.first_root == earliest_root) c += 0.1;
    c = std::clamp(c, 0.05, h.has_root ? 0.98 : 0.45);
    h.confidence = c;
  }
  // Specific beats generic: a supported entry that specializes another ranks above it.
  for (const Hits& s : all) {
    for (const auto& gid : s.entry->specializes) {
      for (Hits& g : all) {
        if (g.entry->id != gid) continue;
        if (g.has_root && !s.has_root) continue;  // a cascade-only refinement never outranks a root event
        g.confidence = std::min(g.confidence, std::max(0.05, s.confidence - 0.05));
        if (s.has_root == g.has_root && s.confidence <= g.confidence) g.confidence = std::max(0.05, s.confidence - 0.05);
      }
    }
  }
  keep_generic_only_without_specific(all);
  std::sort(all.begin(), all.end(), [&](const Hits& a, const Hits& b) {
    if (a.has_root != b.has_root) return a.has_root;
    if (std::fabs(a.confidence - b.confidence) > 1e-9) return a.confidence > b.confidence;
    const Event* fa = a.first_root ? a.first_root : a.first_any;
    const Event* fb = b.first_root ? b.first_root : b.first_any;
    if (fa && fb && fa != fb) return earlier(*fa, *fb);
    return a.entry->id < b.entry->id;
  });

  // Fallback entries describe what a log that *lacks* something means (e.g. NCCL init that never
  // completed); they count only when nothing else is supported.
  if (all.empty())
    for (Hits& h : fallbacks) {
      h.supported = true;
      h.confidence = 0.3;
      all.push_back(std::move(h));
    }

  // A job that simply stopped: no supported entry, no error line, and one or more ranks fell
  // behind the others' progress. That is a hang, diagnosed from silence (docs/initiating-rank.md).
  if (all.empty()) {
    int64_t max_step = -1;
    size_t with_progress = 0, behind = 0;
    for (const auto& [r, rs] : ranks_)
      if (rs.last_step >= 0) {
        ++with_progress;
        max_step = std::max(max_step, rs.last_step);
      }
    for (const auto& [r, rs] : ranks_)
      if (rs.last_step >= 0 && rs.last_step < max_step) ++behind;
    const Entry* hang = lib_.find_entry("training-hang-silent");
    if (hang && with_progress >= 2 && behind >= 1 && behind * 2 < with_progress) {
      Hits h;
      h.entry = hang;
      h.by_ref.resize(hang->refs.size());
      h.supported = true;
      h.confidence = behind == 1 ? 0.5 : 0.3;
      all.push_back(std::move(h));
    }
  }

  // ---- NCCL collective analysis (used for the rank ladder and the collateral summary) ----
  struct Timeouts {
    int64_t seq = -1;
    std::string op;
    std::set<int> reporters;
    std::set<int> behind;  // last enqueued below the stuck seq, or timed out a little earlier
    std::map<int, int64_t> enqueued;
    std::map<int, int64_t> own_seq;  // ranks that timed out at another SeqNum: the lowest one
    std::map<std::pair<int, int64_t>, const Event*> timeout_line;  // (rank, SeqNum) -> its first watchdog line
    std::set<int> ahead;             // ... at a later one: they got past the stuck collective
  } nccl;
  {
    std::map<int64_t, std::set<int>> by_seq;
    std::map<int64_t, std::string> op_of;
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
        nccl.timeout_line.emplace(std::pair{ev.rank, seq}, &ev);
        if (op) op_of[seq] = *op;
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
        nccl.seq = seq;
        nccl.reporters = rs;
        nccl.op = op_of[seq];
      }
    if (nccl.seq < 0 && !noseq_reporters.empty()) {
      nccl.reporters = noseq_reporters;
      nccl.op = noseq_op;
    }
    if (!nccl.reporters.empty()) nccl.reporters.insert(local_noseq.begin(), local_noseq.end());
    // The process group of the stuck collective, when a status line names it: counters of
    // another group (a rank's default PG while an expert-parallel group hung) say nothing about it.
    int64_t stuck_pg = -1;
    if (auto def = lib_.find_pattern("nccl_work_status"); def && nccl.seq >= 0)
      for (const Event& ev : events_by_def_[*def])
        if (ev.capture("pg") && ev.capture("seq") && to_int(*ev.capture("seq")).value_or(-1) == nccl.seq)
          stuck_pg = to_int(*ev.capture("pg")).value_or(-1);
    for (auto name : {"nccl_work_status", "nccl_dump_signal"}) {
      auto def = lib_.find_pattern(name);
      if (!def) continue;
      for (const Event& ev : events_by_def_[*def]) {
        if (ev.rank < 0) continue;
        if (stuck_pg >= 0 && ev.capture("pg") && to_int(*ev.capture("pg")).value_or(stuck_pg) != stuck_pg) continue;
        int64_t enq = ev.capture("enqueued") ? to_int(*ev.capture("enqueued")).value_or(-1) : -1;
        if (enq < 0) continue;
        auto it = nccl.enqueued.find(ev.rank);
        if (it == nccl.enqueued.end() || enq < it->second) nccl.enqueued[ev.rank] = enq;
      }
    }
    if (nccl.seq >= 0)
      for (const auto& [r, enq] : nccl.enqueued)
        if (enq < nccl.seq) nccl.behind.insert(r);
    // A rank that timed out too, but at another SeqNum, reached a collective: it is not missing.
    // A few works earlier, it is stuck behind the others (they completed works it never did);
    // later, it got past the collective the others wait in. Far apart, the numbers are likely
    // from different process groups and say nothing either way.
    constexpr int64_t kSameGroupWindow = 16;
    if (nccl.seq >= 0)
      for (const auto& [seq, rs] : by_seq)
        for (int r : rs)
          if (!nccl.reporters.count(r) && !nccl.own_seq.count(r)) {
            nccl.own_seq[r] = seq;
            if (seq < nccl.seq && nccl.seq - seq <= kSameGroupWindow) nccl.behind.insert(r);
            if (seq > nccl.seq && seq - nccl.seq <= kSameGroupWindow) nccl.ahead.insert(r);
          }
  }
  int world = 0;
  for (const auto& [r, rs] : ranks_) world = std::max(world, r + 1);
  int init_world = 0;  // the size NCCL init printed, when it did
  for (auto name : {"nccl_comm_init_rank", "nccl_init_start_rank"})
    if (auto def = lib_.find_pattern(name))
      for (const Event& ev : events_by_def_[*def]) init_world = std::max(init_world, world_or(ev.capture("nranks"), 0));
  world = std::max(world, init_world);
  for (int r : nccl.reporters) world = std::max(world, r + 1);
  std::vector<int> missing;
  if (nccl.reporters.size() >= 2 && world > 0) {
    for (int r = 0; r < world; ++r)
      if (!nccl.reporters.count(r) && !nccl.own_seq.count(r)) missing.push_back(r);
    if (missing.size() > std::max<size_t>(1, static_cast<size_t>(world) / 8)) missing.clear();
  }

  // Launcher verdicts: torchrun's Root Cause block (rank line within a few lines of the header),
  // mpirun's first failed process.
  std::optional<int> launcher_rank;
  std::string launcher_name;
  const Event* launcher_event = nullptr;  // the line that names launcher_rank
  if (auto hdr = lib_.find_pattern("elastic_root_cause_header"), rk = lib_.find_pattern("elastic_root_cause_rank");
      hdr && rk) {
    for (const Event& h : events_by_def_[*hdr])
      for (const Event& r : events_by_def_[*rk])
        if (r.input == h.input && r.line > h.line && r.line <= h.line + 8 && !launcher_rank) {
          launcher_rank = rank_or(r.capture("rank"), -1);
          launcher_name = "torchrun's \"Root Cause (first observed failure)\"";
          launcher_event = &r;
        }
  }
  if (!launcher_rank)
    if (auto def = lib_.find_pattern("mpirun_noticed_rank"))
      for (const Event& ev : events_by_def_[*def])
        if (int r = rank_or(ev.capture("rank"), -1); r >= 0 && !launcher_rank) {
          launcher_rank = r;
          launcher_name = "mpirun's \"noticed that process rank\" line";
          launcher_event = &ev;
        }
  if (!launcher_rank)
    if (auto def = lib_.find_pattern("mpirun_first_failed"))
      for (const Event& ev : events_by_def_[*def])
        if (int r = rank_or(ev.capture("rank"), -1); r >= 0 && !launcher_rank) {
          launcher_rank = r;
          launcher_name = "mpirun's first failed process";
          launcher_event = &ev;
        }
  if (launcher_rank && *launcher_rank < 0) launcher_rank.reset();
  std::set<int> launcher_failed_ranks;  // every rank torchrun's summary lists as failed
  if (auto rk = lib_.find_pattern("elastic_root_cause_rank"))
    for (const Event& r : events_by_def_[*rk])
      if (int v = rank_or(r.capture("rank"), -1); v >= 0) launcher_failed_ranks.insert(v);

  // Each rank's first error line of its own: worked out at most once, and only where a rung needs it.
  std::optional<std::map<int, const Event*>> own_cache;
  auto own_errors = [&]() -> const std::map<int, const Event*>& {
    if (!own_cache) own_cache = own_error_lines(errors);
    return *own_cache;
  };

  // ---- verdict ----
  if (all.empty()) {
    d.verdict = "clean";
    const Event* first_err = nullptr;
    for (const Event* ev : errors.lines)
      if (!errors.is_benign(*ev) && (!first_err || earlier(*ev, *first_err))) first_err = ev;
    if (first_err) {
      d.verdict = "unrecognized";
      d.first_error = to_evidence(*first_err, lib_.patterns[first_err->def].name, Role::kContext);
      // No entry fits, but the launcher may still say whose process failed first: the place
      // to read next (a hint, not an initiating rank: it is the order of exits it observed).
      if (launcher_rank && launcher_event)
        d.launcher_first_failure = LauncherHint{
            *launcher_rank, launcher_name,
            to_evidence(*launcher_event, lib_.patterns[launcher_event->def].name, Role::kTeardown)};
      d.suspect = suspect_from_error_lines(own_errors(), launcher_rank, launcher_name);
      if (d.suspect) d.suspect->reason = "no entry knows this failure; " + d.suspect->reason;
    }
  } else {
    d.verdict = "diagnosed";
    Hits& top = all.front();
    d.entry = top.entry;
    d.confidence = top.confidence;
    for (size_t i = 1; i < all.size() && d.alternatives.size() < 3; ++i)
      d.alternatives.push_back({all[i].entry->id, all[i].confidence, all[i].has_root});

    // Evidence: root hits first (earliest first), then cascade, context, teardown; capped.
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

    // ---- the initiating-rank ladder (docs/initiating-rank.md) ----
    RankDecision& dec = d.initiating;
    std::vector<const Event*> roots;
    std::string root_pattern;
    for (size_t r = 0; r < top.entry->refs.size(); ++r)
      if (top.entry->refs[r].role == Role::kRoot)
        for (const Event* ev : top.by_ref[r]) roots.push_back(ev);
    std::sort(roots.begin(), roots.end(), [&](const Event* a, const Event* b) { return earlier(*a, *b); });
    auto name_of_ref = [&](const Event* ev) {
      for (size_t r = 0; r < top.entry->refs.size(); ++r)
        if (top.entry->refs[r].def == ev->def) return top.entry->refs[r].name;
      return lib_.patterns[ev->def].name;
    };
    auto role_of_ref = [&](const Event* ev) {
      for (size_t r = 0; r < top.entry->refs.size(); ++r)
        if (top.entry->refs[r].def == ev->def) return top.entry->refs[r].role;
      return Role::kContext;
    };
    std::vector<const Event*> ranked_roots;
    for (const Event* ev : roots)
      if (ev->rank >= 0) ranked_roots.push_back(ev);
    // Events of other failure modes that happened first would contradict a launcher verdict.
    const Event* first_cascade = nullptr;
    for (size_t def = 0; def < events_by_def_.size(); ++def)
      if (t_.own_timeout[def])
        for (const Event& ev : events_by_def_[def])
          if (!first_cascade || earlier(ev, *first_cascade)) first_cascade = &ev;

    if (!ranked_roots.empty()) {
      const Event* first = ranked_roots.front();
      std::vector<int> order;
      for (const Event* ev : ranked_roots)
        if (std::find(order.begin(), order.end(), ev->rank) == order.end()) order.push_back(ev->rank);
      dec.first_evidence = to_evidence(*first, name_of_ref(first), role_of_ref(first));
      dec.method = "root-event";
      if (top.entry->job_scope) {
        // A configuration or version error: every rank hits it, whichever printed it first.
        dec.method = "job-wide";
        dec.confidence = 0.6;
        dec.candidates = order;
        dec.reason = fmt::format("{} is a configuration error every rank of the job hits; rank {} printed it first, "
                                 "which says nothing about where the fault is",
                                 top.entry->id, first->rank);
      } else if (order.size() == 1) {
        dec.rank = first->rank;
        dec.confidence = 0.9;
        dec.reason = fmt::format("rank {} is the only rank with a root event ({})", first->rank, name_of_ref(first));
        if (first_cascade && first_cascade->rank != first->rank && earlier(*first, *first_cascade))
          dec.reason += ", and it comes before the first collective timeout on another rank";
      } else {
        // Several ranks hit it: decide by time, and say when it is job-wide.
        const Event* second = nullptr;
        for (const Event* ev : ranked_roots)
          if (ev->rank != first->rank) {
            second = ev;
            break;
          }
        bool separated = second && first->time.valid() && second->time.valid() &&
                         first->time.kind != Timestamp::kBoot &&
                         std::llabs(time_key(second->time) - time_key(first->time)) >= 1000;
        std::set<int> distinct(order.begin(), order.end());
        PeerVote vote = vote_on_peers(ranked_roots, world);
        if (vote.rank >= 0) {
          dec.rank = vote.rank;
          dec.method = "peer-vote";
          dec.confidence = 0.8;
          dec.candidates = order;
          dec.reason = fmt::format("ranks {} each found that rank {} differs from them; the odd one out is rank {}",
                                   format_ranges(vote.voters), vote.rank, vote.rank);
          if (auto it = std::find_if(ranked_roots.begin(), ranked_roots.end(),
                                     [&](const Event* ev) { return ev->rank == vote.rank; });
              it != ranked_roots.end())
            dec.first_evidence = to_evidence(**it, name_of_ref(*it), role_of_ref(*it));
        } else if (!separated && world > 1 && static_cast<int>(distinct.size()) >= world) {
          dec.rank.reset();
          dec.method = "job-wide";
          dec.confidence = 0.6;
          dec.candidates = order;
          dec.reason = fmt::format("every rank ({}) hit it at about the same time: a job-wide cause, not one rank",
                                   format_ranges(std::vector<int>(distinct.begin(), distinct.end())));
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
      if (launcher_rank && dec.rank && *launcher_rank != *dec.rank)
        dec.reason += fmt::format("; {} names rank {}, but rank {}'s own root event is earlier evidence", launcher_name,
                                  *launcher_rank, *dec.rank);
    } else {
      std::vector<int> suspects(nccl.behind.begin(), nccl.behind.end());
      for (int r : missing)
        if (std::find(suspects.begin(), suspects.end(), r) == suspects.end()) suspects.push_back(r);
      // Several ranks never reached the collective (a launcher tore a whole node down at once):
      // the one of them that printed an error of its own is where it started.
      const Event* raised = nullptr;
      if (suspects.size() > 1) {
        const std::map<int, const Event*>& own = own_errors();
        std::vector<int> hit;
        for (int r : suspects)
          if (own.count(r)) hit.push_back(r);
        if (hit.size() == 1) {
          raised = own.at(hit.front());
          auto at = std::find(suspects.begin(), suspects.end(), hit.front());
          std::rotate(suspects.begin(), at, at + 1);
        }
      }
      if (!roots.empty()) dec.first_evidence = to_evidence(*roots.front(), name_of_ref(roots.front()), Role::kRoot);
      if (!roots.empty() && top.entry->job_scope) {
        // Unprefixed output of a configuration error: no rank to name, and none is at fault,
        // whatever the timeouts, context lines or launcher say about ranks.
        dec.method = "job-wide";
        dec.confidence = 0.6;
        dec.reason = fmt::format("{} is a configuration error every rank of the job hits; the log does not say "
                                 "which rank printed it",
                                 top.entry->id);
      } else if (!suspects.empty()) {
        dec.rank = suspects.front();
        dec.candidates = suspects;
        dec.confidence = suspects.size() == 1 ? 0.8 : 0.5;
        std::string opdesc = nccl.op.empty() ? "a collective" : nccl.op;
        std::string seqdesc = nccl.seq >= 0 ? fmt::format(" SeqNum {}", nccl.seq) : "";
        // The deciding line: the suspect's own status line, or its last line when it said nothing.
        int suspect = suspects.front();
        if (auto own = nccl.own_seq.find(suspect); own != nccl.own_seq.end() && own->second < nccl.seq)
          if (auto line = nccl.timeout_line.find({suspect, own->second}); line != nccl.timeout_line.end())
            dec.first_evidence = to_evidence(*line->second, lib_.patterns[line->second->def].name, Role::kCascade);
        for (auto name : {"nccl_work_status", "nccl_dump_signal"})
          if (auto def = lib_.find_pattern(name); def && !dec.first_evidence)
            for (const Event& ev : events_by_def_[*def])
              if (ev.rank == suspect && ev.capture("enqueued") && to_int(*ev.capture("enqueued")).value_or(-1) < nccl.seq) {
                dec.first_evidence = to_evidence(ev, name, Role::kCascade);
                break;
              }
        if (!dec.first_evidence) {
          auto it = ranks_.find(suspect);
          const TailLine* last = it != ranks_.end() ? it->second.newest() : nullptr;
          if (last) {
            Evidence e;
            e.pattern = "last line of the rank";
            e.role = "context";
            e.file = last->input < inputs_.size() ? inputs_[last->input].path : "";
            e.line = last->line_no;
            e.rank = suspect;
            e.host = it->second.host;
            e.time = it->second.last_time.kind == Timestamp::kNoYear && ref_year_ ? with_year(it->second.last_time, ref_year_)
                                                                                  : it->second.last_time;
            e.text = last->text;
            dec.first_evidence = e;
          }
        }
        if (auto own = nccl.own_seq.find(suspects.front()); own != nccl.own_seq.end() && own->second < nccl.seq) {
          dec.method = "nccl-sequence";
          dec.reason = fmt::format("{} rank(s) timed out in {}{}; rank {} timed out earlier, at SeqNum {}, so it never "
                                   "got as far",
                                   nccl.reporters.size(), opdesc, seqdesc, suspects.front(), own->second);
        } else if (nccl.behind.count(suspects.front())) {
          dec.method = "nccl-sequence";
          dec.reason = fmt::format("{} rank(s) timed out in {}{}; rank {}'s last enqueued work is {}, so it never reached it",
                                   nccl.reporters.size(), opdesc, seqdesc, suspects.front(),
                                   nccl.enqueued[suspects.front()]);
        } else {
          dec.method = "missing-from-timeout";
          dec.reason = fmt::format("ranks {} timed out in {}{}; rank {} reported no timeout, so it never reached the collective",
                                   format_ranges(std::vector<int>(nccl.reporters.begin(), nccl.reporters.end())), opdesc,
                                   seqdesc, suspects.front());
          // With no NCCL init line the job's size is a guess (the highest rank seen); a missing
          // rank that printed nothing at all may just be outside a pasted excerpt.
          if (init_world == 0 && !ranks_.count(suspects.front())) {
            dec.confidence = std::min(dec.confidence, 0.5);
            dec.reason += fmt::format(" (the job's size is taken from the highest rank seen and rank {} printed nothing, so "
                                      "it may only be missing from this log)",
                                      suspects.front());
          }
        }
        // The suspect's own last sign of life, when the entry recognises it (e.g. "Training completed").
        for (size_t r = 0; r < top.entry->refs.size(); ++r) {
          if (top.entry->refs[r].role != Role::kContext) continue;
          for (const Event* ev : top.by_ref[r])
            if (ev->rank == suspects.front()) {
              dec.reason += fmt::format("; rank {} logged {} at {}:{}", ev->rank, top.entry->refs[r].name,
                                        ev->input < inputs_.size() ? inputs_[ev->input].path : "", ev->line);
              if (!dec.first_evidence || dec.first_evidence->pattern == "last line of the rank") dec.first_evidence = to_evidence(*ev, top.entry->refs[r].name, Role::kContext);
              break;
            }
        }
        if (raised) {
          dec.confidence = 0.7;
          dec.reason += fmt::format("; of the {} ranks that never got there, only rank {} printed an error of its own",
                                    suspects.size(), raised->rank);
          dec.first_evidence = to_evidence(*raised, lib_.patterns[raised->def].name, Role::kContext);
        }
        if (launcher_rank && *launcher_rank != suspects.front())
          dec.reason += fmt::format("; {} names rank {} (a weak verdict: it picks the earliest whole second)",
                                    launcher_name, *launcher_rank);
      } else if (int ctx_rank = [&] {
                   // The root line carries no rank, but the entry's own context lines name exactly one
                   // (e.g. "current device: 0" next to an ECC error in a one-GPU server log).
                   std::set<int> rs;
                   for (size_t r = 0; r < top.entry->refs.size(); ++r)
                     if (top.entry->refs[r].role == Role::kContext)
                       for (const Event* ev : top.by_ref[r])
                         if (ev->rank >= 0) rs.insert(ev->rank);
                   return !roots.empty() && rs.size() == 1 ? *rs.begin() : -1;
                 }();
                 ctx_rank >= 0) {
        dec.rank = ctx_rank;
        dec.method = "root-event";
        dec.confidence = 0.5;
        dec.reason = fmt::format("the root line carries no rank; the entry's context lines name only rank {}", ctx_rank);
      } else if (auto own = roots.empty() ? suspect_from_error_lines(own_errors(), launcher_rank, launcher_name) : std::nullopt;
                 own && own->rank && own->candidates.size() == 1 && ranks_.size() >= 2) {
        // The entry has no root event (a cascade-only diagnosis: "cause not in the log"), but
        // one rank printed an error of its own while the others show only consequences: the
        // usual "one rank raised, the rest lost their communicator" (an exception no entry knows).
        dec = *own;
      } else if (launcher_rank && roots.size() >= 2 && launcher_failed_ranks.size() >= 2) {
        // Several processes printed the root error without a rank prefix and the launcher saw
        // several ranks fail: its "Root Cause" is just the lowest rank of a tie.
        dec.method = "none";
        dec.candidates.assign(launcher_failed_ranks.begin(), launcher_failed_ranks.end());
        dec.reason = fmt::format("{} processes hit it and the log does not say which rank printed which; {} lists ranks {} as failed",
                                 roots.size(), launcher_name,
                                 format_ranges(std::vector<int>(launcher_failed_ranks.begin(), launcher_failed_ranks.end())));
      } else if (launcher_rank) {
        dec.rank = launcher_rank;
        dec.method = "launcher-verdict";
        dec.confidence = 0.5;
        dec.reason = fmt::format("{} names rank {} (no root event carries a rank)", launcher_name, *launcher_rank);
      } else if (!nccl.ahead.empty()) {
        dec.method = "none";
        dec.reason = fmt::format("ranks {} timed out in {} SeqNum {}, but rank(s) {} timed out later, at SeqNum {}: they "
                                 "got past it, so the ranks are out of step and no one rank is shown to be missing",
                                 format_ranges(std::vector<int>(nccl.reporters.begin(), nccl.reporters.end())),
                                 nccl.op.empty() ? "a collective" : nccl.op, nccl.seq,
                                 format_ranges(std::vector<int>(nccl.ahead.begin(), nccl.ahead.end())),
                                 nccl.own_seq[*nccl.ahead.begin()]);
      } else if (!roots.empty()) {
        dec.method = "none";
        dec.reason = "the root event carries no rank and the log does not map it to one";
        dec.confidence = 0;
      } else {
        // Silence: the rank that fell behind in progress, or went quiet first.
        int64_t max_step = -1;
        for (const auto& [r, rs] : ranks_) max_step = std::max(max_step, rs.last_step);
        std::vector<std::pair<int64_t, int>> behind;
        for (const auto& [r, rs] : ranks_)
          if (rs.last_step >= 0 && rs.last_step < max_step) behind.push_back({rs.last_step, r});
        std::sort(behind.begin(), behind.end());
        if (!behind.empty() && ranks_.size() >= 2) {
          dec.rank = behind.front().second;
          dec.method = "silence";
          dec.confidence = behind.size() == 1 ? 0.55 : 0.35;
          for (auto& b : behind) dec.candidates.push_back(b.second);
          dec.reason = fmt::format("rank {} stopped at step {} while others reached step {}", behind.front().second,
                                   behind.front().first, max_step);
        } else {
          dec.method = "none";
          dec.reason = "no event in the log singles out one rank";
        }
      }
    }
    if (dec.rank) {
      auto it = ranks_.find(*dec.rank);
      if (dec.first_evidence && !dec.first_evidence->host.empty()) dec.host = dec.first_evidence->host;
      else if (it != ranks_.end()) dec.host = it->second.host;
    }

    // ---- collateral ----
    std::set<int> coll;
    for (int r : nccl.reporters) coll.insert(r);
    for (size_t r = 0; r < top.entry->refs.size(); ++r) {
      Role role = top.entry->refs[r].role;
      if (role != Role::kCascade && role != Role::kTeardown) continue;
      for (const Event* ev : top.by_ref[r])
        if (ev->rank >= 0) coll.insert(ev->rank);
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
          if (ev->rank >= 0 && (!dec.rank || ev->rank != *dec.rank) && !observed) affected.insert(ev->rank);
        }
    for (int r : affected) coll.erase(r);
    if (dec.rank) coll.erase(*dec.rank);
    d.collateral.ranks.assign(coll.begin(), coll.end());
    d.affected_ranks.assign(affected.begin(), affected.end());
    d.collateral.op = nccl.op;
    d.collateral.seq = nccl.seq;
    if (!nccl.reporters.empty()) {
      std::vector<int> rep;
      for (int r : nccl.reporters)
        if (!dec.rank || r != *dec.rank) rep.push_back(r);
      std::string what = fmt::format("{}{}", nccl.op.empty() ? "a collective" : nccl.op,
                                     nccl.seq >= 0 ? fmt::format(" SeqNum {}", nccl.seq) : "");
      if (rep.empty()) {
        d.collateral.summary = fmt::format("only rank {} itself timed out in {}; no other rank reported an error", *dec.rank, what);
      } else {
        d.collateral.summary = fmt::format("{} {} timed out in {}", rep.size() == 1 ? "rank" : "ranks", format_ranges(rep), what);
      }
      if (dec.rank && !rep.empty()) {
        if (nccl.reporters.count(*dec.rank)) d.collateral.summary += fmt::format(" (rank {} timed out too)", *dec.rank);
        else d.collateral.summary += fmt::format(" waiting for rank {}", *dec.rank);
      }
    } else if (!d.collateral.ranks.empty() || !affected.empty()) {
      std::string hit = affected.empty() ? ""
                        : fmt::format("{} {} hit the cause{}", affected.size() == 1 ? "rank" : "ranks",
                                      format_ranges(d.affected_ranks), dec.rank ? " too" : "");
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

  // ---- per-rank summaries ----
  std::map<int, const Event*> first_event;
  std::map<int, Role> first_role;
  for (const Entry& e : lib_.entries) {
    for (const PatternRef& ref : e.refs) {
      if (ref.role == Role::kContext) continue;
      for (const Event& ev : events_by_def_[ref.def]) {
        if (ev.rank < 0) continue;
        auto it = first_event.find(ev.rank);
        if (it == first_event.end() || earlier(ev, *it->second)) {
          first_event[ev.rank] = &ev;
          first_role[ev.rank] = ref.role;
        }
      }
    }
  }
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
    s.last_time = rs.last_time.kind == Timestamp::kNoYear && ref_year_ ? with_year(rs.last_time, ref_year_) : rs.last_time;
    s.last_step = rs.last_step;
    s.last_progress = rs.last_progress;
    if (auto it = first_event.find(r); it != first_event.end()) {
      s.first_event = to_evidence(*it->second, lib_.patterns[it->second->def].name, first_role[r]);
    }
    if ((d.initiating.rank && *d.initiating.rank == r) || (d.suspect && d.suspect->rank && *d.suspect->rank == r))
      s.role = "initiating";
    else if (std::binary_search(d.affected_ranks.begin(), d.affected_ranks.end(), r)) s.role = "affected";
    else if (std::binary_search(d.collateral.ranks.begin(), d.collateral.ranks.end(), r)) s.role = "collateral";
    else s.role = "quiet";
    d.ranks.push_back(std::move(s));
  }
  d.traceback = traceback_of_decisive_line(d);
  d.action = decide_action(d);
  return d;
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
  std::vector<TracebackLine> lines;
  auto same_stream = [&](const Event& ev) {
    return ev.input == index && ev.rank == decisive->rank && ev.line < decisive->line &&
           decisive->line - ev.line <= kMaxTracebackLines;
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
