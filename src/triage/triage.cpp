#include "firstfault/triage/triage.h"

#include <fmt/format.h>
#include <re2/re2.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <thread>

#include "firstfault/app/line_feed.h"
#include "firstfault/app/pipeline.h"
#include "firstfault/reader/archive.h"
#include "firstfault/render/ci_render.h"
#include "firstfault/render/markdown.h"
#include "firstfault/render/render.h"
#include "firstfault/signatures/loader.h"
#include "firstfault/triage/summary.h"
#include "firstfault/util/line_template.h"
#include "firstfault/util/redact.h"
#include "firstfault/util/safe_text.h"
#include "firstfault/util/strings.h"
#include "finished_rows.h"

namespace firstfault {

using json = OutputJson;

namespace {

// "YYYY-MM-DD" of a wall-clock time with a year, "" otherwise.
std::string date_of(const Timestamp& t) {
  return t.kind == Timestamp::kFull ? format_timestamp(t).substr(0, 10) : "";
}

// The deepest date in a job's path (archive/2026-11-03/job-17, runs/20261103_1200/), not digits
// inside a longer number (a job id such as 1202611030); "" when none.
std::string date_in_path(const std::string& path) {
  static const RE2 kPathDate(R"((20[0-9]{2})[-_.]?(0[1-9]|1[0-2])[-_.]?(0[1-9]|[12][0-9]|3[01]))");
  auto digit = [](char c) { return c >= '0' && c <= '9'; };
  auto str = [](re2::StringPiece p) { return std::string(p.data(), p.size()); };
  std::string found;
  re2::StringPiece text(path.data(), path.size()), m[4];
  for (size_t at = 0; at < path.size() && kPathDate.Match(text, at, text.size(), RE2::UNANCHORED, m, 4);) {
    size_t begin = static_cast<size_t>(m[0].data() - text.data()), end = begin + m[0].size();
    if ((begin == 0 || !digit(path[begin - 1])) && (end == path.size() || !digit(path[end])))
      found = str(m[1]) + "-" + str(m[2]) + "-" + str(m[3]);
    at = begin + 1;
  }
  return found;
}

}  // namespace

std::string job_date(const Diagnosis& d, const std::string& job_path) {
  // The failure's own moment first: the decisive line, the first error, the suspect's line.
  for (const auto* e : {d.initiating.first_evidence ? &*d.initiating.first_evidence : nullptr,
                        d.first_error ? &*d.first_error : nullptr,
                        d.suspect && d.suspect->first_evidence ? &*d.suspect->first_evidence : nullptr})
    if (e)
      if (std::string date = date_of(e->time); !date.empty()) return date;
  // Then when the log last printed (a clean or stopped job has no error line).
  Timestamp last;
  for (const auto& r : d.ranks)
    if (r.last_time.kind == Timestamp::kFull && (!last.valid() || r.last_time.ms > last.ms)) last = r.last_time;
  if (std::string date = date_of(last); !date.empty()) return date;
  return date_in_path(job_path);
}

namespace {

// The host a diagnosed failure started on, for the fleet view: the initiating rank's, else the
// one its decisive line names (an Xid in a node's kernel log names no rank), as the action's
// exclude_hosts does.
std::string initiating_host_of(const std::string& verdict, const std::string& rank_host, const std::string& line_host) {
  if (verdict != "diagnosed") return "";
  if (plausible_host(rank_host)) return rank_host;
  return plausible_host(line_host) ? line_host : "";
}

JobRecord record_of(const std::string& job, const Diagnosis& d) {
  JobRecord r;
  r.job = job;
  r.verdict = d.verdict;
  if (d.entry) {
    r.id = d.entry->id;
    r.title = d.entry->title;
    r.category = d.entry->category;
    r.severity = d.entry->severity;
  }
  r.action = action_kind_name(d.action.kind);
  r.rank = d.initiating.rank;
  // The decisive line the JSON shows, so a row read back by --merge names the same host.
  const Evidence* decisive = d.decisive_evidence();
  r.host = initiating_host_of(d.verdict, d.initiating.host, decisive ? decisive->host : std::string());
  if (d.first_error) r.first_error = d.first_error->text;
  for (const auto& in : d.inputs) r.bytes += in.bytes;
  r.skipped = d.skipped_inputs;
  r.date = job_date(d, job);
  if (!r.host.empty()) r.gpus = d.action.exclude_gpus;
  return r;
}

// Analyses a job of files (a directory's, or one given file). They count as found, not named: a
// binary one is counted in the summary, not reported.
void run_files(const JobSpec& spec, const Matcher& matcher, const AnalyzeOptions& ao, JobOutput& res) {
  std::vector<InputSource> inputs;
  for (const auto& f : spec.files) inputs.push_back({f, false});
  JobResult r = analyze_job(expand_archives(std::move(inputs), ao.filter.get()), matcher, ao);
  // As in diagnose: verdict "error" only when no input yielded a line; a truncated file keeps
  // its partial verdict (the summary lists it as read partially).
  JobRecord rec = record_of(spec.id, r.diagnosis);
  if (!r.problems.empty()) rec.error = r.problems.front().path + ": " + r.problems.front().reason;
  else if (rec.verdict == "error") rec.error = only_binary_files(rec.skipped);
  res.rec = std::move(rec);
  if (res.rec.verdict != "error") res.diagnosis = std::make_unique<Diagnosis>(std::move(r.diagnosis));
}

// Analyses the jobs of one archive in a single pass over it. A job is finished, and its
// correlator freed, as soon as its last member has been read: an archive of 100,000 tiny members
// kept 25,000 correlators alive (2 GB) when every job waited for the end of the archive.
// `job_done(slot)` is called once each job's output is in `results`, so the writer can emit and
// free it while the archive is still being read.
// Above this many members a zip is read without its central directory (ZipReading).
constexpr size_t kIndexedZipMembers = 4096;

void run_archive(const std::vector<const JobSpec*>& jobs, const Matcher& matcher, const AnalyzeOptions& ao,
                 std::vector<RowSlot>& results, const std::vector<size_t>& slots,
                 const std::function<void(size_t slot)>& job_done) {
  const std::string& path = jobs.front()->archive;
  const ArchiveMembers& index = *jobs.front()->archive_members;
  // The archive's job number -> its place in `jobs` (a shard or a subset may hold a few of them).
  constexpr size_t kNotHere = SIZE_MAX;
  std::vector<size_t> place(index.jobs(), kNotHere);
  for (size_t i = 0; i < jobs.size(); ++i) place[jobs[i]->archive_job] = i;
  auto job_of_member = [&](const std::string& name) -> std::optional<size_t> {
    const std::optional<uint32_t> job = index.job_of(name);
    if (!job || place[*job] == kNotHere) return std::nullopt;
    return place[*job];
  };
  struct State {
    std::unique_ptr<Correlator> corr;  // made at the job's first member, freed when it is finished
    std::vector<InputSummary> inputs;
    size_t members_left = 0;
    bool finished = false;
  };
  std::vector<State> st(jobs.size());
  for (size_t i = 0; i < jobs.size(); ++i) st[i].members_left = jobs[i]->member_count;
  std::string archive_error;
  auto correlator_of = [&](State& s) -> Correlator& {
    if (!s.corr) s.corr = std::make_unique<Correlator>(matcher.library(), ao.tables);
    return *s.corr;
  };
  auto finish_job = [&](size_t i) {
    State& s = st[i];
    s.finished = true;
    correlator_of(s).set_inputs(std::move(s.inputs));
    Diagnosis d = s.corr->finish();
    s.corr.reset();
    s.inputs = {};  // moved out: nothing of a finished job stays here
    JobRecord rec = record_of(jobs[i]->id, d);
    for (const auto& in : d.inputs)
      if (!in.error.empty() && rec.error.empty()) rec.error = in.path + ": " + in.error;
    // Nothing at all was read: an error row. Something was read: the partial verdict, plus the error.
    if (read_nothing(d.inputs)) {
      rec.verdict = "error";
      if (rec.error.empty() && rec.skipped) rec.error = only_binary_files(rec.skipped);
      if (rec.error.empty()) rec.error = archive_error.empty() ? "no member of this job could be read" : archive_error;
    }
    results[slots[i]].out = std::make_unique<JobOutput>();
    JobOutput& out = *results[slots[i]].out;
    out.rec = std::move(rec);
    if (!(out.rec.verdict == "error" && d.inputs.empty())) out.diagnosis = std::make_unique<Diagnosis>(std::move(d));
    job_done(slots[i]);
  };
  // A zip of many members is read front to back: its central directory's index would be the
  // largest thing in memory (14 MB for 100,000 members). Members are found by name, so their
  // order does not matter here.
  const ZipReading zip_reading =
      index.size() > kIndexedZipMembers ? ZipReading::kFrontToBack : ZipReading::kCentralDirectory;
  Status archive = for_each_archive_member(path, [&](const std::string& name, struct archive* a) {
    const std::optional<size_t> job = job_of_member(name);
    if (!job || st[*job].finished) return;
    State& s = st[*job];
    InputSummary sum;
    sum.path = path + "!" + normalize_member_name(name);  // as diagnose names it
    read_member(a, name, static_cast<uint32_t>(s.inputs.size()), matcher, ao, correlator_of(s), sum);
    s.inputs.push_back(sum);
    // A member the damage cut short is not the job's last word: it is finished at the end, with the archive's error.
    if (--s.members_left == 0 && sum.error.empty()) finish_job(*job);
  }, zip_reading);
  archive_error = archive.ok() ? "" : archive.message();
  for (size_t i = 0; i < jobs.size(); ++i)
    if (!st[i].finished) finish_job(i);
}

std::string severity_rank(const std::string& s) {
  return s == "critical" ? "0" : s == "high" ? "1" : s == "medium" ? "2" : "3";
}

// Builds the summary one job at a time (in output order), so a run keeps counts, a few
// examples and the cluster table, never every job's record.
class SummaryBuilder {
 public:
  void add(const JobRecord& r) {
    ++s_.jobs;
    s_.bytes += r.bytes;
    s_.skipped += r.skipped;
    count_day(r);
    if (r.verdict != "error" && !r.error.empty()) {  // read partially: counted by its verdict, listed here too
      ++s_.partial;
      s_.error_rows.push_back({r.job, "read partially (the verdict is from what was read): " + r.error});
    }
    if (r.verdict == "error") {
      ++s_.errors;
      s_.error_rows.push_back({r.job, r.error});
    } else if (r.verdict == "diagnosed") {
      ++s_.diagnosed;
      auto& g = groups_[r.id];
      if (g.count++ == 0) {
        g.id = r.id;
        g.title = r.title;
        g.severity = r.severity;
        g.category = r.category;
        g.action = r.action;
      }
      if (g.examples.size() < 3) g.examples.push_back(r.job);
      if (!r.host.empty()) {
        auto& h = hosts_[r.host];
        h.host = r.host;
        ++h.count;
        if (h.entries.size() < 8) h.entries.insert(r.id);
        for (const auto& g : r.gpus)
          if (h.gpus.size() < 16 || h.gpus.count(g)) ++h.gpus[g];
      }
    } else {
      ++(r.verdict == "clean" ? s_.clean : r.verdict == "incomplete" ? s_.incomplete : s_.unrecognized);
      if (r.verdict == "unrecognized") {
        std::string t = line_template(r.first_error);
        auto& c = clusters_[t];
        if (c.count++ == 0) {
          c.templ = t;
          c.example_job = r.job;
          c.example_line = r.first_error;
        }
      }
    }
  }

