#include <catch2/catch.hpp>

#include "firstfault/attribution/line_attributor.h"

#include <filesystem>
#include <fstream>
#include <sstream>
#include <unordered_map>

#include "firstfault/app/pipeline.h"
#include "firstfault/matcher/template_scanner.h"
#include "firstfault/reader/log_reader.h"
#include "test_support.h"

using namespace firstfault;

namespace {
Attribution attr(std::string_view line, FileIdentity id = {}) {
  LineAttributor a(std::move(id));
  return a.attribute(line);
}
std::string ts(const Attribution& a) { return format_timestamp(a.time); }
}  // namespace

TEST_CASE("attribution: c10 [rankN]: with torch >= 2.4 header (unpadded month, no year)") {
  auto a = attr("[rank1]:[E1003 18:37:01.832146912 ProcessGroupNCCL.cpp:607] [Rank 1] Watchdog caught collective operation timeout");
  CHECK(a.rank == 1);
  CHECK(ts(a) == "--10-03T18:37:01");
  CHECK(a.body == "[Rank 1] Watchdog caught collective operation timeout");
  auto b = attr("[rank0]:[E321 02:07:08.408271257 ProcessGroupNCCL.cpp:607] x");
  CHECK(ts(b) == "--03-21T02:07:08");
}

TEST_CASE("attribution: old c10 header without time and [Rank N] inside the message") {
  auto a = attr("[E ProcessGroupNCCL.cpp:737] [Rank 7] Watchdog caught collective operation timeout");
  CHECK(a.rank == 7);
  CHECK_FALSE(a.time.valid());
  CHECK(a.body == "[Rank 7] Watchdog caught collective operation timeout");
}

TEST_CASE("attribution: PG tags give the rank only for the default process group") {
  CHECK(attr("[PG ID 0 PG GUID 0(default_pg) Rank 3]  failure detected by watchdog").rank == 3);
  CHECK(attr("[PG 0 Rank 2] Timeout at NCCL work: 1").rank == 2);
  CHECK(attr("[PG ID 2 PG GUID 9 Rank 4] Timeout at NCCL work: 610").rank == -1);
}

TEST_CASE("attribution: excepthook [rankN]: with a space, torchrun tee [defaultN]: (local rank)") {
  auto a = attr("[rank4]: RuntimeError: boom");
  CHECK(a.rank == 4);
  CHECK(a.body == "RuntimeError: boom");
  auto b = attr("[default3]:Fatal Python error: Segmentation fault");
  CHECK(b.local_rank == 3);
  CHECK(b.rank == 3);  // no host: a one-node job
  CHECK(b.body == "Fatal Python error: Segmentation fault");
  auto c = attr("[default3]:[rank11]:[E1003 18:37:01.832146912 ProcessGroupNCCL.cpp:607] x");
  CHECK(c.rank == 11);
  CHECK(c.local_rank == 3);
}

TEST_CASE("attribution: glog 0.7 headers carry the year (log_year_in_prefix)") {
  auto a = attr("E20260613 09:46:52.048179 15282 real_client.cpp:5592] Failed to invoke batch_get_offload_object");
  CHECK(ts(a) == "2026-06-13T09:46:52.048");
  CHECK(a.severity == 'E');
  CHECK(a.pid == 15282);
  CHECK(a.body == "Failed to invoke batch_get_offload_object");
  auto old = attr("E0613 09:46:52.048179 15282 real_client.cpp:5592] Failed");
  CHECK(ts(old) == "--06-13T09:46:52.048");
  // Eight digits that are no date leave the time unknown but still peel the header.
  auto bad = attr("E20261399 09:46:52.048179 15282 real_client.cpp:5592] Failed");
  CHECK(bad.body == "Failed");
  CHECK(!bad.time.valid());
}

TEST_CASE("attribution: abseil's header before InitializeLog carries seconds since 1970 for its clock") {
  // XLA/JAX/TensorFlow lines logged before absl::InitializeLog(): "E0000 00:00:<epoch>.<us>"
  // (pytorch/xla#7974). The header is peeled and its E severity kept, so the line is an error.
  auto a = attr("E0000 00:00:1725834192.702937  625990 collective_ops_utils.h:310] This thread has been waiting for 5000ms");
  CHECK(a.severity == 'E');
  CHECK(a.pid == 625990);
  CHECK(a.body == "This thread has been waiting for 5000ms");
  CHECK(ts(a) == "2024-09-08T22:23:12.702");
  // A real MMDD of zero with an ordinary clock is still no date, and no epoch.
  auto b = attr("E0000 10:22:31.123456 482 file.cc:12] x");
  CHECK(b.body == "x");
  CHECK(!b.time.valid());
  // Too few digits for seconds since 1970: not this header.
  CHECK(attr("E0000 00:00:17258.702937  625990 file.h:310] x").body != "x");
}

TEST_CASE("attribution: Python logging with the time in the logger's place (%(levelname)s:%(asctime)s:)") {
  // verl's tools (volcengine/verl#3891): the level is peeled with the time, so ERROR counts.
  auto a = attr("ERROR:2025-10-23 06:22:11,371:[MCPBaseTool] Execution failed: local variable 'x' referenced before assignment");
  CHECK(a.severity == 'E');
  CHECK(ts(a) == "2025-10-23T06:22:11.371");
  CHECK(a.body == "[MCPBaseTool] Execution failed: local variable 'x' referenced before assignment");
  // The logger-name form is unchanged.
  auto b = attr("WARNING:torch.distributed.elastic.multiprocessing.api:Sending process 1 closing signal SIGTERM");
  CHECK(b.body == "Sending process 1 closing signal SIGTERM");
}

