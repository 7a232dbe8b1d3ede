#include <catch2/catch.hpp>

#include "firstfault/signatures/loader.h"
#include "test_support.h"

using namespace firstfault;

namespace {
const char* kShared = R"(patterns:
  - name: shared_timeout
    regex: 'Watchdog caught collective operation timeout'
    positive: ['[rank1]:[E1003 18:37:01.832146912 ProcessGroupNCCL.cpp:607] [Rank 1] Watchdog caught collective operation timeout: x']
    negative: ['all good']
)";

std::string entry(const std::string& id, const std::string& extra = "", const std::string& regex = "boom (?P<what>\\w+)") {
  return "id: " + id + R"(
title: Test entry
category: memory
severity: high
action: stop
patterns:
  - name: root_line
    role: root
    regex: ')" + regex + R"('
    positive: ['[rank0]: boom here']
    negative: ['nothing']
  - use: shared_timeout
    role: cascade
root_cause: x
confirm: [x]
fix: x
prevention: [x]
references: ['https://example.org/x']
examples:
  - log: kb/x.log
    initiating_rank: 0
)" + extra;
}

Library load(const std::vector<SourceFile>& files, std::vector<LoadProblem>& problems) {
  return load_sources(files, problems);
}

bool has(const std::vector<LoadProblem>& ps, const std::string& needle) {
  for (const auto& p : ps)
    if (p.format().find(needle) != std::string::npos) return true;
  return false;
}
}  // namespace

TEST_CASE("loader: a valid entry loads with shared and local patterns") {
  std::vector<LoadProblem> problems;
  Library lib = load({{"signatures/common/s.yaml", kShared}, {"signatures/memory/good.yaml", entry("good")}}, problems);
  for (const auto& p : problems) INFO(p.format());
  REQUIRE(problems.empty());
  REQUIRE(lib.entries.size() == 1);
  const Entry& e = lib.entries[0];
  CHECK(e.refs.size() == 2);
  CHECK(lib.patterns[e.refs[1].def].name == "shared_timeout");
  CHECK(e.match.any.size() == 1);  // default rule: any root pattern
  CHECK(e.examples[0].initiating_rank == 0);
}

TEST_CASE("loader: unknown key, with file:line:col") {
  std::vector<LoadProblem> problems;
  load({{"signatures/common/s.yaml", kShared}, {"signatures/memory/bad.yaml", entry("bad", "colour: red\n")}}, problems);
  REQUIRE(has(problems, "signatures/memory/bad.yaml:22:1: unknown key 'colour' in an entry"));
}

TEST_CASE("loader: an escape sequence in a key name is not echoed to the terminal") {
  std::vector<LoadProblem> problems;
  load({{"signatures/common/s.yaml", kShared},
        {"signatures/memory/bad.yaml", entry("bad", "\"\\e]0;pwned\\a\\e[31mcolour\": red\n")}},
       problems);
  REQUIRE(has(problems, "signatures/memory/bad.yaml:22:1: unknown key"));
  for (const auto& p : problems) {
    INFO(p.format());
    CHECK(p.format().find('\x1b') == std::string::npos);
    CHECK(p.format().find('\a') == std::string::npos);
  }
}

TEST_CASE("loader: invalid regex, missing field, bad role, id/file mismatch") {
  std::vector<LoadProblem> problems;
  load({{"signatures/common/s.yaml", kShared}, {"signatures/memory/bad.yaml", entry("bad", "", "boom (unclosed")}}, problems);
  CHECK(has(problems, "invalid regex for pattern 'bad/root_line'"));
  std::vector<LoadProblem> p2;
  std::string e = entry("nofix");
  e.replace(e.find("fix: x\n"), 7, "");
  load({{"signatures/common/s.yaml", kShared}, {"signatures/memory/nofix.yaml", e}}, p2);
  CHECK(has(p2, "missing required key 'fix'"));
  std::vector<LoadProblem> p3;
  load({{"signatures/common/s.yaml", kShared}, {"signatures/memory/other.yaml", entry("mismatch")}}, p3);
  CHECK(has(p3, "differs from the file name"));
}

TEST_CASE("loader: sample lines that do not behave are errors") {
  std::vector<LoadProblem> problems;
  load({{"signatures/common/s.yaml", kShared}, {"signatures/memory/s.yaml", entry("s", "", "never matches")}}, problems);
  CHECK(has(problems, "does not match its positive sample"));
  std::vector<LoadProblem> p2;
  load({{"signatures/common/s.yaml", kShared}, {"signatures/memory/n.yaml", entry("n", "", "o")}}, p2);
  CHECK(has(p2, "matches its negative sample"));
}

TEST_CASE("loader: duplicate ids in one origin are errors; an extra library overrides a built-in") {
  std::vector<LoadProblem> problems;
  load({{"signatures/common/s.yaml", kShared}, {"signatures/memory/d.yaml", entry("d")}, {"signatures/memory/d.yaml", entry("d")}},
       problems);
  CHECK(has(problems, "duplicate id 'd'"));
  std::vector<LoadProblem> p2;
  SourceFile builtin{"signatures/memory/d.yaml", entry("d"), true};
  std::string replaced = entry("d");
  replaced.replace(replaced.find("title: Test entry"), 17, "title: Replaced");
  SourceFile user{"/home/u/sigs/memory/d.yaml", replaced, false};
  Library lib = load({{"signatures/common/s.yaml", kShared, true}, builtin, user}, p2);
  REQUIRE(p2.empty());
  REQUIRE(lib.entries.size() == 1);
  CHECK(lib.entries[0].title == "Replaced");
}

