#include "firstfault/app/exit_policy.h"

#include <fmt/format.h>

#include <algorithm>

#include "firstfault/app/commands.h"
#include "firstfault/signatures/library.h"

namespace firstfault {

namespace {

// One action kind, or several joined with commas ("stop,investigate"); nullopt for anything else.
std::optional<std::vector<ActionKind>> parse_action_list(std::string_view text) {
  std::vector<ActionKind> kinds;
  size_t start = 0;
  while (true) {
    size_t comma = text.find(',', start);
    auto kind = parse_action_kind(text.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start));
    if (!kind) return std::nullopt;
    if (std::find(kinds.begin(), kinds.end(), *kind) == kinds.end()) kinds.push_back(*kind);
    if (comma == std::string_view::npos) return kinds;
    start = comma + 1;
  }
}

}  // namespace

std::optional<FailOn> parse_fail_on(std::string_view text) {
  FailOn f;
  if (text == "none") f.kind = FailOn::Kind::kNone;
  else if (text == "unrecognized") f.kind = FailOn::Kind::kUnrecognized;
  else if (text == "any") f.kind = FailOn::Kind::kAny;
  else if (auto it = std::find(kSeverities.begin(), kSeverities.end(), text); it != kSeverities.end()) {
    f.kind = FailOn::Kind::kSeverity;
    f.min_severity = static_cast<int>(it - kSeverities.begin());
  } else if (auto actions = parse_action_list(text)) {
    f.kind = FailOn::Kind::kAction;
    f.actions = std::move(*actions);
  } else {
    return std::nullopt;
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
    case FailOn::Kind::kAction: {
      bool named = std::find(policy.actions.begin(), policy.actions.end(), d.action.kind) != policy.actions.end();
      return named ? kExitUnrecognized : kExitDiagnosed;
    }
  }
  return kExitUnrecognized;
}

std::vector<std::string> fail_on_names() {
  std::vector<std::string> names = {"none", "unrecognized", "any"};
  names.insert(names.end(), kSeverities.begin(), kSeverities.end());
  names.insert(names.end(), kActionKinds.begin(), kActionKinds.end());
  return names;
}

std::string fail_on_choices() {
  return fmt::format("{}; action kinds may be joined with commas, e.g. stop,investigate", fmt::join(fail_on_names(), ", "));
}

}  // namespace firstfault
