// The action stage (action/action.h): the kind comes from the entry; hosts and GPUs to exclude
// come from the initiating evidence, GPUs only for hardware faults.
#include <catch2/catch.hpp>

#include "firstfault/action/action.h"
#include "firstfault/app/pipeline.h"
#include "firstfault/util/pci.h"
#include "firstfault/util/redact.h"
#include "firstfault/util/strings.h"
#include "test_support.h"

using namespace firstfault;

namespace {

Evidence line(const std::string& text, Captures captures = {}) {
  Evidence e;
  e.role = "root";
  e.text = text;
  e.captures = std::move(captures);
  return e;
}

// A diagnosis of `entry` whose initiating rank 3 on `host` was decided by `first`.
Diagnosis diagnosed(const Entry& entry, const std::string& host, const Evidence& first) {
  Diagnosis d;
  d.verdict = "diagnosed";
  d.entry = &entry;
  d.initiating.rank = 3;
  d.initiating.host = host;
  d.initiating.first_evidence = first;
  d.evidence.push_back(first);
  return d;
}

Entry entry_of(const std::string& category, ActionKind kind) {
  Entry e;
  e.id = "test-entry";
  e.title = "Test failure";
  e.category = category;
  e.action = kind;
  return e;
}

struct Fixture : test::RepoEngine {
  Diagnosis run(const std::string& kb_log) {
    return analyze_paths({test::source_dir() + "/testdata/kb/" + kb_log}, matcher, {}).diagnosis;
  }
};

}  // namespace

TEST_CASE("pci_bus_id: NCCL's busId and the Xid/NVML forms give one address") {
  CHECK(pci_bus_id("3b000") == "0000:3b:00");
  CHECK(pci_bus_id("PCI:0000:3B:00") == "0000:3b:00");
  CHECK(pci_bus_id("00000000:3B:00.0") == "0000:3b:00");
  CHECK(pci_bus_id("3b:00") == "0000:3b:00");
  CHECK(pci_bus_id("1:2:3:4").empty());
}

TEST_CASE("gpu_named_by: an Xid's PCI address, from its capture or its text") {
  CHECK(gpu_named_by(line("NVRM: Xid (PCI:0000:9a:00): 79, pid=48215, GPU has fallen off the bus.", {{"pci", "0000:9a:00"}})) ==
        "0000:9a:00");
  CHECK(gpu_named_by(line("[Mon Mar  6 02:14:35 2023] NVRM: Xid (PCI:0000:BD:00): 48, pid=30413, name=python3")) ==
        "0000:bd:00");
  CHECK(gpu_named_by(line("NVRM: GPU 0000:9a:00.0: GPU has fallen off the bus.")) == "0000:9a:00");
  CHECK(gpu_named_by(line("Unable to determine the device handle for GPU00000000:4F:00.0: Unknown Error")) == "0000:4f:00");
}

TEST_CASE("gpu_named_by: NCCL's busId before its CUDA index, and the index when that is all there is") {
  CHECK(gpu_named_by(line("node-17:8812:8890 [3] NCCL INFO comm 0x5581 rank 11 nranks 16 cudaDev 3 busId bd000 commId "
                          "0x1f - Init COMPLETE")) == "0000:bd:00");
  CHECK(gpu_named_by(line("NCCL INFO comm 0x5581 rank 11 nranks 16 cudaDev 3 nvmlDev 3 - Init START")) == "cuda:3");
  CHECK(gpu_named_by(line("[default5]:[2025-11-04 07:12:09] h100-c04:3146:3306 [5] enqueue.cc:1451 NCCL WARN Cuda "
                          "failure 'uncorrectable NVLink error detected during the execution'")) == "cuda:5");
  CHECK(gpu_named_by(line("[rank12]: RuntimeError: CUDA error: uncorrectable ECC error encountered")).empty());
}

TEST_CASE("decide_action: restart-excluding names the host, and the GPU only for a hardware fault") {
  Evidence nccl = line("node-17:8812:8890 [3] transport/net_ib.cc:1696 NCCL WARN NET/IB : Got completion with status=12 "
                       "busId bd000");
  Entry hardware = entry_of("hardware", ActionKind::kRestartExcluding);
  Action a = decide_action(diagnosed(hardware, "node-17", nccl));
  CHECK(a.kind == ActionKind::kRestartExcluding);
  CHECK(a.exclude_hosts == std::vector<std::string>{"node-17"});
  CHECK(a.exclude_gpus == std::vector<std::string>{"0000:bd:00"});
  CHECK(a.reason == "Test failure: the faulty host or GPU would fail the job again");
  // A network fault's line names the GPU of the process that saw it, not a faulty GPU.
  Entry network = entry_of("network", ActionKind::kRestartExcluding);
  a = decide_action(diagnosed(network, "node-17", nccl));
  CHECK(a.exclude_hosts == std::vector<std::string>{"node-17"});
  CHECK(a.exclude_gpus.empty());
}

