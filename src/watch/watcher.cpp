#include "firstfault/watch/watcher.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>

#include "firstfault/action/action.h"
#include "firstfault/app/pipeline.h"
#include "firstfault/util/strings.h"
#include "firstfault/watch/duration.h"

namespace firstfault {

using namespace std::chrono_literals;

namespace {

// While a backlog (a log that was already long when the watch started) is being read, the
// diagnosis is not recomputed for every piece; after this long it is, backlog or not.
constexpr auto kCatchUpGrace = 2s;
constexpr size_t kProgressTextBytes = 300;

// A failure alert needs an event that says something broke (root or cascade). Diagnoses drawn
// from what a log *lacks* (NCCL init never completed, a rank behind in steps) are only true of a
// log that stopped, so `watch` raises them with a stall alert or at the end of the input.
bool alertable(const Diagnosis& d) {
  return d.verdict == "diagnosed" && d.entry && !d.evidence.empty() &&
         (d.evidence.front().role == "root" || d.evidence.front().role == "cascade");
}

std::string rank_text(const std::optional<int>& r) { return r ? std::to_string(*r) : "none"; }

// Two alerts with the same key say the same thing.
std::string alert_key(const Diagnosis& d) {
  if (!d.entry) return "";
  std::string k = fmt::format("{}|{}|{}|{}|", d.entry->id, rank_text(d.initiating.rank), d.initiating.method,
                              format_ranges(d.collateral.ranks));
  for (const auto& e : d.evidence) k += fmt::format("{}@{}:{};", e.pattern, e.file, e.line);
  return k;
}

std::string describe_change(const Diagnosis& before, const Diagnosis& now) {
  std::vector<std::string> parts;
  if (!before.entry || before.entry->id != now.entry->id) {
    parts.push_back(fmt::format("diagnosis changed from {} to {}", before.entry ? before.entry->id : "none", now.entry->id));
  }
  if (before.initiating.rank != now.initiating.rank)
    parts.push_back(fmt::format("initiating rank changed from {} to {} ({})", rank_text(before.initiating.rank),
                                rank_text(now.initiating.rank), now.initiating.method));
  else if (before.initiating.method != now.initiating.method)
    parts.push_back(fmt::format("initiating rank {} now decided by {}", rank_text(now.initiating.rank), now.initiating.method));
  if (before.collateral.ranks != now.collateral.ranks && !now.collateral.summary.empty())
    parts.push_back("collateral: " + now.collateral.summary);
  if (parts.empty()) parts.push_back(fmt::format("new evidence ({} lines)", now.evidence.size()));
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? "" : "; ") + p;
  return out;
}

double seconds(std::chrono::steady_clock::duration d) { return std::chrono::duration<double>(d).count(); }

}  // namespace

struct Watcher::Input {
  InputSummary summary;
  LineAttributor attributor;
  std::unique_ptr<LineFeed> feed;
};

namespace {

// Whether the watched paths (or the files of a watched directory, as they are at start) hold a
// Kubeflow PyTorchJob's master pod log: then `worker-N` is rank N+1, as in diagnose.
bool watches_pytorchjob_pods(const WatchConfig& cfg) {
  if (!cfg.rank_from.empty()) return false;
  std::error_code ec;
  for (const std::string& p : cfg.paths) {
    if (names_pytorchjob_master(p)) return true;
    if (!std::filesystem::is_directory(p, ec)) continue;
    for (std::filesystem::recursive_directory_iterator it(p, ec), end; !ec && it != end; it.increment(ec))
      if (names_pytorchjob_master(it->path().string())) return true;
  }
  return false;
}

}  // namespace

Watcher::Watcher(const Matcher& matcher, WatchConfig config)
    : matcher_(matcher), cfg_(std::move(config)), corr_(matcher.library(), matcher.tail_patterns()),
      pytorchjob_pods_(watches_pytorchjob_pods(cfg_)) {
  const Library& lib = matcher.library();
  def_kind_.assign(lib.patterns.size(), 0);
  for (const Entry& e : lib.entries)
    for (const PatternRef& r : e.refs) {
      uint8_t k = r.role == Role::kContext ? 1 : 2;
      def_kind_[r.def] = std::max(def_kind_[r.def], k);
    }
  // Each snapshot copies the live correlator, so two of it are alive at a snapshot's peak:
  // watch keeps 4/7 of diagnose's event budget (4.3/7.4 MiB) to stay within the same 64 MiB
  // (docs/reliability.md).
  corr_.scale_event_budget(4, 7);
}

