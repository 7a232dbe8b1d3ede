// Flight Recorder dumps as text (reader/flight_recorder.h). Field names are those of PyTorch's
// torch/csrc/distributed/c10d/FlightRecorder.hpp (dump versions 2.x): entries[] with pg_id,
// process_group [name, desc], collective_seq_id, is_p2p, profiling_name, state, input_sizes,
// timeout_ms, frames[]; pg_status{} with last_enqueued/started/completed_collective.
#include "firstfault/reader/flight_recorder.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "firstfault/reader/pickle.h"

namespace firstfault {

namespace {

using nlohmann::json;

// What one process group's part of a dump says.
struct GroupProgress {
  std::string desc;  // "default_pg", "tp", ...
  int64_t enqueued = -1, started = -1, completed = -1;
  const json* oldest_pending = nullptr;  // the first collective not completed
};

int64_t int_of(const json& v, int64_t fallback = -1) {
  if (v.is_number_integer()) return v.get<int64_t>();
  if (v.is_string()) try { return std::stoll(v.get<std::string>()); } catch (...) {}
  return fallback;
}

// A dump's values as text. Its strings came from a pickle and need not be UTF-8: dumped with
// replacement characters, never a throw.
std::string dump_text(const json& v) { return v.dump(-1, ' ', false, json::error_handler_t::replace); }
std::string str_of(const json& v) { return v.is_string() ? v.get<std::string>() : (v.is_null() ? "" : dump_text(v)); }

// One line per value: a dump's strings never break the line structure.
std::string one_line(std::string s) {
  std::replace_if(s.begin(), s.end(), [](char c) { return c == '\n' || c == '\r' || c == '\0'; }, ' ');
  return s.size() > 300 ? s.substr(0, 300) + "..." : s;
}

// The profiling name ("nccl:all_reduce") in the watchdog's OpType spelling, so dumps and
// watchdog lines of the same job agree on what each rank waits in.
std::string op_type(const std::string& profiling_name) {
  static const std::map<std::string, std::string> kOpTypes = {
      {"all_reduce", "ALLREDUCE"}, {"allreduce", "ALLREDUCE"}, {"all_reduce_coalesced", "ALLREDUCE_COALESCED"},
      {"all_gather", "ALLGATHER"}, {"allgather", "ALLGATHER"}, {"_allgather_base", "_ALLGATHER_BASE"},
      {"all_gather_into_tensor_coalesced", "ALLGATHER_COALESCED"}, {"reduce_scatter", "REDUCE_SCATTER"},
      {"_reduce_scatter_base", "_REDUCE_SCATTER_BASE"}, {"reduce_scatter_tensor_coalesced", "REDUCE_SCATTER"},
      {"broadcast", "BROADCAST"}, {"reduce", "REDUCE"}, {"gather", "GATHER"}, {"scatter", "SCATTER"},
      {"all_to_all", "ALLTOALL"}, {"alltoall", "ALLTOALL"}, {"all_to_all_base", "ALLTOALL_BASE"},
      {"alltoall_base", "ALLTOALL_BASE"}, {"barrier", "BARRIER"}, {"send", "SEND"}, {"recv", "RECV"},
      {"coalesced", "COALESCED"}};
  std::string name = profiling_name.substr(profiling_name.find(':') == std::string::npos ? 0 : profiling_name.find(':') + 1);
  name = name.substr(0, name.find(' '));  // "send 0->1"
  if (auto it = kOpTypes.find(name); it != kOpTypes.end()) return it->second;
  std::string up = name;
  for (char& c : up) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return up.empty() ? "UNKNOWN" : up;
}

// Per process group, from the entries (and pg_status when the dump has it).
std::map<std::string, GroupProgress> group_progress(const json& dump) {
  std::map<std::string, GroupProgress> groups;
  static const json kNone = json::array();
  auto found = dump.find("entries");  // pointers into it outlive this function: no copies
  const json& entries = found != dump.end() && found->is_array() ? *found : kNone;
  for (const json& e : entries) {
    if (!e.is_object()) continue;
    if (auto p2p = e.find("is_p2p"); p2p != e.end() && p2p->is_boolean() && p2p->get<bool>()) continue;  // own counter
    std::string pg, desc;
    if (auto it = e.find("process_group"); it != e.end() && it->is_array() && it->size() >= 2) {
      pg = str_of((*it)[0]);
      desc = str_of((*it)[1]);
    }
    if (pg.empty() && e.contains("pg_id")) pg = std::to_string(int_of(e["pg_id"]));
    int64_t seq = e.contains("collective_seq_id") ? int_of(e["collective_seq_id"]) : -1;
    if (pg.empty() || seq < 0) continue;
    GroupProgress& g = groups[pg];
    if (g.desc.empty()) g.desc = desc;
    std::string state = e.contains("state") ? str_of(e["state"]) : "";
    g.enqueued = std::max(g.enqueued, seq);
    if (state == "started" || state == "completed") g.started = std::max(g.started, seq);
    if (state == "completed") g.completed = std::max(g.completed, seq);
    else if (!g.oldest_pending || seq < int_of((*g.oldest_pending)["collective_seq_id"])) g.oldest_pending = &e;
  }
  if (auto it = dump.find("pg_status"); it != dump.end() && it->is_object())
    for (const auto& [pg, st] : it->items()) {
      if (!st.is_object()) continue;
      GroupProgress& g = groups[pg];
      g.enqueued = std::max(g.enqueued, int_of(st.value("last_enqueued_collective", json(-1))));
      g.started = std::max(g.started, int_of(st.value("last_started_collective", json(-1))));
      g.completed = std::max(g.completed, int_of(st.value("last_completed_collective", json(-1))));
    }
  // An entry the ring buffer still holds as pending may be older than what pg_status says completed.
  for (auto& [pg, g] : groups)
    if (g.oldest_pending && int_of((*g.oldest_pending)["collective_seq_id"]) <= g.completed) g.oldest_pending = nullptr;
  return groups;
}

std::string pending_text(const json& e) {
  std::string name = e.contains("profiling_name") ? str_of(e["profiling_name"]) : "";
  std::string text = fmt::format("oldest pending work: {} OpType={} ({}) state={}", int_of(e["collective_seq_id"]),
                                 op_type(name), one_line(name), one_line(e.contains("state") ? str_of(e["state"]) : "?"));
  if (e.contains("input_sizes")) text += " input sizes " + one_line(dump_text(e["input_sizes"]));
  if (e.contains("output_sizes")) text += " output sizes " + one_line(dump_text(e["output_sizes"]));
  if (int64_t t = e.contains("timeout_ms") ? int_of(e["timeout_ms"]) : -1; t >= 0) text += fmt::format(" timeout {} ms", t);
  return text;
}

// The pending collective's Python stack, innermost first as the dump keeps it: a few frames.
void append_frames(const json& e, std::string& out) {
  auto it = e.find("frames");
  if (it == e.end() || !it->is_array()) return;
  size_t shown = 0;
  for (const json& f : *it) {
    if (!f.is_object() || ++shown > 8) break;
    out += fmt::format("    at {}:{} in {}\n", one_line(str_of(f.value("filename", json("?")))),
                       int_of(f.value("line", json(-1))), one_line(str_of(f.value("name", json("?")))));
  }
}

std::string render(const json& dump) {
  auto groups = group_progress(dump);
  std::string version = dump.contains("version") ? one_line(str_of(dump["version"])) : "?";
  size_t n = dump.contains("entries") && dump["entries"].is_array() ? dump["entries"].size() : 0;
  std::string rank_prefix;
  if (auto it = dump.find("rank"); it != dump.end() && int_of(*it) >= 0) rank_prefix = fmt::format("[rank{}]:", int_of(*it));
  std::string out = fmt::format("{}Flight Recorder dump (version {}): {} entries, {} process group(s) with collectives\n",
                                rank_prefix, version, n, groups.size());
  for (const auto& [pg, g] : groups) {
    out += fmt::format("{}[PG {} ({})] Flight Recorder dump: last enqueued work: {}, last started work: {}, last completed work: {}; ",
                       rank_prefix, one_line(pg), one_line(g.desc), g.enqueued, g.started, g.completed);
    if (g.oldest_pending) {
      out += pending_text(*g.oldest_pending) + "\n";
      append_frames(*g.oldest_pending, out);
    } else {
      out += "no pending work\n";
    }
  }
  return out;
}

bool looks_like_json_dump(std::string_view head) {
  size_t first = head.find_first_not_of(" \t\r\n");
  if (first == std::string_view::npos || head[first] != '{') return false;
  bool entries = head.find("\"entries\"") != std::string_view::npos &&
                 (head.find("\"collective_seq_id\"") != std::string_view::npos || head.find("\"profiling_name\"") != std::string_view::npos);
  return entries || head.find("\"pg_config\"") != std::string_view::npos;
}

}  // namespace

bool looks_like_flight_recorder_dump(std::string_view head) {
  if (looks_like_pickle(head))
    return head.find("entries") != std::string_view::npos &&
           (head.find("pg_config") != std::string_view::npos || head.find("collective_seq_id") != std::string_view::npos);
  return looks_like_json_dump(head);
}

namespace {

Result<std::string> read_dump(std::string_view dump) {
  std::optional<json> doc;
  if (looks_like_pickle(dump)) {
    auto parsed = parse_pickle(dump);
    if (!parsed) return Error{"Flight Recorder dump: " + parsed.error().message};
    doc = std::move(*parsed);
  } else {
    doc = json::parse(dump.begin(), dump.end(), nullptr, /*allow_exceptions=*/false);
    if (doc->is_discarded()) return Error{"Flight Recorder dump: not valid JSON"};
  }
  if (!doc->is_object() || !doc->contains("entries")) return Error{"Flight Recorder dump: no 'entries' list"};
  return render(*doc);
}

}  // namespace

Result<std::string> flight_recorder_to_text(std::string_view dump) {
  // The one boundary where a library exception could escape the reader: a dump that breaks a
  // rule nlohmann enforces is a refused input, not a crash.
  try {
    return read_dump(dump);
  } catch (const std::exception& e) {
    return Error{std::string("Flight Recorder dump: ") + e.what()};
  }
}

}  // namespace firstfault