TEST_CASE("attribution: torch_xla's xla_dist worker prefix (time, client address, [ordinal])") {
  // "%(asctime)-12s %(clientip)s [%(ordinal)s] %(message)s" (Lightning-AI/pytorch-lightning#7197).
  auto a = attr("2021-04-23 18:14:43 10.164.0.29 [3]   File \"/home/u/trainer.py\", line 316, in __init__");
  CHECK(a.rank == 3);
  CHECK(a.host == "10.164.0.29");
  CHECK(ts(a) == "2021-04-23T18:14:43");
  CHECK(a.body == "  File \"/home/u/trainer.py\", line 316, in __init__");  // a traceback line keeps its indent
  auto b = attr("2021-04-23 18:14:46 10.164.0.27 [0] TPU available: True, using: 8 TPU cores");
  CHECK(b.rank == 0);
  CHECK(b.body == "TPU available: True, using: 8 TPU cores");
  // Not an address, or not a bare ordinal: not this prefix.
  CHECK(attr("2021-04-23 18:14:43 10.164.0 [3] x").rank < 0);
  CHECK(attr("2021-04-23 18:14:43 10.164.0.29 [rank3] x").rank < 0);
}

TEST_CASE("attribution: Docker BuildKit's plain progress prefix (#step seconds)") {
  // deepspeedai/DeepSpeed#7544: a pip install inside `docker build` fails on an import.
  auto a = attr("#42 15.84       NameError: name '_disable_dynamo_if_unsupported' is not defined");
  CHECK(a.body == "      NameError: name '_disable_dynamo_if_unsupported' is not defined");
  CHECK(attr("#8 0.391 Get:1 http://deb.debian.org/debian bookworm InRelease").body ==
        "Get:1 http://deb.debian.org/debian bookworm InRelease");
  // gdb's frames and a bare step header are not it.
  CHECK(attr("#0  0x00007f3c8e2a in raise () from /lib64/libc.so.6").body == "#0  0x00007f3c8e2a in raise () from /lib64/libc.so.6");
  CHECK(attr("#42 [stage-1 3/7] RUN pip install deepspeed").body == "#42 [stage-1 3/7] RUN pip install deepspeed");
}

TEST_CASE("attribution: a block-indented paste keeps its rank prefix; a traceback's own bracket line keeps its indent") {
  struct Case {
    std::string_view line;
    int rank;
    std::string_view body;
  };
  const Case cases[] = {
      {" [rank3]: ValueError: torch.cat(): expected a non-empty list of Tensors", 3,
       "ValueError: torch.cat(): expected a non-empty list of Tensors"},
      {"    [rank12]:   File \"/work/train.py\", line 9, in <module>", 12, "  File \"/work/train.py\", line 9, in <module>"},
      {"  [Previous line repeated 996 more times]", -1, "  [Previous line repeated 996 more times]"},
  };
  for (const Case& c : cases) {
    Attribution a = attr(c.line);
    CHECK(a.rank == c.rank);
    CHECK(a.body == c.body);
  }
}

TEST_CASE("attribution: Slurm srun --label, right-aligned") {
  auto a = attr(" 3: Epoch 1 step 10");
  CHECK(a.rank == 3);
  CHECK(a.body == "Epoch 1 step 10");
  CHECK(attr("12: [rank12]: x").rank == 12);
}

TEST_CASE("attribution: Open MPI tags (4.x, 5.x, ctime)") {
  auto a = attr("[1,3]<stderr>:2021-08-04 11:52:22,414 - mmdet - INFO - Epoch [1][7400/14659]");
  CHECK(a.rank == 3);
  CHECK(ts(a) == "2021-08-04T11:52:22.414");
  CHECK(a.body == "Epoch [1][7400/14659]");
  CHECK(attr("[1,0]<stdout>: Step #0").rank == 0);
  CHECK(attr("[2]<stdout>:test PASSED").rank == 2);
  auto c = attr("Thu Mar 21 02:07:08 2024[1,3]<stdout>:hello");
  CHECK(c.rank == 3);
  CHECK(ts(c) == "2024-03-21T02:07:08");
}

TEST_CASE("attribution: SageMaker's rewritten Open MPI tag names the rank and the host") {
  // sagemaker-training-toolkit's own test stream: "[1,mpirank:10,algo-2]<stdout>:This is stdout".
  auto a = attr("[1,mpirank:10,algo-2]<stderr>:RuntimeError: CUDA out of memory.");
  CHECK(a.rank == 10);
  CHECK(a.host == "algo-2");
  CHECK(a.body == "RuntimeError: CUDA out of memory.");
  auto b = attr("[1,mpirank:0,algo-1]<stdout>:algo-1:79:1300 [0] NCCL INFO Launch mode Parallel");
  CHECK(b.rank == 0);
  CHECK(b.host == "algo-1");
  CHECK(b.pid == 79);
  CHECK(attr("[1,mpirank:x,algo-1]<stdout>:hello").rank == -1);
  CHECK(attr("[1,mpirank:3,]<stdout>:hello").rank == -1);
}

TEST_CASE("attribution: Ray worker prefix, pid is not a rank, rank from inner prefix or actor name") {
  auto a = attr("(RayWorkerWrapper pid=270291, ip=10.175.94.190) [rank3]:[E219 08:58:32.606667496 ProcessGroupNCCL.cpp:1785] x");
  CHECK(a.rank == 3);
  CHECK(a.host == "10.175.94.190");
  CHECK(a.pid == 270291);
  CHECK(attr("(MegatronPolicyWorker[rank=0] pid=1892406, ip=10.65.5.217) hello").rank == 0);
  CHECK(attr("(RayTrainWorker pid=75123) Some weights").rank == -1);
}

TEST_CASE("attribution: NCCL host:pid:tid [dev] (dev is not a rank)") {
  auto a = attr("kolyoz2:25146:25827 [5] NCCL INFO ncclCommInitRank comm 0x55 rank 4 nranks 8");
  CHECK(a.host == "kolyoz2");
  CHECK(a.pid == 25146);
  CHECK(a.rank == -1);
  CHECK(a.body == "NCCL INFO ncclCommInitRank comm 0x55 rank 4 nranks 8");
  auto w = attr("[2025-05-01 12:00:00] gpu-7:1101:1190 [3] transport/net_ib.cc:1696 NCCL WARN NET/IB: x");
  CHECK(w.host == "gpu-7");
  CHECK(ts(w) == "2025-05-01T12:00:00");
  CHECK(w.body == "transport/net_ib.cc:1696 NCCL WARN NET/IB: x");
}

