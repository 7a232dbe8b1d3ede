#include "firstfault/app/exit_policy.h"

#include <algorithm>

#include "firstfault/app/commands.h"
#include "firstfault/signatures/library.h"

namespace firstfault {

std::optional<FailOn> parse_fail_on(std::string_view text) {
  FailOn f;
  if (text == "none") f.kind = FailOn::Kind::kNone;
  else if (text == "unrecognized") f.kind = FailOn::Kind::kUnrecognized;
  else if (text == "any") f.kind = FailOn::Kind::kAny;
  else {
    auto it = std::find(kSeverities.begin(), kSeverities.end(), text);
    if (it == kSeverities.end()) return std::nullopt;
    f.kind = FailOn::Kind::kSeverity;
    f.min_severity = static_cast<int>(it - kSeverities.begin());
  }
  return f;
}

int exit_code_for(const Diagnosis& d, const FailOn& policy) {
  bool diagnosed = d.verdict == "diagnosed" && d.entry;
  switch (policy.kind) {
    case FailOn::Kind::kNone:
      return kExitDiagnosed;
    case FailOn::Kind::kUnrecognized:
      return diagnosed ? kExitDiagnosed : kExitUnrecognized;
    case FailOn::Kind::kAny:
      return d.verdict == "clean" ? kExitDiagnosed : kExitUnrecognized;
    case FailOn::Kind::kSeverity: {
      if (!diagnosed) return kExitDiagnosed;
      auto it = std::find(kSeverities.begin(), kSeverities.end(), d.entry->severity);
      // kSeverities runs from most to least severe, so "at least" means "at or before".
      bool severe = it != kSeverities.end() && static_cast<int>(it - kSeverities.begin()) <= policy.min_severity;
      return severe ? kExitUnrecognized : kExitDiagnosed;
    }
  }
  return kExitUnrecognized;
}

std::string fail_on_choices() {
  std::string s = "none, unrecognized, any";
  for (const auto& sev : kSeverities) s += ", " + sev;
  return s;
}

}  // namespace firstfault
