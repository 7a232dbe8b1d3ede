// NCCL RAS JSON reports as RAS's own text form (reader/nccl_ras.h). Field names and the text
// lines are those of NCCL's src/ras/client_support.cc (jsonWriteHeader .. jsonWriteFooter, and the
// text dump's "INCOMPLETE", "DEAD", "ERROR" sections); only what says something about a failure
// is written: missing and dead ranks, ranks with an initialisation or asynchronous error, and
// collective counts that differ between the ranks of a communicator.
#include "firstfault/reader/nccl_ras.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace firstfault {

namespace {

using nlohmann::json;

int64_t int_of(const json& o, const char* key, int64_t fallback = -1) {
  auto it = o.find(key);
  return it != o.end() && it->is_number_integer() ? it->get<int64_t>() : fallback;
}
bool bool_of(const json& o, const char* key) {
  auto it = o.find(key);
  return it != o.end() && it->is_boolean() && it->get<bool>();
}
// One line of text from a field: control characters and line breaks cannot start a new line.
std::string str_of(const json& o, const char* key) {
  auto it = o.find(key);
  if (it == o.end() || !it->is_string()) return "?";
  std::string s = it->get<std::string>();
  for (char& c : s)
    if (static_cast<unsigned char>(c) < 0x20) c = ' ';
  return s;
}

// ncclResult_t names (src/include/nccl.h.in).
std::string nccl_result_name(int64_t code) {
  static const char* names[] = {"ncclSuccess",        "ncclUnhandledCudaError", "ncclSystemError",
                                "ncclInternalError",  "ncclInvalidArgument",    "ncclInvalidUsage",
                                "ncclRemoteError",    "ncclInProgress"};
  return code >= 0 && code < 8 ? names[code] : fmt::format("NCCL error {}", code);
}

std::string where(const json& rank) {
  return fmt::format("GPU {} managed by process {} on node {}", int_of(rank, "nvml_dev", int_of(rank, "cuda_dev")),
                     int_of(rank, "pid"), str_of(rank, "host"));
}

const json& list_of(const json& o, const char* key) {
  static const json empty = json::array();
  auto it = o.find(key);
  return it != o.end() && it->is_array() ? *it : empty;
}

// The ranks that lack data (INCOMPLETE), then the dead processes among them (DEAD).
void write_missing(const json& comm, const std::string& head, std::string& out, std::string& dead) {
  const json& missing = list_of(comm, "missing_ranks");
  if (missing.empty()) return;
  out += head + " INCOMPLETE\n";
  out += fmt::format("  Missing communicator data from {} rank{}\n", missing.size(), missing.size() > 1 ? "s" : "");
  for (const json& m : missing) {
    if (!m.is_object()) continue;
    out += fmt::format("  The missing rank: {}\n", int_of(m, "rank"));
    out += fmt::format("  Rank {} -- {}\n", int_of(m, "rank"), where(m));
    const json& status = m.contains("status") && m["status"].is_object() ? m["status"] : json::object();
    if (bool_of(status, "considered_dead"))
      dead += fmt::format("  Process {} on node {} managing GPU {}\n", int_of(m, "pid"), str_of(m, "host"),
                          int_of(m, "nvml_dev", int_of(m, "cuda_dev")));
  }
}

// Ranks whose status holds an error (init_state other than ncclSuccess/ncclInProgress, async_error).
void write_errors(const json& comm, const std::string& head, std::string& out) {
  std::vector<std::string> lines;
  for (const json& r : list_of(comm, "ranks")) {
    if (!r.is_object() || !r.contains("status") || !r["status"].is_object()) continue;
    int64_t init = int_of(r["status"], "init_state", 0), async = int_of(r["status"], "async_error", 0);
    if (init != 0 && init != 7)
      lines.push_back(fmt::format("  Rank {} -- {}: initialization error {}\n", int_of(r, "rank"), where(r), nccl_result_name(init)));
    if (async != 0 && async != 7)
      lines.push_back(fmt::format("  Rank {} -- {}: asynchronous error {}\n", int_of(r, "rank"), where(r), nccl_result_name(async)));
    if (bool_of(r["status"], "abort_flag")) lines.push_back(fmt::format("  Rank {} -- {}: aborted\n", int_of(r, "rank"), where(r)));
  }
  if (lines.empty()) return;
  out += head + " ERROR\n";
  for (const std::string& l : lines) out += l;
}

// Per collective, the ranks grouped by how many they launched; a communicator whose ranks differ
// is stuck when repeated reports show the same counts (ras.rst).
void write_count_mismatch(const json& comm, const std::string& head, std::string& out) {
  std::map<std::string, std::map<int64_t, std::vector<const json*>>> by_op;
  for (const json& r : list_of(comm, "ranks")) {
    if (!r.is_object() || !r.contains("collective_counts") || !r["collective_counts"].is_object()) continue;
    for (const auto& [op, count] : r["collective_counts"].items())
      if (count.is_number_integer()) by_op[op][count.get<int64_t>()].push_back(&r);
  }
  bool header = false;
  for (const auto& [op, groups] : by_op) {
    if (groups.size() < 2) continue;
    if (!header) out += head + " MISMATCH\n";
    header = true;
    out += fmt::format("  Communicator ranks have different {} operation counts\n", op);
    // The largest group is the norm; the others are listed rank by rank.
    auto norm = groups.begin();
    for (auto it = groups.begin(); it != groups.end(); ++it)
      if (it->second.size() > norm->second.size()) norm = it;
    if (norm->second.size() > 1)
      out += fmt::format("  {} ranks have launched up to operation {}\n", norm->second.size(), norm->first);
    for (auto it = groups.begin(); it != groups.end(); ++it) {
      if (it == norm && norm->second.size() > 1) continue;
      for (const json* r : it->second)
        out += fmt::format("  Rank {} has launched up to operation {} -- {}\n", int_of(*r, "rank"), it->first, where(*r));
    }
  }
}

Result<std::string> render(const json& doc) {
  if (!doc.is_object() || !doc.contains("communicators") || !doc["communicators"].is_array())
    return Error{"NCCL RAS report: no 'communicators' list"};
  std::string out = fmt::format("NCCL RAS report (JSON form) from NCCL {} at {}\n", str_of(doc, "nccl_version"),
                                str_of(doc, "timestamp"));
  std::string dead;
  int index = 0;
  for (const json& comm : doc["communicators"]) {
    if (!comm.is_object()) continue;
    std::string head = fmt::format("#{} ({}, {} ranks)", index++, str_of(comm, "hash"), int_of(comm, "size"));
    write_missing(comm, head, out, dead);
    write_errors(comm, head, out);
    write_count_mismatch(comm, head, out);
  }
  if (!dead.empty()) {
    size_t n = static_cast<size_t>(std::count(dead.begin(), dead.end(), '\n'));
    out += fmt::format("DEAD\n  {} job process{} {} considered dead (unreachable via the RAS network)\n", n,
                       n > 1 ? "es" : "", n > 1 ? "are" : "is");
    out += dead;
  }
  return out;
}

}  // namespace

bool looks_like_nccl_ras_json(std::string_view head) {
  size_t first = head.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos || head[first] != '{') return false;
  return head.find("\"nccl_version\"") != std::string_view::npos && head.find("\"communicators") != std::string_view::npos;
}

Result<std::string> nccl_ras_json_to_text(std::string_view report) {
  json doc = json::parse(report.begin(), report.end(), nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded()) return Error{"NCCL RAS report: not valid JSON"};
  try {  // a report that breaks a rule nlohmann enforces is a refused input, not a crash
    return render(doc);
  } catch (const std::exception& e) {
    return Error{std::string("NCCL RAS report: ") + e.what()};
  }
}

}  // namespace firstfault
