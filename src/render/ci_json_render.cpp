// SARIF 2.1.0 and GitLab Code Quality: the JSON reports code-review tools read.
#include <fmt/format.h>

#include <cctype>
#include <cmath>

#include "ci_common.h"
#include "firstfault/render/ci_render.h"
#include "firstfault/render/render.h"
#include "firstfault/util/safe_text.h"
#include "firstfault/util/sha256.h"
#include "firstfault/util/strings.h"

namespace firstfault {

using json = OutputJson;
using namespace ci;

namespace {

constexpr const char* kSarifSchema =
    "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json";
constexpr const char* kUnrecognizedRule = "firstfault.unrecognized";
constexpr const char* kIncompleteRule = "firstfault.incomplete";
constexpr const char* kInputErrorCheck = "firstfault.input-error";

// critical/high fail a review, medium warns, low informs.
const char* sarif_level(const std::string& severity) {
  if (severity == "critical" || severity == "high") return "error";
  if (severity == "medium") return "warning";
  return "note";
}

// GitLab's scale is info, minor, major, critical, blocker.
const char* gitlab_severity(const std::string& severity) {
  if (severity == "critical") return "critical";
  if (severity == "high") return "major";
  if (severity == "medium") return "minor";
  return "info";
}

// Where a log line lives; standard input ("-") has no path, so it is named "stdin".
std::string log_path(const std::string& file) { return file == "-" ? "stdin" : safe_line(file); }

json physical_location(const std::string& file, uint64_t line, const std::string* snippet) {
  json loc = {{"artifactLocation", {{"uri", path_to_uri(log_path(file))}}}};
  if (file == "-") loc["artifactLocation"]["description"] = {{"text", "standard input"}};
  if (line > 0) {
    loc["region"] = {{"startLine", line}};
    if (snippet) loc["region"]["snippet"] = {{"text", *snippet}};
  }
  return loc;
}

// The one-line message shared by SARIF results and GitLab issues.
std::string headline(const Diagnosis& d) {
  if (d.verdict == "diagnosed" && d.entry)
    return fmt::format("{}: initiating rank {}", d.entry->title, rank_phrase(d));
  if (d.verdict == "incomplete") return kStoppedTitle;
  return "No known failure matched: error lines were seen, but no entry of the failure library matched them";
}

// The headline, then the details (rank, why, evidence, collateral, fix) one per line.
std::string message_text(const Diagnosis& d) {
  std::string s = headline(d) + ".";
  for (const auto& l : report_lines(d, false)) s += "\n" + l;
  return s;
}

json rule_for(const Entry& e) {
  std::string help = "Fix: " + one_paragraph(e.fix);
  std::string help_md = "**Fix:** " + one_paragraph(e.fix);
  if (!e.confirm.empty()) {
    help += "\nHow to confirm:";
    help_md += "\n\n**How to confirm:**\n";
    for (size_t i = 0; i < e.confirm.size(); ++i) {
      help += fmt::format("\n{}. {}", i + 1, one_paragraph(e.confirm[i]));
      help_md += fmt::format("\n{}. {}", i + 1, one_paragraph(e.confirm[i]));
    }
  }
  json rule = {{"id", e.id},
               {"name", e.id},
               {"shortDescription", {{"text", e.title}}},
               {"fullDescription", {{"text", one_paragraph(e.root_cause)}}},
               {"help", {{"text", help}, {"markdown", help_md}}},
               {"defaultConfiguration", {{"level", sarif_level(e.severity)}}},
               {"properties", {{"category", e.category}, {"severity", e.severity}, {"tags", json::array({e.category})}}}};
  for (const auto& s : e.systems) rule["properties"]["tags"].push_back(s);
  if (!e.references.empty()) rule["helpUri"] = e.references.front();
  return rule;
}

// The decision for a code-scanning consumer, in SARIF's camelCase: {kind, excludeHosts, excludeGpus, reason}.
json action_properties(const Action& a) {
  json hosts = json::array(), gpus = json::array();
  for (const auto& h : a.exclude_hosts) hosts.push_back(safe_line(h));
  for (const auto& g : a.exclude_gpus) gpus.push_back(safe_line(g));
  return {{"kind", action_kind_name(a.kind)}, {"excludeHosts", hosts}, {"excludeGpus", gpus}, {"reason", safe_line(a.reason)}};
}

}  // namespace

std::string normalize_for_fingerprint(std::string_view raw) {
  std::string s = safe_line(raw);
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    char c = s[i];
    if (c == '0' && i + 1 < s.size() && (s[i + 1] == 'x' || s[i + 1] == 'X')) {  // pointers, ids
      size_t j = i + 2;
      while (j < s.size() && std::isxdigit(static_cast<unsigned char>(s[j]))) ++j;
      out += "0x#";
      i = j;
    } else if (is_digit(c)) {  // pids, times, steps, ranks, sequence numbers, pseudonym numbers
      while (i < s.size() && is_digit(s[i])) ++i;
      out += '#';
    } else if (is_space(c)) {
      while (i < s.size() && is_space(s[i])) ++i;
      if (!out.empty()) out += ' ';
    } else {
      out += c;
      ++i;
    }
  }
  while (!out.empty() && out.back() == ' ') out.pop_back();
  return out;
}

