#include <cmath>
#include <functional>
#include <ostream>

#include "firstfault/render/render.h"
#include "firstfault/util/strings.h"

namespace firstfault {

using json = OutputJson;

namespace {
json time_json(const Timestamp& t) {
  if (!t.valid()) return nullptr;
  return format_output_time(t);
}
double round3(double v) { return std::round(v * 1000.0) / 1000.0; }
}  // namespace

json evidence_to_json(const Evidence& e) {
  // Assigned key by key: a braced initializer list copies every value once more (per job in triage).
  json j = json::object();
  j["rank"] = e.rank >= 0 ? json(e.rank) : json(nullptr);
  j["host"] = e.host.empty() ? json(nullptr) : json(sanitize_utf8(e.host));
  j["time"] = time_json(e.time);
  j["role"] = e.role;
  j["pattern"] = e.pattern;
  j["text"] = sanitize_utf8(e.text);
  j["file"] = sanitize_utf8(e.file);
  j["line"] = e.line;
  json& caps = j["captures"] = json::object();
  for (const auto& [k, v] : e.captures) caps[k] = sanitize_utf8(v);
  return j;
}

json action_to_json(const Action& a) {
  json hosts = json::array(), gpus = json::array();
  for (const auto& h : a.exclude_hosts) hosts.push_back(sanitize_utf8(h));
  for (const auto& g : a.exclude_gpus) gpus.push_back(sanitize_utf8(g));
  json j = json::object();
  j["kind"] = action_kind_name(a.kind);
  j["exclude_hosts"] = std::move(hosts);
  j["exclude_gpus"] = std::move(gpus);
  j["reason"] = sanitize_utf8(a.reason);
  return j;
}

json entry_to_json(const Entry& e, const Library& lib) {
  json patterns = json::array();
  for (const auto& ref : e.refs)
    patterns.push_back({{"name", ref.name}, {"role", role_name(ref.role)}, {"regex", lib.patterns[ref.def].regex}});
  json examples = json::array();
  for (const auto& x : e.examples)
    examples.push_back({{"log", x.log}, {"initiating_rank", x.initiating_rank ? json(*x.initiating_rank) : json(nullptr)}});
  return json{{"schema", kEntrySchema}, {"id", e.id},           {"title", e.title},         {"category", e.category},
              {"severity", e.severity}, {"action", action_kind_name(e.action)},
              {"systems", e.systems},   {"patterns", patterns},
              {"root_cause", e.root_cause}, {"confirm", e.confirm}, {"fix", e.fix},
              {"prevention", e.prevention}, {"references", e.references}, {"related", e.related},
              {"specializes", e.specializes}, {"examples", examples}};
}

json rank_row_to_json(const RankSummary& r) {
  json o = json::object();
  o["rank"] = r.rank;
  o["host"] = r.host.empty() ? json(nullptr) : json(sanitize_utf8(r.host));
  o["role"] = r.role;
  o["first_event"] = r.first_event ? evidence_to_json(*r.first_event) : json(nullptr);
  o["last_line"] = sanitize_utf8(r.last_line);
  o["last_file"] = sanitize_utf8(r.last_file);
  o["last_line_no"] = r.last_line_no;
  o["last_time"] = time_json(r.last_time);
  o["last_step"] = r.last_step >= 0 ? json(r.last_step) : json(nullptr);
  o["lines"] = r.lines;
  return o;
}

json diagnosis_to_json(const Diagnosis& d, const Library& lib, bool rank_rows) {
  json j;
  j["schema"] = kDiagnosisSchema;
  j["verdict"] = d.verdict;
  if (d.entry) {
    const Entry& e = *d.entry;
    json& o = j["diagnosis"] = json::object();
    o["id"] = e.id;
    o["title"] = e.title;
    o["category"] = e.category;
    o["severity"] = e.severity;
    o["confidence"] = round3(d.confidence);
    o["initiating_rank"] = d.initiating.rank ? json(*d.initiating.rank) : json(nullptr);
    o["initiating_host"] = d.initiating.host.empty() ? json(nullptr) : json(sanitize_utf8(d.initiating.host));
    o["rank_method"] = d.initiating.method;
    o["rank_confidence"] = round3(d.initiating.confidence);
    o["rank_candidates"] = d.initiating.candidates;
    o["reason"] = sanitize_utf8(d.initiating.reason);
    json ev = json::array();
    for (const auto& x : d.evidence) ev.push_back(evidence_to_json(x));
    const Evidence* decisive = d.decisive_evidence();
    o["first_evidence"] = decisive ? evidence_to_json(*decisive) : json(nullptr);
    o["evidence"] = std::move(ev);
    o["root_cause"] = e.root_cause;
    o["confirm"] = e.confirm;
    o["fix"] = e.fix;
    o["prevention"] = e.prevention;
    o["references"] = e.references;
    o["related"] = e.related;
  } else {
    j["diagnosis"] = nullptr;
  }
  j["action"] = action_to_json(d.action);
  json alts = json::array();
  for (const auto& a : d.alternatives) {
    const Entry* e = lib.find_entry(a.id);
    alts.push_back({{"id", a.id}, {"title", e ? e->title : ""}, {"confidence", round3(a.confidence)}});
  }
  j["alternatives"] = alts;
  j["collateral"] = {{"ranks", d.collateral.ranks},
                     {"summary", sanitize_utf8(d.collateral.summary)},
                     {"op", d.collateral.op.empty() ? json(nullptr) : json(d.collateral.op)},
                     {"seq", d.collateral.seq >= 0 ? json(d.collateral.seq) : json(nullptr)}};
  json& ranks = j["ranks"] = json::array();
  if (rank_rows)
    for (const auto& r : d.ranks) ranks.push_back(rank_row_to_json(r));
  json inputs = json::array();
  for (const auto& in : d.inputs) {
    json o = {{"path", sanitize_utf8(in.path)}, {"bytes", in.bytes}, {"lines", in.lines}};
    if (!in.compression.empty()) o["compression"] = in.compression;
    if (in.long_lines) o["long_lines"] = in.long_lines;
    if (!in.error.empty()) o["error"] = sanitize_utf8(in.error);
    if (!in.skipped.empty()) o["skipped"] = in.skipped;
    if (std::string note = name_rank_note(in); !note.empty()) o["note"] = note;
    inputs.push_back(o);
  }
  j["inputs"] = inputs;
  j["first_error"] = d.first_error ? evidence_to_json(*d.first_error) : json(nullptr);
  j["launcher_first_failure"] = nullptr;
  if (const auto& l = d.launcher_first_failure)
    j["launcher_first_failure"] = {{"rank", l->rank}, {"source", l->source}, {"line", evidence_to_json(l->line)}};
  j["stopped"] = nullptr;
  if (const auto& s = d.stopped)
    j["stopped"] = {{"last_progress", evidence_to_json(s->last_progress)},
                    {"ranks", s->ranks},
                    {"behind", s->behind},
                    {"first_time", s->first_time ? time_json(*s->first_time) : json(nullptr)},
                    {"last_time", s->last_time ? time_json(*s->last_time) : json(nullptr)}};
  if (const auto& o = d.outlived_error) j["outlived_error"] = evidence_to_json(*o);  // only when set: added in v1
  j["suspect"] = nullptr;
  if (const auto& s = d.suspect)
    j["suspect"] = {{"rank", s->rank ? json(*s->rank) : json(nullptr)},
                    {"host", s->host.empty() ? json(nullptr) : json(sanitize_utf8(s->host))},
                    {"method", s->method},
                    {"confidence", round3(s->confidence)},
                    {"candidates", s->candidates},
                    {"reason", sanitize_utf8(s->reason)},
                    {"first_evidence", s->first_evidence ? evidence_to_json(*s->first_evidence) : json(nullptr)}};
  if (const auto& t = d.traceback) {  // only when the decisive line closes a Python traceback
    json frames = json::array();
    for (const TracebackFrame& f : t->frames)
      frames.push_back({{"file", sanitize_utf8(f.file)}, {"line", f.lineno}, {"func", sanitize_utf8(f.func)},
                        {"library", f.library}, {"log_line", f.log_line}});
    j["traceback"] = {{"header_line", t->header_line}, {"exception_line", t->exception_line},
                      {"frames_total", t->frames_total}, {"frames", frames},
                      {"user_frame", t->user_frame ? json(*t->user_frame) : json(nullptr)}};
  }
  json skew = json::array();
  for (const ClockSkew& c : d.clock_skew)
    skew.push_back({{"host", sanitize_utf8(c.host)}, {"reference", sanitize_utf8(c.reference)},
                    {"offset_seconds", static_cast<double>(c.offset_ms) / 1000.0}, {"samples", c.samples}});
  j["clock_skew"] = std::move(skew);
  j["truncated"] = d.limits.truncated;
  if (d.limits.truncated) j["dropped"] = d.limits.dropped;
  return j;
}

std::string dump_json(const json& j, int indent) {
  return j.dump(indent, ' ', false, json::error_handler_t::replace);
}

namespace {
// Stands in for the streamed array: dump() escapes the control bytes, so no log text can forge it.
constexpr const char* kStreamedPlaceholder = "\x01streamed\x01";
}  // namespace

void write_json_streaming(json doc, const std::string& key, size_t rows, const std::function<json(size_t)>& row,
                          int indent, std::ostream& out) {
  doc[key] = kStreamedPlaceholder;
  const std::string text = dump_json(doc, indent);
  const std::string marker = dump_json(json(kStreamedPlaceholder), -1);
  const size_t at = text.find(marker);
  out << std::string_view(text).substr(0, at) << '[';
  // A top-level member's elements sit two levels deep; a row dumped alone starts at level 0.
  const std::string pad = indent > 0 ? "\n" + std::string(static_cast<size_t>(2 * indent), ' ') : "";
  for (size_t i = 0; i < rows; ++i) {
    std::string r = dump_json(row(i), indent);
    if (indent > 0)
      for (size_t nl = r.find('\n'); nl != std::string::npos; nl = r.find('\n', nl + pad.size()))
        r.replace(nl, 1, pad);
    out << (i ? "," : "") << pad << r;
  }
  if (rows && indent > 0) out << '\n' << std::string(static_cast<size_t>(indent), ' ');
  out << ']' << std::string_view(text).substr(at + marker.size());
}

void write_diagnosis_json(const Diagnosis& d, const Library& lib, std::ostream& out, int indent) {
  // The per-rank rows are written one at a time: at 4,096 ranks their document took 17 MB.
  write_json_streaming(diagnosis_to_json(d, lib, /*rank_rows=*/false), "ranks", d.ranks.size(),
                       [&](size_t i) { return rank_row_to_json(d.ranks[i]); }, indent, out);
}

}  // namespace firstfault
