#pragma once
// --exec: runs a command for every alert, via /bin/sh -c, with the alert JSON on its stdin.
// Commands run one at a time and in alert order, and never block the follow loop: the JSON is
// written as the pipe accepts it, the command is reaped when it exits, and killed (its whole
// process group) when it overruns its timeout. Failures are reported, never fatal.
#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace firstfault {

class HookRunner {
 public:
  using Report = std::function<void(const std::string&)>;  // one line for stderr
  using Env = std::vector<std::pair<std::string, std::string>>;

  HookRunner(std::string command, std::chrono::milliseconds timeout, Report report);
  ~HookRunner();
  HookRunner(const HookRunner&) = delete;
  HookRunner& operator=(const HookRunner&) = delete;

  // Queues a run for alert `seq` (at most kMaxQueued wait; the oldest waiting one is dropped).
  void submit(uint64_t seq, std::string payload, Env env);
  // Non-blocking: feeds stdin, reaps, enforces the timeout, starts the next queued run.
  void poll();
  // At exit: lets queued and running commands finish (each within its timeout), or, with
  // `kill_now` (interrupted), stops the running one and drops the queue.
  void finish(bool kill_now);

  uint64_t started() const { return started_; }
  uint64_t failed() const { return failed_; }

  static constexpr size_t kMaxQueued = 32;

 private:
  struct Job {
    uint64_t seq = 0;
    std::string payload;
    Env env;
  };
  void start(Job job);
  void reap(int status);
  void kill_running(int sig);

  std::string command_;
  std::chrono::milliseconds timeout_;
  Report report_;
  std::deque<Job> queue_;
  // The running command.
  pid_t pid_ = -1;
  int stdin_fd_ = -1;
  uint64_t seq_ = 0;
  std::string payload_;
  size_t written_ = 0;
  std::chrono::steady_clock::time_point started_at_{};
  std::chrono::steady_clock::time_point term_at_{};
  bool terminated_ = false;
  uint64_t started_ = 0;
  uint64_t failed_ = 0;
};

}  // namespace firstfault
