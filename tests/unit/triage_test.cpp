#include <catch2/catch.hpp>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "firstfault/triage/triage.h"
#include "firstfault/util/line_template.h"
#include "test_support.h"

using namespace firstfault;

namespace {
std::string kb(const std::string& name) {
  std::ifstream in(test::source_dir() + "/testdata/kb/" + name + ".log", std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
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
  CHECK(jsonl.find(R"("action":{"exclude_gpus":["0000:9a:00"],"exclude_hosts":["gpu-a17"],"kind":"restart-excluding")") !=
        std::string::npos);
  CHECK(jsonl.find(R"("action":"restart-excluding","category":"hardware")") != std::string::npos);  // summary group
  // --merge reads the action back from the job lines.
  TriageOptions merge;
  merge.format = "csv";
  merge.merge = {j.dir.write("all.jsonl", jsonl)};
  CHECK(j.run(merge).find("run-1,diagnosed,xid-79-gpu-fell-off-bus,hardware,critical,0,,restart-excluding\n") !=
        std::string::npos);
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
