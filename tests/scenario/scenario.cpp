#include "scenario.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <random>

namespace firstfault::scenario {

namespace {

constexpr const char* kBus[8] = {"18", "2a", "3a", "5d", "9a", "ab", "ba", "db"};
constexpr int kSlurmJob = 4242;

struct Clock {
  // 2026-11-27 13:00:00 (a Friday) plus an offset in ms.
  static std::string python(int64_t ms) {  // 2026-11-27 13:00:05,123
    int64_t s = ms / 1000;
    return fmt::format("2026-11-{} {:02}:{:02}:{:02},{:03}", 27 + s / 39600, (13 + s / 3600) % 24, s / 60 % 60, s % 60, ms % 1000);
  }
  static std::string c10(char sev, int64_t ms) {  // E1127 13:00:05.123456789
    int64_t s = ms / 1000;
    return fmt::format("{}1127 {:02}:{:02}:{:02}.{:09}", sev, 13 + s / 3600, s / 60 % 60, s % 60, (ms % 1000) * 1000000 + 4321);
  }
  static std::string syslog(int64_t ms) {  // Nov 27 13:00:05
    int64_t s = ms / 1000;
    return fmt::format("Nov {} {:02}:{:02}:{:02}", 27 + s / 39600, (13 + s / 3600) % 24, s / 60 % 60, s % 60);
  }
  static std::string glog(char sev, int64_t ms) {  // W1127 13:00:05.123000
    int64_t s = ms / 1000;
    return fmt::format("{}1127 {:02}:{:02}:{:02}.{:03}000", sev, 13 + s / 3600, s / 60 % 60, s % 60, ms % 1000);
  }
  static std::string iso(int64_t ms) {  // 2026-11-27T13:00:05 (Slurm's own clock)
    int64_t s = ms / 1000;
    return fmt::format("2026-11-{}T{:02}:{:02}:{:02}", 27 + s / 39600, (13 + s / 3600) % 24, s / 60 % 60, s % 60);
  }
  static std::string dmesg_human(int64_t ms) {  // dmesg -T: Fri Nov 27 13:00:05 2026
    int64_t s = ms / 1000;
    return fmt::format("Fri Nov 27 {:02}:{:02}:{:02} 2026", 13 + s / 3600, s / 60 % 60, s % 60);
  }
  static std::string dmesg_iso(int64_t ms) {  // dmesg --time-format iso: 2026-11-27T13:00:05,123456+00:00
    return fmt::format("{},{:03}456+00:00", iso(ms), ms % 1000);
  }
};

// A kernel line on one host, at that host's (skewed) wall clock.
struct KernelLine {
  int node;
  int64_t ms;
  std::string text;
};

struct Writer {
  const Spec& spec;
  std::vector<std::vector<std::string>> per_rank;  // lines each rank prints (prefix added later)
  std::vector<std::string> unranked;               // launcher / scheduler lines in the job log
  std::vector<KernelLine> kernel;                  // kernel lines, in the job log or per host
  std::vector<int64_t> skew;                       // per node
  std::vector<std::pair<std::string, std::string>> extra_files;  // (name under dir, content)

  explicit Writer(const Spec& s) : spec(s), per_rank(static_cast<size_t>(s.ranks)) {
    std::mt19937_64 rng(s.seed * 7919 + 17);
    for (int n = 0; n < nodes(); ++n)
      skew.push_back(s.max_clock_skew_ms ? static_cast<int64_t>(rng() % (2 * s.max_clock_skew_ms + 1)) - s.max_clock_skew_ms : 0);
  }
  int nodes() const { return (spec.ranks + spec.ranks_per_node - 1) / spec.ranks_per_node; }
  int node(int r) const { return r / spec.ranks_per_node; }
  int local(int r) const { return r % spec.ranks_per_node; }
  std::string host_of_node(int n) const { return fmt::format("gpu-node-{:03}", n); }
  std::string host(int r) const { return host_of_node(node(r)); }
  int pid(int r) const { return 20000 + r; }
  int64_t t(int r, int64_t ms) const { return ms + skew[static_cast<size_t>(node(r))]; }
  std::string nccl(int r) const { return fmt::format("{}:{}:{} [{}] NCCL", host(r), pid(r), pid(r), local(r)); }

  void say(int r, std::string line) { per_rank[static_cast<size_t>(r)].push_back(std::move(line)); }
  void on_kernel(int r, int64_t ms, std::string text) { kernel.push_back({node(r), t(r, ms), std::move(text)}); }
  void xid(int r, int64_t ms, int code, const std::string& what) {
    on_kernel(r, ms, fmt::format("NVRM: Xid (PCI:0000:{}:00): {}, pid={}, name=python, {}", kBus[local(r) % 8], code, pid(r), what));
  }

