#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "firstfault/app/commands.h"
#include "firstfault/app/exit_policy.h"
#include "firstfault/app/pipeline.h"
#include "firstfault/render/ci_render.h"
#include "firstfault/render/render.h"
#include "firstfault/util/safe_text.h"
#include "firstfault/util/sha256.h"
#include "test_support.h"

using namespace firstfault;
using nlohmann::json;

namespace {

std::string kb(const std::string& name) { return test::source_dir() + "/testdata/kb/" + name; }
std::string e2e(const std::string& name) { return test::source_dir() + "/testdata/e2e/" + name; }

struct Fixture : test::RepoEngine {
  Diagnosis run(const std::vector<std::string>& paths) {
    Diagnosis d = analyze_paths(paths, matcher, {}).diagnosis;
    neutralize_diagnosis(d);
    return d;
  }
};

using test::slurp;

std::vector<std::string> lines_of(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string l; std::getline(ss, l);) out.push_back(l);
  return out;
}

// Runs `diagnose` as the CLI would, with GITHUB_STEP_SUMMARY set or unset.
int diagnose(DiagnoseOptions o, std::string& out, const char* step_summary = nullptr) {
  if (step_summary) ::setenv("GITHUB_STEP_SUMMARY", step_summary, 1);
  else ::unsetenv("GITHUB_STEP_SUMMARY");
  std::ostringstream os;
  int rc = run_diagnose(o, os);
  ::unsetenv("GITHUB_STEP_SUMMARY");
  out = os.str();
  return rc;
}

// The line the report should point at: the initiating evidence, or for a rank that went silent
// without any evidence line, that rank's last line.
std::pair<std::string, uint64_t> anchor_of(const Diagnosis& d) {
  if (d.initiating.first_evidence) return {d.initiating.first_evidence->file, d.initiating.first_evidence->line};
  if (!d.evidence.empty()) return {d.evidence.front().file, d.evidence.front().line};
  for (const auto& r : d.ranks)
    if (d.initiating.rank && r.rank == *d.initiating.rank) return {r.last_file, r.last_line_no};
  return {"", 0};
}

// Structural SARIF 2.1.0 check of what GitHub code scanning and other viewers rely on.
void check_sarif(const json& s) {
  REQUIRE(s.at("version") == "2.1.0");
  REQUIRE(s.at("$schema").get<std::string>().find("sarif-schema-2.1.0.json") != std::string::npos);
  REQUIRE(s.at("runs").is_array());
  REQUIRE(s["runs"].size() == 1);
  const json& run = s["runs"][0];
  const json& driver = run.at("tool").at("driver");
  CHECK(driver.at("name") == "firstfault");
  const json& rules = driver.at("rules");
  REQUIRE(rules.is_array());
  std::set<std::string> ids;
  for (const auto& r : rules) {
    CHECK(r.at("id").is_string());
    CHECK(r.at("shortDescription").at("text").is_string());
    CHECK(ids.insert(r["id"].get<std::string>()).second);
  }
  for (const auto& res : run.at("results")) {
    std::string rule = res.at("ruleId");
    CHECK(ids.count(rule) == 1);
    size_t index = res.at("ruleIndex");
    REQUIRE(index < rules.size());
    CHECK(rules[index]["id"] == rule);
    std::string level = res.at("level");
    CHECK((level == "error" || level == "warning" || level == "note" || level == "none"));
    CHECK_FALSE(res.at("message").at("text").get<std::string>().empty());
    for (const auto& loc : res.at("locations")) {
      const json& pl = loc.at("physicalLocation");
      CHECK_FALSE(pl.at("artifactLocation").at("uri").get<std::string>().empty());
      CHECK(pl.at("region").at("startLine").get<int64_t>() >= 1);
    }
  }
  CHECK(run.at("invocations").at(0).at("executionSuccessful").is_boolean());
}

}  // namespace