TEST_CASE("attribution: DeepSpeed logger and [Rank N] from log_dist; pdsh host only once pdsh is in use") {
  auto a = attr("[2025-03-07 23:55:15,357] [INFO] [logging.py:128:log_dist] [Rank 0] DeepSpeed info: version=0.16.3");
  CHECK(ts(a) == "2025-03-07T23:55:15.357");
  CHECK(a.rank == 0);
  CHECK(a.body == "[Rank 0] DeepSpeed info: version=0.16.3");
  CHECK(attr("104.171.201.171: hello").host == "104.171.201.171");
  LineAttributor la;
  CHECK(la.attribute("worker-1: hello").host.empty());
  la.enable_pdsh();
  CHECK(la.attribute("worker-1: hello").host == "worker-1");
}

TEST_CASE("attribution: a 'host: ' prefix before NCCL's own header is read without the pdsh line") {
  // NVIDIA/nccl#394 (real-log round 78b): a paste of pdsh output that lost DeepSpeed's `cmd = pdsh`.
  LineAttributor la;
  auto a = la.attribute("node01: VM-0-14-centos:108:593 [0] transport/net_ib.cc:816 NCCL WARN NET/IB : Got completion with error 12, opcode 0, len 32633, vendor err 129");
  CHECK_FALSE(a.host.empty());
  CHECK(a.pid == 108);
  CHECK(a.body.find("NET/IB : Got completion") < a.body.size());
  // A plain "word: text" line is still no host.
  CHECK(la.attribute("warning: something odd happened").host.empty());
  CHECK(la.attribute("node01: hello").host.empty());
}

TEST_CASE("attribution: glog-style torch elastic lines, Python logging, ISO-8601 with zone") {
  auto a = attr("W0801 13:23:17.366000 32974 torch/distributed/elastic/multiprocessing/api.py:900] Sending process 33051 closing signal SIGTERM");
  CHECK(ts(a) == "--08-01T13:23:17.366");
  CHECK(a.pid == 32974);
  CHECK(a.body == "Sending process 33051 closing signal SIGTERM");
  auto b = attr("2026-11-27 13:31:02,114 - root - ERROR - boom");
  CHECK(ts(b) == "2026-11-27T13:31:02.114");
  CHECK(b.body == "boom");
  auto c = attr("2019-06-21T19:50:53.813339525Z stdout F hello");
  CHECK(ts(c) == "2019-06-21T19:50:53.813");
  CHECK(c.body == "hello");
  auto d = attr("2026-11-27T13:31:02+02:00 node-1 x");
  CHECK(ts(d) == "2026-11-27T11:31:02");
  auto e = attr("WARNING:torch.distributed.elastic.multiprocessing.api:Sending process 153929 closing signal SIGTERM");
  CHECK(e.body == "Sending process 153929 closing signal SIGTERM");
  auto f = attr("[2024-05-08 08:47:31,877] torch.distributed.elastic.multiprocessing.api: [ERROR] failed (exitcode: 1)");
  CHECK(f.body == "failed (exitcode: 1)");
}

TEST_CASE("attribution: TensorFlow/XLA/JAX (tsl logging) headers carry the level, with or without a thread id") {
  auto a = attr("2024-01-11 05:43:11.726254: E external/xla/xla/service/gpu/nccl_utils.cc:211] Aborting communicator: 0x7f3e427e55b0");
  CHECK(ts(a) == "2024-01-11T05:43:11.726");
  CHECK(a.severity == 'E');
  CHECK(a.body == "Aborting communicator: 0x7f3e427e55b0");
  auto b = attr("2023-03-14 10:22:01.000001: W    4242 tensorflow/core/common_runtime/bfc_allocator.cc:479] Allocator ran out");
  CHECK(b.severity == 'W');
  CHECK(b.body == "Allocator ran out");
  auto c = attr("2023-03-14 10:22:01.000001: F external/tsl/tsl/platform/x.cc:9] Check failed: ok");
  CHECK(c.fatal);
  // A timestamped message with a colon is not a header: no "file:line]" after a level letter.
  auto d = attr("2024-01-11 05:43:11.726254: E stands for error in this table] x");
  CHECK(d.severity == 0);
  auto e = attr("2024-01-11 05:43:11 step 5: loss 1.2");
  CHECK(e.body == "step 5: loss 1.2");
}

TEST_CASE("attribution: dmesg raw, dmesg -T, syslog, vLLM") {
  auto a = attr("[74889.644138] NVRM: Xid (PCI:0000:02:00): 79, GPU has fallen off the bus.");
  CHECK(a.time.kind == Timestamp::kBoot);
  CHECK(a.body == "NVRM: Xid (PCI:0000:02:00): 79, GPU has fallen off the bus.");
  auto b = attr("[Fri Mar  3 04:27:08 2023] NVRM: Xid (PCI:0000:61:00): 119, pid=1346198");
  CHECK(ts(b) == "2023-03-03T04:27:08");
  auto c = attr("May 18 19:02:39 gpu-node-3 kernel: NVRM: Xid (PCI:0000:2b:00): 79, GPU has fallen off the bus.");
  CHECK(c.host == "gpu-node-3");
  CHECK(c.body.substr(0, 5) == "NVRM:");
  auto c2 = attr("May 18 19:02:39 kernel: NVRM: Xid");
  CHECK(c2.body == "NVRM: Xid");
  // Not a date: day 0 (it would underflow the day count) and day 32 leave the line as text.
  CHECK_FALSE(attr("Mar 00 21:39:05 gpu-b11 kernel: x").time.valid());
  CHECK_FALSE(attr("Mar 32 21:39:05 gpu-b11 kernel: x").time.valid());
  auto d = attr("INFO 05-16 09:49:32 [parallel_state.py:1004] rank 15 in world size 16");
  CHECK(ts(d) == "--05-16T09:49:32");
  CHECK(d.body == "rank 15 in world size 16");
}

