#pragma once
// `timeline` output: the per-rank view of a job, as text (identical ranks collapsed), as one
// self-contained HTML page (per-rank swimlanes on a time axis, grouped by host, with the
// decisive evidence), or as the same chart alone in SVG for CI summaries. Log text in every
// format has been through safe_line and is escaped for the format.
#include <string>

#include "firstfault/correlator/diagnosis.h"
#include "firstfault/signatures/library.h"

namespace firstfault {

inline constexpr const char* kTimelineSchema = "firstfault.timeline/v1";

// Jobs with more ranks than this are drawn as a heat strip of every rank (role, and when each
// was last heard from) plus lanes for the ranks that matter: initiating, affected, and one per
// kind of behaviour among the rest.
inline constexpr size_t kMaxTimelineLanes = 48;

std::string render_timeline_text(const Diagnosis& d);
// `standalone`: an SVG document with its own XML declaration and style (--format svg); else an
// element to embed in the HTML page.
std::string render_timeline_svg(const Diagnosis& d, const Library& lib, bool standalone = true);
std::string render_timeline_html(const Diagnosis& d, const Library& lib);

}  // namespace firstfault