  void startup() {
    for (int r = 0; r < spec.ranks; ++r) {
      say(r, fmt::format("{} INFO Bootstrap : Using eth0:10.1.{}.{}<0>", nccl(r), node(r), 10 + local(r)));
      say(r, fmt::format("{} INFO ncclCommInitRank comm 0x7f{:04x}c0 rank {} nranks {} cudaDev {} nvmlDev {} busId {}000 commId 0x5ac1 - Init COMPLETE",
                         nccl(r), r, r, spec.ranks, local(r), local(r), kBus[local(r) % 8]));
    }
  }
  void progress(int r, int step) {
    int64_t ms = t(r, step * 1000 + r % 97);
    say(r, fmt::format("{} - train - INFO - step {} loss {:.4f} lr 3.0e-04 tokens/s {}", Clock::python(ms), step,
                       2.5 - step * 0.001, 41000 + r));
    // Healthy chatter of a training job, in several real formats (HF Trainer dicts, Megatron
    // iteration lines, DeepSpeed logger, tqdm bars, Python logging).
    for (int k = 0; k < spec.noise_lines; ++k) {
      switch (k % 5) {
        case 0: say(r, fmt::format("{{'loss': {:.4f}, 'grad_norm': {:.3f}, 'learning_rate': 2.9e-05, 'epoch': {:.2f}}}", 2.5 - step * 0.001, 0.5 + k * 0.01, step / 1000.0)); break;
        case 1: say(r, fmt::format(" [2026-11-27 13:{:02}:{:02}] iteration {:8}/  500000 | consumed samples: {:12} | elapsed time per iteration (ms): 1184.2 | learning rate: 2.999E-04 | global batch size:  1024 | lm loss: {:.6E} | loss scale: 1.0 | grad norm: 0.812 | number of skipped iterations:   0 | number of nan iterations:   0 |", step / 60 % 60, step % 60, step, step * 1024, 2.5 - step * 0.001)); break;
        case 2: say(r, fmt::format("[2026-11-27 13:{:02}:{:02},{:03}] [INFO] [logging.py:128:log_dist] [Rank {}] step={}, skipped=0, lr=[2.9e-05], mom=[(0.9, 0.95)]", step / 60 % 60, step % 60, k, r, step)); break;
        case 3: say(r, fmt::format("Epoch 0:  {:2}%|███▍      | {}/5000 [12:03<31:55,  2.63it/s, loss={:.3f}, v_num=0]", step * 100 / 5000, step, 2.5 - step * 0.001)); break;
        default: say(r, fmt::format("{} - data - INFO - prefetch queue depth 8, tokens/s {}, mfu 0.41, mem 61.2GB", Clock::python(ms), 41000 + k)); break;
      }
    }
  }
  void timeout(int r, int64_t seq, const char* op, int64_t numel, int64_t enqueued, int64_t at_ms) {
    int64_t ms = t(r, at_ms);
    say(r, fmt::format("[{} ProcessGroupNCCL.cpp:616] [Rank {}] Watchdog caught collective operation timeout: WorkNCCL(SeqNum={}, OpType={}, NumelIn={}, NumelOut={}, Timeout(ms)=1800000) ran for 1800071 milliseconds before timing out.",
                       Clock::c10('E', ms), r, seq, op, numel, numel));
    say(r, fmt::format("[{} ProcessGroupNCCL.cpp:1664] [PG 0 (default_pg) Rank {}] Exception (either an error or timeout) detected by watchdog at work: {}, last enqueued NCCL work: {}, last completed NCCL work: {}.",
                       Clock::c10('E', ms + 1), r, seq, enqueued, seq - 1));
    say(r, fmt::format("[{} ProcessGroupNCCL.cpp:636] [Rank {}] To avoid data inconsistency, we are taking the entire process down.",
                       Clock::c10('E', ms + 2), r));
  }
  void teardown(int culprit, int exitcode, int64_t at_ms) {
    for (int r = 0; r < spec.ranks; ++r)
      if (node(r) == node(culprit) && r != culprit)
        unranked.push_back(fmt::format("{} {} torch/distributed/elastic/multiprocessing/api.py:897] Sending process {} closing signal SIGTERM",
                                       Clock::glog('W', t(culprit, at_ms)), 9000 + node(r), pid(r)));
    unranked.push_back(fmt::format("{} {} torch/distributed/elastic/multiprocessing/api.py:869] failed (exitcode: {}) local_rank: {} (pid: {}) of binary: /usr/bin/python3",
                                   Clock::glog('E', t(culprit, at_ms + 900)), 9000 + node(culprit), exitcode, local(culprit), pid(culprit)));
  }
  // A CUDA error raised in the culprit's training step, as PyTorch prints it.
  void cuda_error(int r, const char* what) {
    say(r, "Traceback (most recent call last):");
    say(r, "  File \"/workspace/train.py\", line 214, in <module>");
    say(r, "    optimizer.step()");
    say(r, fmt::format("RuntimeError: CUDA error: {}", what));
    say(r, "CUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be incorrect.");
  }
};

// The healthy lines every host's kernel log has, at boot and when the job starts.
std::vector<std::string> kernel_chatter() {
  return {"Linux version 5.15.0-122-generic (buildd@lcy02-amd64-034) (gcc (Ubuntu 11.4.0-1ubuntu1~22.04) 11.4.0, GNU ld (GNU Binutils for Ubuntu) 2.38) #132-Ubuntu SMP Thu Aug 29 13:45:52 UTC 2024 (Ubuntu 5.15.0-122.132-generic 5.15.163)",
          "nvidia: loading out-of-tree module taints kernel.",
          "NVRM: loading NVIDIA UNIX x86_64 Kernel Module  550.90.07  Fri May 31 09:35:42 UTC 2024",
          "nvidia-nvlink: Nvlink Core is being initialized, major device number 510",
          "IPv6: ADDRCONF(NETDEV_CHANGE): ib0: link becomes ready",
          "nvidia-uvm: Loaded the UVM driver, major device number 508."};
}

// One host's kernel log: its chatter (boot, then driver load) and its events, in the file
// name and line format `spec.node_log` asks for. Boot-relative clocks start at a boot time
// of the host's own (a day or so before the job).
std::pair<std::string, std::string> node_log_file(const Writer& w, int n, const std::vector<KernelLine>& events) {
  const std::string host = w.host_of_node(n);
  const double boot_s = -86400.0 - 37.0 * n;  // boot time relative to the job's clock zero
  std::vector<std::pair<int64_t, std::string>> lines;
  auto chatter = kernel_chatter();
  for (size_t i = 0; i < chatter.size(); ++i)
    lines.emplace_back(static_cast<int64_t>(boot_s * 1000) + static_cast<int64_t>(i) * 7000 + w.skew[static_cast<size_t>(n)], chatter[i]);
  for (const auto& e : events)
    if (e.node == n) lines.emplace_back(e.ms, e.text);
  std::stable_sort(lines.begin(), lines.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::string out;
  for (const auto& [ms, text] : lines) {
    switch (w.spec.node_log) {
      case NodeLog::kDmesgBoot: out += fmt::format("[{:>12.6f}] {}\n", (ms - boot_s * 1000) / 1000.0, text); break;
      case NodeLog::kDmesgHuman: out += fmt::format("[{}] {}\n", Clock::dmesg_human(std::max<int64_t>(ms, 0)), text); break;
      case NodeLog::kDmesgIso: out += fmt::format("{} {}\n", Clock::dmesg_iso(std::max<int64_t>(ms, 0)), text); break;
      case NodeLog::kJournal: out += fmt::format("{} {} kernel: {}\n", Clock::syslog(std::max<int64_t>(ms, 0)), host, text); break;
      case NodeLog::kInJobLog: break;
    }
  }
  switch (w.spec.node_log) {
    case NodeLog::kDmesgBoot: return {host + ".dmesg", out};
    case NodeLog::kDmesgHuman: return {"dmesg-" + host + ".txt", out};
    case NodeLog::kDmesgIso: return {host + "/dmesg.log", out};
    default: return {host + "/kern.log", out};
  }
}

// A Flight Recorder dump (JSON form of torch/csrc/distributed/c10d/FlightRecorder.hpp, 2.x) of
// one rank: its last completed collectives and, unless it never issued it, the stuck one.
std::string flight_recorder_dump(int64_t seq, const char* op, bool issued) {
  auto entry = [](int64_t s, const char* name, const char* state) {
    return fmt::format(R"({{"record_id": {0}, "pg_id": 0, "process_group": ["0", "default_pg"], "collective_seq_id": {0}, "p2p_seq_id": 0, "op_id": {0}, "profiling_name": "nccl:{1}", "time_created_ns": {2}, "input_sizes": [[131137536]], "input_dtypes": ["BFloat16"], "output_sizes": [[131137536]], "output_dtypes": ["BFloat16"], "state": "{3}", "retired": {4}, "timeout_ms": 1800000, "is_p2p": false, "frames": [{{"name": "train_step", "filename": "/workspace/train.py", "line": 201}}]}})",
                       s, name, 1795000000000000000LL + s * 1000000, state, std::string(state) == "completed" ? "true" : "false");
  };
  std::string entries;
  for (int64_t s = seq - 3; s < seq; ++s) entries += (entries.empty() ? "" : ", ") + entry(s, "all_reduce", "completed");
  if (issued) entries += ", " + entry(seq, op, "started");
  int64_t last = issued ? seq : seq - 1;
  return fmt::format(R"({{"version": "2.4", "pg_config": {{"0": {{"name": "0", "desc": "default_pg"}}}}, "pg_status": {{"0": {{"last_enqueued_collective": {}, "last_started_collective": {}, "last_completed_collective": {}}}}}, "entries": [{}]}})",
                     last, last, seq - 1, entries) + "\n";
}

// The scheduler's accounting of a step killed for memory (`sacct -j JOB`).
std::string sacct_out_of_memory() {
  return fmt::format(
      "JobID           JobName  Partition    Account  AllocCPUS      State ExitCode \n"
      "------------ ---------- ---------- ---------- ---------- ---------- -------- \n"
      "{0}           train.sh        gpu    ml-team        128 OUT_OF_ME+    0:125 \n"
      "{0}.batch        batch               ml-team         64 OUT_OF_ME+    0:125 \n"
      "{0}.0           python               ml-team        128 OUT_OF_ME+    0:125 \n",
      kSlurmJob);
}

// `kubectl describe pod` of the culprit's pod (one rank per pod, the pod's index is its rank)
// after its container was OOMKilled.
std::string pod_description(const Writer& w, int r, const std::string& at) {
  return fmt::format(
      "Name:             llama-ft-worker-{0}\n"
      "Namespace:        training\n"
      "Priority:         0\n"
      "Service Account:  default\n"
      "Node:             {1}/10.42.{2}.17\n"
      "Start Time:       Fri, 27 Nov 2026 12:58:41 +0000\n"
      "Labels:           training.kubeflow.org/job-name=llama-ft\n"
      "                  training.kubeflow.org/replica-index={0}\n"
      "                  training.kubeflow.org/replica-type=worker\n"
      "Status:           Failed\n"
      "IP:               10.244.{2}.9\n"
      "Containers:\n"
      "  pytorch:\n"
      "    Image:          nvcr.io/nvidia/pytorch:24.05-py3\n"
      "    State:          Terminated\n"
      "      Reason:       OOMKilled\n"
      "      Exit Code:    137\n"
      "      Started:      Fri, 27 Nov 2026 12:58:52 +0000\n"
      "      Finished:     {3}\n"
      "    Ready:          False\n"
      "    Restart Count:  0\n"
      "    Limits:\n"
      "      memory:          96Gi\n"
      "      nvidia.com/gpu:  1\n"
      "Events:\n"
      "  Type    Reason     Age   From               Message\n"
      "  ----    ------     ----  ----               -------\n"
      "  Normal  Scheduled  58m   default-scheduler  Successfully assigned training/llama-ft-worker-{0} to {1}\n"
      "  Normal  Pulled     58m   kubelet            Container image \"nvcr.io/nvidia/pytorch:24.05-py3\" already present on machine\n",
      r, w.host(r), w.node(r) % 250, at);
}

// Each failure's lines: what the culprit, the other ranks, the launcher, the scheduler and the
// kernel print once the failure happens (progress up to it is already written).
void inject(Writer& w, const Spec& spec, int64_t seq) {
  const int c = spec.culprit;
  const int64_t fail_ms = spec.steps * 1000 + 300;
  const int64_t timeout_ms = fail_ms + 1800000;
  auto others_time_out = [&](const char* op) {
    for (int r = 0; r < spec.ranks; ++r)
      if (r != c) w.timeout(r, seq, op, 131137536, seq + (r % 2), timeout_ms + r % 50);
  };
  switch (spec.failure) {
    case Failure::kCudaOom:
      w.say(c, "Traceback (most recent call last):");
      w.say(c, "  File \"/workspace/train.py\", line 210, in <module>");
      w.say(c, "    loss.backward()");
      w.say(c, fmt::format("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU {} has a total capacity of 79.10 GiB of which 1.10 GiB is free. Including non-PyTorch memory, this process has 77.98 GiB memory in use.", w.local(c)));
      others_time_out("ALLREDUCE");
      w.teardown(c, 1, fail_ms + 2000);
      break;
    case Failure::kXid79:
      w.xid(c, fail_ms, 79, "GPU has fallen off the bus.");
      w.cuda_error(c, "unspecified launch failure");
      others_time_out("ALLREDUCE");
      break;
    case Failure::kXid48:
      w.xid(c, fail_ms, 48, "An uncorrectable double bit error (DBE) has been detected on GPU in the framebuffer at partition 2, subpartition 0.");
      w.xid(c, fail_ms + 40, 63, "Row Remapper: New row marked for remapping, reset gpu to activate.");
      w.cuda_error(c, "uncorrectable ECC error encountered");
      others_time_out("ALLREDUCE");
      w.teardown(c, 1, fail_ms + 2000);
      break;
    case Failure::kXid94:
      w.xid(c, fail_ms, 94, "Contained: SM (0x1). RST: No, D-RST: No");
      w.cuda_error(c, "uncorrectable ECC error encountered");
      others_time_out("ALLREDUCE");
      w.teardown(c, 1, fail_ms + 2000);
      break;
    case Failure::kXid74:
      w.xid(c, fail_ms, 74, "NVLink: fatal error detected on link 6(0x0, 0x0, 0x10000, 0x0, 0x0, 0x0, 0x0)");
      w.say(c, fmt::format("{} WARN Cuda failure 'unspecified launch failure'", w.nccl(c)));
      w.say(c, "torch.distributed.DistBackendError: NCCL error in: /opt/pytorch/torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1970, unhandled cuda error (run with NCCL_DEBUG=INFO for details), NCCL version 2.21.5");
      w.say(c, "ncclUnhandledCudaError: Call to CUDA function failed.");
      others_time_out("ALLREDUCE");
      break;
    case Failure::kXid119:
      w.xid(c, fail_ms, 119, "Timeout after 6s of waiting for RPC response from GPU0 GSP! Expected function 76 (GSP_RM_CONTROL) (0x20802a02 0x8).");
      others_time_out("ALLREDUCE");
      break;
    case Failure::kUnevenBatches:
      w.say(c, "Training completed. Do not forget to share your model on huggingface.co/models =)");
      others_time_out("_ALLGATHER_BASE");
      break;
    case Failure::kOpDesync:
      // The seed failure: one batch fewer on the culprit; its bar reached 100% and it went on to
      // the end-of-epoch loss all-reduce while the others wait in ZeRO-3's parameter all-gather.
      w.say(c, fmt::format("Epoch 0: 100%|██████████| {0}/{0} [12:03<00:00,  2.63it/s]", spec.steps));
      for (int r = 0; r < spec.ranks; ++r)
        if (r == c) w.timeout(r, seq, "ALLREDUCE", 1, seq, timeout_ms + 7);
        else w.timeout(r, seq, "_ALLGATHER_BASE", 131137536, seq, timeout_ms + r % 50);
      break;
    case Failure::kSizeDesync:
      for (int r = 0; r < spec.ranks; ++r) w.timeout(r, seq, "ALLREDUCE", r == c ? 131137024 : 131137536, seq, timeout_ms + r % 50);
      break;
    case Failure::kDataLoaderStuck:
      others_time_out("ALLREDUCE");
      w.say(c, fmt::format("[{} ProcessGroupNCCL.cpp:1987] [PG 0 (default_pg) Rank {}] Received a dump signal due to a collective timeout from  rank {} and we will try our best to dump the debug info. Last enqueued NCCL work: {}, last completed NCCL work: {}.This is most likely caused by incorrect usages of collectives. ",
                           Clock::c10('E', w.t(c, timeout_ms + 500)), c, c == 0 ? 1 : 0, seq - 1, seq - 1));
      break;
    case Failure::kHostOomKill:
      w.on_kernel(c, fail_ms, fmt::format("Out of memory: Killed process {} (python) total-vm:182634212kB, anon-rss:93412188kB, file-rss:0kB, shmem-rss:0kB, UID:0 pgtables:190412kB oom_score_adj:0", w.pid(c)));
      w.teardown(c, -9, fail_ms + 1500);
      others_time_out("ALLREDUCE");
      break;
    case Failure::kSlurmOom: {
      // srun ends the whole step when one task dies (--kill-on-bad-exit): no rank times out.
      const std::string at = Clock::iso(w.t(c, fail_ms + 1200));
      w.unranked.push_back(fmt::format("slurmstepd: error: Detected 1 oom_kill event in StepId={}.0. Some of the step tasks have been OOM Killed.", kSlurmJob));
      w.unranked.push_back(fmt::format("srun: error: {}: task {}: Out Of Memory", w.host(c), c));
      w.unranked.push_back("srun: Job step aborted: Waiting up to 32 seconds for job step to finish.");
      w.unranked.push_back(fmt::format("slurmstepd: error: *** STEP {}.0 ON {} CANCELLED AT {} ***", kSlurmJob, w.host_of_node(0), at));
      for (int n = 0; n < w.nodes(); ++n) {
        int first = n * spec.ranks_per_node, last = std::min(spec.ranks, first + spec.ranks_per_node) - 1;
        if (n != w.node(c)) w.unranked.push_back(fmt::format("srun: error: {}: tasks {}-{}: Killed", w.host_of_node(n), first, last));
      }
      w.extra_files.emplace_back(fmt::format("sacct-{}.txt", kSlurmJob), sacct_out_of_memory());
      break;
    }
    case Failure::kK8sOomKilled:
      // The container is killed with no word from the process; the others time out, and the
      // pod's description (saved under a name that says nothing) names the pod and its node.
      others_time_out("ALLREDUCE");
      w.extra_files.emplace_back("pod-describe.txt", pod_description(w, c, Clock::iso(w.t(c, fail_ms))));
      break;
    case Failure::kNcclIbError: {
      int peer = (c + spec.ranks_per_node) % spec.ranks;
      w.say(c, "");
      w.say(c, fmt::format("{} transport/net_ib.cc:1696 NCCL WARN NET/IB : Got completion from peer 10.1.{}.{}<40211> with status=12 opcode=0 len=0 vendor err 129 (Recv) localGid ::ffff:10.1.{}.{} remoteGids::ffff:10.1.{}.{}",
                           w.nccl(c), w.node(peer), 10 + w.local(peer), w.node(c), 10 + w.local(c), w.node(peer), 10 + w.local(peer)));
      others_time_out("ALLREDUCE");
      break;
    }
    case Failure::kAppException:
      // The user's own bug: torchrun kills the culprit's node-mates at once, so only the other
      // nodes' ranks are left waiting in the collective, and every rank of that node is missing.
      w.say(c, "Traceback (most recent call last):");
      w.say(c, "  File \"/workspace/train.py\", line 188, in <module>");
      w.say(c, "    batch = collate(samples)");
      w.say(c, "  File \"/workspace/data/collate.py\", line 41, in collate");
      w.say(c, "    labels = [s[\"caption_ids\"] for s in samples]");
      w.say(c, "KeyError: 'caption_ids'");
      w.teardown(c, 1, fail_ms + 1200);
      for (int r = 0; r < spec.ranks; ++r)
        if (w.node(r) != w.node(c)) w.timeout(r, seq, "ALLREDUCE", 131137536, seq + (r % 2), timeout_ms + r % 50);
      break;
    case Failure::kSilentHang:
      switch (spec.hang_end) {
        case HangEnd::kNone: break;
        case HangEnd::kWatchdog: others_time_out("ALLREDUCE"); break;
        case HangEnd::kTimeLimit:  // twelve hours later, the scheduler's limit
          w.unranked.push_back(fmt::format("slurmstepd: error: *** JOB {} ON {} CANCELLED AT {} DUE TO TIME LIMIT ***", kSlurmJob,
                                           w.host_of_node(0), Clock::iso(fail_ms + 12 * 3600 * 1000)));
          break;
        case HangEnd::kHeartbeatMonitor:  // nvidia-resiliency-ext's rank monitors, 10 minutes without a heartbeat
          for (int r = 0; r < spec.ranks; ++r) {
            int64_t last_beat = (r == c ? spec.steps - 2 : spec.steps - 1) * 1000 + r % 97;
            w.say(r, fmt::format("[{}] [WARNING] [RankMonitorServer{}@{}:{}] [Cycle 0] Did not get subsequent heartbeat. Waited 600.00 seconds.",
                                 Clock::python(w.t(r, last_beat + 600000)), 30000 + r, w.host(r), r));
          }
          break;
      }
      break;
    case Failure::kNone: break;
  }
  if (spec.flight_recorder) {
    const bool culprit_behind = spec.failure == Failure::kSilentHang || spec.failure == Failure::kDataLoaderStuck;
    for (int r = 0; r < spec.ranks; ++r)
      w.extra_files.emplace_back(fmt::format("fr/nccl_trace_rank_{}", r), flight_recorder_dump(seq, "all_reduce", !(culprit_behind && r == c)));
  }
}

// Does this rank stop one step early (it is the one that got stuck or ran out of data)?
bool stops_early(const Spec& spec, int r, int step) {
  if (r != spec.culprit || step != spec.steps - 1) return false;
  switch (spec.failure) {
    case Failure::kUnevenBatches: case Failure::kDataLoaderStuck: case Failure::kSilentHang: case Failure::kOpDesync: return true;
    default: return false;
  }
}

std::string prefixed(const Spec& spec, int r, const std::string& line) {
  switch (spec.layout) {
    case Layout::kTorchrun:
    case Layout::kFilePerNode: return line.find(" NCCL ") != std::string::npos && line.rfind("gpu-node", 0) == 0 ? line : fmt::format("[rank{}]:{}", r, line);
    case Layout::kSlurmLabel: {
      int width = static_cast<int>(std::to_string(spec.ranks).size());
      return fmt::format("{:>{}}: {}", r, width, line);
    }
    case Layout::kOpenMpi: return fmt::format("[1,{}]<stdout>:{}", r, line);
    case Layout::kFilePerRank: return line;
  }
  return line;
}

void write_file(const std::string& path, const std::string& content) {
  std::filesystem::create_directories(std::filesystem::path(path).parent_path());
  std::ofstream(path) << content;
}

// One file: ranks' lines interleaved (each rank's order kept), launcher/kernel lines spliced
// in about 80% through (after the failure point).
// `first_rank`/`end_rank`: the ranks the file holds (a node's, or all).
std::string interleaved_job_log(const Spec& spec, const Writer& w, const std::vector<std::string>& unranked,
                                int first_rank, int end_rank) {
  std::mt19937_64 rng(spec.seed + static_cast<uint64_t>(first_rank));
  std::vector<size_t> pos(static_cast<size_t>(spec.ranks), 0);
  std::vector<int> live;
  size_t total = 0, emitted = 0, unranked_at = 0;
  for (int r = first_rank; r < end_rank; ++r)
    if (!w.per_rank[static_cast<size_t>(r)].empty()) live.push_back(r), total += w.per_rank[static_cast<size_t>(r)].size();
  std::string out;
  int rr = 0;
  while (!live.empty()) {
    size_t idx = spec.shuffle ? static_cast<size_t>(rng() % live.size()) : static_cast<size_t>(rr++ % live.size());
    int r = live[idx];
    const auto& lines = w.per_rank[static_cast<size_t>(r)];
    out += prefixed(spec, r, lines[pos[static_cast<size_t>(r)]++]) + "\n";
    ++emitted;
    if (pos[static_cast<size_t>(r)] == lines.size()) live.erase(live.begin() + static_cast<long>(idx));
    if (unranked_at < unranked.size() && emitted * 10 >= total * 8) out += unranked[unranked_at++] + "\n";
  }
  while (unranked_at < unranked.size()) out += unranked[unranked_at++] + "\n";
  return out;
}

}  // namespace

const char* failure_name(Failure f) {
  switch (f) {
    case Failure::kCudaOom: return "cuda-oom";
    case Failure::kXid79: return "xid79";
    case Failure::kUnevenBatches: return "uneven-batches";
    case Failure::kDataLoaderStuck: return "dataloader-stuck";
    case Failure::kHostOomKill: return "host-oom-kill";
    case Failure::kNcclIbError: return "nccl-ib-error";
    case Failure::kSilentHang: return "silent-hang";
    case Failure::kAppException: return "app-exception";
    case Failure::kXid48: return "xid48";
    case Failure::kXid94: return "xid94";
    case Failure::kXid74: return "xid74";
    case Failure::kXid119: return "xid119";
    case Failure::kOpDesync: return "op-desync";
    case Failure::kSizeDesync: return "size-desync";
    case Failure::kSlurmOom: return "slurm-oom";
    case Failure::kK8sOomKilled: return "k8s-oomkilled";
    case Failure::kNone: return "healthy";
  }
  return "";
}

const char* node_log_name(NodeLog n) {
  switch (n) {
    case NodeLog::kInJobLog: return "in-job-log";
    case NodeLog::kDmesgBoot: return "dmesg";
    case NodeLog::kDmesgHuman: return "dmesg-T";
    case NodeLog::kDmesgIso: return "dmesg-iso";
    case NodeLog::kJournal: return "journal";
  }
  return "";
}

const char* hang_end_name(HangEnd h) {
  switch (h) {
    case HangEnd::kNone: return "none";
    case HangEnd::kTimeLimit: return "time-limit";
    case HangEnd::kHeartbeatMonitor: return "heartbeat";
    case HangEnd::kWatchdog: return "watchdog";
  }
  return "";
}

const char* expected_entry(Failure f) {
  switch (f) {
    case Failure::kCudaOom: return "cuda-oom";
    case Failure::kXid79: return "xid-79-gpu-fell-off-bus";
    case Failure::kUnevenBatches: return "nccl-allgather-uneven-batches";
    case Failure::kDataLoaderStuck: return "nccl-collective-timeout";
    case Failure::kHostOomKill: return "kernel-oom-killer";
    case Failure::kNcclIbError: return "nccl-ib-vendor-err-129";
    case Failure::kSilentHang: return "training-hang-silent";
    case Failure::kAppException: return "generic-python-exception-user-code";
    case Failure::kXid48: return "xid-48-double-bit-ecc";
    case Failure::kXid94: return "xid-94-contained-ecc";
    case Failure::kXid74: return "xid-74-nvlink-error";
    case Failure::kXid119: return "xid-119-gsp-rpc-timeout";
    case Failure::kOpDesync: return "nccl-allgather-uneven-batches";
    case Failure::kSizeDesync: return "nccl-collective-timeout";
    case Failure::kSlurmOom: return "slurm-cgroup-oom-kill";
    case Failure::kK8sOomKilled: return "k8s-oomkilled";
    case Failure::kNone: return "";
  }
  return "";
}

const char* expected_entry(const Spec& spec) {
  if (spec.flight_recorder && (spec.failure == Failure::kSilentHang || spec.failure == Failure::kDataLoaderStuck))
    return "flight-recorder-desync";
  if (spec.failure == Failure::kSilentHang) {
    switch (spec.hang_end) {
      case HangEnd::kWatchdog: return "nccl-collective-timeout";
      case HangEnd::kHeartbeatMonitor: return "nvrx-rank-heartbeat-timeout";
      default: return "training-hang-silent";
    }
  }
  return expected_entry(spec.failure);
}

std::vector<std::string> write(const Spec& spec, const std::string& dir) {
  Writer w(spec);
  w.startup();
  const int64_t seq = 5000 + spec.steps * 12;
  for (int step = 0; step < spec.steps; ++step)
    for (int r = 0; r < spec.ranks; ++r)
      if (!stops_early(spec, r, step)) w.progress(r, step);
  inject(w, spec, seq);

  std::filesystem::create_directories(dir);
  std::vector<std::string> files;
  std::vector<std::string> unranked = w.unranked;
  if (spec.node_log == NodeLog::kInJobLog) {
    for (const auto& k : w.kernel) unranked.push_back(fmt::format("{} {} kernel: {}", Clock::syslog(k.ms), w.host_of_node(k.node), k.text));
  } else {
    for (int n = 0; n < w.nodes(); ++n) {
      auto [name, content] = node_log_file(w, n, w.kernel);
      files.push_back(dir + "/" + name);
      write_file(files.back(), content);
    }
  }
  for (const auto& [name, content] : w.extra_files) {
    files.push_back(dir + "/" + name);
    write_file(files.back(), content);
  }
  if (spec.layout == Layout::kFilePerRank) {
    for (int r = 0; r < spec.ranks; ++r) {
      std::string content;
      for (const auto& l : w.per_rank[static_cast<size_t>(r)]) content += l + "\n";
      files.push_back(fmt::format("{}/rank_{}.log", dir, r));
      write_file(files.back(), content);
    }
    std::string content;
    for (const auto& l : unranked) content += l + "\n";
    files.push_back(dir + "/launcher-and-scheduler.log");
    write_file(files.back(), content);
    return files;
  }
  if (spec.layout == Layout::kFilePerNode) {
    for (int n = 0; n < w.nodes(); ++n) {
      std::vector<std::string> node_unranked;  // launcher lines name their node's pids
      for (const auto& l : unranked)
        if (l.find(w.host_of_node(n)) != std::string::npos || l.find(fmt::format(" {} torch/", 9000 + n)) != std::string::npos)
          node_unranked.push_back(l);
      files.push_back(fmt::format("{}/{}.log", dir, w.host_of_node(n)));
      int first = n * spec.ranks_per_node;
      write_file(files.back(), interleaved_job_log(spec, w, node_unranked, first, std::min(spec.ranks, first + spec.ranks_per_node)));
    }
    return files;
  }
  files.push_back(dir + "/job.log");
  write_file(files.back(), interleaved_job_log(spec, w, unranked, 0, spec.ranks));
  return files;
}

}  // namespace firstfault::scenario
