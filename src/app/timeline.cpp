// `timeline`: the per-rank view of a job. Ranks that behaved the same are collapsed into ranges
// so a 1,000-rank job fits on a screen.
#include <fmt/format.h>

#include <map>
#include <tuple>

#include "firstfault/app/commands.h"
#include "firstfault/app/pipeline.h"
#include "firstfault/render/ci_render.h"
#include "firstfault/render/render.h"
#include "firstfault/signatures/loader.h"
#include "firstfault/util/redact.h"
#include "firstfault/util/safe_text.h"
#include "firstfault/util/strings.h"

namespace firstfault {

int run_timeline(const TimelineOptions& o, std::ostream& out) {
  if (!rank_from_ok(o.rank_from)) return kExitUsage;
  AnalyzeOptions ao;
  ao.rank_from = o.rank_from;
  bool filter_ok = true;
  ao.filter = path_filter_or_report(o.files, filter_ok);
  if (!filter_ok) return kExitUsage;
  auto engine = load_engine(o.common);
  if (!engine) return kExitUsage;
  const Library& lib = engine->library;
  const Matcher& matcher = *engine->matcher;
  JobResult r = analyze_paths(o.paths, matcher, ao);
  // As in diagnose: masked once, before anything (stderr included) is printed, so both formats are covered.
  bool redact = o.redact.value_or(redacts_by_default(o.format));
  Redactor redactor;
  if (redact) redact_diagnosis(r.diagnosis, redactor);
  neutralize_diagnosis(r.diagnosis);  // as diagnose: the JSON is often echoed into CI logs
  auto shown = [&](const std::string& s) { return safe_line(redact ? redactor.mask(s) : s); };
  report_inputs(r, /*verbose=*/false, shown);
  if (r.interrupted) return kExitInterrupted;
  const Diagnosis& d = r.diagnosis;
  if (d.verdict == "error") {  // no input yielded a line: no timeline to show
    report_nothing_to_diagnose(o.paths, shown);
    return kExitUsage;
  }
  if (o.format == "json") {
    nlohmann::json j = diagnosis_to_json(d, lib);
    nlohmann::json t;
    t["schema"] = "firstfault.timeline/v1";
    t["ranks"] = j["ranks"];
    t["initiating_rank"] = j["diagnosis"].is_null() ? nlohmann::json(nullptr) : j["diagnosis"]["initiating_rank"];
    t["collateral"] = j["collateral"];
    t["inputs"] = j["inputs"];
    out << dump_json(t) << "\n";
    return r.problems.empty() ? 0 : kExitUsage;
  }
  // Group ranks by (role, first event pattern, last step) so identical ranks collapse.
  struct Group {
    std::vector<int> ranks;
    const RankSummary* example;
  };
  std::map<std::tuple<int, std::string, std::string, int64_t>, Group> groups;
  for (const auto& rs : d.ranks) {
    int order = rs.role == "initiating" ? 0 : rs.role == "affected" ? 1 : rs.role == "collateral" ? 2 : 3;
    std::string pat = rs.first_event ? rs.first_event->pattern : "";
    auto key = std::make_tuple(order, rs.role, pat, rs.last_step);
    auto& g = groups[key];
    if (g.ranks.empty()) g.example = &rs;
    g.ranks.push_back(rs.rank);
  }
  out << fmt::format("{:<14} {:<11} {:<28} {:>8}  {}\n", "ranks", "role", "first event", "step", "last line (of the first rank)");
  for (const auto& [key, g] : groups) {
    const RankSummary& ex = *g.example;
    std::string first = ex.first_event ? ex.first_event->pattern : "-";
    std::string step = ex.last_step >= 0 ? std::to_string(ex.last_step) : "-";
    out << fmt::format("{:<14} {:<11} {:<28} {:>8}  {}\n", format_ranges(g.ranks), ex.role, truncate_utf8(first, 28), step,
                       safe_line(truncate_utf8(ex.last_line, 100)));
  }
  if (d.ranks.empty()) out << "(no line in the input names a rank)\n";
  if (d.skipped_inputs) out << fmt::format("({} binary file(s) skipped)\n", d.skipped_inputs);
  if (d.entry)
    out << fmt::format("\n{}: initiating rank {} — {}\n", d.entry->id,
                       d.initiating.rank ? std::to_string(*d.initiating.rank) : "unknown", d.initiating.reason);
  else if (d.suspect)
    out << fmt::format("\nunrecognized: suspected initiating rank {} — {}\n",
                       d.suspect->rank ? std::to_string(*d.suspect->rank) : no_rank_phrase(*d.suspect), d.suspect->reason);
  return r.problems.empty() ? 0 : kExitUsage;
}

}  // namespace firstfault