Watcher::~Watcher() = default;

// ---- lines in ----

void Watcher::stream_opened(size_t id, const std::string& path, bool is_stdin) {
  auto in = std::make_unique<Input>();
  in->summary.path = path;
  in->attributor = LineAttributor(is_stdin ? FileIdentity{} : identity_from_path(path, cfg_.rank_from, pytorchjob_pods_, cfg_.host_from));
  in->feed = std::make_unique<LineFeed>(matcher_, corr_, in->attributor, static_cast<uint32_t>(id), in->summary,
                                        static_cast<LineObserver*>(this));
  inputs_.push_back(std::move(in));
}

void Watcher::stream_lines(size_t id, std::string_view block) {
  bytes_ += block.size();
  inputs_[id]->summary.bytes += block.size();
  last_line_at_ = Clock::now();  // arrival time: the stall clock runs on it
  any_line_ = true;
  inputs_[id]->feed->on_block(block);
}

void Watcher::stream_long_line(size_t id, std::string_view head, uint64_t length) {
  bytes_ += length;
  inputs_[id]->summary.bytes += length;
  last_line_at_ = Clock::now();
  any_line_ = true;
  inputs_[id]->feed->on_long_line(head, length);
}

void Watcher::stream_partial(size_t id, std::string_view head) {
  bytes_ += head.size();
  inputs_[id]->summary.bytes += head.size();
  last_line_at_ = Clock::now();
  any_line_ = true;
  inputs_[id]->feed->on_partial_line(head);
}

void Watcher::stream_renamed(size_t id, const std::string& label) {
  notices_.push_back(fmt::format("{}: rotated or truncated; the lines read before are reported as {}",
                                 inputs_[id]->summary.path, label));
  inputs_[id]->summary.path = label;
}

void Watcher::follow_notice(const std::string& path, const std::string& message) {
  notices_.push_back(fmt::format("{}: {}", path, message));
}

// Per-rank state is bounded like the correlator's (kMaxRanks): lines of ranks beyond it count
// for the job as a whole.
int Watcher::clock_rank(int rank) const {
  if (rank < 0 || static_cast<size_t>(rank) >= (kMaxRanks << 4)) return -1;
  if (clocks_.size() >= kMaxRanks && !clocks_.count(rank)) return -1;
  return rank;
}

void Watcher::on_line(const Attribution& a, std::string_view segment, uint32_t input, uint64_t line_no) {
  int rank = clock_rank(a.rank);
  RankClock& c = clocks_[rank];
  c.line_at = last_line_at_;
  // Progress patterns no entry uses are not matched line by line (Matcher::tail_patterns):
  // keep each rank's newest lines of this round and look for a step counter in them.
  if (matcher_.tail_patterns().empty()) return;
  Recent& r = recent_[rank];
  size_t slot = r.count % kRecent;
  r.text[slot].assign(segment.substr(0, std::min<size_t>(segment.size(), kProgressTextBytes)));
  bool inside = a.body.data() >= segment.data() && a.body.data() <= segment.data() + segment.size();
  r.body_at[slot] = inside ? std::min<size_t>(static_cast<size_t>(a.body.data() - segment.data()), r.text[slot].size()) : 0;
  r.input[slot] = input;
  r.line_no[slot] = line_no;
  ++r.count;
}

void Watcher::on_event(const Event& ev) {
  uint8_t kind = def_kind_[ev.def];
  if (kind == 2 || (kind == 1 && alerted_)) dirty_ = true;
  if (const std::string* step = ev.capture("step"))
    if (auto v = to_int(*step)) progress(ev.rank, *v, ev.text, ev.input, ev.line, last_line_at_);
}

void Watcher::progress(int rank, int64_t step, std::string_view text, uint32_t input, uint64_t line_no,
                       Clock::time_point at) {
  RankClock& c = clocks_[clock_rank(rank)];
  if (c.has_progress && step == c.step) return;  // a repeated counter is not progress
  c.step = step;
  c.has_progress = true;
  c.progress_at = at;
  c.progress_line.assign(text.substr(0, std::min<size_t>(text.size(), kProgressTextBytes)));
  c.input = input;
  c.line = line_no;
}

