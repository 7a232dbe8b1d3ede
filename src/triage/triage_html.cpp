// `triage --format html`: one self-contained page for a platform team's weekly review. No
// script and no request leaves the page (its Content-Security-Policy forbids both); every string
// that comes from a log or a path is made one safe line and XML-escaped.
#include <fmt/format.h>

#include <algorithm>
#include <map>

#include "firstfault/attribution/timestamp.h"
#include "firstfault/render/ci_render.h"
#include "firstfault/triage/summary.h"
#include "firstfault/util/safe_text.h"
#include "firstfault/util/strings.h"

namespace firstfault {

namespace {

std::string esc(std::string_view s, size_t max = 400) { return xml_escape(safe_line(truncate_utf8(s, max))); }

// Colours of the stacked bars: the most frequent entries each get one, the rest share grey.
constexpr const char* kPalette[] = {"#d62728", "#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd",
                                    "#8c564b", "#e377c2", "#17becf"};
constexpr size_t kSeries = sizeof(kPalette) / sizeof(kPalette[0]);
constexpr const char* kOtherColour = "#a8a8a8";
constexpr const char* kUnrecognizedColour = "#f2c14e";
constexpr size_t kMaxDays = 120;  // the most recent days drawn; the jsonl summary has them all

std::string page_head() {
  std::string out = "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">";
  out += "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">";
  out += "<title>firstfault triage</title>";
  out += "<style>body{font:14px/1.45 sans-serif;margin:24px;color:#222;max-width:1140px}h1{font-size:20px;margin:0 0 8px}"
         "h2{font-size:16px;margin:24px 0 6px}.cards{display:flex;gap:10px;flex-wrap:wrap}"
         ".card{border:1px solid #ddd;border-radius:6px;padding:6px 14px;min-width:90px}.card b{display:block;font-size:22px}"
         "table{border-collapse:collapse;font-size:12px}td,th{border-bottom:1px solid #ddd;padding:3px 8px;text-align:left;vertical-align:top}"
         "td.n{text-align:right}code,pre{font:12px monospace}pre{white-space:pre-wrap;word-break:break-all;margin:2px 0}"
         ".legend span{display:inline-block;margin-right:14px}.sw{display:inline-block;width:10px;height:10px;margin-right:4px}"
         ".meta{color:#555}</style></head><body>\n";
  return out;
}

void cards(const Summary& s, std::string& out) {
  out += "<h1>firstfault triage</h1>\n<div class=\"cards\" id=\"counts\">";
  auto card = [&](const char* what, size_t n) { out += fmt::format("<div class=\"card\"><b>{}</b>{}</div>", n, what); };
  card("jobs", s.jobs);
  card("diagnosed", s.diagnosed);
  card("unrecognized", s.unrecognized);
  if (s.incomplete) card("stopped, no error", s.incomplete);
  card("clean", s.clean);
  card("could not be read", s.errors);
  out += "</div>\n";
  if (s.outside_window || s.undated_left_out)
    out += fmt::format("<p class=\"meta\">--since/--until left out {} job(s) dated outside the window and {} that nothing dates.</p>\n",
                       s.outside_window, s.undated_left_out);
}

int64_t day_number(const std::string& date) {  // "YYYY-MM-DD"
  return days_from_civil(std::stoi(date.substr(0, 4)), static_cast<unsigned>(std::stoi(date.substr(5, 2))),
                         static_cast<unsigned>(std::stoi(date.substr(8, 2))));
}

// Every calendar day of the last `most` days up to the newest dated job, days without jobs
// included (an empty day is information too), oldest first.
std::vector<Summary::Day> calendar(const std::vector<Summary::Day>& dated, size_t most) {
  const int64_t last = day_number(dated.back().date);
  const int64_t first = std::max(day_number(dated.front().date), last - static_cast<int64_t>(most) + 1);
  std::vector<Summary::Day> days;
  auto it = dated.begin();
  for (int64_t n = first; n <= last; ++n) {
    while (it != dated.end() && day_number(it->date) < n) ++it;
    if (it != dated.end() && day_number(it->date) == n) {
      days.push_back(*it);
      continue;
    }
    Timestamp t;
    t.kind = Timestamp::kFull;
    t.ms = n * 86400000LL;
    days.push_back({format_timestamp(t).substr(0, 10)});
  }
  return days;
}

// The entries with their own colour: the most frequent over the days drawn.
std::vector<std::string> top_entries(const std::vector<Summary::Day>& days) {
  std::map<std::string, size_t> total;
  for (const auto& d : days)
    for (const auto& [id, n] : d.entries) total[id] += n;
  std::vector<std::pair<std::string, size_t>> v(total.begin(), total.end());
  std::stable_sort(v.begin(), v.end(), [](const auto& a, const auto& b) { return a.second > b.second; });
  std::vector<std::string> ids;
  for (size_t i = 0; i < v.size() && i < kSeries; ++i) ids.push_back(v[i].first);
  return ids;
}

// One bar per day: its diagnosed jobs stacked by entry, then the unrecognised ones.
void day_bar(const Summary::Day& d, const std::vector<std::string>& ids, double x, double w, double base, double unit,
             std::string& out) {
  double y = base;
  auto seg = [&](size_t n, const char* colour, const std::string& what) {
    if (!n) return;
    double h = static_cast<double>(n) * unit;
    y -= h;
    out += fmt::format(R"(<rect x="{:.1f}" y="{:.1f}" width="{:.1f}" height="{:.1f}" fill="{}"><title>{}: {} × {}</title></rect>)",
                       x, y, w, h, colour, d.date, esc(what), n);
  };
  size_t other = d.diagnosed;
  for (size_t i = 0; i < ids.size(); ++i)
    if (auto it = d.entries.find(ids[i]); it != d.entries.end()) {
      seg(it->second, kPalette[i], ids[i]);
      other -= it->second;
    }
  seg(other, kOtherColour, "other entries");
  seg(d.unrecognized, kUnrecognizedColour, "unrecognized");
}

void timeline_chart(const Summary& s, std::string& out) {
  out += "<h2>Failures over time</h2>\n";
  if (s.days.empty()) {
    out += "<p class=\"meta\">No job is dated (no log line with a year and no date in the job paths).</p>\n";
    return;
  }
  const std::vector<Summary::Day> days = calendar(s.days, kMaxDays);
  std::vector<std::string> ids = top_entries(days);
  size_t peak = 1;
  for (const auto& d : days) peak = std::max(peak, d.diagnosed + d.unrecognized);
  const double left = 40, top = 10, plot_h = 220, width = 1080;
  const double step = (width - left - 10) / static_cast<double>(days.size()), bar = std::max(1.0, step * 0.8);
  const double unit = plot_h / static_cast<double>(peak), base = top + plot_h;
  out += fmt::format(R"(<svg xmlns="http://www.w3.org/2000/svg" id="by-day" width="{}" height="{}" role="img" aria-label="failures per day">)",
                     width, base + 40);
  out += fmt::format(R"(<line x1="{}" y1="{}" x2="{}" y2="{}" stroke="#888"/>)", left, base, width - 10, base);
  out += fmt::format(R"(<text x="{}" y="{}" font-size="11" text-anchor="end">{}</text>)", left - 4, top + 10, peak);
  out += fmt::format(R"(<text x="{}" y="{}" font-size="11" text-anchor="end">0</text>)", left - 4, base);
  size_t label_every = std::max<size_t>(1, days.size() / 10);
  for (size_t i = 0; i < days.size(); ++i) {
    double x = left + static_cast<double>(i) * step;
    day_bar(days[i], ids, x, bar, base, unit, out);
    if (i % label_every == 0)
      out += fmt::format(R"(<text x="{:.1f}" y="{}" font-size="11">{}</text>)", x, base + 16, days[i].date);
  }
  out += "</svg>\n<div class=\"legend\">";
  for (size_t i = 0; i < ids.size(); ++i)
    out += fmt::format(R"(<span><i class="sw" style="background:{}"></i><code>{}</code></span>)", kPalette[i], esc(ids[i]));
  out += fmt::format(R"(<span><i class="sw" style="background:{}"></i>other entries</span>)", kOtherColour);
  out += fmt::format(R"(<span><i class="sw" style="background:{}"></i>unrecognized</span></div>)", kUnrecognizedColour);
  if (days.front().date > s.days.front().date)
    out += fmt::format("<p class=\"meta\">The last {} days are drawn; the jobs since {} are in the tables.</p>\n", days.size(),
                       s.days.front().date);
  if (s.undated) out += fmt::format("<p class=\"meta\">{} job(s) carry no date and are not drawn.</p>\n", s.undated);
}

void entries_table(const Summary& s, std::string& out) {
  out += "<h2>Failures by entry</h2>\n";
  if (s.groups.empty()) {
    out += "<p class=\"meta\">No job was diagnosed.</p>\n";
    return;
  }
  out += "<table id=\"entries\"><tr><th>jobs</th><th>share</th><th>severity</th><th>action</th><th>category</th><th>entry</th>"
         "<th>title</th><th>example jobs</th></tr>\n";
  for (const auto& g : s.groups) {
    std::string examples;
    for (const auto& e : g.examples) examples += "<code>" + esc(e, 200) + "</code><br>";
    double share = s.jobs ? 100.0 * static_cast<double>(g.count) / static_cast<double>(s.jobs) : 0.0;
    out += fmt::format("<tr><td class=\"n\">{}</td><td class=\"n\">{:.1f}%</td><td>{}</td><td>{}</td><td>{}</td><td><code>{}</code></td>"
                       "<td>{}</td><td>{}</td></tr>\n",
                       g.count, share, esc(g.severity), esc(g.action), esc(g.category), esc(g.id), esc(g.title), examples);
  }
  out += "</table>\n";
}

void hosts_table(const Summary& s, std::string& out) {
  out += "<h2>Initiating hosts</h2>\n";
  if (s.hosts.empty()) {
    out += "<p class=\"meta\">No diagnosed failure names the host it started on.</p>\n";
    return;
  }
  out += "<p class=\"meta\">A node that starts many failures is suspect, whatever the entries say.</p>\n"
         "<table id=\"hosts\"><tr><th>jobs</th><th>host</th><th>entries</th><th>GPUs named</th></tr>\n";
  for (size_t i = 0; i < s.hosts.size() && i < 50; ++i) {
    const auto& h = s.hosts[i];
    std::string entries;
    for (const auto& e : h.entries) entries += (entries.empty() ? "" : ", ") + ("<code>" + esc(e) + "</code>");
    out += fmt::format("<tr><td class=\"n\">{}</td><td><code>{}</code></td><td>{}</td><td><code>{}</code></td></tr>\n", h.count,
                       esc(h.host), entries, esc(gpu_counts(h)));
  }
  out += "</table>\n";
}

void clusters_list(const Summary& s, std::string& out) {
  if (s.clusters.empty()) return;
  out += "<h2>Unrecognized failures, by first error line</h2>\n<p class=\"meta\">Write an entry for the biggest "
         "(<code>firstfault new ID</code>, docs/signature-format.md).</p>\n<table id=\"clusters\">"
         "<tr><th>jobs</th><th>first error line (variable parts generalised) and an example</th></tr>\n";
  for (size_t i = 0; i < s.clusters.size() && i < 100; ++i) {
    const auto& c = s.clusters[i];
    out += fmt::format("<tr><td class=\"n\">{}</td><td><pre>{}</pre><span class=\"meta\">e.g. <code>{}</code>:</span><pre>{}</pre></td></tr>\n",
                       c.count, esc(c.templ, 600), esc(c.example_job, 200), esc(c.example_line, 600));
  }
  out += "</table>\n";
}

void error_list(const Summary& s, std::string& out) {
  if (s.error_rows.empty()) return;
  out += "<h2>Jobs that could not be read</h2>\n<table id=\"errors\">\n";
  for (const auto& [job, error] : s.error_rows)
    out += fmt::format("<tr><td><code>{}</code></td><td>{}</td></tr>\n", esc(job, 300), esc(error));
  out += "</table>\n";
}

}  // namespace

void render_triage_html(const Summary& s, std::ostream& out) {
  std::string page = page_head();
  cards(s, page);
  timeline_chart(s, page);
  entries_table(s, page);
  hosts_table(s, page);
  clusters_list(s, page);
  error_list(s, page);
  page += "</body></html>\n";
  out << page;
}

}  // namespace firstfault
