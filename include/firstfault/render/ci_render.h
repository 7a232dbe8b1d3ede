#pragma once
// Renderers for CI systems and chat: the same Diagnosis as the text and JSON renderers, in the
// formats pipelines read. Every renderer takes an already prepared Diagnosis (CI commands
// neutralised, and masked when redaction is on), so none of them needs to know about redaction.
//   github    GitHub Actions workflow commands (::error at the initiating evidence line)
//   markdown  PR comments, chat, and the GitHub step summary
//   sarif     SARIF 2.1.0 (GitHub code scanning and other SARIF viewers)
//   gitlab    GitLab Code Quality report (JSON array of issues with stable fingerprints)
//   junit     JUnit XML: one failed test case per diagnosed job
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "firstfault/util/redact.h"
#include "firstfault/correlator/diagnosis.h"
#include "firstfault/render/render.h"
#include "firstfault/signatures/library.h"
#include "firstfault/util/result.h"

namespace firstfault {

// Every --format that `diagnose` accepts, and the ones that mask by default.
extern const std::vector<std::string> kDiagnoseFormats;
bool is_diagnose_format(std::string_view format);
bool is_ci_format(std::string_view format);         // handled by render_ci
// The masking a format gets without --redact/--no-redact: `pii` for what leaves the machine
// (github, gitlab, sarif, junit, markdown), none for text and json.
RedactLevel default_redact_level(std::string_view format);

struct CiRenderOptions {
  bool redacted = false;            // the Diagnosis was masked; the output says so
  RedactLevel redaction = RedactLevel::kNone;  // how (util/redact.h)
  std::string github_step_summary;  // github: append the Markdown summary to this file ("" = none)
};

std::string render_github(const Diagnosis& d, const Library& lib, const CiRenderOptions& o);
std::string render_markdown(const Diagnosis& d, const Library& lib, const CiRenderOptions& o);
OutputJson render_sarif(const Diagnosis& d, const Library& lib, const CiRenderOptions& o);
OutputJson render_gitlab(const Diagnosis& d, const Library& lib, const CiRenderOptions& o);
std::string render_junit(const Diagnosis& d, const Library& lib, const CiRenderOptions& o);

// Writes `format` to `out` (and, for github, the step summary). An error names the file that
// could not be written; the main output is still complete.
Status render_ci(std::string_view format, const Diagnosis& d, const Library& lib, const CiRenderOptions& o,
                 std::ostream& out);

// Building blocks, exposed for tests.
std::string github_escape_data(std::string_view s);      // %, \r, \n
std::string github_escape_property(std::string_view s);  // also : and ,
std::string xml_escape(std::string_view s);              // also drops characters XML 1.0 forbids
// Evidence text with what changes between runs of the same failure (numbers, hex, whitespace
// runs) folded, so fingerprints stay stable across runs.
std::string normalize_for_fingerprint(std::string_view s);
std::string issue_fingerprint(std::string_view entry_id, std::string_view file, std::string_view text);
std::string path_to_uri(std::string_view path);  // SARIF artifactLocation.uri

}  // namespace firstfault