TEST_CASE("attribution: a prefix glued mid-line after a tqdm bar still names the rank") {
  auto a = attr("Epoch 0:   6%|██  | 32040/500150 [6:28:43<94:39:17][rank1]:[E1003 18:37:01.832146912 ProcessGroupNCCL.cpp:607] x");
  CHECK(a.rank == 1);
}

TEST_CASE("attribution: file names give the rank of unprefixed lines") {
  CHECK(identity_from_path("logs/rank3.log").rank == 3);
  CHECK(identity_from_path("logs/rank_3/stdout.log").rank == 3);
  CHECK(identity_from_path("logs/stdout_12.log").rank == 12);
  CHECK(identity_from_path("logs/worker-2/stdout.log").rank == 2);
  // A directory named after a case or run is not a rank's directory.
  CHECK(identity_from_path("cases/deepep-121-both-nodes-rank0/job.log").rank == -1);
  CHECK(identity_from_path("cases/axolotl-2684-rank0-tokenize/job.log").rank == -1);
  CHECK(identity_from_path("runs/oom-on-rank3-step500/log.txt").rank == -1);
  CHECK(identity_from_path("pod-name-worker-3").rank == 3);
  CHECK(identity_from_path("slurm-123_4.out").rank == 4);
  CHECK(identity_from_path("log/workerlog.3").rank == 3);  // paddle.distributed.launch, one file per trainer
  CHECK(identity_from_path("node-07.out").host == "node-07");
  CHECK(identity_from_path("job.log").rank == -1);
  CHECK(identity_from_path("nccl-ib-vendor-err-129.log").rank == -1);
  CHECK(identity_from_path("out/r17-train.txt", R"(r(\d+)-)").rank == 17);
  CHECK(attr("plain line", identity_from_path("logs/rank5.log")).rank == 5);
}

TEST_CASE("attribution: a kernel log saved per node takes its host from its name") {
  CHECK(identity_from_path("nodes/node-109.dmesg").host == "node-109");
  CHECK(identity_from_path("nodes/gpu-node-003.kern.log").host == "gpu-node-003");
  CHECK(identity_from_path("dmesg-node-109.txt").host == "node-109");
  CHECK(identity_from_path("journal_a100-17.log").host == "a100-17");
  CHECK(identity_from_path("incident/node-109/kern.log").host == "node-109");
  CHECK(identity_from_path("incident/node-109/dmesg.log").host == "node-109");
  // A host token has a digit: a folder of logs, a rotated file, a case name name no host.
  CHECK(identity_from_path("logs/kern.log").host.empty());
  CHECK(identity_from_path("var/log/kern.log.1").host.empty());
  CHECK(identity_from_path("cases/xid79-dmesg/job.log").host.empty());
  CHECK(identity_from_path("rank_3.log").host.empty());
  // --host-from overrides the rules; --rank-from keeps working beside it.
  FileIdentity id = identity_from_path("archive/job-r12/n0017/boot.txt", R"(-r(\d+)/)", false, R"(/(n\d+)/)");
  CHECK(id.host == "n0017");
  CHECK(id.rank == 12);
  CHECK(identity_from_path("other/boot.txt", "", false, R"(/(n\d+)/)").host.empty());
}

TEST_CASE("attribution: continuation lines inherit the previous rank") {
  LineAttributor la;
  CHECK(la.attribute("[rank2]:[E1003 18:37:01.832146912 ProcessGroupNCCL.cpp:607] boom").rank == 2);
  auto c = la.attribute("frame #0: c10::Error::Error + 0x99");
  CHECK(c.rank == 2);
  CHECK(c.inherited);
  CHECK(la.attribute("unrelated top-level line").rank == -1);
}

TEST_CASE("attribution: a header wrapped onto its own line lends its rank to the message below it") {
  // A blog's paste of a PyTorch ECC error (real-log round 77f): the c10 header, then the message.
  LineAttributor la;
  CHECK(la.attribute("[rank1]:[E810 15:36:05.945860779 ProcessGroupNCCL.cpp:1899] [PG ID 0 PG GUID 0(default_pg) Rank 1]").rank == 1);
  auto msg = la.attribute("Process group watchdog thread terminated with exception: CUDA error: uncorrectable ECC error encountered");
  CHECK(msg.rank == 1);
  CHECK(msg.inherited);
  // Only the one line: the next unprefixed top-level line is nobody's.
  CHECK(la.attribute("terminate called after throwing an instance of 'c10::DistBackendError'").rank == -1);
  // A header with a message of its own lends nothing.
  LineAttributor full;
  CHECK(full.attribute("[rank1]:[E810 15:36:05.945860779 ProcessGroupNCCL.cpp:1899] [Rank 1] boom").rank == 1);
  CHECK(full.attribute("unrelated top-level line").rank == -1);
}

TEST_CASE("attribution: head/tail's ==> file <== headers give each file's lines the rank its name says") {
  // Paddle's per-rank workerlog.N files joined with tail -n +1 (real-log round 77a).
  LineAttributor la(identity_from_path("job.log"));
  CHECK(la.attribute("==> log/workerlog.0 <==").rank == 0);
  CHECK(la.attribute("W0405 08:13:40.095029 2400180 dynamic_loader.cc:278] Cannot load libnccl.so").rank == 0);
  CHECK(la.attribute("==> log/workerlog.3 <==").rank == 3);
  CHECK(la.attribute("OSError: (External) TCP send error: Broken pipe").rank == 3);
  // A section whose name says nothing goes back to the input's own identity.
  CHECK(la.attribute("==> notes.txt <==").rank == -1);
  CHECK(la.attribute("a line").rank == -1);
  // A line's own prefix still wins inside a section.
  CHECK(la.attribute("==> log/workerlog.1 <==").rank == 1);
  CHECK(la.attribute("[rank5]: KeyError: 'x'").rank == 5);
}

