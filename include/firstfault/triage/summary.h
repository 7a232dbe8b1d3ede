#pragma once
// The summary of a triage run (counts, failures by entry and by day, the fleet view, clusters
// of unrecognised errors) and the HTML report drawn from it. Built one job at a time in
// src/triage/triage.cpp; rendered as table, markdown or jsonl there and as HTML in
// src/triage/triage_html.cpp.
#include <cstdint>
#include <algorithm>
#include <map>
#include <ostream>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "firstfault/triage/triage.h"

namespace firstfault {

struct Summary {
  size_t jobs = 0, diagnosed = 0, unrecognized = 0, incomplete = 0, clean = 0, errors = 0;
  size_t partial = 0;  // jobs with a verdict whose inputs could not all be read completely
  uint64_t bytes = 0;
  uint64_t skipped = 0;  // binary files not read, in all jobs
  struct Group {
    std::string id, title, severity, category, action;
    size_t count = 0;
    std::vector<std::string> examples;
  };
  std::vector<Group> groups;
  struct Cluster {
    std::string templ, example_job, example_line;
    size_t count = 0;
  };
  std::vector<Cluster> clusters;
  std::vector<std::pair<std::string, std::string>> error_rows;
  // The fleet view: hosts that initiated failures, most first (a node that starts many
  // failures is suspect whatever the entries say), with the entries seen there.
  struct Host {
    std::string host;
    size_t count = 0;
    std::set<std::string> entries;
    std::map<std::string, size_t> gpus;  // a GPU of this host that failures name, with how many
  };
  std::vector<Host> hosts;
  // Jobs by day (JobRecord::date), oldest first: how many, and the diagnosed ones by entry.
  struct Day {
    std::string date;
    size_t jobs = 0, diagnosed = 0, unrecognized = 0;
    std::map<std::string, size_t> entries;
  };
  std::vector<Day> days;
  size_t undated = 0;          // jobs (not errors) that nothing dates
  size_t outside_window = 0;   // left out by --since/--until
  size_t undated_left_out = 0; // left out by --since/--until because nothing dates them
};


// "0000:9a:00 x3, cuda:1": the GPUs failures named on a host, most first.
inline std::string gpu_counts(const Summary::Host& h) {
  std::vector<std::pair<std::string, size_t>> v(h.gpus.begin(), h.gpus.end());
  std::stable_sort(v.begin(), v.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  std::string out;
  for (const auto& [gpu, n] : v) out += (out.empty() ? "" : ", ") + gpu + (n > 1 ? " x" + std::to_string(n) : "");
  return out;
}

// A self-contained HTML page (no network, no script): counts, failures by entry over time
// (daily, when jobs are dated), the initiating hosts, and the clusters of unrecognised errors
// with their example lines. Every log-derived string is escaped.
void render_triage_html(const Summary& s, std::ostream& out);

}  // namespace firstfault
