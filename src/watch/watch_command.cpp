#include "firstfault/watch/watch_command.h"

#include <fmt/format.h>
#include <re2/re2.h>

#include <atomic>
#include <ctime>
#include <map>
#include <optional>

#include "firstfault/app/pipeline.h"
#include "firstfault/render/ci_render.h"
#include "firstfault/signatures/loader.h"
#include "firstfault/util/safe_text.h"
#include "firstfault/util/strings.h"
#include "firstfault/watch/duration.h"
#include "firstfault/watch/hooks.h"
#include "firstfault/watch/metrics.h"

namespace firstfault {

using namespace std::chrono_literals;

namespace {

constexpr auto kMetricsEvery = 1s;

std::string utc_iso(std::chrono::system_clock::time_point t) {
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(t.time_since_epoch()).count();
  std::time_t secs = static_cast<std::time_t>(ms / 1000);
  std::tm tm{};
  ::gmtime_r(&secs, &tm);
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:03}Z", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
                     tm.tm_hour, tm.tm_min, tm.tm_sec, ms % 1000);
}

double unix_seconds(std::chrono::system_clock::time_point t) {
  return std::chrono::duration<double>(t.time_since_epoch()).count();
}

std::string safe(const std::string& s) { return strip_control(sanitize_utf8(s)); }

std::optional<std::chrono::milliseconds> duration_option(const char* flag, const std::string& text, bool allow_zero) {
  auto d = parse_duration(text);
  if (!d.ok()) {
    fmt::print(stderr, "firstfault: {}: {}\n", flag, d.error().message);
    return std::nullopt;
  }
  if (!allow_zero && d.value().count() <= 0) {
    fmt::print(stderr, "firstfault: {}: must be longer than 0\n", flag);
    return std::nullopt;
  }
  return d.value();
}

// Environment for --exec commands, so one-liners need no JSON parsing.
HookRunner::Env hook_env(const Alert& a) {
  const Diagnosis& d = a.diagnosis;
  HookRunner::Env env = {{"FIRSTFAULT_ALERT_KIND", a.kind}, {"FIRSTFAULT_ALERT_SEQ", std::to_string(a.seq)}};
  env.push_back({"FIRSTFAULT_ENTRY", d.entry ? d.entry->id : ""});
  env.push_back({"FIRSTFAULT_SEVERITY", d.entry ? d.entry->severity : ""});
  env.push_back({"FIRSTFAULT_RANK", d.initiating.rank && *d.initiating.rank >= 0 ? std::to_string(*d.initiating.rank) : ""});
  // The host comes from log text: only a plausible host name reaches a shell (docs/watch.md).
  env.push_back({"FIRSTFAULT_HOST", plausible_host(d.initiating.host) ? d.initiating.host : ""});
  return env;
}

// The metrics carry library ids, kinds and rank numbers, no log text; their labels are masked
// anyway, so a label that ever carries log text cannot get past --redact.
void redact_status(WatchStatus& s, Redactor& r) {
  s.entry = r.mask(s.entry);
  std::map<std::pair<std::string, std::string>, uint64_t> alerts;
  for (const auto& [key, n] : s.alerts) alerts[{key.first, r.mask(key.second)}] += n;
  s.alerts = std::move(alerts);
}

}  // namespace

void redact_alert(Alert& a, Redactor& r) {
  // The reason and the stall line are learned from first, so what only they reveal is masked in
  // the diagnosis too.
  r.learn(a.reason);
  if (a.stall) {
    r.learn(a.stall->last_line);
    r.learn(a.stall->file);
  }
  redact_diagnosis(a.diagnosis, r);
  a.reason = r.mask(a.reason);
  if (a.stall) {
    a.stall->last_line = r.mask(a.stall->last_line);
    a.stall->file = r.mask(a.stall->file);
  }
}

void defuse_alert(Alert& a) {
  neutralize_diagnosis(a.diagnosis);
  a.reason = safe_line(a.reason);
  if (a.stall) {
    a.stall->last_line = safe_line(a.stall->last_line);
    a.stall->file = safe_line(a.stall->file);
  }
}

