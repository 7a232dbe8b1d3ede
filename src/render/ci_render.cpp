// GitHub Actions, Markdown and JUnit renderers, plus what every CI renderer shares.
#include "firstfault/render/ci_render.h"

#include <fmt/format.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "ci_common.h"
#include "firstfault/render/render.h"
#include "firstfault/render/markdown.h"
#include "firstfault/util/safe_text.h"
#include "firstfault/util/strings.h"

namespace firstfault {

const std::vector<std::string> kDiagnoseFormats = {"text", "json", "github", "markdown", "sarif", "gitlab", "junit"};

bool is_diagnose_format(std::string_view f) {
  return std::find(kDiagnoseFormats.begin(), kDiagnoseFormats.end(), f) != kDiagnoseFormats.end();
}
bool is_ci_format(std::string_view f) { return is_diagnose_format(f) && f != "text" && f != "json"; }
// What leaves the machine (annotations, reports, PR comments) has its secrets and personal data
// masked unless asked not to, but keeps host names: on a self-hosted runner the node to drain is
// the answer. The terminal and JSON (a local, programmatic view) are not masked.
RedactLevel default_redact_level(std::string_view f) { return is_ci_format(f) ? RedactLevel::kPii : RedactLevel::kNone; }

namespace ci {

bool has_evidence(const Diagnosis& d) { return d.initiating.first_evidence || !d.evidence.empty(); }

std::optional<Evidence> anchor(const Diagnosis& d) {
  if (d.verdict == "incomplete" && d.stopped) return d.stopped->last_progress;
  if (d.verdict != "diagnosed") return d.first_error;
  if (d.initiating.first_evidence) return d.initiating.first_evidence;
  if (!d.evidence.empty()) return d.evidence.front();
  for (const auto& r : d.ranks) {
    if (!d.initiating.rank || r.rank != *d.initiating.rank || r.last_line_no == 0) continue;
    Evidence e;
    e.file = r.last_file;
    e.line = r.last_line_no;
    e.rank = r.rank;
    e.host = r.host;
    e.text = r.last_line;
    return e;
  }
  return std::nullopt;
}

std::string one_paragraph(std::string_view text) {
  std::string out;
  for (const auto& p : paragraphs(text)) out += (out.empty() ? "" : " ") + p;
  return out;
}

std::string rank_phrase(const Diagnosis& d) {
  if (!d.initiating.rank) return no_rank_phrase(d.initiating);
  std::string s = std::to_string(*d.initiating.rank);
  if (!d.initiating.host.empty()) s += " on host " + safe_line(d.initiating.host);
  return s;
}

std::string job_name(const Diagnosis& d) {
  if (d.inputs.empty()) return "stdin";
  if (d.inputs.size() == 1) return d.inputs[0].path == "-" ? "stdin" : safe_line(d.inputs[0].path);
  // Several files of one job: name their common directory.
  namespace fs = std::filesystem;
  fs::path common = fs::path(d.inputs[0].path).parent_path();
  for (const auto& in : d.inputs) {
    fs::path p = fs::path(in.path).parent_path();
    while (!common.empty() && std::mismatch(common.begin(), common.end(), p.begin(), p.end()).first != common.end())
      common = common.parent_path();
  }
  std::string dir = common.empty() ? "." : common.string();
  return fmt::format("{}/ ({} files)", safe_line(dir), d.inputs.size());
}

std::vector<const InputSummary*> failed_inputs(const Diagnosis& d) {
  std::vector<const InputSummary*> out;
  for (const auto& in : d.inputs)
    if (!in.error.empty()) out.push_back(&in);
  return out;
}

std::string where(const Evidence& e) {
  std::string f = e.file == "-" ? "stdin" : safe_line(e.file);
  return e.line > 0 ? fmt::format("{}:{}", f, e.line) : f;
}

std::vector<std::string> report_lines(const Diagnosis& d, bool with_title) {
  std::vector<std::string> out;
  std::optional<Evidence> anchored = anchor(d);
  const Evidence* a = anchored ? &*anchored : nullptr;
  if (d.verdict == "diagnosed" && d.entry) {
    const Entry& e = *d.entry;
    if (with_title) out.push_back(fmt::format("{} [{}]", e.title, e.id));
    out.push_back(fmt::format("{} · severity {} · confidence {:.2f}", e.category, e.severity, d.confidence));
    out.push_back(action_label(d.action));
    out.push_back("Initiating rank: " + rank_phrase(d));
    if (!d.initiating.reason.empty()) out.push_back("Why: " + safe_line(d.initiating.reason));
    if (a) {
      out.push_back(std::string(has_evidence(d) ? "First evidence: " : "Last line of the initiating rank: ") + where(*a));
      out.push_back("  " + safe_line(truncate_utf8(a->text, 400)));
    }
    if (!d.collateral.summary.empty()) out.push_back("Collateral: " + safe_line(d.collateral.summary));
    out.push_back("Fix: " + one_paragraph(e.fix));
    if (!d.alternatives.empty()) {
      std::string alts;
      for (const auto& alt : d.alternatives)
        alts += fmt::format("{}{} ({:.2f})", alts.empty() ? "" : ", ", alt.id, alt.confidence);
      out.push_back("Also possible: " + alts);
    }
    return out;
  }
  if (d.verdict == "unrecognized") {
    if (with_title) out.push_back("No known failure matched");
    out.push_back("Error lines were seen, but no entry of the failure library matched them.");
    out.push_back(action_label(d.action));
    if (a) {
      out.push_back(first_error_label(*a) + ": " + where(*a));
      out.push_back("  " + safe_line(truncate_utf8(a->text, 400)));
    }
    if (d.suspect) out.push_back(suspect_label(*d.suspect) + ": " + safe_line(d.suspect->reason));
  } else if (d.verdict == "incomplete") {
    if (with_title) out.push_back(kStoppedTitle);
    out.push_back(action_label(d.action));
    for (const auto& l : stopped_run_lines(d, where)) out.push_back(l);
  } else {
    if (with_title) out.push_back("No failure found");
    out.push_back("No error line and no known failure signature in the input.");
    out.push_back(action_label(d.action));
  }
  out.push_back(read_summary(d));
  return out;
}

}  // namespace ci

using namespace ci;

// ---- escaping -------------------------------------------------------------------------------

std::string github_escape_data(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    if (c == '%') out += "%25";
    else if (c == '\r') out += "%0D";
    else if (c == '\n') out += "%0A";
    else out.push_back(c);
  }
  return out;
}