TEST_CASE("attribution: a failure reported on a rank names that rank, a peer waited on does not") {
  CHECK(attr("[06/02/2026-03:36:21] [TRT-LLM] [E] Failed to initialize executor on rank 1: CUDA runtime error").rank == 1);
  CHECK(attr("Exception on rank 3: boom").rank == 3);
  CHECK(attr("Error: timed out waiting on rank 2: no reply").rank == -1);
  CHECK(attr("all reduce on rank 2: done").rank == -1);
}

TEST_CASE("attribution: the exception line that closes a traceback its rank's record opened inherits too") {
  LineAttributor la;
  CHECK(la.attribute("[2026-03-03 03:53:36 TP1] Scheduler hit an exception: Traceback (most recent call last):").rank == 1);
  CHECK(la.attribute("  File \"/sglang/srt/managers/scheduler.py\", line 1800, in run_scheduler_process").rank == 1);
  auto closing = la.attribute("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.");
  CHECK(closing.rank == 1);
  CHECK(closing.inherited);
  // The exception ends the record: what follows is nobody's, even if it looks like an exception.
  CHECK(la.attribute("RuntimeError: printed by another process").rank == -1);
  // A ranked line that opens no traceback lends its rank to indented lines only.
  LineAttributor plain;
  CHECK(plain.attribute("[rank3]: loss went up").rank == 3);
  CHECK(plain.attribute("    at step 7").rank == 3);
  CHECK(plain.attribute("ValueError: an unprefixed line of some process").rank == -1);
  // The empty line paste repair leaves for a joined row does not end the record.
  LineAttributor repaired;
  CHECK(repaired.attribute("[rank2]: Traceback (most recent call last):").rank == 2);
  CHECK(repaired.attribute("").rank == -1);
  CHECK(repaired.attribute("  File \"train.py\", line 9, in <module>").rank == 2);
  CHECK(repaired.attribute("KeyError: 'labels'").rank == 2);
}

TEST_CASE("segments: tqdm carriage returns split, trailing CR dropped, ANSI removed") {
  std::string scratch;
  std::vector<std::string> segs;
  for_each_segment("a\rb\rERROR x\r", scratch, [&](std::string_view s) { segs.emplace_back(s); });
  REQUIRE(segs == std::vector<std::string>{"a", "b", "ERROR x"});
  segs.clear();
  for_each_segment("\x1b[2m\x1b[36m(pid=1)\x1b[0m hello\r", scratch, [&](std::string_view s) { segs.emplace_back(s); });
  REQUIRE(segs == std::vector<std::string>{"(pid=1) hello"});
}

TEST_CASE("segments: a record glued to a tqdm bar's last redraw is a segment of its own") {
  std::string scratch;
  std::vector<std::string> segs;
  // FastVideo's committed .err log (docs/accuracy.md, round 68): torchrun's warning after the bar.
  for_each_segment("  2%|\xe2\x96\x8f  | 1/50 [00:28<22:58, 28.14s/it]\r  6%|\xe2\x96\x8c  | 3/50 [01:15<19:13, 24.53s/it]"
                   "W0105 21:12:40.064000 2647951 torch/distributed/elastic/rendezvous/dynamic_rendezvous.py:1341] x",
                   scratch, [&](std::string_view s) { segs.emplace_back(s); });
  REQUIRE(segs.size() == 3);
  CHECK(segs[1] == "  6%|\xe2\x96\x8c  | 3/50 [01:15<19:13, 24.53s/it]");
  CHECK(segs[2].rfind("W0105 21:12:40.064000 ", 0) == 0);
  auto glued = attr(segs[2]);
  CHECK(glued.severity == 'W');
  // A rank prefix glued after a described bar with a postfix, and "?" totals.
  segs.clear();
  for_each_segment("\rEpoch 0: 100%|##########| 3/? [00:02<00:00, 1.2it/s, loss=0.5][rank3]: RuntimeError: boom", scratch,
                   [&](std::string_view s) { segs.emplace_back(s); });
  REQUIRE(segs.size() == 2);
  CHECK(attr(segs[1]).rank == 3);
  // Bars whose carriage returns were lost: each bar, then the record after the last one.
  segs.clear();
  split_glued_bars("  2%|#  | 1/50 [00:28<22:58, 28.14s/it]  4%|#  | 2/50 [00:51<20:19, 25.41s/it]W0105 21:12:40.064000 1 x.py:1] y",
                   [&](std::string_view s) { segs.emplace_back(s); });
  REQUIRE(segs.size() == 3);
  CHECK(segs[2].rfind("W0105 ", 0) == 0);
  // Bars alone, or followed by blanks, stay whole; so does a percentage that is not a bar.
  CHECK(progress_bar_glued_end("100%|##########| 3/3 [00:02<00:00, 1.2it/s]") == std::string_view::npos);
  CHECK(progress_bar_glued_end("100%|##########| 3/3 [00:02<00:00, 1.2it/s]   ") == std::string_view::npos);
  CHECK(progress_bar_glued_end("loss 50%| of | 3 [x] tail") == std::string_view::npos);
  CHECK(progress_bar_glued_end("done 50% | 3/3 [x] tail") == std::string_view::npos);
  // The shell's notice after the bar is not another writer's record (host-oom-kill reads it glued).
  CHECK(progress_bar_glued_end("Loading checkpoint shards:  38%|##  | 3/8 [00:02<00:03,  1.28it/s]Killed") ==
        std::string_view::npos);
}

