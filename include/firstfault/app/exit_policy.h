#pragma once
// --fail-on: when `diagnose` exits non-zero, for pipelines that run it after a failed job.
//   unrecognized (default)  1 when nothing was recognised, 0 when a failure was diagnosed
//   none                    always 0 (a post-failure step that must never fail itself)
//   any                     1 when a failure was diagnosed or error lines were seen, 0 when clean
//   critical|high|medium|low  1 when the diagnosed failure has at least that severity
//   restart|restart-excluding|stop|investigate[,...]  1 when the action is one of these (unrecognised
//                           and clean logs are investigate)
// Usage and input errors (2) and interruption (130) are not affected.
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "firstfault/correlator/diagnosis.h"

namespace firstfault {

struct FailOn {
  enum class Kind { kNone, kUnrecognized, kAny, kSeverity, kAction };
  Kind kind = Kind::kUnrecognized;
  int min_severity = 0;             // kSeverity: index into kSeverities (0 = critical)
  std::vector<ActionKind> actions;  // kAction: the kinds that fail the step
};

// nullopt for anything but none, unrecognized, any, a severity name, or action kinds joined by commas.
std::optional<FailOn> parse_fail_on(std::string_view text);

// The exit code for a completed analysis (0 or 1) under `policy`.
int exit_code_for(const Diagnosis& d, const FailOn& policy);

// Every word --fail-on takes, for --help, the man page and completions.
std::vector<std::string> fail_on_names();
// The same words in a sentence for error messages, with how to join action kinds.
std::string fail_on_choices();

}  // namespace firstfault
