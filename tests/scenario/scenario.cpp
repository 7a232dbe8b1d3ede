#include "scenario.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <random>

namespace firstfault::scenario {

namespace {

constexpr const char* kBus[8] = {"18", "2a", "3a", "5d", "9a", "ab", "ba", "db"};

struct Clock {
  // 2026-11-27 13:00:00 plus an offset in ms.
  static std::string python(int64_t ms) {  // 2026-11-27 13:00:05,123
    int64_t s = ms / 1000;
    return fmt::format("2026-11-27 {:02}:{:02}:{:02},{:03}", 13 + s / 3600, s / 60 % 60, s % 60, ms % 1000);
  }
  static std::string c10(char sev, int64_t ms) {  // E1127 13:00:05.123456789
    int64_t s = ms / 1000;
    return fmt::format("{}1127 {:02}:{:02}:{:02}.{:09}", sev, 13 + s / 3600, s / 60 % 60, s % 60, (ms % 1000) * 1000000 + 4321);
  }
  static std::string syslog(int64_t ms) {  // Nov 27 13:00:05
    int64_t s = ms / 1000;
    return fmt::format("Nov 27 {:02}:{:02}:{:02}", 13 + s / 3600, s / 60 % 60, s % 60);
  }
  static std::string glog(char sev, int64_t ms) {  // W1127 13:00:05.123000
    int64_t s = ms / 1000;
    return fmt::format("{}1127 {:02}:{:02}:{:02}.{:03}000", sev, 13 + s / 3600, s / 60 % 60, s % 60, ms % 1000);
  }
};

struct Writer {
  const Spec& spec;
  std::vector<std::vector<std::string>> per_rank;  // lines each rank prints (prefix added later)
  std::vector<std::string> unranked;               // launcher / kernel lines
  std::vector<int64_t> skew;                       // per node

  explicit Writer(const Spec& s) : spec(s), per_rank(static_cast<size_t>(s.ranks)) {
    std::mt19937_64 rng(s.seed * 7919 + 17);
    int nodes = (s.ranks + s.ranks_per_node - 1) / s.ranks_per_node;
    for (int n = 0; n < nodes; ++n)
      skew.push_back(s.max_clock_skew_ms ? static_cast<int64_t>(rng() % (2 * s.max_clock_skew_ms + 1)) - s.max_clock_skew_ms : 0);
  }
  int node(int r) const { return r / spec.ranks_per_node; }
  int local(int r) const { return r % spec.ranks_per_node; }
  std::string host(int r) const { return fmt::format("gpu-node-{:03}", node(r)); }
  int pid(int r) const { return 20000 + r; }
  int64_t t(int r, int64_t ms) const { return ms + skew[static_cast<size_t>(node(r))]; }
  std::string nccl(int r) const { return fmt::format("{}:{}:{} [{}] NCCL", host(r), pid(r), pid(r), local(r)); }

