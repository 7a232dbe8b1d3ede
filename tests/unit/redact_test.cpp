#include <catch2/catch.hpp>
#include <fcntl.h>
#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include "firstfault/app/commands.h"
#include "firstfault/app/pipeline.h"
#include "firstfault/render/ci_render.h"
#include "firstfault/render/render.h"
#include "firstfault/triage/triage.h"
#include "firstfault/util/redact.h"
#include "firstfault/util/safe_text.h"
#include "firstfault/watch/watch_command.h"
#include "harness.h"
#include "skewed_clock_log.h"
#include "test_support.h"

using namespace firstfault;

namespace {

struct Fixture : test::RepoEngine {
  Diagnosis run(const std::string& path) { return analyze_paths({path}, matcher, {}).diagnosis; }
};

// Every output format of one (already prepared) diagnosis, text in verbose mode so every rank's
// last line is printed too.
std::vector<std::pair<std::string, std::string>> all_formats(const Diagnosis& d, const Library& lib, bool redacted) {
  CiRenderOptions co;
  co.redacted = redacted;
  TextStyle verbose;
  verbose.verbose = true;
  return {{"text", render_text(d, lib, verbose)},
          {"json", dump_json(diagnosis_to_json(d, lib))},
          {"github", render_github(d, lib, co)},
          {"markdown", render_markdown(d, lib, co)},
          {"sarif", render_sarif(d, lib, co).dump()},
          {"gitlab", render_gitlab(d, lib, co).dump()},
          {"junit", render_junit(d, lib, co)}};
}

// The seeded log: every kind of secret, an e-mail address, IPv4 and IPv6 addresses, hosts and a
// user name, in lines of a real NCCL failure.
std::string leaky_log() { return test::source_dir() + "/testdata/e2e/leaky-secrets.log"; }

// What the seeded log holds that no masked output may show.
const std::vector<std::string>& seeded() {
  static const std::vector<std::string> s = {
      "hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789", "hf_ZyXwVuTsRqPoNmLkJiHgFeDcBa9876543210",
      "0123456789abcdef0123456789abcdef01234567", "AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
      "ghp_0123456789abcdefghijABCDEFGHIJ0123456789", "eyJhbGciOiJIUzI1NiJ9", "s3cretpass",
      "hooks.slack.com/services", "xoxb-123456789012", "sk-proj-abcdefghijklmnopqrstuvwxyz012345",
      "alice", "example-corp.com", "10.10.1.21", "10.10.1.22", "fd00:10:1::22", "gpu-node-01", "gpu-node-02",
      "corp.example.net"};
  return s;
}

// The seeded values `out` still shows.
std::vector<std::string> leaks(const std::string& out) {
  std::vector<std::string> found;
  for (const auto& s : seeded())
    if (out.find(s) != std::string::npos) found.push_back(s);
  return found;
}

using test::slurp;

// The distinct values the groups of `re` (one per alternative) take in `text`: one value means
// one pseudonym.
std::set<std::string> captured(const std::string& text, const std::string& re) {
  std::set<std::string> out;
  std::regex r(re);
  for (auto it = std::sregex_iterator(text.begin(), text.end(), r); it != std::sregex_iterator(); ++it)
    for (size_t g = 1; g < it->size(); ++g)
      if ((*it)[g].matched) out.insert((*it)[g].str());
  return out;
}

// What `firstfault watch` sent out: stdout, what --exec got on stdin and in FIRSTFAULT_HOST,
// and the metrics file.
struct WatchOutput {
  int rc = -1;
  std::string out, hook, hook_host, metrics;
};

// Runs the watch command on stdin, as the CLI would: a pipe the test writes `parts` into, each
// after the previous one raised an alert (seen through --exec), then closes.
WatchOutput watch_stdin(WatchOptions o, const std::vector<std::string>& parts) {
  test::TempDir dir;
  std::string hook = dir.path() + "/hook.jsonl", host = dir.path() + "/hook.host";
  o.paths = {"-"};
  o.update_interval = "0s";
  o.exec = fmt::format("cat >> '{}'; echo \"$FIRSTFAULT_HOST\" >> '{}'", hook, host);
  o.metrics_file = dir.path() + "/job.prom";
  int fds[2];
  REQUIRE(::pipe2(fds, O_CLOEXEC) == 0);
  int saved = ::dup(STDIN_FILENO);
  ::dup2(fds[0], STDIN_FILENO);
  ::close(fds[0]);
  std::thread writer([&] {
    for (size_t i = 0; i < parts.size(); ++i) {
      for (int wait = 0; i > 0 && wait < 200; ++wait) {
        std::string seen = slurp(host);
        if (static_cast<size_t>(std::count(seen.begin(), seen.end(), '\n')) >= i) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
      for (size_t done = 0; done < parts[i].size();) {
        ssize_t n = ::write(fds[1], parts[i].data() + done, parts[i].size() - done);
        if (n <= 0) break;
        done += static_cast<size_t>(n);
      }
    }
    ::close(fds[1]);
  });
  std::ostringstream out;
  WatchOutput w;
  w.rc = run_watch(o, out);
  writer.join();
  ::dup2(saved, STDIN_FILENO);
  ::close(saved);
  w.out = out.str();
  w.hook = slurp(hook);
  w.hook_host = slurp(host);
  w.metrics = slurp(o.metrics_file);
  return w;
}

// Jobs for triage under /home/alice: the seeded log, another job on one of its nodes, an
// unrecognised failure whose first error line holds secrets, a clean diagnosis, a missing job.
struct SeededJobs {
  test::TempDir dir;
  std::vector<std::string> paths;
  SeededJobs() {
    std::string home = "home/alice/jobs/";
    dir.write(home + "job-leaky/combined.log", slurp(leaky_log()));
    dir.write(home + "job-nccl/out.log",
              "gpu-node-02:1234:1234 [0] misc/socket.cc:484 NCCL WARN socketStartConnect: Connect to 10.10.1.21<41227> "
              "failed : No route to host\n");
    dir.write(home + "job-unknown/out.log",
              "step 1\nTraceback (most recent call last):\nRuntimeError: upload to 10.10.1.22 as "
              "alice.smith@example-corp.com failed, HF_TOKEN=hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789\n");
    dir.write(home + "job-oom/out.log", slurp(test::source_dir() + "/testdata/kb/cuda-oom.log"));
    paths = {dir.path() + "/home/alice/jobs", dir.path() + "/home/alice/missing.log"};
  }
  std::string run(TriageOptions o) const {
    o.progress = false;
    if (o.merge.empty()) o.paths = paths;
    std::ostringstream out;
    run_triage(o, out);
    return out.str();
  }
};

TriageOptions triage_opts(const std::string& format, std::optional<RedactLevel> redact) {
  TriageOptions o;
  o.format = format;
  o.redact = redact;
  return o;
}

}  // namespace

TEST_CASE("redact: each kind of secret is masked and the name that carried it is kept") {
  struct Case {
    const char* in;
    const char* out;
  };
  for (const Case& c : std::vector<Case>{
           {"HF_TOKEN=hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789", "HF_TOKEN=[REDACTED]"},
           {"token hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789 used", "token [REDACTED] used"},
           {"remote: ghp_0123456789abcdefghijABCDEFGHIJ0123456789", "remote: [REDACTED]"},
           {"pat github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz", "pat [REDACTED]"},
           {"key AKIAIOSFODNN7EXAMPLE in env", "key [REDACTED] in env"},
           {"aws_secret_access_key = wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "aws_secret_access_key = [REDACTED]"},
           {"slack xoxb-123456789012-abcdefABCDEF done", "slack [REDACTED] done"},
           {"post https://hooks.slack.com/services/T000/B000/XXXXXXXX", "post [REDACTED]"},
           {"Authorization: Bearer abc.def-ghi_jkl", "Authorization: Bearer [REDACTED]"},
           {"WANDB_API_KEY=0123456789abcdef0123456789abcdef01234567", "WANDB_API_KEY=[REDACTED]"},
           {"export MY_SERVICE_TOKEN='s3cr3t'", "export MY_SERVICE_TOKEN='[REDACTED]'"},
           {"{\"api_key\": \"abcdefgh12345\"}", "{\"api_key\": \"[REDACTED]\"}"},
           {"OPENAI_API_KEY=sk-proj-abcdefghijklmnopqrstuvwxyz012345", "OPENAI_API_KEY=[REDACTED]"},
           {"db password: hunter2", "db password: [REDACTED]"},
           {"pull https://bob:pa55@registry.example.com/v2", "pull https://[REDACTED]@registry.example.com/v2"},
       }) {
    Redactor r;
    INFO(c.in);
    CHECK(r.mask(c.in) == c.out);
  }
}

TEST_CASE("redact: ordinary ML log text is not mistaken for secrets, hosts or addresses") {
  for (const char* s : {
           "pad_token: <pad>, eos_token=</s>, max_tokens=256, num_tokens: 1024",
           "TOKENIZERS_PARALLELISM=false HF_TOKEN=None",
           "NCCL version 2.20.5, cuDNN 8.9.2, step 10:02:41.300",
           "c10d::ProcessGroupNCCL::allreduce and std::vector<int>::iterator",
           "from sklearn.cluster import KMeans; tf.io.gfile.exists(p); threading.local()",
           "listening on localhost:29500 and 127.0.0.1:29500, [::1]:80, bound to 0.0.0.0",
           "see https://github.com/pytorch/pytorch/issues/1 and https://pytorch.org/docs",
           "/etc/passwd: No such file or directory",
           "@torch.no_grad() decorated eval_step",
       }) {
    Redactor r;
    INFO(s);
    CHECK(r.mask(s) == s);
    CHECK(r.counts().total() == 0);
  }
}

TEST_CASE("redact: addresses get stable pseudonyms within a run") {
  Redactor r;
  CHECK(r.mask("Connect to 10.10.1.21<41227> failed") == "Connect to ip-1<41227> failed");
  CHECK(r.mask("Bootstrap : Using eth0:10.10.1.22<0>, peer 10.10.1.21:29500") ==
        "Bootstrap : Using eth0:ip-2<0>, peer ip-1:29500");
  CHECK(r.mask("ib0 fd00:10:1::22 and fe80::1ff:fe23:4567:890a%eth0") == "ib0 ip-3 and ip-4%eth0");
  CHECK(r.mask("mapped ::ffff:10.10.1.21 / full 2001:0db8:85a3:0000:0000:8a2e:0370:7334.") ==
        "mapped ip-5 / full ip-6.");
  CHECK(r.mask("again 10.10.1.21") == "again ip-1");
  CHECK(r.counts().ips == 8);
}

TEST_CASE("redact: hosts the job revealed are masked everywhere, FQDN and short name alike") {
  Redactor r;
  r.add_host("gpu-node-02");  // from a rank prefix: numbered first
  r.learn("gpu-node-01.corp.example.net:21788:21788 [0] NCCL INFO Bootstrap");
  CHECK(r.mask("rank 3 on gpu-node-02, logs in /var/log/gpu-node-02.log") ==
        "rank 3 on host-1, logs in /var/log/host-1.log");
  CHECK(r.mask("MASTER_ADDR=gpu-node-01.corp.example.net") == "MASTER_ADDR=host-2");
  CHECK(r.mask("ssh gpu-node-01 failed") == "ssh host-2 failed");         // the short name is the same machine
  CHECK(r.mask("GPU-NODE-02 rebooted") == "host-1 rebooted");             // host names are case-insensitive
  CHECK(r.mask("gpu-node-021 is another node") == "gpu-node-021 is another node");  // whole names only
  CHECK(r.mask("srun: error: node017: task 3: Killed") == "srun: error: host-3: task 3: Killed");
  CHECK(r.mask("ip-10-0-1-23.ec2.internal joined") == "host-4 joined");
  CHECK(r.mask("Feb  8 14:21:37 epyc-ws kernel: Xid 79") == "Feb  8 14:21:37 host-5 kernel: Xid 79");
}

TEST_CASE("redact: user names in home paths are masked there and wherever else they appear") {
  Redactor r;
  r.learn("File \"/home/alice/project/train.py\", line 3");
  CHECK(r.mask("File \"/home/alice/project/train.py\", line 3") == "File \"/home/user-1/project/train.py\", line 3");
  CHECK(r.mask("job owned by alice (USER=alice)") == "job owned by user-1 (USER=user-1)");
  CHECK(r.mask("/Users/bob/Library and C:\\Users\\carol\\x") == "/Users/user-2/Library and C:\\Users\\user-3\\x");
  CHECK(r.mask("mail alice.smith@example-corp.com now") == "mail [email] now");
  // Not as a path or module component, and generic accounts only inside their home path.
  r.learn("/home/runner/work/x");
  CHECK(r.mask("mmengine/alice/alice.py runner") == "mmengine/alice/alice.py runner");
  CHECK(r.mask("/home/runner/work/x") == "/home/user-4/work/x");
  CHECK(r.counts().emails == 1);
}

TEST_CASE("redact: host-1 is the host of the lowest rank, so pseudonyms follow the job's layout") {
  Fixture f;
  Diagnosis d = f.run(test::source_dir() + "/testdata/kb/nccl-socket-ifname-wrong.log");
  Redactor r;
  redact_diagnosis(d, r);
  REQUIRE_FALSE(d.ranks.empty());
  CHECK(d.ranks.front().rank == 0);
  CHECK(d.ranks.front().host == "host-1");  // gpu-a
  REQUIRE(d.initiating.rank);
  CHECK(*d.initiating.rank == 9);
  CHECK(d.initiating.host == "host-2");  // gpu-b
}

TEST_CASE("redact: the hosts of a clock-skew estimate are masked like every other host") {
  // The diagnosis names both hosts in its clock_skew list (text: "Clocks: host gpu-b runs 60.0 s
  // ahead of host gpu-a").
  Fixture f;
  test::TempDir dir;
  Diagnosis d = f.run(dir.write("job.log", test::two_host_skewed_clock_log()));
  REQUIRE(d.clock_skew.size() == 1);
  Redactor r;
  redact_diagnosis(d, r);
  for (const auto& [format, out] : all_formats(d, f.lib, true)) {
    INFO(format);
    CHECK(out.find("gpu-a") == std::string::npos);
    CHECK(out.find("gpu-b") == std::string::npos);
  }
}

TEST_CASE("redact: no token, e-mail, IP, host or user of a seeded log survives into any format") {
  Fixture f;
  Diagnosis d = f.run(leaky_log());
  REQUIRE(d.verdict == "diagnosed");
  const std::vector<std::string>& sensitive = seeded();
  // Without masking, the seeded values really are in the outputs (so the check below means something).
  {
    Diagnosis raw = d;
    neutralize_diagnosis(raw);
    std::string text = render_text(raw, f.lib, TextStyle{false, true}) + dump_json(diagnosis_to_json(raw, f.lib));
    for (const auto& s : sensitive) {
      INFO(s);
      CHECK(text.find(s) != std::string::npos);
    }
  }
  Redactor r;
  RedactCounts counts = redact_diagnosis(d, r);
  neutralize_diagnosis(d);
  CHECK(counts.secrets >= 11);
  CHECK(counts.emails >= 1);
  CHECK(counts.ips >= 3);
  CHECK(counts.hosts >= 3);
  CHECK(counts.users >= 2);
  for (const auto& [format, out] : all_formats(d, f.lib, true)) {
    for (const auto& s : sensitive) {
      INFO(format << " leaks " << s);
      CHECK(out.find(s) == std::string::npos);
    }
  }
  // The pseudonyms keep the picture: the same host and address are still recognisable.
  std::string json = dump_json(diagnosis_to_json(d, f.lib));
  CHECK(json.find("host-1:31790:31901 [2]") != std::string::npos);
  CHECK(json.find("Connect to ip-1<41227>") != std::string::npos);
  CHECK(json.find("via host-3 (ip-1)") != std::string::npos);
}

TEST_CASE("redact: stays off by default on the terminal and in JSON, on for the CI formats") {
  for (const char* f : {"github", "gitlab", "sarif", "junit", "markdown"}) CHECK(default_redact_level(f) == RedactLevel::kPii);
  for (const char* f : {"text", "json"}) CHECK(default_redact_level(f) == RedactLevel::kNone);
}

TEST_CASE("redact: watch masks its alerts, the --exec input and environment, and the metrics file") {
  std::string log = slurp(leaky_log());
  size_t fourth = 0;
  for (int i = 0; i < 4; ++i) fourth = log.find('\n', fourth) + 1;
  // The NCCL lines first (the failure alert), then the rest (the final alert): two alerts, one Redactor.
  WatchOptions o;
  o.format = "jsonl";
  o.redact = RedactLevel::kAll;
  WatchOutput w = watch_stdin(o, {log.substr(0, fourth), log.substr(fourth)});
  CHECK(w.rc == kExitDiagnosed);
  CHECK(std::count(w.out.begin(), w.out.end(), '\n') >= 2);
  CHECK(w.hook == w.out);  // --exec gets exactly the (masked) alerts
  CHECK_FALSE(w.metrics.empty());
  for (const auto& [what, text] : std::vector<std::pair<std::string, std::string>>{
           {"stdout", w.out}, {"--exec stdin", w.hook}, {"FIRSTFAULT_HOST", w.hook_host}, {"metrics", w.metrics}}) {
    INFO(what << ":\n" << text);
    CHECK(leaks(text).empty());
  }
  // Pseudonyms hold across lines and alerts: gpu-node-02 is one host-N in the NCCL prefixes of
  // the first alert and in rank 2's and rank 6's lines of the last; 10.10.1.21 is one ip-N.
  CHECK(captured(w.out, R"((host-\d+):3179\d:\d+ \[|\bon (host-\d+)|ssh user-\d+@(host-\d+))").size() == 1);
  CHECK(captured(w.out, R"(Connect to (ip-\d+)<41227>|\((ip-\d+)\)\")").size() == 1);

  o.format = "text";
  WatchOutput text = watch_stdin(o, {log});
  CHECK(text.out.find("== firstfault alert #1 [failure]") != std::string::npos);
  INFO(text.out);
  CHECK(leaks(text.out + text.hook + text.hook_host + text.metrics).empty());

  // Off by default: the same run shows the seeded values (so the checks above mean something).
  o.format = "jsonl";
  o.redact.reset();
  WatchOutput raw = watch_stdin(o, {log});
  CHECK(raw.out.find("10.10.1.21") != std::string::npos);
  CHECK(raw.hook.find("alice") != std::string::npos);
}

TEST_CASE("redact: triage masks every format, job paths and error rows included, numbered once per run") {
  SeededJobs jobs;
  for (const char* format : {"table", "jsonl", "csv", "markdown"}) {
    std::string out = jobs.run(triage_opts(format, RedactLevel::kAll));
    INFO(format << ":\n" << out);
    CHECK(leaks(out).empty());
    CHECK(out.find("/home/user-1/jobs/job-leaky") != std::string::npos);
    CHECK(out.find("/home/user-1/missing.log") != std::string::npos);
  }
  // Markdown is made to be shared: masked by default. The others are not.
  CHECK(jobs.run(triage_opts("markdown", std::nullopt)) == jobs.run(triage_opts("markdown", RedactLevel::kPii)));
  CHECK(jobs.run(triage_opts("table", std::nullopt)).find("/home/alice/jobs") != std::string::npos);
  std::string raw = jobs.run(triage_opts("jsonl", std::nullopt));
  CHECK(raw.find("hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789") != std::string::npos);

  // One Redactor for the run, masking in job order: the same node and address keep their
  // pseudonym from job to job, and the output does not depend on -j.
  TriageOptions one = triage_opts("jsonl", RedactLevel::kAll), two = triage_opts("jsonl", RedactLevel::kAll);
  one.jobs = 1;
  two.jobs = 2;
  std::string masked = jobs.run(one);
  CHECK(masked == jobs.run(two));
  CHECK(captured(masked, R"((host-\d+):\d+:\d+ \[)").size() == 1);  // job-leaky and job-nccl
  CHECK(captured(masked, R"(Connect to (ip-\d+)<41227>)").size() == 1);

  // --merge: unmasked shards are masked at the merge, as one run would be; masked shards stay masked.
  std::vector<std::string> plain, redacted;
  for (const char* shard : {"1/2", "2/2"}) {
    TriageOptions s = triage_opts("jsonl", std::nullopt);
    s.shard = shard;
    plain.push_back(jobs.dir.write(fmt::format("plain-{}.jsonl", shard[0]), jobs.run(s)));
    s.redact = RedactLevel::kAll;
    redacted.push_back(jobs.dir.write(fmt::format("masked-{}.jsonl", shard[0]), jobs.run(s)));
  }
  TriageOptions merge = triage_opts("markdown", std::nullopt);
  merge.merge = plain;
  CHECK(jobs.run(merge) == jobs.run(triage_opts("markdown", std::nullopt)));
  merge.format = "jsonl";
  merge.redact = RedactLevel::kAll;
  std::string merged = jobs.run(merge);
  INFO(merged);
  CHECK(leaks(merged).empty());
  CHECK(captured(merged, R"((host-\d+):\d+:\d+ \[)").size() == 1);
  merge.merge = redacted;
  for (const char* format : {"table", "jsonl", "csv"}) {
    merge.format = format;
    merge.redact = RedactLevel::kNone;
    CHECK(leaks(jobs.run(merge)).empty());
  }
}

TEST_CASE("redact: timeline masks both formats") {
  TimelineOptions o;
  o.paths = {leaky_log()};
  auto run = [&] {
    std::ostringstream out;
    run_timeline(o, out);
    return out.str();
  };
  o.format = "json";
  std::string raw = run();
  CHECK(raw.find("alice") != std::string::npos);  // off by default
  o.redact = RedactLevel::kAll;
  for (const char* format : {"text", "json"}) {
    o.format = format;
    std::string out = run();
    INFO(format << ":\n" << out);
    CHECK(leaks(out).empty());
    CHECK(out.find("[REDACTED]") != std::string::npos);
  }
  // gpu-node-02 is one host-N in rank 2's and rank 6's last lines.
  CHECK(captured(run(), R"(\bon (host-\d+)|ssh user-\d+@(host-\d+))").size() == 1);
}

TEST_CASE("redact: levels mask secrets, then personal data, then hosts and addresses") {
  const std::string line =
      "gpu-node-07:4411:4411 [0] NCCL INFO Bootstrap : Using ib0:10.2.0.28<0> user=bob HF_TOKEN=hf_abcdefghijklmnopqrstuvwxyz0123 "
      "/home/bob/run.py mail bob@example.org";
  auto masked = [&](RedactLevel level) {
    Redactor r(level);
    r.add_host("gpu-node-07");
    return r.mask(line);
  };
  std::string secrets = masked(RedactLevel::kSecrets);
  CHECK(secrets.find("hf_abcdef") == std::string::npos);
  CHECK(secrets.find("/home/bob") != std::string::npos);
  CHECK(secrets.find("gpu-node-07") != std::string::npos);
  std::string pii = masked(RedactLevel::kPii);
  CHECK(pii.find("hf_abcdef") == std::string::npos);
  CHECK(pii.find("bob@example.org") == std::string::npos);
  CHECK(pii.find("/home/bob") == std::string::npos);
  CHECK(pii.find("gpu-node-07:4411") != std::string::npos);  // the node to drain stays named
  CHECK(pii.find("10.2.0.28") != std::string::npos);
  std::string all = masked(RedactLevel::kAll);
  CHECK(all.find("gpu-node-07") == std::string::npos);
  CHECK(all.find("10.2.0.28") == std::string::npos);
  CHECK(masked(RedactLevel::kNone) == line);
  CHECK(parse_redact_level("pii") == RedactLevel::kPii);
  CHECK_FALSE(parse_redact_level("some"));
}

TEST_CASE("redact: every kind of the table masks its positive samples and leaves its negative ones alone") {
  const auto& kinds = redact_kinds();
  REQUIRE(kinds.size() >= 30);
  std::set<std::string> names;
  for (const RedactKind* k : kinds) {
    INFO("kind " << k->name);
    CHECK(names.insert(k->name).second);  // names are unique: docs and tests refer to them
    CHECK(std::string(k->source).size() > 10);
    CHECK_FALSE(k->positive.empty());
    CHECK_FALSE(k->negative.empty());
    for (const RedactSample& s : k->positive) {
      INFO(s.line);
      REQUIRE(std::string(s.line).find(s.secret) != std::string::npos);  // the sample shows its secret
      for (RedactLevel level : {RedactLevel::kSecrets, RedactLevel::kPii, RedactLevel::kAll}) {
        Redactor r(level);
        std::string out = r.mask(s.line);
        INFO(redact_level_name(level) << " -> " << out);
        if (level >= k->level) CHECK(out.find(s.secret) == std::string::npos);
      }
    }
    for (const char* line : k->negative) {
      Redactor r(RedactLevel::kAll);
      INFO(line);
      CHECK(r.mask(line) == line);
    }
  }
}

TEST_CASE("redact: the seeded log of the end-to-end test holds a value of every kind") {
  // tests/reliability/redact/seeds.tsv: KIND<TAB>LEVEL<TAB>VALUE<TAB>LINE, one value per kind at least.
  std::istringstream in(slurp(test::source_dir() + "/tests/reliability/redact/seeds.tsv"));
  std::set<std::string> seeded_kinds;
  for (std::string row; std::getline(in, row);) {
    if (row.empty() || row[0] == '#') continue;
    std::vector<std::string> f;
    for (size_t b = 0, e; b <= row.size(); b = e + 1) {
      e = std::min(row.find('\t', b), row.size());
      f.push_back(row.substr(b, e - b));
    }
    REQUIRE(f.size() == 4);
    seeded_kinds.insert(f[0]);
    Redactor r(*parse_redact_level(f[1]));
    INFO(row);
    CHECK(r.mask(f[3]).find(f[2]) == std::string::npos);
  }
  for (const RedactKind* k : redact_kinds()) {
    INFO(k->name);
    CHECK(seeded_kinds.count(k->name));
  }
}

TEST_CASE("redact: docs/reliability.md's Masking table lists every kind and their count") {
  std::string doc = slurp(test::source_dir() + "/docs/reliability.md");
  size_t table = doc.find("## Masking");
  REQUIRE(table != std::string::npos);
  std::string section = doc.substr(table, doc.find("\n## ", table + 1) - table);
  for (const RedactKind* k : redact_kinds()) {
    INFO(k->name);
    CHECK(section.find(fmt::format("| `{}` |", k->name)) != std::string::npos);
  }
  CHECK(section.find(fmt::format("{} kinds", redact_kinds().size())) != std::string::npos);
}

TEST_CASE("redact: the fuzz invariant holds for every sample inside hostile text") {
  // fuzz::redact_one picks kind and sample from the first two bytes and seeds the sample as a
  // line of the rest; here every pick, with text around it that tries to swallow or split it.
  const std::vector<std::string> around = {"", "x", "\x80-----BEGIN PRIVATE KEY-----", "Authorization: bearer",
                                           "host", "/home/", "https://u:p@", "\"private_key\": \"", "~",
                                           "2001:db8::", std::string(300, 'a') + "=\n\r\t"};
  for (size_t k = 0; k < redact_kinds().size(); ++k)
    for (size_t s = 0; s < redact_kinds()[k]->positive.size(); ++s)
      for (const std::string& text : around) {
        for (unsigned char cut : {0, 128, 255}) {
          std::string input{static_cast<char>(k), static_cast<char>(s), static_cast<char>(cut)};
          input += text;
          INFO(redact_kinds()[k]->name << " around '" << text << "'");
          CHECK(fuzz::redact_one(reinterpret_cast<const uint8_t*>(input.data()), input.size()) == "");
        }
      }
}
