#pragma once
// `watch`: the live driver. A Follower delivers lines as the job writes them; they go through
// the same attribution, matching and Correlator as `diagnose`, into one long-lived state. The
// diagnosis is recomputed (Correlator::snapshot) only when an event that can change it arrived,
// at most every `snapshot_interval`, and an alert is raised when it names a failure or the
// picture changes. Stall detection works on the wall-clock arrival time of progress lines.
#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "firstfault/app/line_feed.h"
#include "firstfault/correlator/correlator.h"
#include "firstfault/matcher/matcher.h"
#include "firstfault/watch/follower.h"

namespace firstfault {

struct WatchConfig {
  std::vector<std::string> paths;                   // files, directories, "-" (empty: stdin)
  std::string rank_from;                            // --rank-from
  std::string host_from;                            // --host-from
  std::chrono::milliseconds stall{0};               // --stall; 0 = no stall detection
  std::chrono::milliseconds update_interval{2000};  // least time between two alerts about one failure
  std::chrono::milliseconds poll_interval{100};
  std::chrono::milliseconds snapshot_interval{250};
  FollowOptions follow;
  const std::atomic<bool>* stop = nullptr;  // set to end the watch (default: g_interrupted)
};

// What the silence looked like when a stall alert fired.
struct StallInfo {
  std::string scope;           // "job": nothing progresses; "rank": these ranks stopped, others go on
  std::vector<int> ranks;      // the silent ranks (scope "rank"), longest silent first
  std::chrono::milliseconds silent{0};
  std::chrono::milliseconds threshold{0};
  bool from_progress = true;   // false: the job never printed a progress line; silence of any output
  int64_t last_step = -1;
  std::string last_line;       // the last progress line (or last line) before the silence
  std::string file;
  uint64_t line = 0;
  std::vector<int> active_ranks;  // scope "rank": ranks still making progress
};

struct Alert {
  uint64_t seq = 0;
  std::string kind;    // failure | update | stall | rank-stall | final
  std::string reason;  // what is new, in words
  std::chrono::system_clock::time_point time;
  Diagnosis diagnosis;
  std::optional<StallInfo> stall;
  // An update about the entry that alert #N already explained in full (root cause, fix): the
  // text form then shows only what changed. 0 for every other alert.
  uint64_t entry_shown_in = 0;
};

// Live numbers for --metrics-file.
struct WatchStatus {
  struct Rank {
    int rank = -1;
    int64_t step = -1;
    std::optional<double> progress_age_s;  // since its last progress line arrived
    double line_age_s = 0;                 // since any line of it arrived
  };
  std::vector<Rank> ranks;
  std::optional<double> job_progress_age_s;
  int64_t job_step = -1;  // the newest progress counter of any rank
  std::optional<double> job_line_age_s;
  uint64_t lines = 0;
  uint64_t bytes = 0;
  size_t streams = 0;
  bool stalled = false;
  std::vector<int> silent_ranks;
  std::string entry;                     // current alerted failure ("" when none)
  std::optional<int> initiating_rank;
  std::map<std::pair<std::string, std::string>, uint64_t> alerts;  // (kind, entry) -> count
};

enum class WatchEnd { kStopped, kInputEnded };

class Watcher : private FollowSink, private LineObserver {
 public:
  using AlertFn = std::function<void(const Alert&)>;
  using TickFn = std::function<void()>;

  Watcher(const Matcher& matcher, WatchConfig config);
  ~Watcher() override;

  // Follows until `stop` is set or stdin, the only input, ends. Calls on_alert for every
  // alert and on_tick after every poll round, both on this thread.
  WatchEnd run(const AlertFn& on_alert, const TickFn& on_tick = {});

  // The diagnosis of everything read so far, judged as a finished log (after run(); no line is
  // read after it: the correlator is finished in place).
  Diagnosis final_diagnosis();
  WatchStatus status() const;
  // Notices for stderr collected since the last call (unreadable paths, skipped files).
  std::vector<std::string> take_notices();

 private:
  using Clock = std::chrono::steady_clock;
  struct Input;
  struct RankClock {
    int64_t step = -1;
    bool has_progress = false;
    Clock::time_point progress_at{};
    Clock::time_point line_at{};
    std::string progress_line;
    std::string file;
    uint64_t line = 0;
    uint32_t input = 0;
    bool silent = false;  // a rank-stall alert named it; cleared when it progresses again
  };
  // A rank's newest lines of this poll round, for the progress patterns (as many as the
  // correlator keeps at the end: a step line followed by a few other lines is still seen).
  static constexpr size_t kRecent = 16;
  struct Recent {
    std::string text[kRecent];
    size_t body_at[kRecent] = {};  // where the text after the prefixes starts
    uint32_t input[kRecent] = {};
    uint64_t line_no[kRecent] = {};
    size_t count = 0;
  };

  // FollowSink
  void stream_opened(size_t id, const std::string& path, bool is_stdin) override;
  void stream_lines(size_t id, std::string_view block) override;
  void stream_long_line(size_t id, std::string_view head, uint64_t length) override;
  void stream_partial(size_t id, std::string_view head) override;
  void stream_renamed(size_t id, const std::string& label) override;
  void follow_notice(const std::string& path, const std::string& message) override;
  // LineObserver
  void on_line(const Attribution& a, std::string_view segment, uint32_t input, uint64_t line_no) override;
  void on_event(const Event& ev) override;

  int clock_rank(int rank) const;
  void progress(int rank, int64_t step, std::string_view text, uint32_t input, uint64_t line_no, Clock::time_point at);
  void scan_recent_progress(Clock::time_point now);
  void give_inputs();
  Diagnosis snapshot();
  void consider(Diagnosis d, Clock::time_point now, const AlertFn& on_alert);
  void flush_pending(const AlertFn& on_alert);
  void emit(std::string kind, std::string reason, Diagnosis d, std::optional<StallInfo> stall, const AlertFn& on_alert);
  void check_stall(Clock::time_point now, const AlertFn& on_alert);
  Diagnosis hang_diagnosis(Diagnosis base, const StallInfo& s) const;
  std::string input_path(uint32_t input) const;

  const Matcher& matcher_;
  WatchConfig cfg_;
  Correlator corr_;
  std::deque<std::unique_ptr<Input>> inputs_;  // by stream id = correlator input index
  std::vector<uint8_t> def_kind_;              // per pattern: 0 other, 1 context, 2 root/cascade/teardown
  std::map<int, RankClock> clocks_;            // rank -> progress clock (-1: lines with no rank)
  std::map<int, Recent> recent_;
  std::vector<std::string> notices_;
  bool dirty_ = false;
  bool alerted_ = false;        // a failure alert was raised (context events may refine it)
  std::string last_key_;        // what the last failure/update alert said
  Diagnosis last_alerted_;
  uint64_t entry_shown_in_ = 0;  // the alert that last showed last_alerted_'s entry in full
  std::optional<Diagnosis> pending_;  // a change not yet alerted (update_interval)
  std::optional<Diagnosis> final_;    // final_diagnosis(): the correlator is finished
  Clock::time_point last_alert_at_{};
  Clock::time_point last_snapshot_at_{};
  Clock::time_point backlog_since_{};
  bool in_backlog_ = false;
  bool any_line_ = false;
  Clock::time_point last_line_at_{};
  bool job_stalled_ = false;
  uint64_t seq_ = 0;
  bool pytorchjob_pods_ = false;  // a PyTorchJob's master pod log is watched: worker-N is rank N+1
  uint64_t bytes_ = 0;
  std::map<std::pair<std::string, std::string>, uint64_t> alert_counts_;
};

}  // namespace firstfault