  void say(int r, std::string line) { per_rank[static_cast<size_t>(r)].push_back(std::move(line)); }

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
  void timeout(int r, int64_t seq, const char* op, int64_t enqueued, int64_t at_ms) {
    int64_t ms = t(r, at_ms);
    say(r, fmt::format("[{} ProcessGroupNCCL.cpp:616] [Rank {}] Watchdog caught collective operation timeout: WorkNCCL(SeqNum={}, OpType={}, NumelIn=131137536, NumelOut=131137536, Timeout(ms)=1800000) ran for 1800071 milliseconds before timing out.",
                       Clock::c10('E', ms), r, seq, op));
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
};

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
    case Failure::kNone: return "healthy";
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
    case Failure::kNone: return "";
  }
  return "";
}

std::vector<std::string> write(const Spec& spec, const std::string& dir) {
  Writer w(spec);
  w.startup();
  const int F = spec.steps;
  const int c = spec.culprit;
  const int64_t seq = 5000 + F * 12;
  const int64_t fail_ms = F * 1000 + 300;
  const int64_t timeout_ms = fail_ms + 1800000;
  for (int step = 0; step < F; ++step)
    for (int r = 0; r < spec.ranks; ++r) {
      bool stops_early = (spec.failure == Failure::kUnevenBatches || spec.failure == Failure::kDataLoaderStuck ||
                          spec.failure == Failure::kSilentHang) &&
                         r == c && step == F - 1;
      if (!stops_early) w.progress(r, step);
    }
  auto others_time_out = [&](const char* op, bool culprit_enqueued) {
    for (int r = 0; r < spec.ranks; ++r)
      if (r != c) w.timeout(r, seq, op, seq + (r % 2), timeout_ms + r % 50);
    (void)culprit_enqueued;
  };
  switch (spec.failure) {
    case Failure::kCudaOom:
      w.say(c, "Traceback (most recent call last):");
      w.say(c, "  File \"/workspace/train.py\", line 210, in <module>");
      w.say(c, "    loss.backward()");
      w.say(c, fmt::format("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU {} has a total capacity of 79.10 GiB of which 1.10 GiB is free. Including non-PyTorch memory, this process has 77.98 GiB memory in use.", w.local(c)));
      others_time_out("ALLREDUCE", false);
      w.teardown(c, 1, fail_ms + 2000);
      break;
    case Failure::kXid79:
      w.unranked.push_back(fmt::format("{} {} kernel: NVRM: Xid (PCI:0000:{}:00): 79, pid={}, name=python, GPU has fallen off the bus.",
                                       Clock::syslog(w.t(c, fail_ms)), w.host(c), kBus[w.local(c) % 8], w.pid(c)));
      others_time_out("ALLREDUCE", false);
      break;
    case Failure::kUnevenBatches:
      w.say(c, "Training completed. Do not forget to share your model on huggingface.co/models =)");
      others_time_out("_ALLGATHER_BASE", false);
      break;
    case Failure::kDataLoaderStuck:
      others_time_out("ALLREDUCE", false);
      w.say(c, fmt::format("[{} ProcessGroupNCCL.cpp:1987] [PG 0 (default_pg) Rank {}] Received a dump signal due to a collective timeout from  rank {} and we will try our best to dump the debug info. Last enqueued NCCL work: {}, last completed NCCL work: {}.This is most likely caused by incorrect usages of collectives. ",
                           Clock::c10('E', w.t(c, timeout_ms + 500)), c, c == 0 ? 1 : 0, seq - 1, seq - 1));
      break;
    case Failure::kHostOomKill:
      w.unranked.push_back(fmt::format("{} {} kernel: Out of memory: Killed process {} (python) total-vm:182634212kB, anon-rss:93412188kB, file-rss:0kB, shmem-rss:0kB, UID:0 pgtables:190412kB oom_score_adj:0",
                                       Clock::syslog(w.t(c, fail_ms)), w.host(c), w.pid(c)));
      w.teardown(c, -9, fail_ms + 1500);
      others_time_out("ALLREDUCE", false);
      break;
    case Failure::kNcclIbError: {
      int peer = (c + spec.ranks_per_node) % spec.ranks;
      w.say(c, "");
      w.say(c, fmt::format("{} transport/net_ib.cc:1696 NCCL WARN NET/IB : Got completion from peer 10.1.{}.{}<40211> with status=12 opcode=0 len=0 vendor err 129 (Recv) localGid ::ffff:10.1.{}.{} remoteGids::ffff:10.1.{}.{}",
                           w.nccl(c), w.node(peer), 10 + w.local(peer), w.node(c), 10 + w.local(c), w.node(peer), 10 + w.local(peer)));
      others_time_out("ALLREDUCE", false);
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
        if (w.node(r) != w.node(c)) w.timeout(r, seq, "ALLREDUCE", seq + (r % 2), timeout_ms + r % 50);
      break;
    case Failure::kSilentHang:
    case Failure::kNone:
      break;
  }

  // Add each layout's prefix and lay the lines out.
  std::filesystem::create_directories(dir);
  auto prefixed = [&](int r, const std::string& line) -> std::string {
    switch (spec.layout) {
      case Layout::kTorchrun: return line.find(" NCCL ") != std::string::npos && line.rfind("gpu-node", 0) == 0 ? line : fmt::format("[rank{}]:{}", r, line);
      case Layout::kSlurmLabel: {
        int width = static_cast<int>(std::to_string(spec.ranks).size());
        return fmt::format("{:>{}}: {}", r, width, line);
      }
      case Layout::kOpenMpi: return fmt::format("[1,{}]<stdout>:{}", r, line);
      case Layout::kFilePerRank: return line;
    }
    return line;
  };
  std::vector<std::string> files;
  std::mt19937_64 rng(spec.seed);
  if (spec.layout == Layout::kFilePerRank) {
    for (int r = 0; r < spec.ranks; ++r) {
      std::string path = fmt::format("{}/rank_{}.log", dir, r);
      std::ofstream out(path);
      for (const auto& l : w.per_rank[static_cast<size_t>(r)]) out << l << "\n";
      files.push_back(path);
    }
    std::string path = dir + "/launcher-and-kernel.log";
    std::ofstream out(path);
    for (const auto& l : w.unranked) out << l << "\n";
    files.push_back(path);
    return files;
  }
  // One file: ranks' lines interleaved (each rank's order kept), launcher/kernel lines spliced in.
  std::vector<size_t> pos(static_cast<size_t>(spec.ranks), 0);
  std::vector<int> live;
  for (int r = 0; r < spec.ranks; ++r) live.push_back(r);
  std::string path = dir + "/job.log";
  std::ofstream out(path);
  size_t unranked_at = 0;
  size_t total = 0, emitted = 0;
  for (const auto& v : w.per_rank) total += v.size();
  int rr = 0;
  while (!live.empty()) {
    size_t idx = spec.shuffle ? static_cast<size_t>(rng() % live.size()) : static_cast<size_t>(rr++ % live.size());
    int r = live[idx];
    auto& lines = w.per_rank[static_cast<size_t>(r)];
    out << prefixed(r, lines[pos[static_cast<size_t>(r)]++]) << "\n";
    ++emitted;
    if (pos[static_cast<size_t>(r)] == lines.size()) live.erase(live.begin() + static_cast<long>(idx));
    // Kernel/launcher lines land somewhere after the failure point (about 80% through).
    if (unranked_at < w.unranked.size() && emitted * 10 >= total * 8) out << w.unranked[unranked_at++] << "\n";
  }
  while (unranked_at < w.unranked.size()) out << w.unranked[unranked_at++] << "\n";
  files.push_back(path);
  return files;
}

}  // namespace firstfault::scenario
