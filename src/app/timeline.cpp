// `timeline`: the per-rank view of a job, as text (identical ranks collapsed), JSON, a
// self-contained HTML page or an SVG chart (render/timeline_render.h).
#include <fmt/format.h>

#include <map>
#include <tuple>

#include "firstfault/app/commands.h"
#include "firstfault/app/pipeline.h"
#include "firstfault/render/ci_render.h"
#include "firstfault/render/render.h"
#include "firstfault/render/timeline_render.h"
#include "firstfault/signatures/loader.h"
#include "firstfault/util/redact.h"
#include "firstfault/util/safe_text.h"
#include "firstfault/util/strings.h"

namespace firstfault {

constexpr size_t kIndentedTimelineRanks = 64;

int run_timeline(const TimelineOptions& o, std::ostream& out) {
  if (!path_rules_ok(o.rank_from, o.host_from)) return kExitUsage;
  AnalyzeOptions ao;
  ao.rank_from = o.rank_from;
  ao.host_from = o.host_from;
  bool filter_ok = true;
  ao.filter = path_filter_or_report(o.files, filter_ok);
  if (!filter_ok) return kExitUsage;
  auto engine = load_engine(o.common);
  if (!engine) return kExitUsage;
  const Library& lib = engine->library;
  const Matcher& matcher = *engine->matcher;
  JobResult r = analyze_paths(o.paths, matcher, ao);
  // As in diagnose: masked once, before anything (stderr included) is printed, so both formats are covered.
  const RedactLevel level = o.redact.value_or(default_redact_level(o.format));
  const bool redact = level != RedactLevel::kNone;
  Redactor redactor(level);
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
    OutputJson j = diagnosis_to_json(d, lib, /*rank_rows=*/false);
    OutputJson t;
    t["schema"] = kTimelineSchema;
    t["initiating_rank"] = j["diagnosis"].is_null() ? OutputJson(nullptr) : j["diagnosis"]["initiating_rank"];
    t["collateral"] = j["collateral"];
    t["ranks"] = nullptr;  // streamed row by row: place only
    t["inputs"] = j["inputs"];
    // Indented for a person up to 64 ranks; one line beyond (a 4,096-rank job's timeline is for
    // a program, and indentation would triple its size).
    write_json_streaming(std::move(t), "ranks", d.ranks.size(), [&](size_t i) { return rank_row_to_json(d.ranks[i]); },
                         d.ranks.size() > kIndentedTimelineRanks ? -1 : 2, out);
    out << "\n";
    return r.problems.empty() ? 0 : kExitUsage;
  }
  if (o.format == "html") out << render_timeline_html(d, lib);
  else if (o.format == "svg") out << render_timeline_svg(d, lib);
  else out << render_timeline_text(d);
  return r.problems.empty() ? 0 : kExitUsage;
}

}  // namespace firstfault