OutputJson alert_to_json(const Alert& a, const Library& lib) {
  const Diagnosis& d = a.diagnosis;
  OutputJson j;
  j["schema"] = kAlertSchema;
  j["seq"] = a.seq;
  j["kind"] = a.kind;
  j["reason"] = a.reason;
  j["time"] = utc_iso(a.time);
  j["entry"] = d.entry ? OutputJson(d.entry->id) : OutputJson(nullptr);
  j["title"] = d.entry ? OutputJson(d.entry->title) : OutputJson(nullptr);
  j["severity"] = d.entry ? OutputJson(d.entry->severity) : OutputJson(nullptr);
  j["initiating_rank"] = d.initiating.rank ? OutputJson(*d.initiating.rank) : OutputJson(nullptr);
  j["initiating_host"] = d.initiating.host.empty() ? OutputJson(nullptr) : OutputJson(d.initiating.host);
  if (a.stall) {
    const StallInfo& s = *a.stall;
    j["stall"] = {{"scope", s.scope},
                  {"ranks", s.ranks},
                  {"silent_seconds", std::chrono::duration<double>(s.silent).count()},
                  {"threshold_seconds", std::chrono::duration<double>(s.threshold).count()},
                  {"from_progress", s.from_progress},
                  {"last_step", s.last_step >= 0 ? OutputJson(s.last_step) : OutputJson(nullptr)},
                  {"last_line", s.last_line.empty() ? OutputJson(nullptr) : OutputJson(s.last_line)},
                  {"file", s.file.empty() ? OutputJson(nullptr) : OutputJson(s.file)},
                  {"line", s.line ? OutputJson(s.line) : OutputJson(nullptr)},
                  {"active_ranks", s.active_ranks}};
  } else {
    j["stall"] = nullptr;
  }
  j["diagnosis"] = diagnosis_to_json(d, lib);
  return j;
}

std::string render_alert_text(const Alert& a, const Library& lib, const TextStyle& style) {
  bool stall = a.stall.has_value();
  std::string head = fmt::format("== firstfault alert #{} [{}] {}", a.seq, a.kind, utc_iso(a.time));
  if (style.color) head = fmt::format("\x1b[{}m{}\x1b[0m", stall ? "1;33" : "1;31", head);
  std::string out = head + "\n" + safe(a.reason) + "\n";
  if (stall && a.stall->scope == "job" && !a.stall->last_line.empty()) {
    out += fmt::format("last progress: {}:{}\n  {}\n", safe(a.stall->file), a.stall->line,
                       safe(truncate_utf8(a.stall->last_line, 400)));
  }
  out += "\n";
  if (a.entry_shown_in && a.diagnosis.entry) {  // what changed, not the same entry again
    out += render_text_head(a.diagnosis, style);
    out += fmt::format("(root cause, fix and references: alert #{})\n", a.entry_shown_in);
  } else if (a.diagnosis.verdict == "diagnosed" || !stall) {
    out += render_text(a.diagnosis, lib, style);
  }
  out += "\n";
  return out;
}

// --metrics-label KEY=VALUE, each checked; the reason on stderr when one is wrong.
static std::optional<MetricLabels> metric_labels(const WatchOptions& o) {
  MetricLabels labels;
  for (const std::string& pair : o.metrics_labels) {
    size_t eq = pair.find('=');
    std::string key = pair.substr(0, eq);
    auto problem = eq == std::string::npos ? std::optional<std::string>("expected KEY=VALUE") : metric_label_problem(key);
    if (!problem && std::any_of(labels.begin(), labels.end(), [&](const auto& l) { return l.first == key; }))
      problem = "given twice";
    if (problem) {
      fmt::print(stderr, "firstfault: --metrics-label '{}': {}\n", safe_line(pair), *problem);
      return std::nullopt;
    }
    labels.emplace_back(key, pair.substr(eq + 1));
  }
  if (!labels.empty() && o.metrics_file.empty()) {
    fmt::print(stderr, "firstfault: --metrics-label needs --metrics-file\n");
    return std::nullopt;
  }
  return labels;
}

