#include "firstfault/watch/metrics.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

namespace firstfault {

namespace {

// Label values: backslash, double quote and newline are escaped (text exposition format).
std::string label(std::string_view v) {
  std::string out;
  for (char c : v) {
    if (c == '\\') out += "\\\\";
    else if (c == '"') out += "\\\"";
    else if (c == '\n') out += "\\n";
    else out += c;
  }
  return out;
}

void header(std::string& out, const char* name, const char* type, const char* help) {
  out += fmt::format("# HELP {} {}\n# TYPE {} {}\n", name, help, name, type);
}

std::string num(double v) { return fmt::format("{:.3f}", v); }

}  // namespace

std::string render_metrics(const WatchStatus& s, double now_unix_s) {
  std::string out;
  header(out, "firstfault_watch_alerts_total", "counter", "Alerts raised since the watch started, by kind and failure entry.");
  for (const auto& [key, n] : s.alerts)
    out += fmt::format("firstfault_watch_alerts_total{{kind=\"{}\",entry=\"{}\"}} {}\n", label(key.first),
                       label(key.second), n);
  header(out, "firstfault_watch_failure", "gauge",
         "1 once a failure was alerted, labelled with its entry and initiating rank; 0 while none.");
  if (s.entry.empty()) out += "firstfault_watch_failure{entry=\"\",initiating_rank=\"\"} 0\n";
  else
    out += fmt::format("firstfault_watch_failure{{entry=\"{}\",initiating_rank=\"{}\"}} 1\n", label(s.entry),
                       s.initiating_rank ? std::to_string(*s.initiating_rank) : "");
  header(out, "firstfault_watch_stalled", "gauge", "1 while no rank has made progress for longer than --stall.");
  out += fmt::format("firstfault_watch_stalled {}\n", s.stalled ? 1 : 0);
  header(out, "firstfault_watch_last_progress_age_seconds", "gauge",
         "Seconds since the rank's step counter last advanced (by arrival time of the line).");
  for (const auto& r : s.ranks)
    if (r.progress_age_s) out += fmt::format("firstfault_watch_last_progress_age_seconds{{rank=\"{}\"}} {}\n", r.rank, num(*r.progress_age_s));
  header(out, "firstfault_watch_last_progress_step", "gauge", "The rank's last step counter.");
  for (const auto& r : s.ranks)
    if (r.step >= 0) out += fmt::format("firstfault_watch_last_progress_step{{rank=\"{}\"}} {}\n", r.rank, r.step);
  header(out, "firstfault_watch_rank_silent", "gauge",
         "1 while the rank has made no progress for longer than --stall and other ranks have.");
  for (const auto& r : s.ranks)
    if (r.progress_age_s) {
      bool silent = std::find(s.silent_ranks.begin(), s.silent_ranks.end(), r.rank) != s.silent_ranks.end();
      out += fmt::format("firstfault_watch_rank_silent{{rank=\"{}\"}} {}\n", r.rank, silent ? 1 : 0);
    }
  header(out, "firstfault_watch_last_line_age_seconds", "gauge", "Seconds since the rank printed any line.");
  for (const auto& r : s.ranks)
    out += fmt::format("firstfault_watch_last_line_age_seconds{{rank=\"{}\"}} {}\n", r.rank, num(r.line_age_s));
  if (s.job_progress_age_s) {
    header(out, "firstfault_watch_job_last_progress_age_seconds", "gauge",
           "Seconds since any rank's step counter last advanced.");
    out += fmt::format("firstfault_watch_job_last_progress_age_seconds {}\n", num(*s.job_progress_age_s));
  }
  if (s.job_line_age_s) {
    header(out, "firstfault_watch_job_last_line_age_seconds", "gauge", "Seconds since the job printed any line.");
    out += fmt::format("firstfault_watch_job_last_line_age_seconds {}\n", num(*s.job_line_age_s));
  }
  header(out, "firstfault_watch_lines_total", "counter", "Lines read.");
  out += fmt::format("firstfault_watch_lines_total {}\n", s.lines);
  header(out, "firstfault_watch_bytes_total", "counter", "Bytes read.");
  out += fmt::format("firstfault_watch_bytes_total {}\n", s.bytes);
  header(out, "firstfault_watch_inputs", "gauge", "Log streams opened (files, rotated generations, stdin).");
  out += fmt::format("firstfault_watch_inputs {}\n", s.streams);
  header(out, "firstfault_watch_updated_timestamp_seconds", "gauge", "When this file was written (Unix time).");
  out += fmt::format("firstfault_watch_updated_timestamp_seconds {}\n", num(now_unix_s));
  return out;
}

Status write_file_atomically(const std::string& path, const std::string& content) {
  // Same directory, so rename() is atomic; the name does not end in .prom, so the textfile
  // collector never picks up the temporary.
  std::string tmp = fmt::format("{}.tmp.{}", path, ::getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return Error{fmt::format("cannot create {}: {}", tmp, std::strerror(errno))};
  size_t done = 0;
  while (done < content.size()) {
    ssize_t n = ::write(fd, content.data() + done, content.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      std::string err = std::strerror(errno);
      ::close(fd);
      ::unlink(tmp.c_str());
      return Error{fmt::format("cannot write {}: {}", tmp, err)};
    }
    done += static_cast<size_t>(n);
  }
  if (::close(fd) != 0) {
    std::string err = std::strerror(errno);
    ::unlink(tmp.c_str());
    return Error{fmt::format("cannot write {}: {}", tmp, err)};
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    std::string err = std::strerror(errno);
    ::unlink(tmp.c_str());
    return Error{fmt::format("cannot rename {} to {}: {}", tmp, path, err)};
  }
  return Status::Ok();
}

}  // namespace firstfault