std::string github_escape_property(std::string_view s) {
  std::string out;
  for (char c : github_escape_data(s)) {
    if (c == ':') out += "%3A";
    else if (c == ',') out += "%2C";
    else out.push_back(c);
  }
  return out;
}

std::string xml_escape(std::string_view raw) {
  std::string s = sanitize_utf8(raw);
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default:
        // XML 1.0 allows no C0 control except tab, newline and carriage return, and not
        // U+FFFE/U+FFFF; a single such byte would make the whole report unparseable.
        if (c < 0x20 && c != '\t' && c != '\n' && c != '\r') break;
        if (c == 0xEF && i + 2 < s.size() && static_cast<unsigned char>(s[i + 1]) == 0xBF &&
            (static_cast<unsigned char>(s[i + 2]) == 0xBE || static_cast<unsigned char>(s[i + 2]) == 0xBF)) {
          i += 2;
          break;
        }
        out.push_back(static_cast<char>(c));
    }
  }
  return out;
}

namespace {

// ---- Markdown (the escapes are in firstfault/render/markdown.h) ---------------------------------

// "**restart excluding `node-17` (GPU `0000:bd:00`)** — reason": what to leave out as code (it
// comes from the log), the reason escaped.
std::string md_action(const Action& a, bool in_table = false) {
  return "**" + action_phrase(a, [in_table](const std::string& s) { return markdown_code(s, in_table); }) + "** — " + markdown_escape(safe_line(a.reason));
}

std::string redaction_note(const CiRenderOptions& o) {
  if (!o.redacted) return "";
  std::string more = o.redaction == RedactLevel::kAll ? "" : ", --redact=all masks the rest";
  return fmt::format("{} (--redact={}; --no-redact shows them{})", redact_level_what(o.redaction),
                     redact_level_name(o.redaction), more);
}

}  // namespace