TEST_CASE("attribution: a glued [stderr]/[stdout] stream tag is peeled, the indentation after it kept") {
  auto a = attr("[stderr]ModuleNotFoundError: No module named 'tensorboard'");
  CHECK(a.body == "ModuleNotFoundError: No module named 'tensorboard'");
  auto b = attr("[stdout]    import tensorboard");
  CHECK(b.body == "    import tensorboard");
  auto c = attr("[stderr][rank2]: RuntimeError: boom");
  CHECK(c.rank == 2);
  CHECK(c.body == "RuntimeError: boom");
  CHECK(attr("[stderror] x").body == "[stderror] x");  // only the two stream names
}

TEST_CASE("attribution: vLLM before 0.8 printed the source location without its opening bracket") {
  auto a = attr("ERROR 03-28 21:38:23 ray_utils.py:44] torch.distributed.DistBackendError: NCCL error");
  CHECK(a.body == "torch.distributed.DistBackendError: NCCL error");
  CHECK(format_timestamp(a.time) == "--03-28T21:38:23");
  // Not a location: the text stays.
  CHECK(attr("INFO 03-28 21:38:23 see [a] here").body == "see [a] here");
}

TEST_CASE("attribution: a Markdown block quote around a pasted log is a layer of its own") {
  // ROCm/rccl#1728: the reporter quoted the log ("> [rank2]: ...").
  auto a = attr("> [rank2]: ncclInternalError: Internal check failed.");
  CHECK(a.rank == 2);
  CHECK(a.body == "ncclInternalError: Internal check failed.");
  CHECK(attr(">> [rank5]: RuntimeError: x").rank == 5);
  CHECK(attr("> > [rank1]: RuntimeError: x").rank == 1);
  // The quoted text keeps its own indentation: a frame stays a frame.
  CHECK(attr(">   File \"x.py\", line 3, in f").body == "  File \"x.py\", line 3, in f");
  // Not a quote: a bare '>' or a comparison in text.
  CHECK(attr("> ").body == "> ");
  CHECK(attr(">=2.1 required").body == ">=2.1 required");
}

TEST_CASE("attribution: vLLM's worker process names give the rank when they hold one parallel axis") {
  // vllm-project/vllm-ascend#4891: "(Worker_TP2 pid=5094) ERROR 12-10 11:56:52 [multiproc_executor.py:671] ..."
  auto a = attr("(Worker_TP2 pid=5094) ERROR 12-10 11:56:52 [multiproc_executor.py:671] AttributeError: x");
  CHECK(a.rank == 2);
  CHECK(a.pid == 5094);
  CHECK(a.body == "AttributeError: x");
  CHECK(attr("(Worker_PP1 pid=7) ValueError: y").rank == 1);
  // Both axes need the TP size; a DP part or an unknown one names another engine's worker.
  CHECK(attr("(Worker_PP1_TP3 pid=7) ValueError: y").rank == -1);
  CHECK(attr("(Worker_DP1_TP0 pid=7) ValueError: y").rank == -1);
  CHECK(attr("(Worker_TPx pid=7) ValueError: y").rank == -1);
  CHECK(attr("(Worker pid=7) ValueError: y").rank == -1);
  CHECK(attr("(EngineCore_DP0 pid=4956) ERROR 12-10 11:56:52 [core.py:1] E").rank == -1);
}

TEST_CASE("attribution: vLLM V1 worker prefix carries the rank; a colour code that lost its ESC is peeled") {
  auto a = attr("(VllmWorker rank=3 pid=225) ERROR 08-29 01:18:42 [multiproc_executor.py:546] RuntimeError: CUDA error");
  CHECK(a.rank == 3);
  CHECK(a.pid == 225);
  CHECK(a.body == "RuntimeError: CUDA error");
  auto b = attr("[36m(main_task pid=2961) ValueError: max_num_batched_tokens (8192) is smaller than max_model_len (32768)");
  CHECK(b.pid == 2961);
  CHECK(b.body == "ValueError: max_num_batched_tokens (8192) is smaller than max_model_len (32768)");
  CHECK(attr("[12] items left").body == "[12] items left");
  // Pasted in caret notation, as a terminal shows ESC.
  auto c = attr("^[[36m(WorkerDict pid=4113, ip=10.0.0.7)^[[0m Ray OOM: task killed");
  CHECK(c.pid == 4113);
  CHECK(c.host == "10.0.0.7");
  CHECK(attr("^[ not a colour").body == "^[ not a colour");
  // An upper-case rank tag of its own (TensorRT-LLM's Python logger).
  CHECK(attr("[07/08/2025-19:47:15] [TRT-LLM] [RANK 1] [E] Failed to initialize executor on rank 1").rank == 1);
  CHECK(attr("[RANK 4] 2026-05-19 10:10:29,604 [ERROR] GPU circuit breaker OPEN").rank == 4);
  CHECK(attr("[RANKS 4] x").rank == -1);
}

TEST_CASE("attribution: SGLang's worker tags after the time give the rank when TP alone numbers it") {
  auto a = attr("[2026-04-16 01:02:09 TP1] Failed to initialize lk_moe: CUDA out of memory.");
  CHECK(a.rank == 1);
  CHECK(a.body == "Failed to initialize lk_moe: CUDA out of memory.");
  CHECK(format_timestamp(a.time) == "2026-04-16T01:02:09");
  CHECK(attr("[2025-05-01 12:00:00 TP3 EP3] Scheduler hit an exception").rank == 3);
  CHECK(attr("[2025-05-01 12:00:00 PP0 TP2] x").rank == 2);
  // A later pipeline stage or a data-parallel replica renumbers TP: the time and body still parse.
  auto b = attr("[2025-05-01 12:00:00 PP1 TP2] Scheduler hit an exception");
  CHECK(b.rank == -1);
  CHECK(b.body == "Scheduler hit an exception");
  CHECK(attr("[2025-05-01 12:00:00 DP1 TP3] x").rank == -1);
  // Not worker tags: the bracket is not a time prefix.
  CHECK(attr("[2025-05-01 12:00:00 XX1] x").body == "[2025-05-01 12:00:00 XX1] x");
  CHECK(attr("[2025-05-01 12:00:00 TP] x").body == "[2025-05-01 12:00:00 TP] x");
}

