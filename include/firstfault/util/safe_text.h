#pragma once
// Log text is untrusted. Printed as-is it could drive a terminal (escape sequences) or a CI
// runner: GitHub Actions executes a line whose first non-blank characters are "::" as a
// workflow command (::set-env, ::add-mask, ::stop-commands), Azure Pipelines executes
// "##vso[...]" and "##[...]". These helpers make such text inert; `neutralize_diagnosis` is
// applied to every Diagnosis before any renderer sees it.
#include <functional>
#include <string>
#include <string_view>

#include "firstfault/correlator/diagnosis.h"

namespace firstfault {

// Breaks CI command markers without hiding them: a "::" that starts a line (after blanks,
// control or escape sequences) becomes ": :", "##vso[" becomes "##vso [", "##[" becomes "## [".
// Idempotent; text without markers is returned unchanged.
std::string neutralize_ci_commands(std::string_view s);

// One untrusted line ready to print in a text-like format (terminal, Markdown, JUnit, GitHub
// annotations): valid UTF-8, no control characters or escape sequences, no CI commands.
std::string safe_line(std::string_view s);

// Calls fn on every string in `d` that came from the logs or the file system (evidence text,
// files, hosts, captures, reasons, summaries, last lines, input paths and errors). Strings from
// the failure library (titles, fixes) are trusted and not visited.
void for_each_text(Diagnosis& d, const std::function<void(std::string&)>& fn);

// safe_line on every log-derived string of `d` (invalid UTF-8 replaced; controls, escapes and
// bidi controls removed; CI commands broken): every command applies it before any renderer, so
// no output, JSON included (it is often printed with `jq -r`), carries them.
void neutralize_diagnosis(Diagnosis& d);

}  // namespace firstfault