// ---- GitHub Actions ---------------------------------------------------------------------------

std::string render_github(const Diagnosis& d, const Library& lib, const CiRenderOptions& o) {
  std::string out;
  auto command = [&](const char* level, const Evidence* at, const std::string& title, const std::vector<std::string>& body) {
    std::string props;
    if (at && at->file != "-") {
      props += "file=" + github_escape_property(safe_line(at->file));
      if (at->line > 0) props += fmt::format(",line={}", at->line);
    }
    props += std::string(props.empty() ? "" : ",") + "title=" + github_escape_property(title);
    std::string msg;
    for (const auto& l : body) msg += (msg.empty() ? "" : "\n") + l;
    out += fmt::format("::{} {}::{}\n", level, props, github_escape_data(msg));
  };
  for (const InputSummary* in : failed_inputs(d)) {
    Evidence at;
    at.file = in->path;
    command("error", &at, "firstfault: input not read", {safe_line(in->path) + ": " + safe_line(in->error)});
  }
  std::optional<Evidence> anchored = anchor(d);
  const Evidence* a = anchored ? &*anchored : nullptr;
  if (d.verdict == "diagnosed" && d.entry)
    command("error", a, fmt::format("{} [{}]", d.entry->title, d.entry->id), report_lines(d, false));
  else if (d.verdict == "unrecognized")
    command("warning", a, "firstfault: no known failure matched", report_lines(d, false));
  else if (d.verdict == "incomplete")
    command("warning", a, "firstfault: training stopped making progress", report_lines(d, false));
  else if (d.verdict == "clean")  // not "error": with nothing read, the input errors are the report
    command("notice", nullptr, "firstfault: no failure found", report_lines(d, false));
  return out;
}

// ---- Markdown ---------------------------------------------------------------------------------

