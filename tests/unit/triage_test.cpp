#include <catch2/catch.hpp>

#include <algorithm>
#include <functional>

#include <cstdlib>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "firstfault/render/markdown.h"
#include "firstfault/triage/triage.h"
#include "firstfault/util/redact.h"
#include "firstfault/util/line_template.h"
#include "firstfault/reader/archive.h"
#include "test_support.h"

using namespace firstfault;

namespace {
std::string kb(const std::string& name) {
  std::ifstream in(test::source_dir() + "/testdata/kb/" + name + ".log", std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// `triage --format jsonl PATH` with `tweak` applied to the options (which may change the format); its whole output.
std::string triage_output(const std::string& path, const std::function<void(TriageOptions&)>& tweak = {}) {
  TriageOptions o;
  o.paths = {path};
  o.format = "jsonl";
  o.progress = false;
  if (tweak) tweak(o);
  std::ostringstream out;
  run_triage(o, out);
  return out.str();
}

struct Jobs {
  test::TempDir dir;
  Jobs() {
    dir.write("jobs/job-a/combined.log", kb("cuda-oom"));
    dir.write("jobs/job-b/combined.log", kb("host-oom-kill"));
    dir.write("jobs/job-c/combined.log", kb("nccl-collective-timeout"));
    dir.write("jobs/job-d/combined.log", kb("cuda-oom"));
    dir.write("jobs/job-e/out.log", "step 1\nTraceback (most recent call last):\nLabelMapError: no mapping for 'labels_123'\n");
    dir.write("jobs/job-f/out.log", "step 1\nTraceback (most recent call last):\nLabelMapError: no mapping for 'labels_456'\n");
    dir.write("jobs/job-g/out.log", "step 1 loss 2.0\n");
    // An archive holding two jobs (directories) and one corrupt gzip member among good ones.
    dir.write("arch/run-1/rank0.log", kb("xid-79-gpu-fell-off-bus"));
    dir.write("arch/run-2/rank0.log", kb("dataloader-shm-bus-error"));
    std::string cmd = "cd " + dir.path() + "/arch && tar czf ../jobs/archive.tar.gz run-1 run-2";
    REQUIRE(std::system(cmd.c_str()) == 0);
  }
  std::string run(TriageOptions o) {
    o.progress = false;
    std::ostringstream out;
    run_triage(o, out);
    return out.str();
  }
  TriageOptions opts(const std::string& format) {
    TriageOptions o;
    o.paths = {dir.path() + "/jobs"};
    o.format = format;
    return o;
  }
};
}  // namespace

TEST_CASE("triage: jobs are directories and archive members, grouped by failure") {
  Jobs j;
  std::string table = j.run(j.opts("table"));
  INFO(table);
  CHECK(table.find("9 job(s): 6 diagnosed, 2 unrecognized, 1 clean, 0 error(s)") != std::string::npos);
  CHECK(table.find("cuda-oom") != std::string::npos);
  CHECK(table.find("xid-79-gpu-fell-off-bus") != std::string::npos);
  // Both KeyErrors fall into one cluster: the numbers are masked.
  CHECK(table.find("     2  LabelMapError: no mapping for '<*>'") != std::string::npos);
}

TEST_CASE("triage: output does not depend on -j, and shards merge into the single-run output") {
  Jobs j;
  TriageOptions one = j.opts("jsonl");
  one.jobs = 1;
  TriageOptions two = j.opts("jsonl");
  two.jobs = 2;
  std::string single = j.run(one);
  CHECK(single == j.run(two));
  TriageOptions s1 = j.opts("jsonl"), s2 = j.opts("jsonl");
  s1.shard = "1/2";
  s2.shard = "2/2";
  std::string out1 = j.run(s1), out2 = j.run(s2);
  CHECK(!out1.empty());
  CHECK(!out2.empty());
  std::string f1 = j.dir.write("s1.jsonl", out1), f2 = j.dir.write("s2.jsonl", out2);
  TriageOptions merge;
  merge.format = "jsonl";
  merge.merge = {f1, f2};
  CHECK(j.run(merge) == single);
  merge.format = "table";
  TriageOptions table = j.opts("table");
  CHECK(j.run(merge) == j.run(table));
}

TEST_CASE("triage: an unreadable job is an error row and the rest is still processed") {
  Jobs j;
  TriageOptions o = j.opts("csv");
  o.paths.push_back(j.dir.path() + "/missing-job.log");
  j.dir.write("bad.tar.gz", "\x1f\x8b\x08\x00garbage-not-a-gzip-stream");
  o.paths.push_back(j.dir.path() + "/bad.tar.gz");
  std::string csv = j.run(o);
  INFO(csv);
  CHECK(csv.find("missing-job.log,error") != std::string::npos);
  CHECK(csv.find("bad.tar.gz,error,,,,,not a readable archive: ") != std::string::npos);  // was dropped in silence
  CHECK(csv.find("job-a,diagnosed,cuda-oom") != std::string::npos);
}

TEST_CASE("triage: every row says what to do with the job, in every format and after a merge") {
  Jobs j;
  TriageOptions csv = j.opts("csv");
  csv.paths.push_back(j.dir.path() + "/missing-job.log");
  std::string rows = j.run(csv);
  INFO(rows);
  CHECK(rows.rfind("job,verdict,id,category,severity,initiating_rank,error,action\n", 0) == 0);
  CHECK(rows.find("job-a,diagnosed,cuda-oom,memory,high,3,,stop\n") != std::string::npos);
  CHECK(rows.find("run-1,diagnosed,xid-79-gpu-fell-off-bus,hardware,critical,0,,restart-excluding\n") != std::string::npos);
  CHECK(rows.find("job-e,unrecognized,,,,,,investigate\n") != std::string::npos);
  CHECK(rows.find("missing-job.log,error,,,,,no such file or directory,\n") != std::string::npos);
  std::string table = j.run(j.opts("table"));
  CHECK(table.find("  critical  restart-excluding xid-79-gpu-fell-off-bus") != std::string::npos);
  std::string md = j.run(j.opts("markdown"));
  CHECK(md.find("| critical | restart-excluding | `xid-79-gpu-fell-off-bus` |") != std::string::npos);
  std::string jsonl = j.run(j.opts("jsonl"));
  CHECK(jsonl.find(R"("action":{"kind":"restart-excluding","exclude_hosts":["gpu-a17"],"exclude_gpus":["0000:9a:00"])") !=
        std::string::npos);
  CHECK(jsonl.find(R"("category":"hardware","action":"restart-excluding","count":1)") != std::string::npos);  // summary group
  // --merge reads the action back from the job lines.
  TriageOptions merge;
  merge.format = "csv";
  merge.merge = {j.dir.write("all.jsonl", jsonl)};
  CHECK(j.run(merge).find("run-1,diagnosed,xid-79-gpu-fell-off-bus,hardware,critical,0,,restart-excluding\n") !=
        std::string::npos);
}

namespace {
// Each job of a jsonl run as "name relative to the job root" -> "verdict id rank": the root is
// `root/` for a directory, `ARCHIVE!` for an archive's members (the archive itself with depth 0).
std::map<std::string, std::string> job_verdicts(const std::string& jsonl, const std::string& root) {
  std::map<std::string, std::string> out;
  std::istringstream lines(jsonl);
  for (std::string line; std::getline(lines, line);) {
    nlohmann::json j = nlohmann::json::parse(line);
    if (j["type"] != "job") continue;
    std::string job = j["job"];
    bool under = job.size() > root.size() && job.compare(0, root.size(), root) == 0 &&
                 (job[root.size()] == '/' || job[root.size()] == '!');
    std::string rel = job == root ? "" : under ? job.substr(root.size() + 1) : "<outside the root: " + job + ">";
    const nlohmann::json& d = j["diagnosis"];
    out[rel] = j.value("verdict", "error") + " " + (d.is_object() ? d.value("id", "") : "") + " rank " +
               (d.is_object() && d["initiating_rank"].is_number() ? std::to_string(d["initiating_rank"].get<int>()) : "-");
  }
  return out;
}
}  // namespace

TEST_CASE("triage: an archive made the usual ways gives the jobs of the directory it was made from") {
  test::TempDir dir;
  // Three jobs, one of two ranks, and a folder two levels down (for --job-depth 2).
  dir.write("top/job-a/rank0.log", kb("cuda-oom"));
  dir.write("top/job-b/rank0.log", kb("host-oom-kill"));
  dir.write("top/job-b/rank1.log", "step 1 loss 2.0\n");
  dir.write("top/job-c/attempt_0/rank0.log", kb("nccl-collective-timeout"));
  const std::string d = dir.path();
  for (const char* cmd : {"tar czf x.tgz top/", "tar -C top -czf y.tgz .", "zip -qr z.zip top", "cd top && zip -qr ../w.zip ."})
    REQUIRE(std::system(("cd " + d + " && " + cmd).c_str()) == 0);
  auto run = [&](const std::string& path, int depth, const std::string& pattern) {
    return job_verdicts(triage_output(path, [&](TriageOptions& o) {
                          o.job_depth = depth;
                          o.job_pattern = pattern;
                        }),
                        path);
  };
  for (auto [depth, pattern] : {std::pair{1, ""}, {2, ""}, {0, ""}, {1, "job-[ab]"}}) {
    INFO("--job-depth " << depth << " --job-pattern '" << pattern << "'");
    auto tree = run(d + "/top", depth, pattern);
    CHECK(tree.size() == (depth == 0 ? 1u : depth == 2 ? 4u : pattern[0] ? 2u : 3u));
    if (depth == 1 && !pattern[0]) {
      CHECK(tree["job-a"] == "diagnosed cuda-oom rank 3");
      CHECK(tree["job-b"].rfind("diagnosed host-oom-kill", 0) == 0);
    }
    for (const char* archive : {"x.tgz", "y.tgz", "z.zip", "w.zip"}) {
      INFO(archive);
      CHECK(run(d + "/" + archive, depth, pattern) == tree);
    }
  }
  // Member paths in the output are named as diagnose names them: "y.tgz!job-a/rank0.log", not "!./".
  TriageOptions o;
  o.paths = {d + "/y.tgz"};
  o.format = "jsonl";
  o.progress = false;
  std::ostringstream out;
  run_triage(o, out);
  CHECK(out.str().find("y.tgz!job-a/rank0.log") != std::string::npos);
  CHECK(out.str().find("!./") == std::string::npos);
}

TEST_CASE("triage: --glob and --exclude choose the same files in a directory and in its archive") {
  test::TempDir dir;
  dir.write("top/job-a/rank0.log", kb("cuda-oom"));
  dir.write("top/job-a/ckpt/notes.log", "Traceback (most recent call last):\nValueError: not a log of the job\n");
  dir.write("top/job-b/rank0.log", kb("host-oom-kill"));
  dir.write("top/job-c/stdout.txt", kb("nccl-collective-timeout"));
  REQUIRE(std::system(("cd " + dir.path() + " && tar czf x.tgz top/").c_str()) == 0);
  auto run = [&](const std::string& path) {
    TriageOptions o;
    o.paths = {path};
    o.format = "jsonl";
    o.progress = false;
    o.files.globs = {"*.log"};
    o.files.excludes = {"ckpt/", "job-b"};
    std::ostringstream out;
    CHECK(run_triage(o, out) == kExitDiagnosed);
    return job_verdicts(out.str(), path);
  };
  auto tree = run(dir.path() + "/top");
  CHECK(tree == std::map<std::string, std::string>{{"job-a", "diagnosed cuda-oom rank 3"}});  // not the ckpt note's error
  CHECK(run(dir.path() + "/x.tgz") == tree);
  TriageOptions bad;
  bad.paths = {dir.path() + "/top"};
  bad.progress = false;
  bad.files.globs = {"{unclosed"};
  std::ostringstream out;
  CHECK(run_triage(bad, out) == kExitUsage);
  CHECK(out.str().empty());
}

TEST_CASE("triage: rows that wait for their turn past the byte budget go through a file, unchanged") {
  // An archive whose members come in another order than the jobs' names (job-9 first): every
  // finished row waits for the writer. With no room in memory each waits in the temporary file.
  test::TempDir dir;
  for (int j = 9; j >= 0; --j) {
    dir.write("top/job-" + std::to_string(j) + "/rank0.log", j == 4 ? kb("cuda-oom") : "step 1 loss 2.0\n");
    REQUIRE(std::system(("cd " + dir.path() + " && tar rf m.tar top/job-" + std::to_string(j)).c_str()) == 0);
  }
  auto run = [&](size_t budget, unsigned jobs) {
    return triage_output(dir.path() + "/m.tar", [&](TriageOptions& o) {
      o.jobs = jobs;
      o.waiting_row_bytes = budget;
    });
  };
  const std::string in_memory = run(size_t{8} << 20, 1);
  CHECK(std::count(in_memory.begin(), in_memory.end(), '\n') == 11);  // 10 jobs and the summary
  CHECK(in_memory.find("\"id\":\"cuda-oom\"") != std::string::npos);
  CHECK(run(0, 1) == in_memory);
  CHECK(run(300, 2) == in_memory);  // some in memory, some in the file
  // With --redact the rows are masked in job order, long after their diagnoses were dropped:
  // parked or not, on one worker or two, the same pseudonyms, no host left, no stand-in shown.
  dir.write("top/job-3/rank1.log", "gpu-node-07:1234:1300 [1] NCCL WARN NET/IB : Got completion from peer 10.1.2.3<5678> with error 12\n");
  REQUIRE(std::system(("cd " + dir.path() + " && tar cf r.tar top").c_str()) == 0);
  auto redacted = [&](size_t budget, unsigned jobs, const char* format) {
    return triage_output(dir.path() + "/r.tar", [&](TriageOptions& o) {
      o.jobs = jobs;
      o.waiting_row_bytes = budget;
      o.format = format;
      o.redact = RedactLevel::kAll;
    });
  };
  for (const char* format : {"jsonl", "markdown"}) {
    INFO(format);
    const std::string masked = redacted(size_t{8} << 20, 1, format);
    CHECK(masked.find("gpu-node-07") == std::string::npos);
    CHECK(masked.find("10.1.2.3") == std::string::npos);
    if (std::string_view(format) == "jsonl") CHECK(masked.find("host-1") != std::string::npos);  // the rank's host
    CHECK(masked.find("@ff") == std::string::npos);
    CHECK(redacted(0, 1, format) == masked);
    CHECK(redacted(0, 2, format) == masked);
  }
  // A parked row is its record too: the table and CSV are built from records alone.
  for (const char* format : {"table", "csv"}) {
    auto as = [&](size_t budget) {
      return triage_output(dir.path() + "/m.tar", [&](TriageOptions& o) {
        o.format = format;
        o.waiting_row_bytes = budget;
      });
    };
    const std::string table = as(size_t{8} << 20);
    CHECK(table.find("cuda-oom") != std::string::npos);
    CHECK(as(0) == table);
  }
}

TEST_CASE("triage: a compressed member of an archive is read as a compressed file is") {
  // rank1.log.gz inside a tar read as "only binary files" (the job came out clean); a member cut
  // inside its gzip stream keeps what was read and names itself.
  test::TempDir dir;
  dir.write("top/job-a/rank0.log", "step 1 loss 2.0\n");
  dir.write("top/job-a/rank1.log", kb("cuda-oom"));
  dir.write("top/job-b/rank0.log", "step 1 loss 2.0\n");
  dir.write("top/job-b/rank1.log.gz", std::string("\x1f\x8b\x08\x00broken", 10));
  REQUIRE(std::system(("cd " + dir.path() + "/top/job-a && gzip rank1.log && cd " + dir.path() + " && tar cf m.tar top").c_str()) == 0);
  const std::string out = triage_output(dir.path() + "/m.tar");
  auto row_of = [&](const std::string& job) {
    size_t at = out.find("\"job\":\"" + dir.path() + "/m.tar!" + job + "\"");
    return at == std::string::npos ? std::string() : out.substr(at, out.find('\n', at) - at);
  };
  CHECK(row_of("job-a").find("\"verdict\":\"diagnosed\"") != std::string::npos);
  CHECK(row_of("job-a").find("\"id\":\"cuda-oom\"") != std::string::npos);
  CHECK(out.find("rank1.log.gz: gzip") != std::string::npos);  // job-b's damaged member, named
  CHECK(out.find("only binary files") == std::string::npos);
}

TEST_CASE("triage: an archive of one job's folder stays one job") {
  test::TempDir dir;
  dir.write("job-17/rank0.log", kb("cuda-oom"));
  dir.write("job-17/rank1.log", "step 1 loss 2.0\n");
  REQUIRE(std::system(("cd " + dir.path() + " && mkdir jobs && tar czf jobs/job-17.tgz job-17/").c_str()) == 0);
  for (const std::string path : {dir.path() + "/jobs/job-17.tgz", dir.path() + "/jobs"}) {
    INFO(path);
    TriageOptions o;
    o.paths = {path};
    o.format = "jsonl";
    o.progress = false;
    std::ostringstream out;
    run_triage(o, out);
    auto jobs = job_verdicts(out.str(), dir.path() + "/jobs/job-17.tgz");
    REQUIRE(jobs.size() == 1);
    CHECK(jobs.begin()->first == "job-17");
    CHECK(jobs.begin()->second == "diagnosed cuda-oom rank 3");
  }
}

TEST_CASE("triage: archive member names are made relative, and the root is a top folder that holds folders") {
  CHECK(normalize_member_name("./job-a/./rank0.log") == "job-a/rank0.log");
  CHECK(normalize_member_name("/job-a//rank0.log") == "job-a/rank0.log");
  CHECK(archive_root({"top/job-a/rank0.log", "top/job-b/rank0.log"}) == "top/");
  CHECK(archive_root({"top/README", "top/job-a/rank0.log"}) == "top/");
  CHECK(archive_root({"job-17/rank0.log", "job-17/rank1.log"}).empty());  // one job's folder
  CHECK(archive_root({"job-a/rank0.log", "job-b/rank0.log"}).empty());
  CHECK(archive_root({"top/job-a/rank0.log", "README"}).empty());
  CHECK(archive_root({"top/job-a/rank0.log", "topper/job-b/rank0.log"}).empty());
}

TEST_CASE("triage: an archive's member index finds each member's job by its name as the archive spells it") {
  ArchiveMembers index;
  for (const char* name : {"./job-b/rank1.log", "./job-a/rank0.log", "README", "./job-b/rank0.log"}) index.add(name);
  CHECK(index.name(1) == "./job-a/rank0.log");  // archive order until sealed
  index.assign(0, 1);
  index.assign(1, 0);
  index.assign(3, 1);  // README belongs to no job
  index.seal();
  CHECK(index.size() == 3);
  CHECK(index.jobs() == 2);
  CHECK(index.job_of("./job-a/rank0.log") == std::optional<uint32_t>(0));
  CHECK(index.job_of("./job-b/rank0.log") == std::optional<uint32_t>(1));
  CHECK(index.job_of("./job-b/rank1.log") == std::optional<uint32_t>(1));
  CHECK_FALSE(index.job_of("README").has_value());
  CHECK_FALSE(index.job_of("job-a/rank0.log").has_value());  // looked up as libarchive names it, not normalised
  CHECK_FALSE(index.job_of("./job-c/rank0.log").has_value());
}

TEST_CASE("triage: hostile job names and log lines stay text in every format, and after a merge") {
  // A directory name that starts a workflow command on its own line, one that a spreadsheet
  // would run as a formula, and a log line with C1 CSI, BEL, bidi overrides, an Azure logging
  // command and Markdown that would render (issue 27).
  test::TempDir dir;
  std::string hostile_line = "[rank0]: SystemError: \xc2\x9b" "31m\a ##vso[task.setvariable variable=x]1 \xe2\x80\xae" "evil "
                             "<img src=x> @here `a|b` [l](http://x)\n";
  dir.write("jobs/x\n::warning::pwned/out.log", hostile_line);
  dir.write("jobs/=HYPERLINK(\"x\")/out.log", hostile_line);
  dir.write("jobs/ok|`job`/out.log", kb("cuda-oom"));
  auto run = [&](const std::string& format, std::vector<std::string> merge = {}) {
    TriageOptions o;
    o.paths = {dir.path() + "/jobs"};
    o.format = format;
    o.progress = false;
    o.merge = std::move(merge);
    if (!o.merge.empty()) o.paths.clear();
    std::ostringstream out;
    run_triage(o, out);
    return out.str();
  };
  std::string jsonl = run("jsonl");
  dir.write("shard.jsonl", jsonl);
  std::string html = run("html");
  for (const std::string& out : {run("table"), run("markdown"), run("csv"), jsonl, html, run("table", {dir.path() + "/shard.jsonl"})}) {
    INFO(out);
    CHECK(out.find("\n::") == std::string::npos);
    CHECK(out.find("##vso[") == std::string::npos);
    for (const char* bad : {"\a", "\x1b", "\xc2\x9b", "\xe2\x80\xae"}) CHECK(out.find(bad) == std::string::npos);
  }
  // HTML: log text and job names are text, never markup.
  CHECK(html.find("<img") == std::string::npos);
  CHECK(html.find("&lt;img src=x&gt;") != std::string::npos);
  // A cell a spreadsheet would run as a formula is shown as text.
  CHECK(csv_cell("=HYPERLINK(\"x\")") == "\"'=HYPERLINK(\"\"x\"\")\"");
  CHECK(csv_cell("-1+2") == "'-1+2");
  CHECK(csv_cell("@SUM(A1)") == "'@SUM(A1)");
  CHECK(csv_cell("a,b") == "\"a,b\"");
  CHECK(csv_cell("rank-3") == "rank-3");
  // Markdown: a job name's "|" and backticks cannot end its cell or its code span.
  std::string md = run("markdown");
  INFO(md);
  CHECK(md.find("/ok\\|`job` ``") != std::string::npos);
  // The unrecognised line is shown inside a code span, where HTML, links and mentions are text.
  size_t img = md.find("<img");
  REQUIRE(img != std::string::npos);
  size_t row = md.rfind('\n', img) + 1;
  CHECK(md.substr(row, img - row).find("`") != std::string::npos);
}

TEST_CASE("triage: the fleet view ranks the hosts that initiated failures, in every summary and after a merge") {
  test::TempDir dir;
  for (const char* job : {"a", "b", "c"}) dir.write(std::string("jobs/") + job + "/node.log", kb("xid-79-gpu-fell-off-bus"));
  dir.write("jobs/d/out.log", kb("cuda-oom"));  // no host named: not counted
  auto run = [&](const std::string& format, std::vector<std::string> merge = {}) {
    TriageOptions o;
    o.paths = merge.empty() ? std::vector<std::string>{dir.path() + "/jobs"} : std::vector<std::string>{};
    o.merge = std::move(merge);
    o.format = format;
    o.progress = false;
    std::ostringstream out;
    run_triage(o, out);
    return out.str();
  };
  std::string table = run("table");
  INFO(table);
  CHECK_THAT(table, Catch::Contains("Initiating hosts (a node that starts many failures is suspect):"));
  CHECK_THAT(table, Catch::Contains("     3  gpu-a17                  xid-79-gpu-fell-off-bus  GPUs: 0000:9a:00 x3"));
  // Markdown masks personal data by default (a CI summary) but keeps the host to drain.
  CHECK_THAT(run("markdown"), Catch::Contains("| 3 | `gpu-a17` | xid-79-gpu-fell-off-bus | 0000:9a:00 x3 |"));
  std::string jsonl = run("jsonl");
  dir.write("shard.jsonl", jsonl);
  auto summary = nlohmann::json::parse(jsonl.substr(jsonl.rfind("\n", jsonl.size() - 2) + 1));
  REQUIRE(summary["initiating_hosts"].size() == 1);
  CHECK(summary["initiating_hosts"][0]["host"] == "gpu-a17");
  CHECK(summary["initiating_hosts"][0]["jobs"] == 3);
  CHECK(summary["initiating_hosts"][0]["gpus"]["0000:9a:00"] == 3);  // the bad GPU, not only the node
  CHECK_THAT(run("table", {dir.path() + "/shard.jsonl"}), Catch::Contains("     3  gpu-a17                  xid-79-gpu-fell-off-bus  GPUs: 0000:9a:00 x3"));
  // A failure with no initiating rank counts under the host of its decisive line (the first
  // evidence the JSON shows), in the run and after a merge alike (an NCCL init hang on dgx-07).
  dir.write("jobs/e/out.log", kb("nccl-init-hang"));
  jsonl = run("jsonl");
  dir.write("shard.jsonl", jsonl);
  auto hosts = [](const std::string& out) {
    return nlohmann::json::parse(out.substr(out.rfind("\n", out.size() - 2) + 1))["initiating_hosts"];
  };
  CHECK(hosts(jsonl).size() == 2);
  CHECK(hosts(run("jsonl", {dir.path() + "/shard.jsonl"})) == hosts(jsonl));
}

TEST_CASE("triage: a job's date comes from its failure's log time, else its last line, else its path") {
  Diagnosis none;
  CHECK(job_date(none, "/archive/2026-11-03/job-17") == "2026-11-03");
  CHECK(job_date(none, "/runs/20261103_1200/out.log") == "2026-11-03");
  CHECK(job_date(none, "/archive/2026-10-30/retry-2026.11.02/out.log") == "2026-11-02");  // the deepest
  CHECK(job_date(none, "/jobs/job-1202611030/out.log").empty());  // digits of a longer number
  CHECK(job_date(none, "/jobs/2026-13-01/out.log").empty());      // no month 13
  Diagnosis d;
  Evidence e;
  e.time.kind = Timestamp::kFull;
  e.time.ms = make_ms(2026, 11, 5, 10, 0, 0, 0);
  d.first_error = e;
  CHECK(job_date(d, "/archive/2026-11-03/job-17") == "2026-11-05");  // the log beats the path
  RankSummary r;
  r.last_time.kind = Timestamp::kFull;
  r.last_time.ms = make_ms(2026, 11, 7, 0, 0, 0, 0);
  Diagnosis clean;
  clean.ranks.push_back(r);
  CHECK(job_date(clean, "/x") == "2026-11-07");
}

TEST_CASE("triage: --since/--until keep the jobs dated in the window, count the rest, and never hide an unreadable job") {
  test::TempDir dir;
  const std::string oom = " torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.\n";
  dir.write("jobs/a/out.log", "2026-11-02 10:00:00,000" + oom);
  dir.write("jobs/b/out.log", "2026-11-05 10:00:00,000" + oom);
  dir.write("jobs/2026-11-09-c/out.log", "step 1\n" + oom.substr(1));  // dated by its path
  dir.write("jobs/d/out.log", "step 1\n" + oom.substr(1));             // nothing dates it
  dir.write("jobs/e/out.log.gz", std::string("\x1f\x8b\x08\x00broken", 10));
  auto run = [&](const std::string& format, const std::string& since, const std::string& until) {
    TriageOptions o;
    o.paths = {dir.path() + "/jobs"};
    o.format = format;
    o.progress = false;
    o.since = since;
    o.until = until;
    std::ostringstream out;
    int rc = run_triage(o, out);
    return std::make_pair(rc, out.str());
  };
  auto [rc, jsonl] = run("jsonl", "2026-11-04", "2026-11-09");
  INFO(jsonl);
  CHECK(rc == 2);  // the unreadable job is kept, and says so
  CHECK(jsonl.find("/jobs/b\",\"date\":\"2026-11-05\"") != std::string::npos);
  CHECK(jsonl.find("/jobs/2026-11-09-c\",\"date\":\"2026-11-09\"") != std::string::npos);
  CHECK(jsonl.find("/jobs/a\"") == std::string::npos);
  CHECK(jsonl.find("/jobs/d\"") == std::string::npos);
  CHECK(jsonl.find("/jobs/e\"") != std::string::npos);
  auto summary = nlohmann::json::parse(jsonl.substr(jsonl.rfind("\n", jsonl.size() - 2) + 1));
  CHECK(summary["jobs"] == 3);
  CHECK(summary["outside_window"] == 1);
  CHECK(summary["undated_left_out"] == 1);
  REQUIRE(summary["days"].size() == 2);
  CHECK(summary["days"][0]["date"] == "2026-11-05");
  CHECK(summary["days"][0]["entries"]["cuda-oom"] == 1);
  // The whole archive: every day, and the undated job counted.
  auto all = nlohmann::json::parse(run("jsonl", "", "").second.substr(run("jsonl", "", "").second.rfind("\n", run("jsonl", "", "").second.size() - 2) + 1));
  CHECK(all["days"].size() == 3);
  CHECK(all["undated"] == 1);
  // The HTML report draws the days, empty ones included.
  std::string html = run("html", "", "").second;
  CHECK_THAT(html, Catch::Contains("id=\"by-day\""));
  CHECK_THAT(html, Catch::Contains("<title>2026-11-05: cuda-oom × 1</title>"));
  for (auto [since, until] : {std::pair{"2026-11-31", ""}, {"2026-02-29", ""}, {"", "11/09/2026"}, {"2026-11-09", "2026-11-01"}}) {
    auto [code, text] = run("table", since, until);
    CHECK(code == 2);
    CHECK(text.empty());  // refused before any job is read
  }
  CHECK_FALSE(run("table", "2028-02-29", "").second.empty());
}

TEST_CASE("line_template masks what varies between occurrences of a message") {
  CHECK(line_template("KeyError: 'labels_123'") == "KeyError: '<*>'");
  CHECK(line_template("Connect to 10.0.0.7<41234> failed after 3 tries at 0x7f3c") == "Connect to <ip> failed after <*> tries at <hex>");
  CHECK(line_template("cannot open /data/shard-00017.arrow") == "cannot open <path>");
  CHECK(line_template("[rank3]: KeyError: 'x'") == line_template("[rank12]: KeyError: 'y'"));
}

TEST_CASE("triage: sharding is a deterministic partition") {
  int in1 = 0, in2 = 0;
  for (int i = 0; i < 200; ++i) {
    std::string id = "job-" + std::to_string(i);
    bool a = in_shard(id, 1, 2), b = in_shard(id, 2, 2);
    CHECK(a != b);
    in1 += a;
    in2 += b;
  }
  CHECK(in1 > 50);
  CHECK(in2 > 50);
}

TEST_CASE("triage and timeline refuse an unusable --rank-from like diagnose and watch do") {
  test::TempDir dir;
  std::string log = dir.write("job/rank0.log", "hello\n");
  std::ostringstream out;
  for (std::string bad : {"rank(", "rank\\d+"}) {  // invalid; valid but without a capture group
    TriageOptions t;
    t.paths = {dir.path()};
    t.rank_from = bad;
    t.progress = false;
    CHECK(run_triage(t, out) == kExitUsage);
    TimelineOptions tl;
    tl.paths = {log};
    tl.rank_from = bad;
    CHECK(run_timeline(tl, out) == kExitUsage);
  }
  CHECK(out.str().empty());  // the reason goes to stderr
}