  // A job that --since/--until left out: counted, not shown.
  void left_out(const JobRecord& r) { ++(r.date.empty() ? s_.undated_left_out : s_.outside_window); }

  Summary finish() {
    for (auto& [date, day] : days_) s_.days.push_back(std::move(day));  // a std::map: oldest first
    for (auto& [k, g] : groups_) s_.groups.push_back(std::move(g));
    std::sort(s_.groups.begin(), s_.groups.end(), [](const auto& a, const auto& b) {
      if (a.count != b.count) return a.count > b.count;
      if (a.severity != b.severity) return severity_rank(a.severity) < severity_rank(b.severity);
      return a.id < b.id;
    });
    for (auto& [k, h] : hosts_) s_.hosts.push_back(std::move(h));
    std::stable_sort(s_.hosts.begin(), s_.hosts.end(), [](const auto& a, const auto& b) { return a.count > b.count; });
    for (auto& [k, c] : clusters_) s_.clusters.push_back(std::move(c));
    std::sort(s_.clusters.begin(), s_.clusters.end(), [](const auto& a, const auto& b) {
      return a.count != b.count ? a.count > b.count : a.templ < b.templ;
    });
    return std::move(s_);
  }

 private:
  void count_day(const JobRecord& r) {
    if (r.verdict == "error") return;
    if (r.date.empty()) {
      ++s_.undated;
      return;
    }
    Summary::Day& day = days_[r.date];
    day.date = r.date;
    ++day.jobs;
    if (r.verdict == "diagnosed") {
      ++day.diagnosed;
      ++day.entries[r.id];
    } else if (r.verdict == "unrecognized") {
      ++day.unrecognized;
    }
  }
  std::map<std::string, Summary::Day> days_;
  Summary s_;
  std::map<std::string, Summary::Group> groups_;
  std::map<std::string, Summary::Cluster> clusters_;
  std::map<std::string, Summary::Host> hosts_;
};

json summary_json(const Summary& s) {
  json groups = json::array(), clusters = json::array(), errors = json::array();
  for (const auto& g : s.groups)
    groups.push_back({{"id", g.id}, {"title", g.title}, {"severity", g.severity}, {"category", g.category},
                      {"action", g.action}, {"count", g.count},
                      {"share", s.jobs ? static_cast<double>(g.count) / static_cast<double>(s.jobs) : 0.0},
                      {"examples", g.examples}});
  for (const auto& c : s.clusters)
    clusters.push_back({{"template", c.templ}, {"count", c.count}, {"example_job", c.example_job},
                        {"example_line", sanitize_utf8(c.example_line)}});
  for (const auto& [j, e] : s.error_rows) errors.push_back({{"job", j}, {"error", e}});
  json hosts = json::array();
  for (const auto& h : s.hosts) hosts.push_back({{"host", h.host}, {"jobs", h.count}, {"entries", h.entries}, {"gpus", h.gpus}});
  json days = json::array();
  for (const auto& d : s.days)
    days.push_back({{"date", d.date}, {"jobs", d.jobs}, {"diagnosed", d.diagnosed}, {"unrecognized", d.unrecognized},
                    {"entries", d.entries}});
  return {{"schema", kTriageSummarySchema}, {"type", "summary"}, {"jobs", s.jobs}, {"diagnosed", s.diagnosed},
          {"unrecognized", s.unrecognized}, {"incomplete", s.incomplete}, {"clean", s.clean}, {"errors", s.errors},
          {"partial", s.partial}, {"bytes", s.bytes}, {"skipped_binary", s.skipped}, {"failures", groups},
          {"unrecognized_clusters", clusters}, {"error_rows", errors}, {"initiating_hosts", hosts}, {"days", days},
          {"undated", s.undated}, {"outside_window", s.outside_window}, {"undated_left_out", s.undated_left_out}};
}

// `action` comes last so that readers indexing the older columns by position keep working.
const char* const kCsvHeader = "job,verdict,id,category,severity,initiating_rank,error,action\n";

void write_csv_row(const JobRecord& r, const TriageOptions& o, std::ostream& out) {
  if (o.unknown_only && r.verdict != "unrecognized") return;
  out << csv_cell(safe_line(r.job)) << ',' << r.verdict << ',' << r.id << ',' << r.category << ',' << r.severity << ','
      << (r.rank ? std::to_string(*r.rank) : "") << ',' << csv_cell(safe_line(r.error)) << ',' << r.action << "\n";
}

// The fleet view: hosts that initiated the diagnosed failures, most first; shown when a host
// initiated more than one (one failure per host says nothing about the hosts).
void render_hosts(const Summary& s, bool md, std::ostream& out) {
  if (s.hosts.empty() || s.hosts.front().count < 2) return;
  out << (md ? "## Initiating hosts (a node that starts many failures is suspect)\n\n| jobs | host | entries | GPUs |\n|---:|---|---|---|\n"
             : "Initiating hosts (a node that starts many failures is suspect):\n");
  for (size_t i = 0; i < s.hosts.size() && i < 20; ++i) {
    const auto& h = s.hosts[i];
    std::string entries = fmt::format("{}", fmt::join(h.entries, ", "));
    std::string gpus = gpu_counts(h);
    if (md)
      out << fmt::format("| {} | {} | {} | {} |\n", h.count, markdown_code(safe_line(h.host), true), markdown_cell(entries),
                         markdown_cell(safe_line(gpus)));
    else out << fmt::format("{:>6}  {:<24} {}{}\n", h.count, safe_line(h.host), entries, gpus.empty() ? "" : "  GPUs: " + safe_line(gpus));
  }
  out << "\n";
}

// The grouped summary (table, markdown); csv and jsonl rows are written job by job.
void render_summary(const Summary& s, const TriageOptions& o, std::ostream& out) {
  bool md = o.format == "markdown";
  auto pct = [&](size_t n) { return s.jobs ? 100.0 * static_cast<double>(n) / static_cast<double>(s.jobs) : 0.0; };
  if (md) out << "# firstfault triage\n\n";
  out << fmt::format("{} job(s): {} diagnosed, {} unrecognized, {}{} clean, {} error(s){}\n\n", s.jobs, s.diagnosed,
                     s.unrecognized, s.incomplete ? fmt::format("{} stopped in training with no error, ", s.incomplete) : "",
                     s.clean, s.errors, s.skipped ? fmt::format("; {} binary file(s) skipped", s.skipped) : "");
  if (s.outside_window || s.undated_left_out)
    out << fmt::format("--since/--until left out {} job(s) dated outside the window and {} that nothing dates.\n\n",
                       s.outside_window, s.undated_left_out);
  if (!o.unknown_only && !s.groups.empty()) {
    if (md) out << "| count | share | severity | action | entry | title | examples |\n|---:|---:|---|---|---|---|---|\n";
    else out << fmt::format("{:>6} {:>6}  {:<9} {:<17} {:<44} {}\n", "count", "share", "severity", "action", "entry", "example jobs");
    for (const auto& g : s.groups) {
      if (md) {
        std::vector<std::string> ex;
        for (const auto& e : g.examples) ex.push_back(markdown_code(safe_line(e), true));
        out << fmt::format("| {} | {:.1f}% | {} | {} | `{}` | {} | {} |\n", g.count, pct(g.count), g.severity, g.action, g.id,
                           markdown_cell(g.title), fmt::join(ex, ", "));
      } else {
        out << fmt::format("{:>6} {:>5.1f}%  {:<9} {:<17} {:<44} {}\n", g.count, pct(g.count), g.severity, g.action, g.id,
                           safe_line(fmt::format("{}", fmt::join(g.examples, ", "))));
      }
    }
    out << "\n";
  }
  render_hosts(s, md, out);
  if (!s.clusters.empty()) {
    out << (md ? "## Unrecognized failures, by first error line\n\n" : "Unrecognized failures, by first error line (write an entry for the biggest):\n");
    for (const auto& c : s.clusters) {
      if (md) out << fmt::format("- **{}** × {} (e.g. {})\n", c.count, markdown_code(safe_line(c.templ)), markdown_code(safe_line(c.example_job)));
      else out << fmt::format("{:>6}  {}\n        e.g. {}\n", c.count, safe_line(c.templ), safe_line(c.example_job));
    }
    out << "\n";
  }
  if (!o.unknown_only && !s.error_rows.empty()) {
    out << (md ? "## Jobs that could not be read\n\n" : "Jobs that could not be read:\n");
    for (const auto& [j, e] : s.error_rows)
      out << (md ? fmt::format("- {}: {}\n", markdown_code(safe_line(j)), markdown_escape(safe_line(e)))
                 : fmt::format("  {}: {}\n", safe_line(j), safe_line(e)));
  }
}

// A job record from its jsonl line (for --merge).
JobRecord record_of_json(const json& j) {
  JobRecord r;
  r.job = j.value("job", "");
  if (j.contains("date") && j["date"].is_string()) r.date = j["date"].get<std::string>();
  if (j.contains("error") && !j.contains("verdict")) {
    r.verdict = "error";
    r.error = j.value("error", "");
    return r;
  }
  r.verdict = j.value("verdict", "");
  r.error = j.value("error", "");
  if (j.contains("diagnosis") && j["diagnosis"].is_object()) {
    const json& d = j["diagnosis"];
    r.id = d.value("id", "");
    r.title = d.value("title", "");
    r.category = d.value("category", "");
    r.severity = d.value("severity", "");
    if (d.contains("initiating_rank") && d["initiating_rank"].is_number_integer())
      r.rank = d["initiating_rank"].get<int>();
    auto text = [](const json& o, const char* key) {
      return o.is_object() && o.contains(key) && o[key].is_string() ? o[key].get<std::string>() : std::string();
    };
    r.host = initiating_host_of(r.verdict, text(d, "initiating_host"), d.contains("first_evidence") ? text(d["first_evidence"], "host") : "");
  }
  if (j.contains("action") && j["action"].is_object()) {
    r.action = j["action"].value("kind", "");
    if (!r.host.empty() && j["action"].contains("exclude_gpus") && j["action"]["exclude_gpus"].is_array())
      for (const auto& g : j["action"]["exclude_gpus"])
        if (g.is_string()) r.gpus.push_back(g.get<std::string>());
  }
  if (j.contains("first_error") && j["first_error"].is_object()) r.first_error = j["first_error"].value("text", "");
  if (j.contains("inputs") && j["inputs"].is_array())
    for (const auto& in : j["inputs"]) {
      r.bytes += in.value("bytes", 0ull);
      r.skipped += in.contains("skipped");
    }
  return r;
}

// Calls fn on every log-derived string of a jsonl job line: every string but those under the
// library's and the schema's own keys, so a field unknown here is masked rather than missed.
// Capture names come from patterns, so every capture value counts.
void for_each_json_text(json& j, const std::function<void(std::string&)>& fn, bool all = false) {
  static const std::set<std::string> kTrusted = {
      "schema", "type", "verdict", "kind", "id", "title", "category", "severity", "role", "rank_method", "root_cause",
      "confirm", "fix", "prevention", "references", "related", "compression", "pattern", "time", "last_time"};
  if (j.is_string()) fn(j.get_ref<std::string&>());
  else if (j.is_array())
    for (auto& v : j) for_each_json_text(v, fn, all);
  else if (j.is_object())
    for (auto& [k, v] : j.items())
      if (all || !kTrusted.count(k)) for_each_json_text(v, fn, all || k == "captures");
}

// --merge with --redact: shard lines are JSON, not Diagnoses, so they are masked as JSON, job by
// job in output order with the run's Redactor, hosts first in rank order (as redact_diagnosis
// does); the records are then read back from the masked lines. Lines a shard masked stay masked.
void redact_merged(std::vector<JobRecord>& recs, std::vector<std::string>& lines, Redactor& r) {
  auto host_of = [&](const json& o, const char* key) {
    if (o.is_object() && o.contains(key) && o[key].is_string()) r.add_host(o[key].get<std::string>());
  };
  for (size_t i = 0; i < lines.size(); ++i) {
    json j = json::parse(lines[i], nullptr, false);
    if (j.contains("ranks") && j["ranks"].is_array())
      for (const auto& rank : j["ranks"]) host_of(rank, "host");
    if (j.contains("diagnosis")) host_of(j["diagnosis"], "initiating_host");
    for_each_json_text(j, [&](std::string& s) { r.learn(s); });
    for_each_json_text(j, [&](std::string& s) { s = r.mask(s); });
    recs[i] = record_of_json(j);
    lines[i] = j.dump(-1, ' ', false, json::error_handler_t::replace);
  }
}

// Reads job records back from jsonl outputs (for --merge).
bool read_records(const std::vector<std::string>& files, std::vector<JobRecord>& recs, std::vector<std::string>& lines) {
  std::map<std::string, std::pair<JobRecord, std::string>> by_job;
  for (const auto& f : files) {
    std::ifstream in(f);
    if (!in) {
      fmt::print(stderr, "firstfault: {}: cannot read\n", f);
      return false;
    }
    std::string line;
    size_t n = 0;
    while (std::getline(in, line)) {
      ++n;
      if (trim(line).empty()) continue;
      json j = json::parse(line, nullptr, false);
      if (j.is_discarded() || !j.is_object()) {
        fmt::print(stderr, "firstfault: {}:{}: not a JSON object\n", f, n);
        return false;
      }
      if (j.value("type", "") != "job") continue;
      // A shard's lines are input like any other: defused as if this run had written them.
      for_each_json_text(j, [](std::string& s) { s = safe_line(s); });
      line = j.dump(-1, ' ', false, json::error_handler_t::replace);
      JobRecord r = record_of_json(j);
      by_job[r.job] = {r, line};
    }
  }
  for (auto& [k, v] : by_job) {
    recs.push_back(v.first);
    lines.push_back(v.second);
  }
  return true;
}

// --since / --until: the jobs dated inside the window, both ends included.
struct DateWindow {
  std::string since, until;  // "YYYY-MM-DD", or "" for no bound
  bool active() const { return !since.empty() || !until.empty(); }
  bool keeps(const JobRecord& r) const {
    if (!active() || r.verdict == "error") return true;  // a job that cannot be read is never hidden
    return !r.date.empty() && (since.empty() || r.date >= since) && (until.empty() || r.date <= until);
  }
};

// A --since/--until value: a date, YYYY-MM-DD (a longer ISO time is cut to its date).
std::optional<std::string> window_day(const char* flag, const std::string& value) {
  static const RE2 kDay(R"(([0-9]{4})-([0-9]{2})-([0-9]{2})(?:T.*)?)");
  int y = 0, m = 0, d = 0;
  if (value.empty()) return value;
  if (RE2::FullMatch(value, kDay, &y, &m, &d) && m >= 1 && m <= 12 && d >= 1) {
    static const int kDays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    bool leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    if (d <= kDays[m - 1] && !(m == 2 && d == 29 && !leap)) return value.substr(0, 10);
  }
  fmt::print(stderr, "firstfault: {} '{}': expected a date, YYYY-MM-DD\n", flag, safe_line(value));
  return std::nullopt;
}

void report_window(const DateWindow& w, const Summary& s) {
  if (!w.active() || !(s.outside_window + s.undated_left_out)) return;
  fmt::print(stderr, "firstfault: --since/--until left out {} job(s) dated outside the window and {} that nothing dates\n",
             s.outside_window, s.undated_left_out);
}

}  // namespace

int run_triage(const TriageOptions& o, std::ostream& out) {
  if (o.format != "table" && o.format != "jsonl" && o.format != "csv" && o.format != "markdown" && o.format != "html") {
    fmt::print(stderr, "firstfault: unknown --format '{}' (table, jsonl, csv, markdown, html)\n", o.format);
    return kExitUsage;
  }
  auto since = window_day("--since", o.since), until = window_day("--until", o.until);
  if (!since || !until) return kExitUsage;
  const DateWindow dates{*since, *until};
  if (!dates.since.empty() && !dates.until.empty() && dates.since > dates.until) {
    fmt::print(stderr, "firstfault: --since {} is after --until {}\n", dates.since, dates.until);
    return kExitUsage;
  }
  // HTML is a report made to be shared, like Markdown: personal data masked unless asked.
  const RedactLevel level = o.redact.value_or(o.format == "html" ? RedactLevel::kPii : default_redact_level(o.format));
  const bool redact = level != RedactLevel::kNone;
  Redactor redactor(level);
  SummaryBuilder summary;
  bool csv = o.format == "csv";
  if (!o.merge.empty()) {
    std::vector<JobRecord> recs;
    std::vector<std::string> json_lines;
    if (!read_records(o.merge, recs, json_lines)) return kExitUsage;
    if (redact) redact_merged(recs, json_lines, redactor);
    if (csv) out << kCsvHeader;
    for (size_t i = 0; i < recs.size(); ++i) {
      if (!dates.keeps(recs[i])) {
        summary.left_out(recs[i]);
        continue;
      }
      summary.add(recs[i]);
      if (csv) write_csv_row(recs[i], o, out);
      else if (o.format == "jsonl" && !(o.unknown_only && recs[i].verdict != "unrecognized")) out << json_lines[i] << "\n";
    }
  } else {
    if (o.paths.empty()) {
      fmt::print(stderr, "firstfault: nothing to triage: give the job directories, files or archives as PATH\n");
      return kExitUsage;
    }
    unsigned shard_i = 1, shard_n = 1;
    if (!o.shard.empty() && (std::sscanf(o.shard.c_str(), "%u/%u", &shard_i, &shard_n) != 2 || shard_n == 0 ||
                             shard_i == 0 || shard_i > shard_n)) {
      fmt::print(stderr, "firstfault: --shard must be I/N with 1 <= I <= N (got '{}')\n", o.shard);
      return kExitUsage;
    }
    if (!path_rules_ok(o.rank_from, o.host_from)) return kExitUsage;
    if (!o.job_pattern.empty()) {
      RE2 re(o.job_pattern, RE2::Quiet);
      if (!re.ok()) {
        fmt::print(stderr, "firstfault: --job-pattern: {}\n", re.error());
        return kExitUsage;
      }
    }
    bool filter_ok = true;
    std::shared_ptr<const PathFilter> filter = path_filter_or_report(o.files, filter_ok);
    if (!filter_ok) return kExitUsage;
    auto engine = load_engine(o.common);
    if (!engine) return kExitUsage;
    const Library& lib = engine->library;
    const Matcher& matcher = *engine->matcher;
    std::vector<JobRecord> discovery_errors;
    std::vector<JobSpec> all = discover_jobs(o, filter.get(), discovery_errors);
    std::vector<JobSpec> jobs;
    jobs.reserve(all.size() + discovery_errors.size());
    for (auto& j : all)
      if (in_shard(j.id, shard_i, shard_n)) jobs.push_back(std::move(j));
    std::vector<JobSpec>().swap(all);  // one list of (possibly many) jobs at a time
    for (auto& e : discovery_errors)
      if (in_shard(e.job, shard_i, shard_n)) {
        JobSpec spec;
        spec.id = e.job;
        jobs.push_back(spec);  // placeholder slot so error rows keep their place in the order
      }
    std::sort(jobs.begin(), jobs.end(), [](const JobSpec& a, const JobSpec& b) { return a.id < b.id; });
    std::map<std::string, JobRecord> disc_err;
    for (auto& e : discovery_errors) disc_err[e.job] = e;

    // Work items: a plain job, or all jobs of one archive (read in one pass).
    std::vector<std::vector<size_t>> items;
    std::map<const ArchiveMembers*, size_t> archive_item;  // an archive named twice is read twice
    for (size_t i = 0; i < jobs.size(); ++i) {
      if (jobs[i].archive_members) {
        auto it = archive_item.find(jobs[i].archive_members.get());
        if (it == archive_item.end()) {
          archive_item[jobs[i].archive_members.get()] = items.size();
          items.push_back({i});
        } else {
          items[it->second].push_back(i);
        }
      } else {
        items.push_back({i});
      }
    }
    bool want_json = o.format == "jsonl";
    // Allocated when a job finishes and freed once written: memory follows the window, not
    // the number of jobs.
    std::vector<RowSlot> results(jobs.size());
    WaitingRows waiting(o.waiting_row_bytes);  // the finished rows' lines past a byte budget
    const MaskInJobOrder mask_in_order;
    std::vector<bool> done(jobs.size(), false);
    std::mutex mu;
    std::condition_variable cv;
    std::atomic<size_t> next{0}, finished{0};
    std::atomic<uint64_t> bytes_done{0};
    AnalyzeOptions ao;
    ao.rank_from = o.rank_from;
    ao.host_from = o.host_from;
    ao.threads = 1;  // parallelism is across jobs here
    ao.tables = std::make_shared<const CorrelatorTables>(lib, matcher.tail_patterns());
    ao.filter = filter;  // for archives inside a job's folder
    unsigned workers = o.jobs ? o.jobs : std::max(1u, std::thread::hardware_concurrency());
    // Workers stay within a window of the writer, so one slow job cannot make every later
    // finished job wait in memory (items are in order of their first job, so the item holding
    // the job the writer waits for was taken before any worker can block here).
    const size_t window = 32 * static_cast<size_t>(workers);
    size_t emitted = 0;  // guarded by mu
    // A job's outcome is in `results`: it is finished on this worker (with --redact, taken apart
    // for the writer to mask), parked if it must wait past the budget, and handed to the writer.
    auto job_done = [&](size_t slot) {
      JobOutput& out = *results[slot].out;
      if (redact) mask_in_order.take_apart(out, want_json, lib);
      else finish_output(out, want_json, lib);
      const uint64_t bytes = out.rec.bytes;
      waiting.park(results[slot]);
      {
        std::lock_guard<std::mutex> lock(mu);
        done[slot] = true;
        bytes_done += bytes;
        ++finished;
      }
      cv.notify_all();
    };
    auto worker = [&] {
      for (;;) {
        size_t k = next.fetch_add(1);
        if (k >= items.size() || g_interrupted.load()) return;
        const auto& item = items[k];
        {
          std::unique_lock<std::mutex> lock(mu);
          while (item[0] >= emitted + window && !g_interrupted.load()) cv.wait_for(lock, std::chrono::milliseconds(200));
        }
        if (g_interrupted.load()) return;
        if (jobs[item[0]].archive_members) {
          std::vector<const JobSpec*> js;
          for (size_t i : item) js.push_back(&jobs[i]);
          // Each job is handed to the writer as it is finished, not when the whole archive is.
          run_archive(js, matcher, ao, results, item, job_done);
        } else {
          size_t i = item[0];
          const JobSpec& spec = jobs[i];
          results[i].out = std::make_unique<JobOutput>();
          JobOutput& res = *results[i].out;
          if (auto e = disc_err.find(spec.id); e != disc_err.end() && spec.files.empty()) {
            res.rec = e->second;
          } else {
            run_files(spec, matcher, ao, res);
          }
          job_done(i);
        }
      }
    };
    bool show_progress = o.progress && ::isatty(STDERR_FILENO);
    auto start = std::chrono::steady_clock::now();
    if (csv) out << kCsvHeader;
    std::vector<std::thread> pool;
    for (unsigned w = 0; w < workers; ++w) pool.emplace_back(worker);
    // Stream jsonl in job order while workers finish out of order (a reorder buffer).
    {
      std::unique_lock<std::mutex> lock(mu);
      while (emitted < jobs.size() && !g_interrupted.load()) {
        cv.wait_for(lock, std::chrono::milliseconds(200));
        while (emitted < jobs.size() && done[emitted]) {
          // The workers are done with this job: it is masked and written without the lock.
          lock.unlock();
          RowSlot& slot = results[emitted];
          if (slot.out || slot.parked_at >= 0) {
            waiting.bring_back(slot, jobs[emitted].id);
          } else {  // cannot happen: every job of an item gets an outcome
            slot.out = std::make_unique<JobOutput>();
            JobRecord& rec = slot.out->rec;
            rec.job = jobs[emitted].id;
            rec.verdict = "error";
            rec.error = "not read";
          }
          JobOutput& res = *slot.out;
          if (!dates.keeps(res.rec)) {
            summary.left_out(res.rec);
          } else {
            if (redact) mask_in_order.mask(res, redactor);
            if (want_json && !(o.unknown_only && res.rec.verdict != "unrecognized")) out << res.line << "\n";
            if (csv) write_csv_row(res.rec, o, out);
            summary.add(res.rec);
          }
          slot.out.reset();
          lock.lock();
          ++emitted;
          cv.notify_all();  // a worker may be waiting for the window to move
        }
        if (show_progress) {
          double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
          double mbs = secs > 0 ? static_cast<double>(bytes_done.load()) / 1e6 / secs : 0;
          size_t f = finished.load();
          double eta = f ? secs * static_cast<double>(jobs.size() - f) / static_cast<double>(f) : 0;
          fmt::print(stderr, "\r\x1b[Ktriage: {}/{} jobs  {:.1f} MB/s  ETA {:.0f}s", f, jobs.size(), mbs, eta);
        }
      }
    }
    for (auto& t : pool) t.join();
    if (show_progress) fmt::print(stderr, "\r\x1b[K");
    if (g_interrupted.load()) return kExitInterrupted;
  }
  Summary s = summary.finish();
  if (o.format == "jsonl") out << summary_json(s).dump(-1, ' ', false, json::error_handler_t::replace) << "\n";
  else if (o.format == "html") render_triage_html(s, out);
  else if (!csv) render_summary(s, o, out);
  out.flush();
  report_window(dates, s);
  // Exit: 0 when at least one job was diagnosed and none failed to read; 2 when some could not be read.
  if (s.errors || s.partial) return kExitUsage;
  return s.diagnosed ? kExitDiagnosed : kExitUnrecognized;
}

}  // namespace firstfault