std::string render_markdown(const Diagnosis& d, const Library& lib, const CiRenderOptions& o) {
  std::string out;
  std::optional<Evidence> anchored = anchor(d);
  const Evidence* a = anchored ? &*anchored : nullptr;
  if (d.verdict == "diagnosed" && d.entry) {
    const Entry& e = *d.entry;
    out += fmt::format("### firstfault: {}\n\n", e.title);
    out += fmt::format("**Verdict:** diagnosed {} · {} · severity **{}** · confidence {:.2f}\n\n", markdown_code(e.id), e.category,
                       e.severity, d.confidence);
    out += "| | |\n|---|---|\n";
    out += "| Action | " + md_action(d.action, true) + " |\n";
    std::string rank = d.initiating.rank ? fmt::format("**{}**", *d.initiating.rank) : rank_phrase(d);
    if (d.initiating.rank && !d.initiating.host.empty()) rank += " on host " + markdown_code(safe_line(d.initiating.host), true);
    out += "| Initiating rank | " + rank + " |\n";
    if (!d.initiating.reason.empty()) out += "| Why | " + markdown_escape(safe_line(d.initiating.reason)) + " |\n";
    if (a) out += std::string(has_evidence(d) ? "| First evidence | " : "| Last line | ") + markdown_code(where(*a), true) + " |\n";
    std::string collateral = d.collateral.summary.empty() ? "none" : markdown_escape(safe_line(d.collateral.summary));
    out += "| Collateral | " + collateral + " |\n";
    if (a) out += "\n" + markdown_block({safe_line(truncate_utf8(a->text, 400))});
    out += "\n**Fix:** ";
    auto fix = paragraphs(e.fix);
    for (size_t i = 0; i < fix.size(); ++i) out += (i ? "\n\n" : "") + fix[i];
    out += "\n\n<details><summary>Root cause and how to confirm</summary>\n\n";
    for (const auto& p : paragraphs(e.root_cause)) out += p + "\n\n";
    for (size_t i = 0; i < e.confirm.size(); ++i) out += fmt::format("{}. {}\n", i + 1, one_paragraph(e.confirm[i]));
    out += "\n</details>\n";
    if (!d.alternatives.empty()) {
      out += "\n**Also possible:**";
      for (size_t i = 0; i < d.alternatives.size(); ++i) {
        const Entry* ae = lib.find_entry(d.alternatives[i].id);
        out += fmt::format("{} {} {} ({:.2f})", i ? ";" : "", markdown_code(d.alternatives[i].id), ae ? markdown_cell(ae->title) : "",
                           d.alternatives[i].confidence);
      }
      out += "\n";
    }
  } else if (d.verdict == "unrecognized") {
    out += "### firstfault: no known failure matched\n\n";
    out += "**Verdict:** unrecognized · error lines were seen, but no entry of the failure library matched them.\n";
    out += "\n**Action:** " + md_action(d.action) + "\n";
    if (a) out += "\n" + first_error_label(*a) + ": " + markdown_code(where(*a)) + "\n\n" + markdown_block({safe_line(truncate_utf8(a->text, 400))});
    if (d.suspect) out += "\n" + markdown_cell(suspect_label(*d.suspect)) + ": " + markdown_cell(safe_line(d.suspect->reason)) + "\n";
  } else if (d.verdict == "incomplete") {
    out += "### firstfault: training stopped making progress\n\n";
    out += "**Verdict:** incomplete · training stopped making progress long before the log ends, with no error line and no completion marker.\n";
    out += "\n**Action:** " + md_action(d.action) + "\n\n";
    for (const auto& l : stopped_run_lines(d, [](const Evidence& e) { return markdown_code(where(e)); })) out += markdown_cell(l) + "\n\n";
  } else if (d.verdict == "error") {
    out += "### firstfault: nothing to diagnose\n\n";
    out += "**Verdict:** error · no input yielded a line (the reasons are below).\n";
  } else {
    out += "### firstfault: no failure found\n\n";
    out += "**Verdict:** clean · no error line and no known failure signature in the input.\n";
    out += "\n**Action:** " + md_action(d.action) + "\n";
  }
  auto failed = failed_inputs(d);
  if (!failed.empty()) {
    out += "\n**Inputs not read completely:**\n\n";
    for (const InputSummary* in : failed)
      out += "- " + markdown_code(safe_line(in->path)) + ": " + markdown_escape(safe_line(in->error)) + "\n";
  }
  std::string note = fmt::format("read {} line(s) from {} input(s)", d.total_lines, d.inputs.size() - d.skipped_inputs);
  if (d.skipped_inputs) note += fmt::format("; {} binary file(s) skipped", d.skipped_inputs);
  if (o.redacted) note += "; " + redaction_note(o);
  out += fmt::format("\n<sub>firstfault {} · {}</sub>\n", FIRSTFAULT_VERSION, note);
  return out;
}

// ---- JUnit XML --------------------------------------------------------------------------------