TEST_CASE("loader: every problem is listed, not only the first") {
  std::vector<LoadProblem> problems;
  std::string e = entry("many", "colour: red\nshape: round\n", "boom (unclosed");
  load({{"signatures/common/s.yaml", kShared}, {"signatures/memory/many.yaml", e}}, problems);
  CHECK(problems.size() >= 3);
}

TEST_CASE("loader: unknown shared pattern, related id and YAML syntax errors") {
  std::vector<LoadProblem> problems;
  load({{"signatures/memory/u.yaml", entry("u", "related: [nope]\n")}}, problems);
  CHECK(has(problems, "unknown shared pattern 'shared_timeout'"));
  CHECK(has(problems, "related id 'nope' does not exist"));
  std::vector<LoadProblem> p2;
  load({{"signatures/memory/y.yaml", "id: [unclosed\n"}}, p2);
  CHECK(has(p2, "YAML syntax error"));
}

TEST_CASE("loader: captures on a pattern whose 'use' names nothing are reported, not read") {
  // Found by fuzz_signatures: the unresolved ref pointed at pattern 0 of an empty library.
  std::string only_unknown = entry("cap");
  size_t from = only_unknown.find("patterns:\n"), to = only_unknown.find("root_cause:");
  only_unknown.replace(from, to - from,
                       "patterns:\n  - use: no_such_pattern\n    role: root\n"
                       "match:\n  captures:\n    no_such_pattern: {rank: '\\d+'}\n");
  std::vector<LoadProblem> problems;
  Library lib = load({{"signatures/memory/cap.yaml", only_unknown}}, problems);
  CHECK(has(problems, "unknown shared pattern 'no_such_pattern'"));
  CHECK(lib.patterns.empty());
  for (const Entry& e : lib.entries) CHECK(e.match.captures.empty());
}

TEST_CASE("loader: the built-in library is valid") {
  std::vector<LoadProblem> problems;
  Library lib = load_library({}, problems);
  for (const auto& p : problems) INFO(p.format());
  CHECK(problems.empty());
  CHECK(lib.entries.size() >= 8);
}

TEST_CASE("loader: scope is rank (default) or job; anything else is an error with its place") {
  std::vector<LoadProblem> problems;
  Library lib = load({{"signatures/common/s.yaml", kShared},
                      {"signatures/memory/cfg.yaml", entry("cfg", "scope: job\n")},
                      {"signatures/memory/plain.yaml", entry("plain")}},
                     problems);
  for (const auto& p : problems) INFO(p.format());
  REQUIRE(problems.empty());
  CHECK(lib.find_entry("cfg")->job_scope);
  CHECK_FALSE(lib.find_entry("plain")->job_scope);
  std::vector<LoadProblem> p2;
  load({{"signatures/common/s.yaml", kShared}, {"signatures/memory/bad.yaml", entry("bad", "scope: node\n")}}, p2);
  CHECK(has(p2, "signatures/memory/bad.yaml:22:8: unknown scope 'node' (rank, job)"));
}

TEST_CASE("loader: action is required and one of restart, restart-excluding, stop, investigate") {
  std::string without = entry("noaction");
  without.replace(without.find("action: stop\n"), 13, "");
  std::string reboot = entry("reboot");
  reboot.replace(reboot.find("action: stop"), 12, "action: reboot");
  std::string excluding = entry("excluding");
  excluding.replace(excluding.find("action: stop"), 12, "action: restart-excluding");
  std::vector<LoadProblem> problems;
  Library lib = load({{"signatures/common/s.yaml", kShared},
                      {"signatures/memory/noaction.yaml", without},
                      {"signatures/memory/reboot.yaml", reboot},
                      {"signatures/memory/excluding.yaml", excluding},
                      {"signatures/memory/plain.yaml", entry("plain")}},
                     problems);
  for (const auto& p : problems) INFO(p.format());
  CHECK(problems.size() == 2);
  // The file, where, and what would be valid.
  CHECK(has(problems, "signatures/memory/noaction.yaml:1:1: missing required key 'action' (restart, restart-excluding, "
                      "stop, investigate: what a scheduler should do with a job that failed this way)"));
  CHECK(has(problems, "signatures/memory/reboot.yaml:5:9: unknown action 'reboot' (restart, restart-excluding, stop, investigate)"));
  CHECK(lib.find_entry("excluding")->action == ActionKind::kRestartExcluding);
  CHECK(lib.find_entry("plain")->action == ActionKind::kStop);
  for (const char* name : {"restart", "restart-excluding", "stop", "investigate"})
    CHECK(action_kind_name(*parse_action_kind(name)) == std::string(name));
  CHECK_FALSE(parse_action_kind("restart_excluding"));
}

TEST_CASE("LazyRegex: first compiled small, a hot regex gets a DFA budget, and the old one stays valid") {
  LazyRegex re("(?:step|iter)\\s+(\\d+)\\b.*loss");
  const RE2* first = re.get();
  REQUIRE(first);
  int64_t granted = LazyRegex::hot_bytes_granted();
  for (uint32_t i = 0; i < kHotRegexUses + 8; ++i) REQUIRE(re.get());
  const RE2* hot = re.get();
  if (granted + kHotRegexMemory <= kHotRegexPool) {  // the pool had room (other tests may have spent it)
    CHECK(hot != first);
    CHECK(LazyRegex::hot_bytes_granted() == granted + kHotRegexMemory);
  }
  // A pointer a matching thread took before the upgrade still works.
  CHECK(RE2::PartialMatch("step 12 loss 2.0", *first));
  CHECK(RE2::PartialMatch("step 12 loss 2.0", *hot));
  CHECK(LazyRegex::hot_bytes_granted() <= kHotRegexPool);
}
