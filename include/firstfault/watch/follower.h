#pragma once
// Follows a running job's logs: files (through rotation and truncation), directories (files that
// appear later are picked up) and stdin, delivering complete lines as they are written.
//
// It polls with stat() instead of inotify on purpose: distributed jobs usually log to NFS or
// Lustre, where writes made by other nodes raise no inotify event on the node that watches.
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace firstfault {

// Where the bytes go. Stream ids count up from 0; a file gets a new stream when it first
// appears and again after it was rotated away or truncated (its lines are numbered afresh).
class FollowSink {
 public:
  virtual ~FollowSink() = default;
  virtual void stream_opened(size_t id, const std::string& path, bool is_stdin) = 0;
  // Complete lines, each ending in '\n' (the last piece of an ended stream may lack it).
  virtual void stream_lines(size_t id, std::string_view block) = 0;
  // A line longer than kMaxLineBytes: its head and its full length.
  virtual void stream_long_line(size_t id, std::string_view head, uint64_t length) = 0;
  // A line still being written whose text so far ends in '\r' (a tqdm bar redrawing): that
  // text. The rest of the line follows as an ordinary line.
  virtual void stream_partial(size_t id, std::string_view head) = 0;
  // The stream's file is no longer at its path: "train.log.1" when found next to it after a
  // rotation, or "train.log (before truncation)".
  virtual void stream_renamed(size_t id, const std::string& label) = 0;
  // Something the user should know (unreadable path, skipped file); goes to stderr.
  virtual void follow_notice(const std::string& path, const std::string& message) = 0;
};

struct FollowOptions {
  std::chrono::milliseconds rescan_interval{1000};  // directories and missing files
  std::chrono::milliseconds retire_after{5000};     // keep reading a rotated-away file this long after it last grew
  std::chrono::milliseconds partial_after{500};     // a '\r'-ended partial line older than this is delivered
  size_t read_budget = 4 << 20;                     // bytes per stream per poll, so the loop stays responsive
};

struct PollResult {
  bool backlog = false;      // a stream had more to read than the budget allowed
  bool stdin_ended = false;  // stdin reached its end (now or earlier)
};

class Follower {
 public:
  // `paths`: files (need not exist yet), directories, "-" for stdin; empty means stdin.
  Follower(std::vector<std::string> paths, FollowSink& sink, FollowOptions options = {});
  ~Follower();
  Follower(const Follower&) = delete;
  Follower& operator=(const Follower&) = delete;

  // Opens what exists now. Compressed files found now are read whole (they do not grow);
  // compressed files that appear later are taken for rotated copies and skipped.
  void start();
  // Waits up to `wait` for stdin (or just sleeps), then reads what every stream has.
  PollResult poll(std::chrono::milliseconds wait);
  // Flushes every partial last line and closes everything.
  void close_all();

  bool has_stdin() const;
  bool only_stdin() const;

 private:
  struct State;
  std::unique_ptr<State> s_;
};

}  // namespace firstfault