std::string render_junit(const Diagnosis& d, const Library& lib, const CiRenderOptions& o) {
  struct Case {
    std::string classname, name, file, element, type, message, body;
  };
  std::vector<Case> cases;
  for (const InputSummary* in : failed_inputs(d))
    cases.push_back({"firstfault.input", "read " + safe_line(in->path), safe_line(in->path), "error", "input-error",
                     "could not read the input completely", safe_line(in->path) + ": " + safe_line(in->error)});
  std::optional<Evidence> anchored = anchor(d);
  const Evidence* a = anchored ? &*anchored : nullptr;
  std::string job = job_name(d);
  std::string body;
  for (const auto& l : report_lines(d, false)) body += l + "\n";
  std::string file = a && a->file != "-" ? safe_line(a->file) : "";
  if (d.verdict == "diagnosed" && d.entry)
    cases.push_back({"firstfault." + d.entry->category, job, file, "failure", d.entry->id,
                     fmt::format("{} [{}]", d.entry->title, d.entry->id), body});
  else if (d.verdict == "unrecognized")
    cases.push_back({"firstfault.unrecognized", job, file, "failure", "unrecognized", "No known failure matched", body});
  else if (d.verdict == "incomplete")
    cases.push_back({"firstfault.incomplete", job, file, "failure", "incomplete", kStoppedTitle, body});
  else if (d.verdict == "clean")
    cases.push_back({"firstfault.clean", job, "", "", "", "", body});  // passes: nothing failed

  size_t failures = 0, errors = 0;
  for (const auto& c : cases) {
    if (c.element == "failure") ++failures;
    if (c.element == "error") ++errors;
  }
  std::string counts = fmt::format("tests=\"{}\" failures=\"{}\" errors=\"{}\"", cases.size(), failures, errors);
  std::string out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  out += fmt::format("<testsuites name=\"firstfault\" {}>\n", counts);
  out += fmt::format("  <testsuite name=\"firstfault\" {} skipped=\"0\">\n", counts);
  out += "    <properties>\n";
  out += fmt::format("      <property name=\"firstfault.version\" value=\"{}\"/>\n", xml_escape(FIRSTFAULT_VERSION));
  out += fmt::format("      <property name=\"verdict\" value=\"{}\"/>\n", xml_escape(d.verdict));
  out += fmt::format("      <property name=\"action\" value=\"{}\"/>\n", action_kind_name(d.action.kind));
  out += fmt::format("      <property name=\"redacted\" value=\"{}\"/>\n", o.redacted ? "true" : "false");
  out += fmt::format("      <property name=\"redaction\" value=\"{}\"/>\n", redact_level_name(o.redacted ? o.redaction : RedactLevel::kNone));
  out += "    </properties>\n";
  for (const auto& c : cases) {
    out += fmt::format("    <testcase classname=\"{}\" name=\"{}\"", xml_escape(c.classname), xml_escape(c.name));
    if (!c.file.empty()) out += fmt::format(" file=\"{}\"", xml_escape(c.file));
    if (c.element.empty()) {
      out += ">\n      <system-out>" + xml_escape(c.body) + "</system-out>\n    </testcase>\n";
      continue;
    }
    out += fmt::format(">\n      <{} type=\"{}\" message=\"{}\">", c.element, xml_escape(c.type), xml_escape(c.message));
    out += xml_escape(c.body) + fmt::format("</{}>\n    </testcase>\n", c.element);
  }
  out += "  </testsuite>\n</testsuites>\n";
  return out;
}

// ---- dispatch ---------------------------------------------------------------------------------

Status render_ci(std::string_view format, const Diagnosis& d, const Library& lib, const CiRenderOptions& o,
                 std::ostream& out) {
  if (format == "github") {
    out << render_github(d, lib, o);
    if (!o.github_step_summary.empty()) {
      // The step summary is a file the runner renders as Markdown on the run's page.
      std::ofstream f(o.github_step_summary, std::ios::app | std::ios::binary);
      if (f) f << render_markdown(d, lib, o) << "\n";
      if (!f || !f.flush())
        return Error{fmt::format("cannot append the step summary to {} (GITHUB_STEP_SUMMARY): {}", o.github_step_summary,
                                 std::strerror(errno))};
    }
  } else if (format == "markdown") {
    out << render_markdown(d, lib, o);
  } else if (format == "junit") {
    out << render_junit(d, lib, o);
  } else if (format == "sarif") {
    out << render_sarif(d, lib, o).dump(2, ' ', false, OutputJson::error_handler_t::replace) << "\n";
  } else if (format == "gitlab") {
    out << render_gitlab(d, lib, o).dump(2, ' ', false, OutputJson::error_handler_t::replace) << "\n";
  } else {
    return Error{fmt::format("unknown CI format '{}'", format)};
  }
  return Status::Ok();
}

}  // namespace firstfault
