#include "firstfault/watch/hooks.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstring>
#include <thread>

#include "firstfault/watch/duration.h"

extern char** environ;

namespace firstfault {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

namespace {
constexpr auto kKillGrace = 2s;  // SIGTERM first; SIGKILL when the command ignores it
}

HookRunner::HookRunner(std::string command, std::chrono::milliseconds timeout, Report report)
    : command_(std::move(command)), timeout_(timeout), report_(std::move(report)) {
  // A command that exits without reading its stdin must not take the watcher down with it:
  // writing to its pipe then fails with EPIPE instead of raising SIGPIPE.
  std::signal(SIGPIPE, SIG_IGN);
}

HookRunner::~HookRunner() { finish(true); }

void HookRunner::submit(uint64_t seq, std::string payload, Env env) {
  if (queue_.size() >= kMaxQueued) {
    report_(fmt::format("--exec: {} alerts waiting; dropped the run for alert #{}", queue_.size(), queue_.front().seq));
    queue_.pop_front();
    ++failed_;
  }
  queue_.push_back({seq, std::move(payload), std::move(env)});
  poll();
}

void HookRunner::start(Job job) {
  // Everything the child needs is built before fork(): the child only calls async-signal-safe
  // functions (the watcher may have other threads).
  std::vector<std::string> env_strings;
  for (char** e = environ; e && *e; ++e) {
    std::string_view kv(*e);
    bool overridden = false;
    for (const auto& [k, v] : job.env)
      if (kv.substr(0, k.size() + 1) == k + "=") overridden = true;
    if (!overridden) env_strings.emplace_back(kv);
  }
  for (const auto& [k, v] : job.env) env_strings.push_back(k + "=" + v);
  std::vector<char*> envp;
  for (auto& s : env_strings) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::string sh = "/bin/sh", dash_c = "-c";
  std::vector<char*> argv = {sh.data(), dash_c.data(), command_.data(), nullptr};

  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    report_(fmt::format("--exec: cannot create a pipe for alert #{}: {}", job.seq, std::strerror(errno)));
    ++failed_;
    return;
  }
  pid_t pid = ::fork();
  if (pid < 0) {
    report_(fmt::format("--exec: cannot start /bin/sh for alert #{}: {}", job.seq, std::strerror(errno)));
    ::close(fds[0]);
    ::close(fds[1]);
    ++failed_;
    return;
  }
  if (pid == 0) {
    // Own process group, so a timeout kills the command's children too and the terminal's
    // Ctrl-C reaches the watcher, which decides.
    ::setpgid(0, 0);
    ::dup2(fds[0], STDIN_FILENO);
    ::dup2(STDERR_FILENO, STDOUT_FILENO);  // stdout carries alerts only
    ::signal(SIGPIPE, SIG_DFL);
    ::execve(argv[0], argv.data(), envp.data());
    _exit(127);
  }
  ::setpgid(pid, pid);  // also here: whichever runs first
  ::close(fds[0]);
  ::fcntl(fds[1], F_SETFL, O_NONBLOCK);
  pid_ = pid;
  stdin_fd_ = fds[1];
  seq_ = job.seq;
  payload_ = std::move(job.payload);
  written_ = 0;
  started_at_ = Clock::now();
  terminated_ = false;
  ++started_;
}

void HookRunner::kill_running(int sig) {
  if (pid_ > 0) ::kill(-pid_, sig);
}

void HookRunner::reap(int status) {
  if (terminated_) {
    // Already reported as timed out.
  } else if (WIFEXITED(status) && WEXITSTATUS(status) != 0) {
    report_(fmt::format("--exec for alert #{} exited with status {}", seq_, WEXITSTATUS(status)));
    ++failed_;
  } else if (WIFSIGNALED(status)) {
    report_(fmt::format("--exec for alert #{} was killed by signal {}", seq_, WTERMSIG(status)));
    ++failed_;
  }
  if (stdin_fd_ >= 0) ::close(stdin_fd_);
  stdin_fd_ = -1;
  pid_ = -1;
  payload_.clear();
}

void HookRunner::poll() {
  if (pid_ > 0) {
    // Feed the alert as the pipe accepts it; EPIPE just means the command did not read it all.
    while (stdin_fd_ >= 0 && written_ < payload_.size()) {
      ssize_t n = ::write(stdin_fd_, payload_.data() + written_, payload_.size() - written_);
      if (n > 0) {
        written_ += static_cast<size_t>(n);
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
      ::close(stdin_fd_);
      stdin_fd_ = -1;
    }
    if (stdin_fd_ >= 0 && written_ >= payload_.size()) {
      ::close(stdin_fd_);  // end of input for the command
      stdin_fd_ = -1;
    }
    int status = 0;
    pid_t r = ::waitpid(pid_, &status, WNOHANG);
    if (r == pid_) {
      reap(status);
    } else {
      auto now = Clock::now();
      if (!terminated_ && now - started_at_ >= timeout_) {
        report_(fmt::format("--exec for alert #{} ran longer than {}; stopping it", seq_, format_duration(timeout_)));
        ++failed_;
        kill_running(SIGTERM);
        terminated_ = true;
        term_at_ = now;
      } else if (terminated_ && now - term_at_ >= kKillGrace) {
        kill_running(SIGKILL);
      }
    }
  }
  if (pid_ < 0 && !queue_.empty()) {
    Job next = std::move(queue_.front());
    queue_.pop_front();
    start(std::move(next));
    if (pid_ > 0) poll();  // write what fits right away
  }
}

void HookRunner::finish(bool kill_now) {
  if (kill_now) {
    if (!queue_.empty()) {
      report_(fmt::format("--exec: {} queued run(s) not started (interrupted)", queue_.size()));
      queue_.clear();
    }
    if (pid_ > 0 && !terminated_) {
      kill_running(SIGTERM);
      terminated_ = true;
      term_at_ = Clock::now();
    }
  }
  while (pid_ > 0 || !queue_.empty()) {
    poll();
    if (pid_ > 0) std::this_thread::sleep_for(10ms);
  }
}

}  // namespace firstfault