TEST_CASE("attribution: rows of a torchrun failure summary take the rank its 'rank :' row names") {
  LineAttributor at;
  CHECK(at.attribute("[1]:").rank == -1);
  CHECK(at.attribute("  host      : node-3").rank == -1);  // before the rank row: unknown
  CHECK(at.attribute("  rank      : 5 (local_rank: 1)").rank == -1);
  CHECK(at.attribute("  exitcode  : -11 (pid: 6421)").rank == 5);
  CHECK(at.attribute("  error_file: <N/A>").rank == 5);
  CHECK(at.attribute("  traceback : Signal 11 (SIGSEGV) received by PID 6421").rank == 5);
  // The block ends at the next non-row line; a later block's rows do not inherit it.
  CHECK(at.attribute("======================================================").rank == -1);
  CHECK(at.attribute("  exitcode  : 1 (pid: 7)").rank == -1);
  // A prefix that names a rank wins.
  CHECK(at.attribute("  rank      : 2 (local_rank: 2)").rank == -1);
  CHECK(at.attribute("[rank7]:  exitcode  : 1 (pid: 7)").rank == 7);
}

TEST_CASE("attribution: a child's traceback re-raised by torch.multiprocessing.spawn takes the child's local rank") {
  LineAttributor at;
  CHECK(at.attribute("torch.multiprocessing.spawn.ProcessRaisedException: ").rank == -1);
  CHECK(at.attribute("-- Process 1 terminated with the following error:").rank == 1);
  CHECK(at.attribute("Traceback (most recent call last):").rank == 1);
  CHECK(at.attribute("  File \"/opt/conda/lib/python3.10/site-packages/torch/multiprocessing/spawn.py\", line 69, in _wrap").rank == 1);
  CHECK(at.attribute("    fn(i, *args)").rank == 1);
  CHECK(at.attribute("FloatingPointError: Loss became infinite or NaN at iteration=88!").rank == 1);
  // The exception line ends the block.
  CHECK(at.attribute("some later line").rank == -1);
  CHECK(at.attribute("    indented later line").rank == -1);
  // Not a header: other wording, or no number.
  CHECK(at.attribute("-- Process terminated with the following error:").rank == -1);
  CHECK(at.attribute("-- Process 3 exited").rank == -1);
  // A prefix's own rank wins over the spawn index.
  CHECK(at.attribute("[rank5]: -- Process 3 terminated with the following error:").rank == 5);
}