int run_watch(const WatchOptions& o, std::ostream& out) {
  if (o.format != "text" && o.format != "jsonl") {
    fmt::print(stderr, "firstfault: unknown --format '{}' (text, jsonl)\n", o.format);
    return kExitUsage;
  }
  WatchConfig cfg;
  cfg.paths = o.paths;
  cfg.rank_from = o.rank_from;
  cfg.host_from = o.host_from;
  if (!o.stall.empty()) {
    auto d = duration_option("--stall", o.stall, false);
    if (!d) return kExitUsage;
    cfg.stall = *d;
  }
  auto update = duration_option("--update-interval", o.update_interval, true);
  auto exec_timeout = duration_option("--exec-timeout", o.exec_timeout, false);
  if (!update || !exec_timeout) return kExitUsage;
  cfg.update_interval = *update;
  if (!path_rules_ok(o.rank_from, o.host_from)) return kExitUsage;
  auto labels = metric_labels(o);
  if (!labels) return kExitUsage;
  if (!o.metrics_file.empty()) {
    // Fail now, not at the first write, when the file can never be written.
    if (Status s = write_file_atomically(o.metrics_file, "# firstfault watch starting\n"); !s.ok()) {
      fmt::print(stderr, "firstfault: --metrics-file: {}\n", s.message());
      return kExitUsage;
    }
  }

  auto engine = load_engine(o.common);
  if (!engine) return kExitUsage;
  const Library& lib = engine->library;
  const Matcher& matcher = *engine->matcher;

  TextStyle style;
  style.color = o.format == "text" && want_color(o.color);
  auto report = [](const std::string& msg) { fmt::print(stderr, "firstfault: {}\n", msg); };
  // --redact: everything that leaves the process goes through one Redactor first: alerts on
  // stdout, the JSON and environment of --exec, the metrics file and the notices on stderr.
  const RedactLevel level = o.redact.value_or(default_redact_level(o.format));
  const bool redact = level != RedactLevel::kNone;
  Redactor redactor(level);
  auto notice = [&](const std::string& n) { report(redact ? redactor.mask(n) : n); };
  std::optional<HookRunner> hooks;
  if (!o.exec.empty()) hooks.emplace(o.exec, *exec_timeout, report);

  // Stops on SIGINT, and when nobody reads the alerts any more (`firstfault watch ... | head -1`).
  std::atomic<bool> stop{false};
  bool output_closed = false;
  cfg.stop = &stop;
  Watcher watcher(matcher, cfg);
  auto last_metrics = std::chrono::steady_clock::now() - kMetricsEvery;
  bool metrics_failing = false;
  auto write_metrics = [&](bool force) {
    if (o.metrics_file.empty()) return;
    auto now = std::chrono::steady_clock::now();
    if (!force && now - last_metrics < kMetricsEvery) return;
    last_metrics = now;
    WatchStatus st = watcher.status();
    if (redact) redact_status(st, redactor);
    double now_s = unix_seconds(std::chrono::system_clock::now());
    Status s = write_file_atomically(o.metrics_file, render_metrics(st, now_s, *labels));
    if (!s.ok() && !metrics_failing) report("--metrics-file: " + s.message());  // once, not every second
    if (s.ok() && metrics_failing) report("--metrics-file: writing again");
    metrics_failing = !s.ok();
  };

  auto on_alert = [&](const Alert& raw) {
    Alert a = raw;
    if (redact) redact_alert(a, redactor);
    defuse_alert(a);
    std::string json = dump_json(alert_to_json(a, lib), -1) + "\n";
    if (o.format == "jsonl") out << json;
    else out << render_alert_text(a, lib, style);
    out.flush();
    if (!out) {
      output_closed = true;
      stop = true;
    }
    if (hooks) hooks->submit(a.seq, std::move(json), hook_env(a));
    write_metrics(true);
  };
  auto on_tick = [&] {
    if (g_interrupted.load()) stop = true;
    for (const auto& n : watcher.take_notices()) notice(n);
    if (hooks) hooks->poll();
    write_metrics(false);
  };

  WatchEnd end = watcher.run(on_alert, on_tick);
  for (const auto& n : watcher.take_notices()) notice(n);
  bool interrupted = end == WatchEnd::kStopped && !output_closed;
  if (hooks) hooks->finish(interrupted);
  write_metrics(true);
  if (interrupted) return kExitInterrupted;
  Diagnosis d = watcher.final_diagnosis();
  if (d.verdict == "diagnosed") return kExitDiagnosed;
  if (!output_closed)
    report(d.verdict == "unrecognized" ? "input ended; error lines but no known failure (run `firstfault diagnose` on the log for details)"
           : d.verdict == "incomplete" ? "input ended; training had stopped making progress long before, with no error (a hang)"
                                       : "input ended; no failure seen");
  return kExitUnrecognized;
}

}  // namespace firstfault