TEST_CASE("decide_action: a host the log names that is not a host name is never excluded") {
  // The exclusion reaches scontrol, kubectl and ssh command lines: an option, a Slurm host list
  // or a list would act on other nodes (issue 27).
  Entry hardware = entry_of("hardware", ActionKind::kRestartExcluding);
  Evidence xid = line("NVRM: Xid (PCI:0000:9a:00): 79, pid=48215, GPU has fallen off the bus.");
  for (const char* host : {"-oProxyCommand=touch /tmp/x", "gpu[001-999]", "a,b", "node 1", "$(id)", ".hidden", ""})
    CHECK(decide_action(diagnosed(hardware, host, xid)).exclude_hosts.empty());
  CHECK(decide_action(diagnosed(hardware, "gpu-a100_07.cluster.local", xid)).exclude_hosts ==
        std::vector<std::string>{"gpu-a100_07.cluster.local"});
  CHECK(plausible_host("n1"));
  CHECK_FALSE(plausible_host(std::string(254, 'a')));
}

TEST_CASE("decide_action: the host comes from the first evidence when no rank was decided") {
  Entry node = entry_of("scheduler", ActionKind::kRestartExcluding);
  Evidence failure = line("srun: error: Node failure on gpu-b-07", {{"host", "gpu-b-07"}});
  failure.host = "gpu-b-07";
  Diagnosis d = diagnosed(node, "", failure);
  d.initiating.rank.reset();
  Action a = decide_action(d);
  CHECK(a.exclude_hosts == std::vector<std::string>{"gpu-b-07"});
  CHECK(a.reason == "Test failure: the faulty host or GPU would fail the job again");
}

TEST_CASE("decide_action: other kinds never exclude anything; each says why in one sentence") {
  Evidence xid = line("NVRM: Xid (PCI:0000:bd:00): 13, Graphics Exception", {{"pci", "0000:bd:00"}});
  Entry stop = entry_of("hardware", ActionKind::kStop);
  Action a = decide_action(diagnosed(stop, "node-17", xid));
  CHECK(a.kind == ActionKind::kStop);
  CHECK(a.exclude_hosts.empty());
  CHECK(a.exclude_gpus.empty());
  CHECK(a.reason == "Test failure: a restart would fail the same way until the cause is fixed (see Fix)");
  Entry restart = entry_of("scheduler", ActionKind::kRestart);
  CHECK(decide_action(diagnosed(restart, "node-17", xid)).reason ==
        "Test failure: transient, a restart from the last checkpoint should get past it");
  Entry investigate = entry_of("collective-mismatch", ActionKind::kInvestigate);
  CHECK(decide_action(diagnosed(investigate, "node-17", xid)).reason ==
        "Test failure: the log does not show whether a restart would get past it; start with rank 3's output");
}

TEST_CASE("decide_action: unrecognised and clean logs get investigate") {
  Diagnosis unrecognized;
  unrecognized.verdict = "unrecognized";
  Action a = decide_action(unrecognized);
  CHECK(a.kind == ActionKind::kInvestigate);
  CHECK(a.reason == "no entry of the failure library matched the error lines; start with the first error line");
  RankDecision suspect;
  suspect.rank = 5;
  unrecognized.suspect = suspect;
  CHECK(decide_action(unrecognized).reason ==
        "no entry of the failure library matched the error lines; start with rank 5's output");
  Diagnosis clean;
  clean.verdict = "clean";
  CHECK(decide_action(clean).kind == ActionKind::kInvestigate);
  CHECK(decide_action(clean).reason == "no error line in the input, so nothing shows why the job ended");
}

TEST_CASE_METHOD(Fixture, "action of example logs: Xid 79 excludes its host and GPU, a node failure its host") {
  Diagnosis xid = run("xid-79-gpu-fell-off-bus.log");
  CHECK(xid.action.kind == ActionKind::kRestartExcluding);
  CHECK(xid.action.exclude_hosts == std::vector<std::string>{"gpu-a17"});
  CHECK(xid.action.exclude_gpus == std::vector<std::string>{"0000:9a:00"});  // two root lines, one GPU
  Diagnosis node = run("slurm-node-failure.log");
  CHECK(node.action.exclude_hosts == std::vector<std::string>{"gpu-b-07"});
  CHECK(node.action.exclude_gpus.empty());
  Diagnosis nvlink = run("nvlink-uncorrectable-error.log");
  CHECK(nvlink.action.exclude_gpus == std::vector<std::string>{"cuda:5"});
  Diagnosis ib = run("nccl-ib-vendor-err-129.log");
  CHECK(ib.action.exclude_hosts == std::vector<std::string>{"hpc-2"});
  CHECK(ib.action.exclude_gpus.empty());
}

TEST_CASE_METHOD(Fixture, "action of example logs: out of memory stops, a collective timeout is investigated") {
  CHECK(run("cuda-oom.log").action.kind == ActionKind::kStop);
  CHECK(run("nccl-collective-timeout.log").action.kind == ActionKind::kInvestigate);
  CHECK(run("slurm-preemption.log").action.kind == ActionKind::kRestart);
}

TEST_CASE_METHOD(Fixture, "action: --redact masks the excluded host as it masks the initiating host") {
  Diagnosis d = run("xid-79-gpu-fell-off-bus.log");
  Redactor r;
  redact_diagnosis(d, r);
  REQUIRE(d.action.exclude_hosts.size() == 1);
  CHECK(d.action.exclude_hosts[0] != "gpu-a17");
  CHECK(d.action.exclude_hosts[0] == d.initiating.host);
}
