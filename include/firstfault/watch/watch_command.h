#pragma once
// `firstfault watch`: follow a running job and alert the moment it fails or stalls. The CLI
// fills WatchOptions; everything else (output, --exec, --metrics-file, exit code) is here.
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "firstfault/app/commands.h"
#include "firstfault/render/render.h"
#include "firstfault/util/redact.h"
#include "firstfault/watch/watcher.h"

namespace firstfault {

inline constexpr const char* kAlertSchema = "firstfault.alert/v1";

// `firstfault watch --help` footer; the man page is generated from it too.
inline constexpr const char* kWatchHelp =
    "Alerts: \"failure\" when a line arrives that shows what broke (a root or cascade event), "
    "\"update\" when the picture changes (diagnosis, initiating rank, collateral; at most one per "
    "--update-interval), \"stall\" and \"rank-stall\" for --stall, and \"final\" when stdin ends with "
    "a diagnosis not alerted yet. --format jsonl prints one firstfault.alert/v1 object per line "
    "(docs/watch.md).\n"
    "\n"
    "Files are read from their first line and followed through rotation (rename or copytruncate) and "
    "truncation; files that appear later in a watched directory are picked up. Files are polled with "
    "stat(), not inotify, so logs on NFS or Lustre written by other nodes are seen too.\n"
    "\n"
    "Stall detection goes by the wall-clock arrival time of progress lines (step counters, tqdm bars), "
    "not by the times printed in the log; a job that never prints progress is judged by any output.\n"
    "\n"
    "--exec runs CMD for one alert at a time, with the alert JSON on stdin and FIRSTFAULT_ALERT_KIND, "
    "FIRSTFAULT_ENTRY, FIRSTFAULT_SEVERITY, FIRSTFAULT_RANK and FIRSTFAULT_HOST set; its output goes to "
    "stderr, and failures are reported there.\n"
    "\n"
    "Exit status: 130 on SIGINT; when stdin is the only input, at its end 0 if the complete log shows "
    "a known failure and 1 if not.\n"
    "\n"
    "  firstfault watch --stall 10m logs/\n"
    "  kubectl logs -f job-worker-0 | firstfault watch --format jsonl -\n"
    "  firstfault watch --metrics-file /var/lib/node_exporter/textfile/job.prom train.log\n"
    "  firstfault watch --exec '[ \"$FIRSTFAULT_ALERT_KIND\" = failure ] && notify.sh' logs/\n";

struct WatchOptions {
  CommonOptions common;
  std::vector<std::string> paths;      // files, directories, "-" (empty: stdin)
  std::string format = "text";         // text | jsonl
  std::string color = "auto";
  std::string rank_from;
  std::string host_from;
  std::string stall;                   // duration; empty: no stall detection
  std::string exec;                    // shell command run per alert
  std::string exec_timeout = "30s";
  std::string metrics_file;
  std::vector<std::string> metrics_labels;  // --metrics-label KEY=VALUE, repeatable
  std::string update_interval = "2s";
  std::optional<RedactLevel> redact;          // --redact / --no-redact; unset: off (text and jsonl)
};

// Follows until SIGINT (exit 130) or, when stdin is the only input, its end (exit 0 when the
// complete log diagnoses a failure, 1 when not, like `diagnose`). 2 for usage errors.
int run_watch(const WatchOptions& o, std::ostream& out);

OutputJson alert_to_json(const Alert& a, const Library& lib);
// --redact: masks every log-derived string of `a` (its diagnosis, reason and stall line) in
// place. One Redactor serves the whole watch, so a node keeps its host-N from alert to alert.
void redact_alert(Alert& a, Redactor& r);
// Every log-derived string of `a` through safe_line (no controls, escapes or CI commands), as
// every alert is before it is printed, exported or given to a hook.
void defuse_alert(Alert& a);
std::string render_alert_text(const Alert& a, const Library& lib, const TextStyle& style);

}  // namespace firstfault
