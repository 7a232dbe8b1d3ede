// `firstfault new`: the start of a user's own failure entry, in the format `check` validates
// (docs/signature-format.md), with its example log beside it.
#include <fmt/format.h>

#include <filesystem>
#include <fstream>

#include "firstfault/app/commands.h"
#include "firstfault/signatures/library.h"
#include "firstfault/util/strings.h"

namespace firstfault {

namespace fs = std::filesystem;

namespace {

bool valid_id(const std::string& id) {
  return !id.empty() && id.front() != '-' &&
         id.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789-") == std::string::npos;
}

// Every value a person must write is REPLACE-marked: the sample lines do not match the pattern
// and the example log shows no failure, so `check` fails until they are filled in.
std::string entry_template(const std::string& id, const std::string& category) {
  return fmt::format(R"(id: {0}
title: "REPLACE: what failed, in one line a person on call understands"
category: {1}
severity: high          # critical | high | medium | low
action: investigate     # restart | restart-excluding | stop | investigate (docs/signature-format.md, "Action")
systems: []             # free-form tags: pytorch, nccl, slurm, ...
patterns:
  - name: root_line
    role: root          # root | cascade | teardown | context
    # RE2 syntax; (?P<rank>\d+), (?P<host>...) and the other captures of docs/signature-format.md
    # tell the correlator which rank or host the line is about.
    regex: 'REPLACE: a regex for the line that shows this failure'
    positive:
      - 'REPLACE: a real log line, with its prefixes, that the regex must match'
    negative:
      - 'REPLACE: a near miss that the regex must not match'
  - use: nccl_watchdog_timeout   # a shared pattern (signatures/common); other ranks' timeouts are collateral
    role: cascade
root_cause: |
  REPLACE: the mechanism, in a paragraph.
confirm:
  - "REPLACE: a command to run, or a log line to look for"
fix: |
  REPLACE: the settings, flags or code changes that fix it.
prevention:
  - "REPLACE: what stops it coming back"
references:
  - https://REPLACE.example/the-report-or-source-this-comes-from
related: []
examples:
  - log: {0}.log        # relative to the check's example directory (--testdata)
    initiating_rank: null
)",
                     id, category);
}

std::string example_template(const std::string& id) {
  return fmt::format("# REPLACE: a real log of the failure '{}' (the lines before it, the failing line, the other\n"
                     "# ranks' reactions). `firstfault check` diagnoses it and expects this entry.\n",
                     id);
}

}  // namespace

int run_new(const NewOptions& o, std::ostream& out) {
  if (!valid_id(o.id)) {
    fmt::print(stderr, "firstfault: new: '{}' is not an entry id (lower-case letters, digits and '-')\n", o.id);
    return kExitUsage;
  }
  if (std::find(kCategories.begin(), kCategories.end(), o.category) == kCategories.end()) {
    auto close = closest_matches(o.category, kCategories, 1);
    fmt::print(stderr, "firstfault: new: unknown category '{}'{}; the categories are: {}\n", o.category,
               close.empty() ? "" : fmt::format(" (did you mean '{}'?)", close.front()), fmt::join(kCategories, ", "));
    return kExitUsage;
  }
  fs::path yaml = fs::path(o.dir) / o.category / (o.id + ".yaml");
  fs::path log = fs::path(o.dir) / (o.id + ".log");
  for (const fs::path& p : {yaml, log})
    if (fs::exists(p)) {
      fmt::print(stderr, "firstfault: new: {} exists; not overwritten\n", p.string());
      return kExitUsage;
    }
  std::error_code ec;
  fs::create_directories(yaml.parent_path(), ec);
  std::ofstream(yaml) << entry_template(o.id, o.category);
  std::ofstream(log) << example_template(o.id);
  if (ec || !fs::exists(yaml) || !fs::exists(log)) {
    fmt::print(stderr, "firstfault: new: cannot write into {}{}\n", o.dir, ec ? ": " + ec.message() : "");
    return kExitUsage;
  }
  out << fmt::format("wrote {} and {}\nfill in every REPLACE, then: firstfault check {}\n", yaml.string(), log.string(),
                     o.dir);
  return 0;
}

}  // namespace firstfault
