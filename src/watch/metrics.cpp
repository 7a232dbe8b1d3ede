#include "firstfault/watch/metrics.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <set>
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

// Writes samples, each with the --metrics-label pairs first and then its own labels.
class SampleWriter {
 public:
  SampleWriter(std::string& out, const MetricLabels& extra) : out_(out) {
    for (const auto& [k, v] : extra) extra_ += fmt::format("{}{}=\"{}\"", extra_.empty() ? "" : ",", k, label(v));
  }
  void operator()(std::string_view name, const std::string& own, const std::string& value) {
    std::string labels = extra_.empty() ? own : own.empty() ? extra_ : extra_ + "," + own;
    out_ += labels.empty() ? fmt::format("{} {}\n", name, value) : fmt::format("{}{{{}}} {}\n", name, labels, value);
  }

 private:
  std::string& out_;
  std::string extra_;
};

std::string rank_label(int rank) { return fmt::format("rank=\"{}\"", rank); }

}  // namespace

std::optional<std::string> metric_label_problem(const std::string& key) {
  static const std::set<std::string> kOwn = {"kind", "entry", "initiating_rank", "rank"};
  bool valid = !key.empty() && !std::isdigit(static_cast<unsigned char>(key[0])) &&
               std::all_of(key.begin(), key.end(), [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; });
  if (!valid) return "a label name is letters, digits and '_', not starting with a digit";
  if (key.rfind("__", 0) == 0) return "label names starting with '__' are reserved by Prometheus";
  if (kOwn.count(key)) return "firstfault's own metrics use this label";
  return std::nullopt;
}

std::string render_metrics(const WatchStatus& s, double now_unix_s, const MetricLabels& extra) {
  std::string out;
  SampleWriter sample(out, extra);
  header(out, "firstfault_watch_alerts_total", "counter", "Alerts raised since the watch started, by kind and failure entry.");
  for (const auto& [key, n] : s.alerts)
    sample("firstfault_watch_alerts_total", fmt::format("kind=\"{}\",entry=\"{}\"", label(key.first), label(key.second)),
           std::to_string(n));
  header(out, "firstfault_watch_failure", "gauge",
         "1 once a failure was alerted, labelled with its entry and initiating rank; 0 while none.");
  if (s.entry.empty()) sample("firstfault_watch_failure", "entry=\"\",initiating_rank=\"\"", "0");
  else
    sample("firstfault_watch_failure",
           fmt::format("entry=\"{}\",initiating_rank=\"{}\"", label(s.entry),
                       s.initiating_rank ? std::to_string(*s.initiating_rank) : ""),
           "1");
  header(out, "firstfault_watch_stalled", "gauge", "1 while no rank has made progress for longer than --stall.");
  sample("firstfault_watch_stalled", "", s.stalled ? "1" : "0");
  header(out, "firstfault_watch_last_progress_age_seconds", "gauge",
         "Seconds since the rank's step counter last advanced (by arrival time of the line).");
  for (const auto& r : s.ranks)
    if (r.progress_age_s) sample("firstfault_watch_last_progress_age_seconds", rank_label(r.rank), num(*r.progress_age_s));
  header(out, "firstfault_watch_last_progress_step", "gauge", "The rank's last step counter.");
  for (const auto& r : s.ranks)
    if (r.step >= 0) sample("firstfault_watch_last_progress_step", rank_label(r.rank), std::to_string(r.step));
  header(out, "firstfault_watch_rank_silent", "gauge",
         "1 while the rank has made no progress for longer than --stall and other ranks have.");
  for (const auto& r : s.ranks)
    if (r.progress_age_s) {
      bool silent = std::find(s.silent_ranks.begin(), s.silent_ranks.end(), r.rank) != s.silent_ranks.end();
      sample("firstfault_watch_rank_silent", rank_label(r.rank), silent ? "1" : "0");
    }
  header(out, "firstfault_watch_last_line_age_seconds", "gauge", "Seconds since the rank printed any line.");
  for (const auto& r : s.ranks) sample("firstfault_watch_last_line_age_seconds", rank_label(r.rank), num(r.line_age_s));
  if (s.job_progress_age_s) {
    header(out, "firstfault_watch_job_last_progress_age_seconds", "gauge",
           "Seconds since any rank's step counter last advanced.");
    sample("firstfault_watch_job_last_progress_age_seconds", "", num(*s.job_progress_age_s));
  }
  if (s.job_line_age_s) {
    header(out, "firstfault_watch_job_last_line_age_seconds", "gauge", "Seconds since the job printed any line.");
    sample("firstfault_watch_job_last_line_age_seconds", "", num(*s.job_line_age_s));
  }
  header(out, "firstfault_watch_lines_total", "counter", "Lines read.");
  sample("firstfault_watch_lines_total", "", std::to_string(s.lines));
  header(out, "firstfault_watch_bytes_total", "counter", "Bytes read.");
  sample("firstfault_watch_bytes_total", "", std::to_string(s.bytes));
  header(out, "firstfault_watch_inputs", "gauge", "Log streams opened (files, rotated generations, stdin).");
  sample("firstfault_watch_inputs", "", std::to_string(s.streams));
  header(out, "firstfault_watch_updated_timestamp_seconds", "gauge", "When this file was written (Unix time).");
  sample("firstfault_watch_updated_timestamp_seconds", "", num(now_unix_s));
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