void Watcher::scan_recent_progress(Clock::time_point now) {
  for (auto& [rank, r] : recent_) {
    size_t n = std::min(r.count, kRecent);
    for (size_t k = 0; k < n; ++k) {  // newest first: the rank's latest counter counts
      size_t slot = (r.count - 1 - k) % kRecent;
      bool found = false;
      for (size_t def : matcher_.tail_patterns()) {
        Captures caps = matcher_.extract(def, std::string_view(r.text[slot]).substr(r.body_at[slot]));
        for (const auto& [name, value] : caps)
          if (name == "step")
            if (auto v = to_int(value)) {
              progress(rank, *v, r.text[slot], r.input[slot], r.line_no[slot], now);
              found = true;
            }
        if (found) break;
      }
      if (found) break;
    }
  }
  recent_.clear();
}

// ---- diagnosis and alerts ----

std::string Watcher::input_path(uint32_t input) const {
  return input < inputs_.size() ? inputs_[input]->summary.path : "";
}

void Watcher::give_inputs() {
  // The correlator names files through its input list; give it the current one.
  std::vector<InputSummary> summaries;
  summaries.reserve(inputs_.size());
  for (const auto& in : inputs_) summaries.push_back(in->summary);
  corr_.set_inputs(std::move(summaries));
}

Diagnosis Watcher::snapshot() {
  if (final_) return *final_;
  give_inputs();
  return corr_.snapshot();
}

Diagnosis Watcher::final_diagnosis() {
  // No line comes after this: the correlator is finished in place rather than copied first (the
  // copy doubled the stored detail at the very end), once.
  if (!final_) {
    give_inputs();
    final_ = corr_.finish();
  }
  return *final_;
}

void Watcher::emit(std::string kind, std::string reason, Diagnosis d, std::optional<StallInfo> stall,
                   const AlertFn& on_alert) {
  Alert a;
  a.seq = ++seq_;
  a.kind = std::move(kind);
  a.reason = std::move(reason);
  a.time = std::chrono::system_clock::now();
  a.diagnosis = std::move(d);
  a.stall = std::move(stall);
  alert_counts_[{a.kind, a.diagnosis.entry ? a.diagnosis.entry->id : ""}]++;
  if (a.kind == "update" && last_alerted_.entry && last_alerted_.entry == a.diagnosis.entry) a.entry_shown_in = entry_shown_in_;
  if (a.kind == "failure" || a.kind == "update" || a.kind == "final") {
    if (!a.entry_shown_in) entry_shown_in_ = a.seq;
    last_key_ = alert_key(a.diagnosis);
    last_alerted_ = a.diagnosis;
    last_alert_at_ = Clock::now();
    alerted_ = true;
    pending_.reset();
  }
  if (on_alert) on_alert(a);
}

void Watcher::consider(Diagnosis d, Clock::time_point now, const AlertFn& on_alert) {
  if (!alertable(d)) return;
  if (alert_key(d) == last_key_) {
    pending_.reset();
    return;
  }
  if (!alerted_) {
    std::string reason = fmt::format("{} ({})", d.entry->title, d.entry->id);
    emit("failure", std::move(reason), std::move(d), std::nullopt, on_alert);
    return;
  }
  pending_ = std::move(d);
  if (now - last_alert_at_ >= cfg_.update_interval) flush_pending(on_alert);
}

void Watcher::flush_pending(const AlertFn& on_alert) {
  Diagnosis p = std::move(*pending_);
  std::string reason = describe_change(last_alerted_, p);
  emit("update", std::move(reason), std::move(p), std::nullopt, on_alert);
}