std::string issue_fingerprint(std::string_view entry_id, std::string_view file, std::string_view text) {
  // Not the line number: the same failure in a log that grew by a few lines is the same issue.
  return sha256_hex(fmt::format("firstfault/v1\n{}\n{}\n{}", entry_id, normalize_for_fingerprint(file),
                                normalize_for_fingerprint(text)));
}

std::string path_to_uri(std::string_view path) {
  // RFC 3986: unreserved characters and '/' stay, everything else is percent-encoded. An
  // absolute path becomes a file: URI; a relative one stays relative (to the checkout).
  static const char* kHex = "0123456789ABCDEF";
  std::string out = !path.empty() && path[0] == '/' ? "file://" : "";
  for (unsigned char c : path) {
    bool keep = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '.' ||
                c == '_' || c == '~' || c == '/';
    if (keep) out.push_back(static_cast<char>(c));
    else out += {'%', kHex[c >> 4], kHex[c & 0xF]};
  }
  return out;
}

// ---- SARIF 2.1.0 ------------------------------------------------------------------------------

json render_sarif(const Diagnosis& d, const Library& lib, const CiRenderOptions& o) {
  json rules = json::array();
  json results = json::array();
  std::optional<Evidence> anchored = anchor(d);
  const Evidence* a = anchored ? &*anchored : nullptr;
  auto add_result = [&](const std::string& rule_id, const char* level, const std::string& text) {
    json r = {{"ruleId", rule_id}, {"ruleIndex", rules.size() - 1}, {"level", level}, {"message", {{"text", text}}}};
    if (a) {
      std::string snippet = safe_line(truncate_utf8(a->text, 400));
      r["locations"] = json::array({{{"physicalLocation", physical_location(a->file, a->line, &snippet)}}});
      r["partialFingerprints"] = {{"firstfault/v1", issue_fingerprint(rule_id, a->file, a->text)}};
    } else {
      r["locations"] = json::array();
    }
    return r;
  };
  if (d.verdict == "diagnosed" && d.entry) {
    const Entry& e = *d.entry;
    rules.push_back(rule_for(e));
    json r = add_result(e.id, sarif_level(e.severity), message_text(d));
    // The other evidence lines (cascade on other ranks, context) as related locations.
    json related = json::array();
    int id = 1;
    for (const auto& ev : d.evidence) {
      if (a && ev.file == a->file && ev.line == a->line) continue;
      if (ev.line == 0) continue;
      std::string snippet = safe_line(truncate_utf8(ev.text, 400));
      std::string what = fmt::format("{} ({})", ev.pattern, ev.role);
      if (ev.rank >= 0) what += fmt::format(" on rank {}", ev.rank);
      related.push_back({{"id", id++}, {"physicalLocation", physical_location(ev.file, ev.line, &snippet)},
                         {"message", {{"text", what}}}});
    }
    if (!related.empty()) r["relatedLocations"] = related;
    r["properties"] = {{"action", action_properties(d.action)},
                       {"confidence", std::round(d.confidence * 1000) / 1000},
                       {"initiatingRank", d.initiating.rank ? json(*d.initiating.rank) : json(nullptr)},
                       {"initiatingHost", d.initiating.host.empty() ? json(nullptr) : json(safe_line(d.initiating.host))},
                       {"rankMethod", d.initiating.method},
                       {"collateralRanks", d.collateral.ranks}};
    results.push_back(r);
  } else if (unexplained(d)) {
    const bool stopped = d.verdict == "incomplete";
    const char* rule = stopped ? kIncompleteRule : kUnrecognizedRule;
    rules.push_back({{"id", rule},
                     {"name", rule},
                     {"shortDescription", {{"text", stopped ? std::string(kStoppedTitle) : "Error lines but no known failure"}}},
                     {"fullDescription",
                      {{"text", std::string(stopped ? "The job's log ends while training made progress, with no error line and no "
                                                      "completion marker: it hung or was ended from outside."
                                                    : "The job logged error lines, but no entry of firstfault's failure "
                                                      "library matched them.")}}},
                     {"help",
                      {{"text", std::string(stopped ? "Take stacks while it is stuck (py-spy dump) or enable the NCCL flight recorder."
                                                    : "If this is a real failure mode, consider writing an entry "
                                                      "(docs/signature-format.md).")}}},
                     {"defaultConfiguration", {{"level", "warning"}}}});
    json r = add_result(rule, "warning", message_text(d));
    r["properties"] = {{"action", action_properties(d.action)}};
    results.push_back(r);
  }
  // Unreadable inputs are the tool's own trouble, not findings: SARIF reports them as
  // notifications of a run that did not fully succeed.
  json notes = json::array();
  for (const InputSummary* in : failed_inputs(d))
    notes.push_back({{"level", "error"},
                     {"message", {{"text", safe_line(in->path) + ": " + safe_line(in->error)}}},
                     {"locations", json::array({{{"physicalLocation", physical_location(in->path, 0, nullptr)}}})}});
  json invocation = {{"executionSuccessful", notes.empty()}};
  if (!notes.empty()) invocation["toolExecutionNotifications"] = notes;
  json run = {{"tool",
               {{"driver",
                 {{"name", "firstfault"},
                  {"version", FIRSTFAULT_VERSION},
                  {"semanticVersion", FIRSTFAULT_VERSION},
                  {"rules", rules}}}}},
              {"invocations", json::array({invocation})},
              {"results", results},
              {"properties", {{"verdict", d.verdict}, {"lines", d.total_lines}, {"redacted", o.redacted}, {"redaction", std::string(redact_level_name(o.redacted ? o.redaction : RedactLevel::kNone))}}}};
  return {{"$schema", kSarifSchema}, {"version", "2.1.0"}, {"runs", json::array({run})}};
}

