#pragma once
// --fail-on: when `diagnose` exits non-zero, for pipelines that run it after a failed job.
//   unrecognized (default)  1 when nothing was recognised, 0 when a failure was diagnosed
//   none                    always 0 (a post-failure step that must never fail itself)
//   any                     1 when a failure was diagnosed or error lines were seen, 0 when clean
//   critical|high|medium|low  1 when the diagnosed failure has at least that severity
// Usage and input errors (2) and interruption (130) are not affected.
#include <optional>
#include <string>
#include <string_view>

#include "firstfault/correlator/diagnosis.h"

namespace firstfault {

struct FailOn {
  enum class Kind { kNone, kUnrecognized, kAny, kSeverity };
  Kind kind = Kind::kUnrecognized;
  int min_severity = 0;  // kSeverity: index into kSeverities (0 = critical)
};

// nullopt for anything but none, unrecognized, any or a severity name.
std::optional<FailOn> parse_fail_on(std::string_view text);

// The exit code for a completed analysis (0 or 1) under `policy`.
int exit_code_for(const Diagnosis& d, const FailOn& policy);

// "none, unrecognized, any, critical, high, medium, low" for messages and --help.
std::string fail_on_choices();

}  // namespace firstfault
