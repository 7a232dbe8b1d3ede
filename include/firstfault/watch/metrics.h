#pragma once
// --metrics-file: the watch's state as Prometheus text-format metrics, for node_exporter's
// textfile collector. The file is replaced atomically (temp file + rename in the same
// directory), so the collector never reads half a file.
#include <string>

#include "firstfault/util/result.h"
#include "firstfault/watch/watcher.h"

namespace firstfault {

// `now_unix_s`: the wall-clock time written as firstfault_watch_updated_timestamp_seconds.
std::string render_metrics(const WatchStatus& s, double now_unix_s);

Status write_file_atomically(const std::string& path, const std::string& content);

}  // namespace firstfault