Diagnosis Watcher::hang_diagnosis(Diagnosis base, const StallInfo& s) const {
  if (alertable(base)) return base;  // a real failure explains the silence
  // The whole log stopped: what it lacks now means something (NCCL init never completed, a
  // rank behind the others in steps); the correlator already judged that.
  if (s.scope == "job" && base.verdict == "diagnosed") return base;
  const Entry* hang = matcher_.library().find_entry("training-hang-silent");
  if (!hang) return base;
  Diagnosis d = std::move(base);
  d.verdict = "diagnosed";
  d.entry = hang;
  d.evidence.clear();
  d.initiating = RankDecision{};
  RankDecision& dec = d.initiating;
  std::string silent = format_duration(s.silent);
  if (s.scope == "rank" && !s.ranks.empty()) {
    int r = s.ranks.front();
    d.confidence = s.ranks.size() == 1 ? 0.6 : 0.45;
    dec.rank = r;
    dec.method = "silence";
    dec.confidence = s.ranks.size() == 1 ? 0.6 : 0.4;
    dec.candidates = s.ranks;
    dec.reason = fmt::format("rank {} printed no progress for {} while {} {} kept going; its last progress was step {}", r,
                             silent, s.active_ranks.size() == 1 ? "rank" : "ranks", format_ranges(s.active_ranks),
                             s.last_step);
    Evidence e;
    e.pattern = "last progress line";
    e.role = "context";
    e.file = s.file;
    e.line = s.line;
    e.rank = r;
    e.text = s.last_line;
    for (const auto& rs : d.ranks)
      if (rs.rank == r) e.host = rs.host;
    dec.host = e.host;
    dec.first_evidence = e;
    for (auto& rs : d.ranks)
      if (rs.rank == r) rs.role = "initiating";
  } else {
    d.confidence = 0.35;
    dec.method = "none";
    dec.reason = s.from_progress
                     ? fmt::format("no rank printed progress for {} and every rank stopped at about the same point; "
                                   "the log does not show which rank is stuck",
                                   silent)
                     : fmt::format("the job printed nothing for {}", silent);
  }
  d.collateral = Collateral{};
  d.collateral.summary = "no other rank reported an error";
  d.action = decide_action(d);  // the entry changed
  return d;
}

void Watcher::check_stall(Clock::time_point now, const AlertFn& on_alert) {
  if (cfg_.stall.count() <= 0 || !any_line_) return;
  const RankClock* latest = nullptr;
  int latest_rank = -1;
  for (const auto& [r, c] : clocks_)
    if (c.has_progress && (!latest || c.progress_at >= latest->progress_at)) {
      latest = &c;
      latest_rank = r;
    }
  auto ref = latest ? latest->progress_at : last_line_at_;
  auto silent = std::chrono::duration_cast<std::chrono::milliseconds>(now - ref);
  if (silent >= cfg_.stall) {
    if (job_stalled_) return;
    job_stalled_ = true;
    StallInfo s;
    s.scope = "job";
    s.silent = silent;
    s.threshold = cfg_.stall;
    s.from_progress = latest != nullptr;
    if (latest) {
      s.last_step = latest->step;
      s.last_line = latest->progress_line;
      s.file = input_path(latest->input);
      s.line = latest->line;
    }
    std::string reason =
        latest ? fmt::format("no progress from any rank for {} (the last was step {}{})", format_duration(silent),
                             latest->step, latest_rank >= 0 ? fmt::format(" on rank {}", latest_rank) : "")
               : fmt::format("no output for {}", format_duration(silent));
    emit("stall", std::move(reason), hang_diagnosis(snapshot(), s), s, on_alert);
    return;
  }
  if (job_stalled_) {
    job_stalled_ = false;
    notices_.push_back(latest ? fmt::format("progress resumed (step {})", latest->step) : "output resumed");
  }
  // One rank silent while others go on: name it.
  std::vector<int> newly, active;
  for (auto& [r, c] : clocks_) {
    if (r < 0 || !c.has_progress) continue;
    if (now - c.progress_at < cfg_.stall) {
      active.push_back(r);
      if (c.silent) {
        c.silent = false;
        notices_.push_back(fmt::format("rank {} is making progress again (step {})", r, c.step));
      }
    } else if (!c.silent) {
      newly.push_back(r);
    }
  }
  if (newly.empty() || active.empty()) return;
  std::sort(newly.begin(), newly.end(),
            [&](int a, int b) { return clocks_[a].progress_at < clocks_[b].progress_at; });
  for (int r : newly) clocks_[r].silent = true;
  const RankClock& c = clocks_[newly.front()];
  StallInfo s;
  s.scope = "rank";
  s.ranks = newly;
  s.silent = std::chrono::duration_cast<std::chrono::milliseconds>(now - c.progress_at);
  s.threshold = cfg_.stall;
  s.last_step = c.step;
  s.last_line = c.progress_line;
  s.file = input_path(c.input);
  s.line = c.line;
  s.active_ranks = active;
  std::vector<int> sorted = newly;
  std::sort(sorted.begin(), sorted.end());
  std::string reason = fmt::format("{} {} printed no progress for {} while {} {} kept going (last step {})",
                                   newly.size() == 1 ? "rank" : "ranks", format_ranges(sorted), format_duration(s.silent),
                                   active.size() == 1 ? "rank" : "ranks", format_ranges(active), c.step);
  emit("rank-stall", std::move(reason), hang_diagnosis(snapshot(), s), s, on_alert);
}

