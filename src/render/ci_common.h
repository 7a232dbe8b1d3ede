#pragma once
// Pieces the CI renderers share (private to src/render/): which evidence line an annotation
// points at, and the same plain-text summary for GitHub annotations and JUnit failures.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "firstfault/correlator/diagnosis.h"
#include "firstfault/signatures/library.h"

namespace firstfault::ci {

// The line a report points at: the initiating evidence when diagnosed (for a silent rank with
// no evidence line, its last line: where it stopped), the first error line when unrecognised;
// nullopt when there is none.
std::optional<Evidence> anchor(const Diagnosis& d);
bool has_evidence(const Diagnosis& d);  // whether the anchor is an evidence line (not a last line)

std::string one_paragraph(std::string_view text);

// "3 on host host-1" or "unknown".
std::string rank_phrase(const Diagnosis& d);

// What the job was, for test-case names: "logs/job.log", "logs/ (4 files)" or "stdin".
std::string job_name(const Diagnosis& d);

// The diagnosis as plain lines (no title line when `with_title` is false), every log-derived
// part already passed through safe_line.
std::vector<std::string> report_lines(const Diagnosis& d, bool with_title);

// Inputs that could not be read completely.
std::vector<const InputSummary*> failed_inputs(const Diagnosis& d);

// "file:line" (or just the file when the line is unknown), made safe for printing.
std::string where(const Evidence& e);

}  // namespace firstfault::ci
