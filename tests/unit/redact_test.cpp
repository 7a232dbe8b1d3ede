#include <catch2/catch.hpp>

#include "firstfault/app/pipeline.h"
#include "firstfault/render/ci_render.h"
#include "firstfault/render/render.h"
#include "firstfault/util/redact.h"
#include "firstfault/util/safe_text.h"
#include "test_support.h"

using namespace firstfault;

namespace {

struct Fixture {
  Library lib = test::repo_library();
  Matcher matcher{lib};
  Fixture() { REQUIRE(matcher.compile(true).ok()); }
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

TEST_CASE("redact: no token, e-mail, IP, host or user of a seeded log survives into any format") {
  Fixture f;
  Diagnosis d = f.run(test::source_dir() + "/testdata/e2e/leaky-secrets.log");
  REQUIRE(d.verdict == "diagnosed");
  const std::vector<std::string> sensitive = {
      "hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789", "hf_ZyXwVuTsRqPoNmLkJiHgFeDcBa9876543210",
      "0123456789abcdef0123456789abcdef01234567", "AKIAIOSFODNN7EXAMPLE", "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY",
      "ghp_0123456789abcdefghijABCDEFGHIJ0123456789", "eyJhbGciOiJIUzI1NiJ9", "s3cretpass",
      "hooks.slack.com/services", "xoxb-123456789012", "sk-proj-abcdefghijklmnopqrstuvwxyz012345",
      "alice", "example-corp.com", "10.10.1.21", "10.10.1.22", "fd00:10:1::22", "gpu-node-01", "gpu-node-02",
      "corp.example.net"};
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
  for (const char* f : {"github", "gitlab", "sarif", "junit", "markdown"}) CHECK(redacts_by_default(f));
  for (const char* f : {"text", "json"}) CHECK_FALSE(redacts_by_default(f));
}
