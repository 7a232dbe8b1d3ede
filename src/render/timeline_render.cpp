#include "firstfault/render/timeline_render.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <set>
#include <tuple>

#include "firstfault/render/ci_render.h"
#include "firstfault/render/render.h"
#include "firstfault/util/safe_text.h"
#include "firstfault/util/strings.h"

namespace firstfault {

namespace {

int role_order(const std::string& role) {
  return role == "initiating" ? 0 : role == "affected" ? 1 : role == "collateral" ? 2 : 3;
}

const char* role_colour(const std::string& role) {
  if (role == "initiating") return "#d62728";
  if (role == "affected") return "#ff7f0e";
  if (role == "collateral") return "#4c72b0";
  return "#a8a8a8";  // quiet, unknown
}

// Log text for HTML/SVG: one safe line, XML-escaped.
std::string esc(std::string_view s, size_t max = 400) { return xml_escape(safe_line(truncate_utf8(s, max))); }

bool comparable(const Timestamp& t) { return t.kind == Timestamp::kFull || t.kind == Timestamp::kNoYear; }

std::string where_of(const Evidence& e) { return e.line ? fmt::format("{}:{}", e.file, e.line) : e.file; }

// ---- Time axis ----------------------------------------------------------------------------------

// Wall-clock span of what the ranks printed. Without two distinct wall-clock times the chart has
// no time axis and says so; markers then sit at fixed places (first event, last line).
struct TimeAxis {
  bool timed = false;
  int64_t t0 = 0, t1 = 0;
  Timestamp::Kind kind = Timestamp::kFull;  // of t0, for its label
  double left = 0, width = 1;
  double x(const Timestamp& t, double fallback) const {
    if (!timed || !comparable(t)) return left + fallback * width;
    return left + width * static_cast<double>(t.ms - t0) / static_cast<double>(t1 - t0);
  }
};

TimeAxis time_axis(const Diagnosis& d, double left, double width) {
  TimeAxis a;
  a.left = left;
  a.width = width;
  bool any = false;
  auto see = [&](const Timestamp& t) {
    if (!comparable(t)) return;
    if (!any || t.ms < a.t0) a.kind = t.kind;
    a.t0 = any ? std::min(a.t0, t.ms) : t.ms;
    a.t1 = any ? std::max(a.t1, t.ms) : t.ms;
    any = true;
  };
  for (const RankSummary& r : d.ranks) {
    see(r.last_time);
    if (r.first_event) see(r.first_event->time);
  }
  for (const Evidence& e : d.evidence) see(e.time);
  if (d.stopped && d.stopped->first_time) see(*d.stopped->first_time);
  a.timed = any && a.t1 > a.t0;
  return a;
}

// "10:02:41.300" (the axis's origin; the date is in the evidence table).
std::string time_of_day(const Timestamp& t) {
  std::string full = format_output_time(t);
  size_t at = full.find('T');
  return at == std::string::npos ? full : full.substr(at + 1);
}

std::string duration_label(int64_t ms, int64_t span) {
  int64_t s = ms / 1000;
  if (span < 10000) return fmt::format("+{:.2f}s", static_cast<double>(ms) / 1000.0);
  if (s < 60) return fmt::format("+{}s", s);
  if (s < 3600) return fmt::format("+{}m{:02}s", s / 60, s % 60);
  return fmt::format("+{}h{:02}m", s / 3600, s / 60 % 60);
}

// ---- Which ranks get a lane ----------------------------------------------------------------------

// Every rank when they are few; else the initiating and affected ranks and the first rank of each
// (role, first event) kind among the others, up to kMaxTimelineLanes, in host order.
std::vector<const RankSummary*> lanes_of(const Diagnosis& d, size_t& collapsed) {
  std::vector<const RankSummary*> lanes;
  if (d.ranks.size() <= kMaxTimelineLanes) {
    for (const RankSummary& r : d.ranks) lanes.push_back(&r);
  } else {
    std::set<std::pair<std::string, std::string>> kinds;
    for (const RankSummary& r : d.ranks)
      if (role_order(r.role) <= 1) lanes.push_back(&r);
    for (const RankSummary& r : d.ranks) {
      if (lanes.size() >= kMaxTimelineLanes) break;
      if (role_order(r.role) <= 1) continue;
      if (kinds.insert({r.role, r.first_event ? r.first_event->pattern : ""}).second) lanes.push_back(&r);
    }
  }
  collapsed = d.ranks.size() - lanes.size();
  std::stable_sort(lanes.begin(), lanes.end(), [](const RankSummary* a, const RankSummary* b) {
    return std::tie(a->host, a->rank) < std::tie(b->host, b->rank);
  });
  return lanes;
}

// ---- SVG ----------------------------------------------------------------------------------------

constexpr double kWidth = 1100, kLabel = 250, kRight = 20, kLane = 20, kHostRow = 18, kStrip = 14;

std::string lane_title(const RankSummary& r) {
  std::string t = fmt::format("rank {}{} — {}", r.rank, r.host.empty() ? "" : " on " + r.host, r.role);
  if (r.first_event)
    t += fmt::format("\nfirst event {} ({}) at {}\n{}", r.first_event->pattern, format_output_time(r.first_event->time),
                     where_of(*r.first_event), r.first_event->text);
  if (!r.last_line.empty()) t += fmt::format("\nlast line {}\n{}", format_output_time(r.last_time), r.last_line);
  if (!r.last_progress.empty()) t += "\nlast progress: " + r.last_progress;
  return t;
}

void svg_lane(std::string& out, const RankSummary& r, const TimeAxis& ax, double y) {
  const char* colour = role_colour(r.role);
  bool init = r.role == "initiating";
  out += fmt::format(R"(<g class="lane {}" data-rank="{}"><title>{}</title>)", esc(r.role), r.rank, esc(lane_title(r), 2000));
  out += fmt::format(R"(<rect x="0" y="{}" width="{}" height="{}" class="band"/>)", y, kWidth, kLane);
  out += fmt::format(R"(<text x="12" y="{}" class="label{}">rank {}</text>)", y + 14, init ? " strong" : "", r.rank);
  out += fmt::format(R"(<text x="{}" y="{}" class="role" fill="{}">{}</text>)", kLabel - 10, y + 14, colour, esc(r.role));
  double end = comparable(r.last_time) ? ax.x(r.last_time, 1.0) : ax.left + ax.width;
  out += fmt::format(R"(<rect x="{:.1f}" y="{}" width="{:.1f}" height="6" rx="3" fill="{}" opacity="0.35"/>)", ax.left,
                     y + 7, std::max(2.0, end - ax.left), colour);
  out += fmt::format(R"(<line x1="{0:.1f}" x2="{0:.1f}" y1="{1}" y2="{2}" stroke="#333" stroke-width="1.5"/>)", end, y + 4,
                     y + kLane - 4);
  if (r.first_event) {
    // A line without a time of its own is drawn hollow at the rank's last time (where its
    // neighbours put it), else mid-axis.
    bool timed = ax.timed && comparable(r.first_event->time);
    double fx = timed ? ax.x(r.first_event->time, 0.5) : comparable(r.last_time) ? end : ax.x(r.first_event->time, 0.5);
    out += fmt::format(R"(<circle cx="{:.1f}" cy="{}" r="{}" fill="{}" stroke="{}" stroke-width="{}"/>)", fx, y + 10,
                       init ? 6 : 4.5, timed ? colour : "#fff", timed ? "#fff" : colour, timed ? 1 : 2);
  }
  out += "</g>";
}

// One cell per rank, coloured by role; the second row by when the rank was last heard from
// (darker = earlier), which makes the rank that went quiet first stand out among thousands.
void svg_strip(std::string& out, const Diagnosis& d, const TimeAxis& ax, double y) {
  double cell = ax.width / static_cast<double>(d.ranks.size());
  out += fmt::format(R"(<text x="12" y="{}" class="label">all {} ranks, by role</text>)", y + 11, d.ranks.size());
  out += fmt::format(R"(<text x="12" y="{}" class="label">last heard from</text>)", y + kStrip + 13);
  for (size_t i = 0; i < d.ranks.size(); ++i) {
    const RankSummary& r = d.ranks[i];
    double x = ax.left + cell * static_cast<double>(i);
    out += fmt::format(R"(<rect x="{:.2f}" y="{}" width="{:.2f}" height="{}" fill="{}"><title>rank {} {}</title></rect>)", x, y,
                       std::max(cell, 0.5), kStrip, role_colour(r.role), r.rank, esc(r.role));
    double late = ax.timed && comparable(r.last_time) ? static_cast<double>(r.last_time.ms - ax.t0) / static_cast<double>(ax.t1 - ax.t0) : 1.0;
    int grey = static_cast<int>(40 + 200 * late);
    out += fmt::format(R"svg(<rect x="{:.2f}" y="{}" width="{:.2f}" height="{}" fill="rgb({},{},{})"><title>rank {} last line {}</title></rect>)svg",
                       x, y + kStrip + 2, std::max(cell, 0.5), kStrip, grey, grey, grey, r.rank, esc(format_output_time(r.last_time)));
  }
}

void svg_axis(std::string& out, const TimeAxis& ax, double y) {
  if (!ax.timed) {
    out += fmt::format(R"(<text x="{}" y="{}" class="axis">no wall-clock times in the log: dots mark each rank's first event, bars end at its last line</text>)",
                       ax.left, y + 12);
    return;
  }
  for (int i = 0; i <= 5; ++i) {
    double x = ax.left + ax.width * i / 5.0;
    int64_t ms = (ax.t1 - ax.t0) * i / 5;
    out += fmt::format(R"(<line x1="{0:.1f}" x2="{0:.1f}" y1="{1}" y2="{2}" class="tick"/><text x="{0:.1f}" y="{3}" class="axis" text-anchor="middle">{4}</text>)",
                       x, y, y + 5, y + 16, i == 0 ? esc(time_of_day(Timestamp{ax.t0, ax.kind})) : duration_label(ms, ax.t1 - ax.t0));
  }
}

constexpr const char* kSvgStyle =
    ".band{fill:transparent}.lane:nth-of-type(even) .band{fill:#f6f7f9}.lane:hover .band{fill:#e8eefc}"
    ".label{font:12px sans-serif;fill:#222}.strong{font-weight:bold;fill:#d62728}.role{font:11px sans-serif;text-anchor:end}"
    ".host{font:bold 11px sans-serif;fill:#555}.axis{font:11px sans-serif;fill:#555}.tick{stroke:#999}"
    ".title{font:bold 14px sans-serif;fill:#111}.lane{cursor:pointer}";

}  // namespace

std::string render_timeline_svg(const Diagnosis& d, const Library& lib, bool standalone) {
  (void)lib;
  size_t collapsed = 0;
  auto lanes = lanes_of(d, collapsed);
  bool strip = d.ranks.size() > kMaxTimelineLanes;
  TimeAxis ax = time_axis(d, kLabel, kWidth - kLabel - kRight);
  std::set<std::string> hosts;
  for (const RankSummary* r : lanes) hosts.insert(r->host);
  bool host_rows = hosts.size() > 1 || (hosts.size() == 1 && !hosts.begin()->empty());
  double top = standalone ? 30 : 8;
  double height = top + (strip ? 2 * kStrip + 16 : 0) + 26 + lanes.size() * kLane + (host_rows ? hosts.size() * kHostRow : 0) +
                  (collapsed ? 22 : 0) + 10;
  std::string out;
  if (standalone) out += R"(<?xml version="1.0" encoding="UTF-8"?>)" "\n";
  out += fmt::format(R"(<svg xmlns="http://www.w3.org/2000/svg" width="{}" height="{}" viewBox="0 0 {} {}" role="img" aria-label="per-rank timeline"><style>{}</style>)",
                     kWidth, height, kWidth, height, kSvgStyle);
  if (standalone) {
    std::string head = d.entry ? d.entry->title + " [" + d.entry->id + "]" : "verdict: " + d.verdict;
    if (d.initiating.rank) head += fmt::format(" — initiating rank {}", *d.initiating.rank);
    out += fmt::format(R"(<text x="12" y="20" class="title">{}</text>)", esc(head));
  }
  double y = top;
  if (strip) {
    svg_strip(out, d, ax, y);
    y += 2 * kStrip + 16;
  }
  svg_axis(out, ax, y);
  y += 26;
  std::string host = "\x01";
  for (const RankSummary* r : lanes) {
    if (host_rows && r->host != host) {
      host = r->host;
      out += fmt::format(R"(<text x="6" y="{}" class="host">{}</text>)", y + 13, host.empty() ? "host unknown" : "host " + esc(host));
      y += kHostRow;
    }
    svg_lane(out, *r, ax, y);
    y += kLane;
  }
  if (collapsed)
    out += fmt::format(R"(<text x="12" y="{}" class="axis">{} more rank(s) behave like a lane above and are shown only in the strips</text>)",
                       y + 16, collapsed);
  return out + "</svg>\n";
}

std::string render_timeline_html(const Diagnosis& d, const Library& lib) {
  std::string title = d.entry ? d.entry->title : d.verdict == "clean" ? "No failure found" : "Unrecognised failure";
  std::string out = "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">";
  // Self-contained: no network, no script from anywhere; the page forbids both.
  out += "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; img-src data:\">";
  out += fmt::format("<title>firstfault timeline: {}</title>", xml_escape(title));
  out += "<style>body{font:14px/1.45 sans-serif;margin:24px;color:#222;max-width:1140px}h1{font-size:20px;margin:0 0 4px}"
         ".meta{color:#555}.box{border-left:4px solid #d62728;background:#fdf3f3;padding:8px 12px;margin:12px 0}"
         "code,pre{font:12px monospace}pre{white-space:pre-wrap;word-break:break-all;margin:4px 0}"
         "table{border-collapse:collapse;font-size:12px}td,th{border-bottom:1px solid #ddd;padding:3px 8px;text-align:left;vertical-align:top}"
         ".legend span{display:inline-block;margin-right:14px}.legend i{display:inline-block;width:10px;height:10px;border-radius:5px;margin-right:4px}"
         "details{margin:8px 0}</style></head><body>\n";
  out += fmt::format("<h1 id=\"title\">{}</h1>\n<div class=\"meta\">", xml_escape(title));
  if (d.entry)
    out += fmt::format("<code>{}</code> · {} · severity {} · confidence {:.2f} · ", xml_escape(d.entry->id),
                       xml_escape(d.entry->category), xml_escape(d.entry->severity), d.confidence);
  out += fmt::format("{} rank(s) · {}</div>\n", d.ranks.size(), esc(read_summary(d)));
  const RankDecision* named = d.initiating.rank ? &d.initiating : d.suspect && d.suspect->rank ? &*d.suspect : nullptr;
  out += "<div class=\"box\" id=\"initiating\">";
  if (named) {
    out += fmt::format("<b>{} rank {}</b>{} — {}", named == &d.initiating ? "Initiating" : "Suspected initiating",
                       *named->rank, named->host.empty() ? "" : " on host <code>" + esc(named->host) + "</code>", esc(named->reason));
    if (named->first_evidence)
      out += fmt::format("<pre>{}  {}</pre>", esc(where_of(*named->first_evidence)), esc(named->first_evidence->text, 1000));
  } else {
    out += "<b>Initiating rank:</b> " + esc(no_rank_phrase(d.initiating));
  }
  out += "<div>" + esc(action_label(d.action)) + "</div></div>\n";
  out += "<div class=\"legend\">";
  for (const char* role : {"initiating", "affected", "collateral", "quiet"})
    out += fmt::format("<span><i style=\"background:{}\"></i>{}</span>", role_colour(role), role);
  out += "<span>● first event · ▏ last line · hover a lane for its lines</span></div>\n";
  out += render_timeline_svg(d, lib, false);
  if (!d.evidence.empty()) {
    out += "<details open><summary>Evidence</summary><table><tr><th>rank</th><th>time</th><th>where</th><th>line</th></tr>";
    for (const Evidence& e : d.evidence)
      out += fmt::format("<tr><td>{}</td><td>{}</td><td><code>{}</code></td><td><pre>{}</pre></td></tr>",
                         e.rank >= 0 ? std::to_string(e.rank) : "-", esc(format_output_time(e.time)), esc(where_of(e)), esc(e.text, 600));
    out += "</table></details>\n";
  }
  return out + "</body></html>\n";
}

// ---- Text ---------------------------------------------------------------------------------------

std::string render_timeline_text(const Diagnosis& d) {
  // Ranks that behaved the same (role, first event, last step) collapse into one row.
  struct Group {
    std::vector<int> ranks;
    const RankSummary* example;
  };
  std::map<std::tuple<int, std::string, std::string, int64_t>, Group> groups;
  for (const auto& rs : d.ranks) {
    std::string pat = rs.first_event ? rs.first_event->pattern : "";
    auto& g = groups[std::make_tuple(role_order(rs.role), rs.role, pat, rs.last_step)];
    if (g.ranks.empty()) g.example = &rs;
    g.ranks.push_back(rs.rank);
  }
  std::string out = fmt::format("{:<14} {:<11} {:<28} {:<23} {:>8}  {}\n", "ranks", "role", "first event", "first event at",
                                "step", "last line (of the first rank)");
  for (const auto& [key, g] : groups) {
    const RankSummary& ex = *g.example;
    std::string first = ex.first_event ? ex.first_event->pattern : "-";
    std::string at = ex.first_event ? format_output_time(ex.first_event->time) : "";
    std::string step = ex.last_step >= 0 ? std::to_string(ex.last_step) : "-";
    // A rank no line is prefixed with (named only by a message): show the line that names it.
    std::string last = ex.lines == 0 && ex.first_event ? "(no line of its own; named by " + where_of(*ex.first_event) + ")"
                                                       : ex.last_line;
    out += fmt::format("{:<14} {:<11} {:<28} {:<23} {:>8}  {}\n", format_ranges(g.ranks), ex.role, truncate_utf8(first, 28),
                       at.empty() ? "-" : at, step, safe_line(truncate_utf8(last, 100)));
  }
  if (d.ranks.empty()) out += "(no line in the input names a rank)\n";
  if (d.skipped_inputs) out += fmt::format("({} binary file(s) skipped)\n", d.skipped_inputs);
  if (d.entry)
    out += fmt::format("\n{}: initiating rank {} — {}\n", d.entry->id,
                       d.initiating.rank ? std::to_string(*d.initiating.rank) : "unknown", d.initiating.reason);
  else if (d.suspect)
    out += fmt::format("\nunrecognized: suspected initiating rank {} — {}\n",
                       d.suspect->rank ? std::to_string(*d.suspect->rank) : no_rank_phrase(*d.suspect), d.suspect->reason);
  return out;
}

}  // namespace firstfault