// ---- GitLab Code Quality ----------------------------------------------------------------------

json render_gitlab(const Diagnosis& d, const Library& lib, const CiRenderOptions& o) {
  json issues = json::array();
  // content.body is Markdown in the Code Climate format GitLab reads: the escaped Markdown report.
  std::string body = render_markdown(d, lib, o);
  auto issue = [&](const std::string& check, const std::string& description, const std::string& content,
                   const char* severity, const std::string& file, uint64_t line, const std::string& text) {
    issues.push_back({{"type", "issue"},
                      {"check_name", check},
                      {"description", description},
                      {"content", {{"body", content}}},
                      {"categories", json::array({"Bug Risk"})},
                      {"severity", severity},
                      {"fingerprint", issue_fingerprint(check, file, text)},
                      // GitLab needs a line; 1 stands for "the file" when the log did not say.
                      {"location", {{"path", log_path(file)}, {"lines", {{"begin", line > 0 ? line : 1}}}}}});
  };
  for (const InputSummary* in : failed_inputs(d))
    issue(kInputErrorCheck, "firstfault could not read this input completely: " + safe_line(in->error), "", "major", in->path,
          0, "");
  std::optional<Evidence> anchored = anchor(d);
  const Evidence* a = anchored ? &*anchored : nullptr;
  std::string file = a ? a->file : (d.inputs.empty() ? "-" : d.inputs.front().path);
  if (d.verdict == "diagnosed" && d.entry)
    issue(d.entry->id, headline(d), body, gitlab_severity(d.entry->severity), file, a ? a->line : 0, a ? a->text : "");
  else if (unexplained(d))
    issue(d.verdict == "incomplete" ? kIncompleteRule : kUnrecognizedRule, headline(d), body, "minor", file, a ? a->line : 0, a ? a->text : "");
  return issues;
}

}  // namespace firstfault