TEST_CASE("attribution: replaying a digit template's plan gives what a full peel gives, on every test log") {
  // Every line of every log under testdata/, then the same line with its digits rotated (same
  // template, other values: an hour of 23 becomes 26, a day of 31 becomes 64), through one
  // attributor that peels in full and one that replays plans kept per template. Halfway through
  // a file both start reading pdsh prefixes, so plans recorded before must not be replayed after.
  size_t files = 0, lines = 0, replayed_templates = 0;
  for (const auto& e : std::filesystem::recursive_directory_iterator(test::source_dir() + "/testdata")) {
    std::string ext = e.path().extension().string();
    if (!e.is_regular_file() || (ext != ".log" && ext != ".txt" && ext != ".out")) continue;
    std::ifstream in(e.path(), std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    const std::string text = ss.str();
    FileIdentity id = identity_from_path(e.path().string());
    LineAttributor full(id), planned(id);
    std::unordered_map<std::string, AttributionPlan> plans;
    std::string scratch, tmpl;
    size_t n = 0, total = static_cast<size_t>(std::count(text.begin(), text.end(), '\n'));
    auto check = [&](std::string_view seg) {
      tmpl.clear();
      append_digit_template(seg, tmpl);
      Attribution a = full.attribute(seg);
      Attribution b = planned.attribute(seg, &plans[tmpl]);
      INFO(e.path().string() << ": " << seg);
      CHECK(same_attribution(a, b));
      ++lines;
    };
    for_each_line(text, [&](std::string_view line) {
      if (++n == total / 2) {
        full.enable_pdsh();
        planned.enable_pdsh();
      }
      for_each_segment(line, scratch, [&](std::string_view seg) {
        std::string own(seg), rotated(seg);
        for (char& c : rotated)
          if (c >= '0' && c <= '9') c = static_cast<char>('0' + (c - '0' + 3) % 10);
        check(own);
        check(rotated);
      });
    });
    for (const auto& [t, plan] : plans) replayed_templates += plan.state == AttributionPlan::kReplay;
    ++files;
  }
  CHECK(files > 400);
  CHECK(lines > 20000);
  CHECK(replayed_templates > 1000);  // plans are kept, not given up on every template
}

TEST_CASE("identity_from_path: a Kubeflow PyTorchJob's pods and torchrun's --log-dir tree") {
  // With a master pod in the job, the operator's numbering: master-0 is rank 0, worker-N rank N+1.
  CHECK(identity_from_path("logs/bert-master-0.log", "", true).rank == 0);
  CHECK(identity_from_path("logs/bert-worker-0.log", "", true).rank == 1);
  CHECK(identity_from_path("pods/bert-worker-6/main.log", "", true).rank == 7);
  // Without one, worker-N is just N (MPIJob, Ray, a user's naming).
  CHECK(identity_from_path("logs/bert-worker-0.log").rank == 0);
  CHECK(names_pytorchjob_master("logs/bert-master-0.log"));
  CHECK_FALSE(names_pytorchjob_master("logs/remaster-01.log"));
  // torchrun --log-dir: <dir>/<run_id>/attempt_K/<local rank>/stderr.log.
  CHECK(identity_from_path("/tmp/tr/none_abc/attempt_0/3/stderr.log").rank == 3);
  CHECK(identity_from_path("/tmp/tr/none_abc/attempt_2/11/stdout.log").rank == 11);
  CHECK(identity_from_path("/tmp/tr/run/3/stderr.log").rank < 0);  // a number alone is not a rank
}

TEST_CASE("pipeline: a PyTorchJob's pod logs are read with the operator's rank numbering") {
  test::RepoEngine engine;
  test::TempDir dir;
  dir.write("pods/job-master-0.log", "[E1107 10:02:41.300000000 ProcessGroupNCCL.cpp:607] [Rank 0] Watchdog caught collective "
                                     "operation timeout: WorkNCCL(SeqNum=9, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, "
                                     "Timeout(ms)=600000) ran for 600071 milliseconds before timing out.\n");
  dir.write("pods/job-worker-0.log", "step 5\nRuntimeError: CUDA error: an illegal memory access was encountered\n");
  Diagnosis d = analyze_paths({dir.path() + "/pods"}, engine.matcher, {}).diagnosis;
  REQUIRE(d.initiating.rank);
  CHECK(*d.initiating.rank == 1);
}

TEST_CASE("attribution: docker compose's service prefix is an envelope naming the container") {
  auto a = attr("vllm-qwen-1  | (Worker_TP1 pid=217) ERROR 08-17 16:47:47 [multiproc_executor.py:912] FileNotFoundError: x");
  CHECK(a.host == "vllm-qwen-1");
  CHECK(a.body == "FileNotFoundError: x");
  auto v1 = attr("trainer_1   | RuntimeError: CUDA error: out of memory");
  CHECK(v1.host == "trainer_1");
  CHECK(v1.body == "RuntimeError: CUDA error: out of memory");
  // Not an envelope: a table row, a level column, a model summary row.
  CHECK(attr("| llama3    | 1       | UNAVAILABLE: x |").host.empty());
  CHECK(attr("ERROR    | train:main:42 - loss exploded").host.empty());
  CHECK(attr("0 | model | Float16Module | 437 M").host.empty());
}

TEST_CASE("attribution: pytest's E column is a layer, so the error it reports reads as printed") {
  CHECK(attr("E           AssertionError: (2, dict_keys([3, 0]))").body == "AssertionError: (2, dict_keys([3, 0]))");
  CHECK(attr("E                         File \"/usr/lib/python3.12/concurrent/futures/_base.py\", line 449, in result").body ==
        "File \"/usr/lib/python3.12/concurrent/futures/_base.py\", line 449, in result");
  // Not the column: "E " starting a sentence, glog's E severity.
  CHECK(attr("E stands for error").body == "E stands for error");
  auto g = attr("E0105 23:50:34.026692   34204 thunk.cc:175] bad");
  CHECK(g.severity == 'E');
  CHECK(g.body == "bad");
}

TEST_CASE("attribution: RFC 3339 syslog (rsyslog's file format, journalctl -o short-iso) gives the host") {
  auto a = attr("2026-11-05T10:00:00.123456+00:00 gpu-a17 kernel: NVRM: Xid (PCI:0000:9a:00): 79, pid=4, name=python");
  CHECK(a.host == "gpu-a17");
  CHECK(ts(a) == "2026-11-05T10:00:00.123");
  CHECK(a.body == "NVRM: Xid (PCI:0000:9a:00): 79, pid=4, name=python");
  auto b = attr("2026-11-05T10:00:00+0100 node-3.cluster slurmstepd[4242]: error: Detected 1 oom_kill event");
  CHECK(b.host == "node-3.cluster");
  CHECK(b.body == "error: Detected 1 oom_kill event");
  // A timestamped program line is not syslog: no host taken from its words.
  CHECK(attr("2026-11-05T10:00:00 step 5: loss 2.1").host.empty());
  CHECK(attr("2026-11-05T10:00:00 INFO trainer[7]: step 5").host.empty());
  // kubectl logs --timestamps keeps its own reading.
  auto c = attr("2026-11-05T10:00:00.123Z stdout F [rank1]: hello");
  CHECK(c.rank == 1);
  CHECK(c.host.empty());
}

TEST_CASE("attribution: a kubectl describe pod output is about its pod: rank from the pod name, host from Node") {
  const std::string head =
      "Name:             llama-ft-worker-2\nNamespace:        training\nPriority:         0\n"
      "Node:             gpu-node-17/10.42.3.17\nStart Time:       Thu, 04 Dec 2026 21:02:11 +0000\n";
  FileIdentity id = identity_from_head(head, FileIdentity{});
  CHECK(id.rank == 2);
  CHECK(id.host == "gpu-node-17");
  CHECK(identity_from_head(head, FileIdentity{}, "", /*pytorchjob_pods=*/true).rank == 3);  // worker-N is rank N+1
  // The file's name wins; content only fills what the name left unknown.
  FileIdentity named;
  named.rank = 7;
  CHECK(identity_from_head(head, named).rank == 7);
  // Not a describe output: a log that merely starts with "Name:".
  CHECK(identity_from_head("Name: resnet50\nepoch 1 loss 2.3\n", FileIdentity{}).rank == -1);
  CHECK(identity_from_head("Name:             trainer-0\nNamespace:  default\nNode:  <none>\n", FileIdentity{}).host.empty());
}

TEST_CASE("attribution: srun's task label on a step-level slurmstepd message is not its rank") {
  // The step's OOM report comes through task 0's stream although srun's next line names task 2
  // (a Megatron-DeepSpeed run on Perlmutter, real-log round 90d).
  LineAttributor la;
  CHECK(la.attribute("0: slurmstepd: error: Detected 1 oom_kill event in StepId=17109804.0. Some of the step tasks have been OOM Killed.").rank == -1);
  CHECK(la.attribute("3: slurmstepd: error: *** STEP 4242.0 ON nid001 CANCELLED AT 2024-05-01T10:00:00 ***").rank == -1);
  // A task's own message through slurmstepd (pyxis's task_init of that task) keeps the label.
  CHECK(la.attribute("412: slurmstepd: error: pyxis: couldn't start container").rank == 412);
  CHECK(la.attribute("2: [rank2] step 10 loss 2.1").rank == 2);
}