WatchEnd Watcher::run(const AlertFn& on_alert, const TickFn& on_tick) {
  const std::atomic<bool>* stop = cfg_.stop ? cfg_.stop : &g_interrupted;
  Follower follower(cfg_.paths, static_cast<FollowSink&>(*this), cfg_.follow);
  follower.start();
  WatchEnd end = WatchEnd::kStopped;
  bool backlog = false;
  for (;;) {
    if (stop->load()) break;
    PollResult pr = follower.poll(backlog ? 0ms : cfg_.poll_interval);
    auto now = Clock::now();
    scan_recent_progress(now);
    backlog = pr.backlog;
    if (backlog && !in_backlog_) backlog_since_ = now;
    in_backlog_ = backlog;
    bool catching_up = in_backlog_ && now - backlog_since_ < kCatchUpGrace;
    if (dirty_ && !catching_up && now - last_snapshot_at_ >= cfg_.snapshot_interval) {
      dirty_ = false;
      last_snapshot_at_ = now;
      consider(snapshot(), now, on_alert);
    }
    if (pending_ && now - last_alert_at_ >= cfg_.update_interval) flush_pending(on_alert);
    if (!catching_up) check_stall(now, on_alert);
    if (on_tick) on_tick();
    if (pr.stdin_ended && follower.only_stdin()) {
      end = WatchEnd::kInputEnded;
      break;
    }
  }
  follower.close_all();  // partial last lines count too
  scan_recent_progress(Clock::now());
  if (end == WatchEnd::kInputEnded) {
    // The log is complete now: judge it as `diagnose` would, and say so if that is news.
    Diagnosis d = final_diagnosis();
    if (d.verdict == "diagnosed" && d.entry && alert_key(d) != last_key_) {
      std::string reason = alerted_ ? "input ended; " + describe_change(last_alerted_, d)
                                    : fmt::format("input ended: {} ({})", d.entry->title, d.entry->id);
      emit("final", std::move(reason), std::move(d), std::nullopt, on_alert);
    }
  }
  return end;
}

WatchStatus Watcher::status() const {
  WatchStatus s;
  auto now = Clock::now();
  for (const auto& [r, c] : clocks_) {
    if (r < 0) continue;
    WatchStatus::Rank x;
    x.rank = r;
    x.step = c.step;
    if (c.has_progress) x.progress_age_s = seconds(now - c.progress_at);
    x.line_age_s = seconds(now - c.line_at);
    s.ranks.push_back(x);
    if (c.silent) s.silent_ranks.push_back(r);
  }
  const RankClock* latest = nullptr;
  for (const auto& [r, c] : clocks_)
    if (c.has_progress && (!latest || c.progress_at >= latest->progress_at)) latest = &c;
  if (latest) {
    s.job_progress_age_s = seconds(now - latest->progress_at);
    s.job_step = latest->step;
  }
  if (any_line_) s.job_line_age_s = seconds(now - last_line_at_);
  for (const auto& in : inputs_) s.lines += in->summary.lines;
  s.bytes = bytes_;
  s.streams = inputs_.size();
  s.stalled = job_stalled_;
  if (alerted_ && last_alerted_.entry) {
    s.entry = last_alerted_.entry->id;
    s.initiating_rank = last_alerted_.initiating.rank;
  }
  s.alerts = alert_counts_;
  return s;
}

std::vector<std::string> Watcher::take_notices() {
  std::vector<std::string> out;
  out.swap(notices_);
  return out;
}

}  // namespace firstfault
