#pragma once
// --metrics-file: the watch's state as Prometheus text-format metrics, for node_exporter's
// textfile collector. The file is replaced atomically (temp file + rename in the same
// directory), so the collector never reads half a file.
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "firstfault/util/result.h"
#include "firstfault/watch/watcher.h"

namespace firstfault {

// --metrics-label KEY=VALUE pairs, in the order given: added to every series, so that two
// watches on one node (two jobs) export distinct series into one textfile directory.
using MetricLabels = std::vector<std::pair<std::string, std::string>>;

// Why KEY cannot be a --metrics-label name (Prometheus label syntax, reserved or already used
// by firstfault's own labels), or nothing when it can.
std::optional<std::string> metric_label_problem(const std::string& key);

// `now_unix_s`: the wall-clock time written as firstfault_watch_updated_timestamp_seconds.
std::string render_metrics(const WatchStatus& s, double now_unix_s, const MetricLabels& extra = {});

Status write_file_atomically(const std::string& path, const std::string& content);

}  // namespace firstfault