TEST_CASE("ci: sha256 matches the FIPS 180-4 test vectors") {
  CHECK(sha256_hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  CHECK(sha256_hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  CHECK(sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq") ==
        "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  CHECK(sha256_hex(std::string(1000000, 'a')) == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST_CASE("ci: GitHub workflow command escaping") {
  CHECK(github_escape_data("50% done\r\nnext") == "50%25 done%0D%0Anext");
  CHECK(github_escape_property("a:b,c%\n") == "a%3Ab%2Cc%25%0A");
  CHECK(github_escape_data("::set-env name=x::y") == "::set-env name=x::y");  // data after "::" is never parsed
}

TEST_CASE("ci: CI commands and terminal escapes in log text come out inert") {
  CHECK(neutralize_ci_commands("::set-env name=A::b") == ": :set-env name=A::b");
  CHECK(neutralize_ci_commands("  \t::add-mask::x") == "  \t: :add-mask::x");
  CHECK(neutralize_ci_commands("progress\r::stop-commands::t") == "progress\r: :stop-commands::t");
  CHECK(neutralize_ci_commands("\x1b[31m::error::x") == "\x1b[31m: :error::x");
  CHECK(neutralize_ci_commands("\xEF\xBB\xBF::warning::x") == "\xEF\xBB\xBF: :warning::x");
  CHECK(neutralize_ci_commands("log ##vso[task.setvariable variable=A]b") == "log ##vso [task.setvariable variable=A]b");
  CHECK(neutralize_ci_commands("##VSO[task.complete]") == "##VSO [task.complete]");
  CHECK(neutralize_ci_commands("##[group]x") == "## [group]x");
  CHECK(neutralize_ci_commands("c10d::ProcessGroupNCCL::abort") == "c10d::ProcessGroupNCCL::abort");
  std::string once = neutralize_ci_commands("::a ##vso[b");
  CHECK(neutralize_ci_commands(once) == once);  // idempotent
  CHECK(safe_line("\x1b]0;title\x07\x1b[2J::set-output name=a::b\x07") == ": :set-output name=a::b");
}

TEST_CASE("ci: no output format lets a hostile log drive the terminal or the CI runner") {
  Fixture f;
  Diagnosis d = f.run({e2e("ci-injection.log")});
  REQUIRE(d.verdict == "diagnosed");
  CiRenderOptions co;
  TextStyle verbose{false, true};
  std::vector<std::pair<std::string, std::string>> outputs = {
      {"text", render_text(d, f.lib, verbose)},        {"json", dump_json(diagnosis_to_json(d, f.lib))},
      {"github", render_github(d, f.lib, co)},         {"markdown", render_markdown(d, f.lib, co)},
      {"sarif", render_sarif(d, f.lib, co).dump(2)},   {"gitlab", render_gitlab(d, f.lib, co).dump(2)},
      {"junit", render_junit(d, f.lib, co)}};
  for (const auto& [format, out] : outputs) {
    INFO(format);
    CHECK(out.find('\x1b') == std::string::npos);
    CHECK(out.find('\r') == std::string::npos);
    CHECK(out.find("##vso[") == std::string::npos);
    CHECK(out.find("##[") == std::string::npos);
    size_t own = 0;
    for (const auto& l : lines_of(out)) {
      std::string_view t = l;
      while (!t.empty() && (t.front() == ' ' || t.front() == '\t')) t.remove_prefix(1);
      if (t.substr(0, 2) != "::") continue;
      // Only the renderer's own annotation may start a line with "::".
      CHECK(format == "github");
      CHECK((t.substr(0, 8) == "::error " || t.substr(0, 10) == "::warning " || t.substr(0, 9) == "::notice "));
      ++own;
    }
    if (format == "github") CHECK(own == 1);
  }
  // The log text is still there, visibly defused.
  CHECK(outputs[3].second.find(": :add-mask::torch.OutOfMemoryError") != std::string::npos);
}

TEST_CASE("ci: github format points one ::error at the initiating evidence line") {
  Fixture f;
  Diagnosis d = f.run({kb("nccl-allgather-uneven-batches.log")});
  std::string out = render_github(d, f.lib, {});
  auto ls = lines_of(out);
  REQUIRE(ls.size() == 1);
  const Evidence& first = *d.initiating.first_evidence;
  std::string expect = "::error file=" + github_escape_property(first.file) + ",line=" + std::to_string(first.line) +
                       ",title=NCCL hang on AllGather%3A one rank ran out of batches (uneven data%2C drop_last=False) "
                       "[nccl-allgather-uneven-batches]::";
  CHECK(ls[0].substr(0, expect.size()) == expect);
  CHECK(ls[0].find("Initiating rank: 3%0A") != std::string::npos);
  CHECK(ls[0].find("Collateral: ranks 0-2 timed out") != std::string::npos);
  CHECK(ls[0].find("%0AFix: Make every rank run the same number of steps") != std::string::npos);
}

TEST_CASE("ci: github format appends a Markdown summary to GITHUB_STEP_SUMMARY") {
  test::TempDir dir;
  std::string summary = dir.write("summary.md", "# earlier step\n");
  DiagnoseOptions o;
  o.format = "github";
  o.paths = {kb("nccl-allgather-uneven-batches.log")};
  std::string out;
  CHECK(diagnose(o, out, summary.c_str()) == kExitDiagnosed);
  CHECK(out.substr(0, 8) == "::error ");
  std::string md = slurp(summary);
  CHECK(md.substr(0, 15) == "# earlier step\n");  // appended, not overwritten
  CHECK(md.find("**Verdict:** diagnosed `nccl-allgather-uneven-batches`") != std::string::npos);
  CHECK(md.find("| Initiating rank | **3**") != std::string::npos);
  CHECK(md.find("| Collateral | ranks 0-2 timed out in \\_ALLGATHER\\_BASE SeqNum 91873 waiting for rank 3 |") !=
        std::string::npos);
  CHECK(md.find("**Fix:** Make every rank run the same number of steps") != std::string::npos);

  // An unwritable summary is an error naming the file; the annotations are still printed.
  std::string bad = dir.path() + "/no/such/dir/summary.md";
  CHECK(diagnose(o, out, bad.c_str()) == kExitUsage);
  CHECK(out.substr(0, 8) == "::error ");
}

TEST_CASE("ci: SARIF is structurally valid 2.1.0 for every example log of the library") {
  Fixture f;
  size_t diagnosed = 0;
  for (const auto& e : f.lib.entries) {
    for (const auto& x : e.examples) {
      Diagnosis d = f.run({test::source_dir() + "/testdata/" + x.log});
      INFO(x.log);
      json s = render_sarif(d, f.lib, {});
      check_sarif(s);
      if (d.verdict != "diagnosed") continue;
      ++diagnosed;
      const json& res = s["runs"][0]["results"][0];
      CHECK(res["ruleId"] == d.entry->id);
      auto [file, line] = anchor_of(d);
      REQUIRE(line > 0);
      const json& pl = res["locations"][0]["physicalLocation"];
      CHECK(pl["artifactLocation"]["uri"] == path_to_uri(file));
      CHECK(pl["region"]["startLine"] == line);
    }
  }
  CHECK(diagnosed > 100);
}

TEST_CASE("ci: SARIF reports unrecognised logs and unreadable inputs in their own places") {
  Fixture f;
  Diagnosis u = f.run({e2e("unrecognized.log")});
  REQUIRE(u.verdict == "unrecognized");
  json s = render_sarif(u, f.lib, {});
  check_sarif(s);
  CHECK(s["runs"][0]["results"][0]["ruleId"] == "firstfault.unrecognized");
  CHECK(s["runs"][0]["results"][0]["level"] == "warning");

  Diagnosis m = f.run({kb("cuda-oom.log"), test::source_dir() + "/testdata/does-not-exist.log"});
  json s2 = render_sarif(m, f.lib, {});
  check_sarif(s2);
  const json& inv = s2["runs"][0]["invocations"][0];
  CHECK(inv["executionSuccessful"] == false);
  CHECK(inv["toolExecutionNotifications"][0]["message"]["text"].get<std::string>().find("does-not-exist.log") !=
        std::string::npos);
  CHECK(s2["runs"][0]["results"][0]["ruleId"] == "cuda-oom");  // the readable input is still diagnosed
}

TEST_CASE("ci: SARIF URIs are percent-encoded, absolute paths become file: URIs") {
  CHECK(path_to_uri("logs/rank 0.log") == "logs/rank%200.log");
  CHECK(path_to_uri("/var/log/job#1.log") == "file:///var/log/job%231.log");
  CHECK(path_to_uri("a/b_c-d.e~f") == "a/b_c-d.e~f");
}

TEST_CASE("ci: GitLab fingerprints are stable across runs and line shifts, and distinct per issue") {
  Fixture f;
  test::TempDir dir;
  std::string log = slurp(kb("cuda-oom.log"));
  std::string a = dir.write("a/job.log", log);
  // The same failure in a later run: more lines before it, other timestamps and pids.
  std::string shifted = "2024-11-21 09:00:00 extra line\n2024-11-21 09:00:01 another\n" + log;
  shifted = std::regex_replace(shifted, std::regex("387746"), "912345");
  std::string b = dir.write("b/job.log", shifted);
  json ja = render_gitlab(f.run({a}), f.lib, {});
  json jb = render_gitlab(f.run({b}), f.lib, {});
  json jb2 = render_gitlab(f.run({b}), f.lib, {});
  REQUIRE(ja.size() == 1);
  REQUIRE(jb.size() == 1);
  CHECK(ja[0]["location"]["lines"]["begin"] != jb[0]["location"]["lines"]["begin"]);
  CHECK(jb[0]["fingerprint"] == jb2[0]["fingerprint"]);
  // a/job.log and b/job.log differ only in the directory, which is part of the identity.
  CHECK(ja[0]["fingerprint"] != jb[0]["fingerprint"]);
  std::string c = dir.write("a/job.log", shifted);
  CHECK(render_gitlab(f.run({c}), f.lib, {})[0]["fingerprint"] == ja[0]["fingerprint"]);

  for (const auto& issue : ja) {
    for (const char* k : {"description", "check_name", "fingerprint", "severity"}) CHECK(issue.at(k).is_string());
    CHECK(issue["location"]["path"].is_string());
    CHECK(issue["location"]["lines"]["begin"].get<int64_t>() >= 1);
    std::string sev = issue["severity"];
    CHECK((sev == "info" || sev == "minor" || sev == "major" || sev == "critical" || sev == "blocker"));
  }
  CHECK(issue_fingerprint("x", "f.log", "a 1") != issue_fingerprint("y", "f.log", "a 1"));
  CHECK(normalize_for_fingerprint("[E1107 10:02:41.3]  pid 42 at 0x7f3a\t done ") == "[E# #:#:#.#] pid # at 0x# done");
}

TEST_CASE("ci: GitLab report lists unreadable inputs next to the diagnosis, with unique fingerprints") {
  Fixture f;
  json j = render_gitlab(f.run({kb("cuda-oom.log"), test::source_dir() + "/testdata/does-not-exist.log"}), f.lib, {});
  REQUIRE(j.size() == 2);
  CHECK(j[0]["check_name"] == "firstfault.input-error");
  CHECK(j[1]["check_name"] == "cuda-oom");
  CHECK(j[0]["fingerprint"] != j[1]["fingerprint"]);
}

TEST_CASE("ci: JUnit has one failed test case per diagnosed job and escapes log text") {
  Fixture f;
  Diagnosis d = f.run({kb("nccl-allgather-uneven-batches.log")});
  std::string x = render_junit(d, f.lib, {});
  CHECK(x.substr(0, 38) == "<?xml version=\"1.0\" encoding=\"UTF-8\"?>");
  CHECK(x.find("<testsuites name=\"firstfault\" tests=\"1\" failures=\"1\" errors=\"0\">") != std::string::npos);
  CHECK(x.find("<testcase classname=\"firstfault.collective-mismatch\"") != std::string::npos);
  CHECK(x.find("<failure type=\"nccl-allgather-uneven-batches\" message=\"NCCL hang on AllGather") != std::string::npos);
  // The evidence line holds quotes and braces; they are escaped, never raw.
  CHECK(x.find("{&apos;train_runtime&apos;: 1843.2207") != std::string::npos);
  CHECK(x.find("Initiating rank: 3\n") != std::string::npos);
  // Tags balance.
  for (const char* tag : {"testsuites", "testsuite", "testcase", "failure", "properties"}) {
    std::string open = std::string("<") + tag + (std::string(tag) == "properties" ? ">" : " ");
    std::string close = std::string("</") + tag + ">";
    size_t n_open = 0, n_close = 0;
    for (size_t p = x.find(open); p != std::string::npos; p = x.find(open, p + 1)) ++n_open;
    for (size_t p = x.find(close); p != std::string::npos; p = x.find(close, p + 1)) ++n_close;
    INFO(tag);
    CHECK(n_open == 1);
    CHECK(n_close == 1);
  }
  CHECK(xml_escape("a<b>&\"'\x01\xEF\xBF\xBF") == "a&lt;b&gt;&amp;&quot;&apos;");

  Diagnosis clean = f.run({e2e("clean.log")});
  std::string xc = render_junit(clean, f.lib, {});
  CHECK(xc.find("tests=\"1\" failures=\"0\" errors=\"0\"") != std::string::npos);
  CHECK(xc.find("<failure") == std::string::npos);

  Diagnosis missing = f.run({test::source_dir() + "/testdata/does-not-exist.log"});
  std::string xm = render_junit(missing, f.lib, {});
  CHECK(xm.find("tests=\"1\" failures=\"0\" errors=\"1\"") != std::string::npos);
  CHECK(xm.find("<error type=\"input-error\"") != std::string::npos);
}

TEST_CASE("ci: Markdown keeps log text in code and cannot be broken out of by backticks or mentions") {
  Fixture f;
  test::TempDir dir;
  std::string p = dir.write("job.log",
                            "[rank1]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB ``` @team "
                            "<img src=x> GPU 0 has a total capacity of 79.10 GiB\n");
  Diagnosis d = f.run({p});
  REQUIRE(d.verdict == "diagnosed");
  std::string md = render_markdown(d, f.lib, {});
  CHECK(md.find("\n````text\n[rank1]: torch.OutOfMemoryError") != std::string::npos);  // fence longer than ```
  CHECK(md.find("\n````\n") != std::string::npos);
  CHECK(md.find("### firstfault: CUDA out of memory on one rank") == 0);

  Diagnosis u = f.run({e2e("unrecognized.log")});
  std::string mu = render_markdown(u, f.lib, {});
  CHECK(mu.find("**Verdict:** unrecognized") != std::string::npos);
  CiRenderOptions red;
  red.redacted = true;
  red.redaction = RedactLevel::kAll;
  CHECK(render_markdown(u, f.lib, red).find("secrets are masked (--redact=all; --no-redact shows them)") != std::string::npos);
}

TEST_CASE("ci: every format carries the action, the excluded host and GPU included") {
  DiagnoseOptions o;
  o.paths = {kb("xid-79-gpu-fell-off-bus.log")};
  o.redact = RedactLevel::kNone;
  const std::string line = "Action: restart excluding gpu-a17 (GPU 0000:9a:00) — GPU fell off the PCIe bus (Xid 79)";
  for (const char* format : {"text", "github", "junit"}) {
    o.format = format;
    std::string out;
    REQUIRE(diagnose(o, out) == 0);
    INFO(format << ":\n" << out);
    CHECK(out.find(line) != std::string::npos);
  }
  o.format = "markdown";
  std::string md;
  REQUIRE(diagnose(o, md) == 0);
  CHECK(md.find("| Action | **restart excluding `gpu-a17` (GPU `0000:9a:00`)** — GPU fell off the PCIe bus") !=
        std::string::npos);
  o.format = "sarif";
  std::string sarif;
  REQUIRE(diagnose(o, sarif) == 0);
  json action = json::parse(sarif)["runs"][0]["results"][0]["properties"]["action"];
  CHECK(action["kind"] == "restart-excluding");
  CHECK(action["excludeHosts"] == json::array({"gpu-a17"}));
  CHECK(action["excludeGpus"] == json::array({"0000:9a:00"}));
  o.format = "json";
  std::string j;
  REQUIRE(diagnose(o, j) == 0);
  CHECK(json::parse(j)["action"]["exclude_gpus"] == json::array({"0000:9a:00"}));
  // An unrecognised log is investigated, in every format.
  o.paths = {e2e("unrecognized.log")};
  for (const char* format : {"text", "github", "markdown", "junit"}) {
    o.format = format;
    std::string out;
    diagnose(o, out);
    INFO(format << ":\n" << out);
    CHECK(out.find("investigate") != std::string::npos);
  }
}

TEST_CASE("ci: --fail-on decides when diagnose exits non-zero") {
  REQUIRE(parse_fail_on("none"));
  REQUIRE(parse_fail_on("high"));
  CHECK_FALSE(parse_fail_on("severe"));
  CHECK_FALSE(parse_fail_on(""));
  REQUIRE(parse_fail_on("stop,investigate"));
  CHECK(parse_fail_on("stop,investigate")->actions == std::vector<ActionKind>{ActionKind::kStop, ActionKind::kInvestigate});
  CHECK_FALSE(parse_fail_on("stop,high"));  // only action kinds join
  CHECK_FALSE(parse_fail_on("stop,"));

  struct Case {
    const char* policy;
    std::string log;
    int rc;
  };
  // cuda-oom is severity high; gpu-hw-slowdown-thermal-power is lower.
  // Actions: cuda-oom stops, xid-79 restarts excluding its host, unrecognised and clean investigate.
  std::string oom = kb("cuda-oom.log"), unrec = e2e("unrecognized.log"), clean = e2e("clean.log");
  std::string xid = kb("xid-79-gpu-fell-off-bus.log");
  for (const Case& c : std::vector<Case>{{"unrecognized", oom, 0},
                                         {"unrecognized", unrec, 1},
                                         {"unrecognized", clean, 1},
                                         {"none", oom, 0},
                                         {"none", unrec, 0},
                                         {"any", oom, 1},
                                         {"any", unrec, 1},
                                         {"any", clean, 0},
                                         {"critical", oom, 0},
                                         {"high", oom, 1},
                                         {"low", oom, 1},
                                         {"high", unrec, 0},
                                         {"stop", oom, 1},
                                         {"stop", xid, 0},
                                         {"restart-excluding", xid, 1},
                                         {"restart,restart-excluding", oom, 0},
                                         {"stop,investigate", oom, 1},
                                         {"stop,investigate", xid, 0},
                                         {"investigate", unrec, 1},
                                         {"investigate", clean, 1},
                                         {"stop", unrec, 0}}) {
    DiagnoseOptions o;
    o.format = "json";
    o.fail_on = c.policy;
    o.paths = {c.log};
    std::string out;
    INFO(c.policy << " " << c.log);
    CHECK(diagnose(o, out) == c.rc);
  }
  // Usage and input errors keep exit 2 whatever the policy.
  DiagnoseOptions o;
  o.fail_on = "none";
  o.paths = {test::source_dir() + "/testdata/does-not-exist.log"};
  std::string out;
  CHECK(diagnose(o, out) == kExitUsage);
  o.fail_on = "sometimes";
  CHECK(diagnose(o, out) == kExitUsage);
}

TEST_CASE("ci: every CI format masks personal data by default but keeps hosts; --redact=all and --no-redact") {
  test::TempDir dir;
  std::string log = dir.write("job.log",
                              "gpu-b:31790:31790 [0] NCCL INFO Bootstrap : Using eth0:192.168.10.11<0>\n"
                              "[rank3]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. "
                              "GPU 3 has a total capacity of 79.10 GiB of which 1.20 GiB is free. (run by alice@example.com from "
                              "/home/alice/exp)\n"
                              "[rank3]:   File \"/home/alice/train.py\", line 88, in <module>\n"
                              "[rank3]: HF_TOKEN=hf_abcdefghijklmnopqrstuvwxyzABCDEF contact alice@example.com\n");
  DiagnoseOptions o;
  o.paths = {log};
  for (const char* format : {"github", "markdown", "sarif", "gitlab", "junit"}) {
    o.format = format;
    o.redact.reset();
    std::string out;
    INFO(format);
    CHECK(diagnose(o, out) == kExitDiagnosed);
    CHECK(out.find("/home/alice") == std::string::npos);  // personal data: masked
    CHECK(out.find("alice@example.com") == std::string::npos);
    CHECK(out.find("hf_abcdefghij") == std::string::npos);
    o.redact = RedactLevel::kAll;
    CHECK(diagnose(o, out) == kExitDiagnosed);
    CHECK(out.find("gpu-b") == std::string::npos);
    o.redact = RedactLevel::kNone;
    CHECK(diagnose(o, out) == kExitDiagnosed);
    CHECK(out.find("/home/alice") != std::string::npos);
  }
  o.format = "json";
  o.redact.reset();
  std::string out;
  CHECK(diagnose(o, out) == kExitDiagnosed);
  CHECK(out.find("/home/alice") != std::string::npos);  // JSON is a local view: unmasked unless asked
  o.redact = RedactLevel::kAll;
  CHECK(diagnose(o, out) == kExitDiagnosed);
  CHECK(out.find("/home/alice") == std::string::npos);
}

TEST_CASE("ci: by default a CI report keeps the host to drain and says what it masked") {
  DiagnoseOptions o;
  o.paths = {kb("nccl-socket-ifname-wrong.log")};
  o.format = "markdown";
  std::string out;
  CHECK(diagnose(o, out) == kExitDiagnosed);
  CHECK(out.find("gpu-b") != std::string::npos);
  CHECK(out.find("--redact=pii") != std::string::npos);
  CHECK(out.find("--redact=all masks the rest") != std::string::npos);
}

TEST_CASE("ci: timeline defuses CI commands in both formats, as diagnose does") {
  test::TempDir dir;
  // A file per rank: a raw line is that rank's own line, and can be its last line.
  std::string log = dir.write("rank_0.log", "step 1\n::add-mask::secret-token\n");
  for (const char* format : {"text", "json"}) {
    TimelineOptions o;
    o.paths = {log};
    o.format = format;
    std::ostringstream out;
    run_timeline(o, out);
    INFO(format << ":\n" << out.str());
    CHECK(out.str().find("::add-mask") == std::string::npos);
    CHECK(out.str().find(": :add-mask") != std::string::npos);
  }
}
