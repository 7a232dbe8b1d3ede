#include <catch2/catch.hpp>
#include <fmt/format.h>

#include "firstfault/app/pipeline.h"
#include "firstfault/render/render.h"
#include "skewed_clock_log.h"
#include "test_support.h"

using namespace firstfault;

namespace {
struct Fixture : test::RepoEngine {
  test::TempDir dir;
  Diagnosis run(const std::string& text, const std::string& name = "job.log") {
    return analyze_paths({dir.write(name, text)}, matcher, {}).diagnosis;
  }
};

std::string timeout(int rank, int seq, const char* op = "ALLREDUCE", const char* hms = "10:02:41") {
  return "[rank" + std::to_string(rank) + "]:[E1107 " + hms + ".300000000 ProcessGroupNCCL.cpp:607] [Rank " +
         std::to_string(rank) + "] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=" + std::to_string(seq) +
         ", OpType=" + op + ", NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600071 milliseconds before timing out.\n";
}
std::string oom(int rank, const char* hms = "09:50:00") {
  return "[rank" + std::to_string(rank) + "]:[E1107 " + hms +
         ".000000000 train.cpp:1] torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a "
         "total capacity of 79.10 GiB\n";
}
// The entry and the initiating-rank decision together.
void check_decision(const Diagnosis& d, const std::string& id, int rank, const std::string& method) {
  REQUIRE(d.entry);
  CHECK(d.entry->id == id);
  REQUIRE(d.initiating.rank);
  CHECK(*d.initiating.rank == rank);
  CHECK(d.initiating.method == method);
}
}  // namespace

TEST_CASE("correlator: a root event on one rank beats the loud cascade on the others") {
  Fixture f;
  std::string log = "[rank0]:step 1\n[rank1]:step 1\n[rank2]:step 1\n[rank3]:step 1\n";
  log += oom(2);
  for (int r : {0, 1, 3}) log += timeout(r, 77);
  Diagnosis d = f.run(log);
  REQUIRE(d.verdict == "diagnosed");
  CHECK(d.entry->id == "cuda-oom");
  REQUIRE(d.initiating.rank);
  CHECK(*d.initiating.rank == 2);
  CHECK(d.initiating.method == "root-event");
  CHECK(d.collateral.ranks == std::vector<int>{0, 1, 3});
  CHECK(d.collateral.summary == "ranks 0-1,3 timed out in ALLREDUCE SeqNum 77 waiting for rank 2");
  REQUIRE_FALSE(d.alternatives.empty());
  CHECK(d.alternatives[0].id == "nccl-collective-timeout");
}

TEST_CASE("correlator: with only timeouts, the rank missing from them is the suspect") {
  Fixture f;
  std::string log;
  for (int r = 0; r < 8; ++r) log += "[rank" + std::to_string(r) + "]:step 5\n";
  for (int r = 0; r < 8; ++r)
    if (r != 6) log += timeout(r, 500);
  check_decision(f.run(log), "nccl-collective-timeout", 6, "missing-from-timeout");
}

TEST_CASE("correlator: a dump signal 'from this local rank' is that rank's own timeout") {
  // torch >= 2.4: a rank may report its timeout only as a flight-recorder dump signal (the
  // watchdog line comes later or not at all); it counts as a reporter at the work after its last
  // completed one, so the rank that never reached the collective is still singled out.
  auto dump = [](int rank, const std::string& counters) {
    return "[rank" + std::to_string(rank) + "]:[E1128 21:11:49.041194513 ProcessGroupNCCL.cpp:1870] [PG ID 0 PG GUID "
           "0(default_pg) Rank " + std::to_string(rank) + "] Received a dump signal due to a collective timeout from "
           "this local rank and we will try our best to dump the debug info. " + counters + "\n";
  };
  for (const std::string counters : {"Last enqueued NCCL work: 22, last completed NCCL work: 21.", ""}) {
    CAPTURE(counters);
    Fixture f;
    std::string log;
    for (int r = 0; r < 4; ++r) log += "[rank" + std::to_string(r) + "]:step 5\n";
    log += dump(1, counters);
    log += dump(3, counters);
    log += timeout(2, 22, "BROADCAST");
    check_decision(f.run(log), "nccl-collective-timeout", 0, "missing-from-timeout");
  }
}

TEST_CASE("correlator: an unprefixed root beside the lone timeout of a two-rank job is the other rank's") {
  // A 2-GPU DeepSpeed fine-tune (round 86b): rank 0's OOM traceback has no prefix, and the only
  // prefixed line is rank 1's watchdog timeout: rank 1 waited for rank 0.
  Fixture f;
  const std::string oom =
      "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 7.90 GiB. GPU 0 has a total capacity of "
      "39.39 GiB of which 8.17 GiB is free.\n";
  Diagnosis d = f.run(oom + timeout(1, 175487, "ALLREDUCE"));
  REQUIRE(d.entry);
  CHECK(d.entry->category == "memory");
  CHECK(d.initiating.rank == std::optional<int>(0));
  CHECK(d.initiating.method == "missing-from-timeout");
  // With a third rank in the log the lone timeout no longer says whose the root is.
  Diagnosis three = f.run("[rank2]:step 5\n" + oom + timeout(1, 175487, "ALLREDUCE"));
  CHECK(three.initiating.rank != std::optional<int>(0));
}

TEST_CASE("correlator: counters of another process group never name a rank behind the stuck collective") {
  // An expert-parallel group (PG 3) hung at SeqNum 1438 on rank 13; rank 0 only relays the dump
  // request, with its default group's counters (1261). Rank 0 is a bystander (prime-rl#3186).
  Fixture f;
  std::string log =
      "[rank0]:[E804 23:05:54.817424543 ProcessGroupNCCL.cpp:1914] [PG ID 0 PG GUID 0(default_pg) Rank 0] Received a dump "
      "signal due to a collective timeout from  rank 13 and we will try our best to dump the debug info. Last enqueued "
      "NCCL work: 1261, last completed NCCL work: 1259.\n";
  log += timeout(13, 1438, "ALLTOALL_BASE");
  log += "[rank13]:[E804 23:05:54.517045067 ProcessGroupNCCL.cpp:2303] [PG ID 3 PG GUID d03ba143 Rank 1]  failure "
         "detected by watchdog at work sequence id: 1438 PG status: last enqueued work: 1441, last completed work: 1437\n";
  Diagnosis d = f.run(log);
  REQUIRE(d.entry);
  CHECK_FALSE(d.initiating.rank);
}

TEST_CASE("correlator: a missing rank that printed nothing, in a log with no NCCL init, is named with less confidence") {
  Fixture f;
  Diagnosis quiet = f.run(timeout(1, 77) + timeout(2, 77));  // rank 0 never appears: maybe just not pasted
  REQUIRE(quiet.initiating.rank);
  CHECK(*quiet.initiating.rank == 0);
  CHECK(quiet.initiating.method == "missing-from-timeout");
  CHECK(quiet.initiating.confidence <= 0.5);
  CHECK(quiet.initiating.reason.find("may only be missing from this log") != std::string::npos);
  Diagnosis seen = f.run("[rank0]:step 5\n" + timeout(1, 77) + timeout(2, 77));  // rank 0 was there and fell silent
  REQUIRE(seen.initiating.rank);
  CHECK(*seen.initiating.rank == 0);
  CHECK(seen.initiating.confidence > 0.5);
}

TEST_CASE("correlator: last enqueued work below the stuck SeqNum names the rank that never arrived") {
  Fixture f;
  std::string log;
  for (int r = 0; r < 4; ++r) log += timeout(r, 1580);
  log += "[rank2]:[E321 02:07:08.465150152 ProcessGroupNCCL.cpp:1664] [PG 0 Rank 2] Exception (either an error or "
         "timeout) detected by watchdog at work: 1580, last enqueued NCCL work: 1579, last completed NCCL work: 1579.\n";
  log += "[rank1]:[E321 02:07:08.465150152 ProcessGroupNCCL.cpp:1664] [PG 0 Rank 1] Exception (either an error or "
         "timeout) detected by watchdog at work: 1580, last enqueued NCCL work: 1582, last completed NCCL work: 1579.\n";
  Diagnosis d = f.run(log);
  REQUIRE(d.initiating.rank);
  CHECK(*d.initiating.rank == 2);
  CHECK(d.initiating.method == "nccl-sequence");
  CHECK(d.initiating.reason.find("1579") != std::string::npos);
}

TEST_CASE("correlator: a rank that timed out at another SeqNum is not missing: earlier is behind, later is ahead") {
  Fixture f;
  // Rank 0 timed out two works before the others: it never got as far (NVIDIA/NeMo#13562 shape).
  std::string behind = timeout(1, 100, "BROADCAST") + timeout(2, 100, "BROADCAST") + timeout(3, 100, "BROADCAST") +
                       timeout(0, 98, "ALLREDUCE");
  Diagnosis b = f.run(behind);
  check_decision(b, "nccl-collective-timeout", 0, "nccl-sequence");
  CHECK(b.initiating.reason.find("timed out earlier, at SeqNum 98") != std::string::npos);
  REQUIRE(b.initiating.first_evidence);
  CHECK(b.initiating.first_evidence->rank == 0);
  // Rank 0 timed out two works later: it got past the collective the others wait in, so it is
  // not the rank that never arrived (it was named at 0.8 before).
  std::string ahead = timeout(1, 100, "BROADCAST") + timeout(2, 100, "BROADCAST") + timeout(3, 100, "BROADCAST") +
                      timeout(0, 102, "_ALLGATHER_BASE");
  Diagnosis a = f.run(ahead);
  REQUIRE(a.entry);
  CHECK(a.entry->id == "nccl-collective-timeout");
  CHECK_FALSE(a.initiating.rank);
  CHECK(a.initiating.reason.find("out of step") != std::string::npos);
  // Far apart, the numbers are from different process groups: rank 0 is neither missing nor behind.
  std::string other_group = timeout(1, 100) + timeout(2, 100) + timeout(3, 100) + timeout(0, 7);
  Diagnosis o = f.run(other_group);
  CHECK_FALSE(o.initiating.rank);
}

TEST_CASE("correlator: a launcher verdict that contradicts an earlier root event loses, and the reason says so") {
  Fixture f;
  std::string log = oom(3, "09:50:00");
  for (int r : {0, 1, 2}) log += timeout(r, 9);
  log += "Root Cause (first observed failure):\n[0]:\n  time      : 2024-11-07_10:02:50\n  host      : n1\n"
         "  rank      : 0 (local_rank: 0)\n  exitcode  : -6 (pid: 1)\n";
  Diagnosis d = f.run(log);
  REQUIRE(d.initiating.rank);
  CHECK(*d.initiating.rank == 3);
  CHECK(d.initiating.reason.find("names rank 0") != std::string::npos);
}

TEST_CASE("correlator: the launcher verdict is used when nothing else names a rank") {
  Fixture f;
  std::string log = "[rank0]: x\n";
  log += timeout(0, 9);
  log += "Root Cause (first observed failure):\n[0]:\n  rank      : 5 (local_rank: 5)\n";
  Diagnosis d = f.run(log);
  REQUIRE(d.initiating.rank);
  CHECK(*d.initiating.rank == 5);
  CHECK(d.initiating.method == "launcher-verdict");
  // paddle.distributed.launch names the first failed trainer container the same way.
  Diagnosis p = f.run("Traceback (most recent call last):\n  File \"train.py\", line 3, in <module>\n"
                      "ValueError: (InvalidArgument) concat(): argument 'x' (position 0) must be list of Tensors, but got empty list\n"
                      "LAUNCH ERROR 2025-09-27 09:32:31,869 Container failed !!!\n"
                      "Container rank 3 status failed cmd ['/usr/bin/python', '-u', 'train.py'] code 1 log log/workerlog.3\n");
  REQUIRE(p.initiating.rank);
  CHECK(*p.initiating.rank == 3);
  CHECK(p.initiating.method == "launcher-verdict");
}

TEST_CASE("correlator: every rank hitting the same root at once is job-wide: no single initiating rank") {
  Fixture f;
  std::string log;
  for (int r = 0; r < 4; ++r) log += oom(r, "09:50:00");
  Diagnosis d = f.run(log);
  REQUIRE(d.entry);
  CHECK(d.entry->id == "cuda-oom");
  CHECK_FALSE(d.initiating.rank);
  CHECK(d.initiating.method == "job-wide");
  // Each rank hit the cause itself: none of them is collateral.
  CHECK(d.collateral.ranks.empty());
  CHECK(d.collateral.summary == "ranks 0-3 hit the cause; no rank only observed it");
  for (const RankSummary& r : d.ranks) CHECK(r.role == "affected");
}

TEST_CASE("correlator: the earlier of two ranks' root events wins when clocks separate them") {
  Fixture f;
  std::string log = oom(5, "09:51:00") + oom(1, "09:50:00");
  Diagnosis d = f.run(log);
  REQUIRE(d.initiating.rank);
  CHECK(*d.initiating.rank == 1);
  CHECK(d.affected_ranks == std::vector<int>{5});  // it ran out of memory too: not collateral
  CHECK(d.collateral.summary == "rank 5 hit the cause too; no rank only observed it");
}

TEST_CASE("correlator: unrecognised and clean logs") {
  Fixture f;
  Diagnosis u = f.run("step 1\nTraceback (most recent call last):\n  File \"x.py\", line 1\nDatasetError: my own bug\n");
  CHECK(u.verdict == "unrecognized");
  REQUIRE(u.first_error);
  CHECK(u.first_error->text == "DatasetError: my own bug");
  Diagnosis c = f.run("step 1 loss 2.0\nstep 2 loss 1.9\n");
  CHECK(c.verdict == "clean");
  CHECK_FALSE(u.launcher_first_failure);
}

TEST_CASE("correlator: the exception under Python's 'Exception ignored in:' fails nothing; the next traceback does") {
  Fixture f;
  std::string ignored = "[rank1]: step 99 loss 1.2\n"
                        "[rank1]: Exception ignored in: <Finalize object, dead>\n"
                        "[rank1]: Traceback (most recent call last):\n"
                        "[rank1]:   File \"/usr/lib/python3.8/multiprocessing/synchronize.py\", line 87, in _cleanup\n"
                        "[rank1]: FileNotFoundError: [Errno 2] No such file or directory\n";
  CHECK(f.run(ignored).verdict == "clean");
  // Another rank's error is not covered by rank 1's header, nor is the same rank's next one.
  Diagnosis other = f.run(ignored + "[rank0]: DatasetError: bad row\n");
  CHECK(other.verdict == "unrecognized");
  REQUIRE(other.first_error);
  CHECK(other.first_error->rank == 0);
  Diagnosis next = f.run(ignored + "[rank1]: Traceback (most recent call last):\n[rank1]: DatasetError: missing 'caption'\n");
  CHECK(next.verdict == "unrecognized");
  REQUIRE(next.first_error);
  CHECK(next.first_error->line == 7);
}

TEST_CASE("correlator: a request the server rejected is harmless only when the server answered requests after it") {
  Fixture f;
  std::string rejected =
      "INFO:     127.0.0.1:54160 - \"GET /health HTTP/1.1\" 200 OK\n"
      "ERROR 10-15 11:58:26 [serving_chat.py:256] Error in preprocessing prompt inputs\n"
      "ERROR 10-15 11:58:26 [serving_chat.py:256] Traceback (most recent call last):\n"
      "ERROR 10-15 11:58:26 [serving_chat.py:256]   File \"/vllm/entrypoints/chat_utils.py\", line 1535, in apply_hf_chat_template\n"
      "ERROR 10-15 11:58:26 [serving_chat.py:256] ValueError: you must provide a chat template if the tokenizer does not define one.\n"
      "INFO:     127.0.0.1:54166 - \"POST /v1/chat/completions HTTP/1.1\" 400 Bad Request\n";
  // The log ends at the rejection (round 79c): the deployment's request failed.
  CHECK(f.run(rejected).verdict != "clean");
  // The server went on answering: the rejection was one bad request.
  CHECK(f.run(rejected + "INFO:     127.0.0.1:54170 - \"POST /v1/chat/completions HTTP/1.1\" 200 OK\n").verdict == "clean");
  // A request refused before it ran, logged with its error response (round 87b: a model name the
  // server does not serve), reads the same way.
  const std::string unknown_model =
      "ERROR 05-12 02:47:14 [serving_chat.py:136] Error with model object='error' message='The model `deepseek-r1-14b` does not "
      "exist.' type='NotFoundError' param=None code=404\n"
      "INFO:     127.0.0.1:56148 - \"POST /v1/chat/completions HTTP/1.1\" 404 Not Found\n";
  CHECK(f.run(unknown_model).verdict != "clean");
  CHECK(f.run(unknown_model + "INFO:     127.0.0.1:40452 - \"POST /v1/chat/completions HTTP/1.1\" 200 OK\n").verdict == "clean");
}

TEST_CASE("correlator: a request uvicorn logged as failed is harmless only when the same endpoint answered after it") {
  Fixture f;
  // uvicorn: the access line of the error status, then its header and the request's traceback.
  std::string failed =
      "INFO:     127.0.0.1:59734 - \"POST /v1/chat/completions HTTP/1.1\" 200 OK\n"
      "INFO:     127.0.0.1:59734 - \"POST /v1/chat/completions HTTP/1.1\" 400 Bad Request\n"
      "ERROR:    Exception in ASGI application\n"
      "Traceback (most recent call last):\n"
      "  File \"/venv/lib/python3.10/site-packages/uvicorn/protocols/http/httptools_impl.py\", line 416, in run_asgi\n"
      "    result = await app(\n"
      "  File \"/venv/lib/python3.10/site-packages/vllm/renderers/params.py\", line 418, in _token_len_check\n"
      "    raise VLLMValidationError(\n"
      "vllm.exceptions.VLLMValidationError: This model's maximum context length is 32768 tokens.\n";
  CHECK(f.run(failed).verdict != "clean");
  // The same endpoint answered after it (round 84c): one request was refused, the server served on.
  CHECK(f.run(failed + "INFO:     127.0.0.1:59800 - \"POST /v1/chat/completions HTTP/1.1\" 200 OK\n").verdict == "clean");
  // Only another endpoint (another service in the same file, r76a) answered after it: the chat
  // requests still fail.
  CHECK(f.run(failed + "INFO:     127.0.0.1:37514 - \"GET /search?query=Hello&top_k=4 HTTP/1.1\" 200 OK\n").verdict != "clean");
  // A busy server answers more requests than any pattern's events are kept (4,096): the last
  // answer is what counts, not the first ones kept (round 85c: 40,000 answers, five refusals).
  std::string busy;
  for (int i = 0; i < 5000; ++i) busy += "INFO:     127.0.0.1:59734 - \"POST /v1/chat/completions HTTP/1.1\" 200 OK\n";
  CHECK(f.run(busy + failed).verdict != "clean");
  CHECK(f.run(busy + failed + "INFO:     127.0.0.1:59800 - \"POST /v1/chat/completions HTTP/1.1\" 200 OK\n").verdict == "clean");
}

TEST_CASE("correlator: a wrapper line that opens a traceback gives way to the known exception that closes it") {
  Fixture f;
  std::string log = "[2026-03-03 03:53:30 TP0] Load weight end. type=LlamaForCausalLM\n"
                    "[2026-03-03 03:53:36 TP1] Scheduler hit an exception: Traceback (most recent call last):\n"
                    "  File \"/sglang/srt/model_executor/model_runner.py\", line 700, in init_memory_pool\n"
                    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 1 has a total capacity "
                    "of 79.10 GiB of which 1.50 GiB is free.\n"
                    "[2026-03-03 03:53:36] Received sigquit from a child process. It usually means the child failed.\n";
  check_decision(f.run(log), "cuda-oom", 1, "root-event");
  // An exception no specific entry knows leaves the wrapper as the diagnosis.
  std::string other = "[2026-03-03 03:53:36 TP1] Scheduler hit an exception: Traceback (most recent call last):\n"
                      "  File \"/sglang/srt/managers/scheduler.py\", line 900, in event_loop\n"
                      "AssertionError: bad batch\n";
  check_decision(f.run(other), "sglang-scheduler-exception", 1, "root-event");
  // A root below the line that closes the traceback belongs to the rank's next record: the
  // wrapper does not give way to it.
  std::string later = other + "[2026-03-03 03:53:40 TP1] torch.OutOfMemoryError: CUDA out of memory. Tried to allocate "
                              "2.00 GiB. GPU 1 has a total capacity of 79.10 GiB of which 1.50 GiB is free.\n";
  check_decision(f.run(later), "sglang-scheduler-exception", 1, "root-event");
}

TEST_CASE("correlator: the c10 stack under a [W] or [I] line fails nothing; under [E], or alone, it does") {
  Fixture f;
  const std::string stack = "Exception raised from recvBytes at /pytorch/torch/csrc/distributed/c10d/Utils.hpp:678 "
                            "(most recent call first):\n"
                            "frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x98 (0x7f in libc10.so)\n";
  auto header = [](char severity) {
    return std::string("[rank7]:[") + severity +
           "528 00:08:15.330160171 TCPStore.cpp:125] [c10d] recvValue failed on SocketImpl(fd=190): failed to recv, got 0 bytes\n";
  };
  // The heartbeat's warning at a clean shutdown (vllm-project/vllm#1237).
  CHECK(f.run("[rank7]: step 10 done\n" + header('W') + stack).verdict == "clean");
  CHECK(f.run("[rank7]: step 10 done\n" + header('I') + stack).verdict == "clean");
  // The same stack under an error header, or with no header at all, is an error line.
  Diagnosis e = f.run("[rank7]: step 10 done\n" + header('E') + stack);
  CHECK(e.verdict == "unrecognized");
  Diagnosis alone = f.run("step 10 done\n" + stack);
  CHECK(alone.verdict == "unrecognized");
  REQUIRE(alone.first_error);
  CHECK(alone.first_error->line == 2);
  // The stack belongs to the rank's last header: an [E] line of rank 7 after the warning takes it.
  Diagnosis later = f.run(header('W') + "[rank7]:[E528 00:08:16.000000000 Foo.cpp:1] something broke\n" + stack);
  CHECK(later.verdict == "unrecognized");
  // Another rank's warning does not cover rank 3's stack.
  Diagnosis other = f.run(header('W') + "[rank3]: " + stack);
  CHECK(other.verdict == "unrecognized");
  REQUIRE(other.first_error);
  CHECK(other.first_error->rank == 3);
  // Far below the warning (past 20 lines of the rank), the stack is not the warning's.
  std::string far = header('W');
  for (int i = 0; i < 25; ++i) far += "[rank7]: step " + std::to_string(11 + i) + " done\n";
  CHECK(f.run(far + "[rank7]: " + stack).verdict == "unrecognized");
}

TEST_CASE("correlator: Ray Train's process-group and worker-list lines map a Ray prefix to its world rank") {
  Fixture f;
  const std::string oom_line = "RuntimeError: CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 10.76 GiB total capacity)\n";
  // Each worker states its rank (Ray 1.x/2.x): the prefix's (ip, pid) is that rank.
  Diagnosis own = f.run(
      "(BaseWorkerMixin pid=20102, ip=10.0.100.15) INFO torch.py:66 -- Setting up process group for: env:// [rank=0, world_size=2]\n"
      "(BaseWorkerMixin pid=25342, ip=10.0.100.14) INFO torch.py:66 -- Setting up process group for: env:// [rank=1, world_size=2]\n"
      "(BaseWorkerMixin pid=25342, ip=10.0.100.14) Traceback (most recent call last):\n"
      "(BaseWorkerMixin pid=25342, ip=10.0.100.14) " + oom_line);
  check_decision(own, "cuda-oom", 1, "root-event");
  // Newer Ray: only the trainer's list names every worker, and a worker on the driver's node
  // prints no ip= in its prefix.
  const std::string list = "(TorchTrainer pid=71127) Started distributed worker processes:\n"
                           "(TorchTrainer pid=71127) - (ip=10.216.70.82, pid=75298) world_rank=0, local_rank=0, node_rank=0\n"
                           "(TorchTrainer pid=71127) - (ip=10.216.70.82, pid=75299) world_rank=1, local_rank=1, node_rank=0\n"
                           "(TorchTrainer pid=71127) - (node_id=d93746e8, ip=10.2.0.6, pid=24444) world_rank=2, local_rank=0, node_rank=1\n";
  check_decision(f.run(list + "(RayTrainWorker pid=75299) " + oom_line), "cuda-oom", 1, "root-event");
  check_decision(f.run(list + "(RayTrainWorker pid=24444, ip=10.2.0.6) " + oom_line), "cuda-oom", 2, "root-event");
  // A worker the list does not name gets no rank: the pid order proves nothing.
  Diagnosis unknown = f.run(list + "(RayTrainWorker pid=99999) " + oom_line);
  REQUIRE(unknown.entry);
  CHECK(unknown.entry->id == "cuda-oom");
  CHECK_FALSE(unknown.initiating.rank);
}

TEST_CASE("correlator: a vLLM Ray worker's parallel-state line maps its prefix to its world rank") {
  Fixture f;
  const std::string w0 = "(EngineCore_DP0 pid=742) (RayWorkerWrapper pid=927) ";
  const std::string w1 = "(EngineCore_DP0 pid=742) (RayWorkerWrapper pid=233, ip=10.20.1.125) ";
  std::string log = w0 + "INFO 11-12 11:12:00 [parallel_state.py:1325] rank 0 in world size 2 is assigned as DP rank 0, PP rank 0, TP rank 0, EP rank 0\n" +
                    w1 + "INFO 11-12 11:12:00 [parallel_state.py:1325] rank 1 in world size 2 is assigned as DP rank 0, PP rank 0, TP rank 1, EP rank 1\n" +
                    w0 + "INFO 11-12 11:12:10 [gpu_model_runner.py:2904] Model loading took 7.2637 GiB and 9.390913 seconds\n" +
                    w1 + "*** SIGSEGV received at time=1762945937 on cpu 6 ***\n" +
                    w1 + "Fatal Python error: Segmentation fault\n";
  check_decision(f.run(log), "worker-segfault-sigsegv", 1, "root-event");
}

TEST_CASE("correlator: a glog/c10 line of severity F is a failure line whatever its text") {
  Fixture f;
  Diagnosis g = f.run("step 1\nF0801 13:23:17.366000 32974 some/file.cc:90] foo_ready went away\n");
  CHECK(g.verdict == "unrecognized");
  REQUIRE(g.first_error);
  CHECK(g.first_error->line == 2);
  // A failed CHECK says more: a native library's invariant broke (the last resort names it).
  Diagnosis k = f.run("step 1\nF0801 13:23:17.366000 32974 some/file.cc:90] Check failed: foo_ready\n");
  REQUIRE(k.entry);
  CHECK(k.entry->id == "generic-error-message-check-failed");
  Diagnosis c = f.run("step 1\n[rank2]:[F1029 10:00:00.000000000 Thing.cpp:12] an invariant broke\n");
  CHECK(c.verdict == "unrecognized");
  REQUIRE(c.first_error);
  CHECK(c.first_error->rank == 2);
  // Other severities stay what their text says.
  CHECK(f.run("step 1\nW0801 13:23:17.366000 32974 some/file.cc:90] Check this later\n").verdict == "clean");
}

TEST_CASE("correlator: an unrecognised failure still says which rank the launcher saw fail first") {
  Fixture f;
  std::string log = "[rank3]: DatasetError: my own bug\n"
                    "torch.distributed.elastic.multiprocessing.errors.ChildFailedError:\n"
                    "Root Cause (first observed failure):\n[0]:\n  time      : 2025-05-05_10:00:00\n"
                    "  rank      : 3 (local_rank: 3)\n  exitcode  : 1 (pid: 77)\n";
  Diagnosis d = f.run(log);
  CHECK(d.verdict == "unrecognized");
  REQUIRE(d.launcher_first_failure);
  CHECK(d.launcher_first_failure->rank == 3);
  CHECK(d.launcher_first_failure->line.line == 6);
  CHECK_FALSE(d.initiating.rank);  // a hint, not an initiating rank
  std::string text = render_text(d, f.lib, {});
  CHECK(text.find("Rank 3 failed first, by torchrun's") != std::string::npos);
  auto j = diagnosis_to_json(d, f.lib);
  CHECK(j["launcher_first_failure"]["rank"] == 3);
}

TEST_CASE("correlator: a survivable warning the job outlived by long does not explain its later errors") {
  Fixture f;
  const std::string keepalive =
      "W0105 21:12:40.064000 2647951 torch/distributed/elastic/rendezvous/dynamic_rendezvous.py:1341] The node "
      "'n1_2647951_0' has failed to send a keep-alive heartbeat to the rendezvous 'none' due to an error of type "
      "RendezvousTimeoutError.\n";
  auto failed = [](const char* hms) {
    return std::string("E0105 ") + hms +
           ".978000 456319 torch/distributed/elastic/multiprocessing/api.py:882] failed (exitcode: 1) local_rank: 1 "
           "(pid: 456393) of binary: /usr/bin/python\n";
  };
  // The store host went away: the agent's workers fail within seconds of the missed heartbeat.
  Diagnosis near = f.run(keepalive + failed("21:12:52"));
  REQUIRE(near.entry);
  CHECK(near.entry->id == "torchrun-rendezvous-keepalive-failed");
  // 78 minutes later the workers fail on their own: the job lived through the warning.
  Diagnosis later = f.run(keepalive + failed("22:30:21"));
  CHECK((!later.entry || later.entry->id != "torchrun-rendezvous-keepalive-failed"));
}

TEST_CASE("correlator: errors told only in torchrun's summary are in rank order; its Root Cause says which came first") {
  Fixture f;
  auto failure = [](int slot, int rank, const char* hms) {
    return "[" + std::to_string(slot) + "]:\n  time      : 2026-05-19_" + hms + "\n  host      : n1\n  rank      : " +
           std::to_string(rank) + " (local_rank: " + std::to_string(rank) +
           ")\n  exitcode  : 1 (pid: 7" + std::to_string(rank) +
           ")\n  traceback : Traceback (most recent call last):\n    File \"/app/train.py\", line 9, in step\n"
           "  torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 200.00 MiB. GPU " + std::to_string(rank) +
           " has a total capacity of 79.10 GiB of which 73.44 MiB is free.\n";
  };
  std::string summary = "step 1 loss 2.0\ntorch.distributed.elastic.multiprocessing.errors.ChildFailedError:\n"
                        "============================================================\ntrain.py FAILED\n"
                        "------------------------------------------------------------\nFailures:\n" +
                        failure(1, 2, "18:21:02") + failure(2, 3, "18:21:02") +
                        "------------------------------------------------------------\n"
                        "Root Cause (first observed failure):\n" + failure(0, 4, "18:21:01");
  Diagnosis d = f.run(summary);
  check_decision(d, "cuda-oom", 4, "root-event");
  CHECK(d.initiating.reason.find("rank order") != std::string::npos);
  // The same ranks' errors printed live, before the summary, keep their own order.
  std::string live = "[rank2]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 200.00 MiB. GPU 2 has a total capacity of 79.10 GiB\n" +
                     summary;
  check_decision(f.run(live), "cuda-oom", 2, "root-event");
}

TEST_CASE("correlator: an unrecognised error on one rank makes it the suspect; the others are not") {
  Fixture f;
  // Rank 3's own exception; torchrun stops ranks 0 and 1.
  std::string raised = "[rank0]: step 10 loss 2.0\n[rank1]: step 10 loss 2.0\n"
                       "[rank3]: Traceback (most recent call last):\n"
                       "[rank3]:   File \"/app/losses.py\", line 14, in compute_loss\n"
                       "[rank3]: DatasetError: missing 'caption'\n";
  std::string log = raised +
                    "Root Cause (first observed failure):\n[0]:\n  time      : 2025-05-05_10:00:00\n"
                    "  rank      : 3 (local_rank: 3)\n  exitcode  : 1 (pid: 77)\n";
  Diagnosis d = f.run(log);
  REQUIRE(d.verdict == "unrecognized");
  REQUIRE(d.suspect);
  REQUIRE(d.suspect->rank);
  CHECK(*d.suspect->rank == 3);
  CHECK(d.suspect->method == "first-error");
  CHECK(d.suspect->confidence == Approx(0.6));  // only rank with its own error, and torchrun agrees
  CHECK(d.suspect->reason.find("only rank with an error line of its own") != std::string::npos);
  REQUIRE(d.suspect->first_evidence);
  CHECK(d.suspect->first_evidence->line == 5);
  CHECK_FALSE(d.initiating.rank);  // no entry: the diagnosis itself names no rank
  for (const auto& r : d.ranks) CHECK(r.role == (r.rank == 3 ? "initiating" : "quiet"));
  CHECK(render_text(d, f.lib, {}).find("Suspected initiating rank: rank 3 (low confidence, 0.60)") != std::string::npos);
  auto j = diagnosis_to_json(d, f.lib);
  CHECK(j["suspect"]["rank"] == 3);
  CHECK(j["suspect"]["method"] == "first-error");
  CHECK(j["diagnosis"].is_null());

  // The others lose their communicator: a cascade-only diagnosis, and its initiating rank is
  // the one rank with an error of its own, not "unknown".
  Diagnosis c = f.run(raised + "[rank0]: torch.distributed.DistBackendError: NCCL communicator was aborted on rank 0.\n"
                               "[rank1]: torch.distributed.DistBackendError: NCCL communicator was aborted on rank 1.\n");
  REQUIRE(c.verdict == "diagnosed");
  check_decision(c, "nccl-collective-timeout", 3, "first-error");
  CHECK(c.initiating.confidence == Approx(0.5));
  CHECK(c.collateral.ranks == std::vector<int>{0, 1});
}

TEST_CASE("correlator: the suspect of an unrecognised failure follows the clocks, and the same error everywhere is job-wide") {
  Fixture f;
  // Different errors, a minute apart: the first one is the suspect, whatever the print order.
  Diagnosis d = f.run("2025-05-05 10:01:00 [rank1]: SystemError: peer vanished while reducing\n"
                      "2025-05-05 10:00:00 [rank2]: DatasetError: bad row 17 in shard 3\n");
  REQUIRE(d.suspect);
  REQUIRE(d.suspect->rank);
  CHECK(*d.suspect->rank == 2);
  CHECK(d.suspect->candidates == std::vector<int>{2, 1});
  CHECK(d.suspect->confidence == Approx(0.4));
  // One message on every rank at once: a job-wide cause, no rank named.
  Diagnosis w = f.run("[rank0]: DatasetError: unknown model type 'llama9'\n[rank1]: DatasetError: unknown model type 'llama9'\n");
  REQUIRE(w.suspect);
  CHECK_FALSE(w.suspect->rank);
  CHECK(w.suspect->method == "job-wide");
  // Different messages printed within a second: the first printed, with the least confidence.
  Diagnosis t = f.run("[rank1]: DatasetError: bad row 17 in shard 3\n[rank0]: SystemError: peer vanished while reducing\n");
  REQUIRE(t.suspect);
  REQUIRE(t.suspect->rank);
  CHECK(*t.suspect->rank == 1);
  CHECK(t.suspect->confidence == Approx(0.3));
  // A rank that only lost a peer did not raise first: losing a connection is a consequence.
  Diagnosis p = f.run("[rank0]: step 5\n[rank2]: step 5\n[rank1]: ConnectionResetError: [Errno 104] Connection reset by peer\n"
                      "[rank1]: DatasetError: could not read the next batch\n");
  CHECK(p.verdict == "unrecognized");
  CHECK_FALSE(p.suspect);
  // Error lines without a rank name no suspect.
  Diagnosis n = f.run("step 1\nDatasetError: my own bug\n");
  CHECK(n.verdict == "unrecognized");
  CHECK_FALSE(n.suspect);
}

TEST_CASE("correlator: rank from file names, one file per rank") {
  Fixture f;
  f.dir.write("job/rank0.log", timeout(0, 42));
  f.dir.write("job/rank1.log", "step 9\nRuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 15.78 GiB total)\n");
  f.dir.write("job/rank2.log", timeout(2, 42));
  Diagnosis d = analyze_paths({f.dir.path() + "/job"}, f.matcher, {}).diagnosis;
  REQUIRE(d.entry);
  CHECK(d.entry->id == "cuda-oom");
  REQUIRE(d.initiating.rank);
  CHECK(*d.initiating.rank == 1);
  CHECK(d.inputs.size() == 3);
}

TEST_CASE("render: JSON stays valid with invalid UTF-8 and control bytes in the log") {
  Fixture f;
  std::string log = oom(0);
  log.insert(log.find("CUDA"), "\xff\xfe\x01");
  Diagnosis d = f.run(log);
  std::string json = dump_json(diagnosis_to_json(d, f.lib));
  auto parsed = nlohmann::json::parse(json);
  CHECK(parsed["schema"] == "firstfault.diagnosis/v1");
  CHECK(parsed["verdict"] == "diagnosed");
  std::string text = render_text(d, f.lib, {});
  CHECK(text.find('\x01') == std::string::npos);
}

TEST_CASE("pipeline: a 100 MB line is capped for matching, counted, and the lines after it still count") {
  Fixture f;
  std::string log = std::string(100u << 20, 'x') + "\n" + oom(1);
  Diagnosis d = f.run(log);
  REQUIRE(d.inputs.size() == 1);
  CHECK(d.inputs[0].long_lines == 1);
  CHECK(d.inputs[0].lines == 2);
  REQUIRE(d.entry);
  CHECK(d.entry->id == "cuda-oom");
}

TEST_CASE("correlator: a 'scope: job' entry (a configuration error) names no initiating rank") {
  Fixture f;
  // Megatron's divisibility check as one rank's traceback shows it; every rank would raise it.
  std::string log = "[rank0]:step 0\n[rank4]:step 0\n"
                    "[rank4]:   File \"/work/minillm/transformers/src/transformers/mpu/utils.py\", line 11, in ensure_divisibility\n"
                    "[rank4]: AssertionError: 2 is not divisible by 4\n";
  Diagnosis d = f.run(log);
  REQUIRE(d.entry);
  CHECK(d.entry->id == "vllm-tp-size-not-divisor");
  CHECK(d.entry->job_scope);
  CHECK_FALSE(d.initiating.rank);
  CHECK(d.initiating.method == "job-wide");
  REQUIRE(d.initiating.first_evidence);
  CHECK(d.initiating.first_evidence->rank == 4);
}

TEST_CASE("correlator: a 'scope: job' entry whose root lines carry no rank is still job-wide") {
  Fixture f;
  // The same check in unprefixed output (DeepSpeed's launcher without --enable_each_rank_log).
  std::string log = "  File \"/work/minillm/transformers/src/transformers/mpu/utils.py\", line 11, in ensure_divisibility\n"
                    "AssertionError: 2 is not divisible by 4\n";
  Diagnosis d = f.run(log);
  REQUIRE(d.entry);
  CHECK(d.entry->id == "vllm-tp-size-not-divisor");
  CHECK_FALSE(d.initiating.rank);
  CHECK(d.initiating.method == "job-wide");
  CHECK(d.initiating.confidence > 0.5);

  // torchrun's Root Cause names the rank whose exit it saw first: not where a configuration error is.
  log += "Root Cause (first observed failure):\n[0]:\n  rank      : 5 (local_rank: 5)\n";
  d = f.run(log);
  REQUIRE(d.entry);
  CHECK(d.entry->id == "vllm-tp-size-not-divisor");
  CHECK_FALSE(d.initiating.rank);
  CHECK(d.initiating.method == "job-wide");
}

namespace {
// TORCH_DISTRIBUTED_DEBUG=DETAIL: each rank compares its fingerprint with ranks 0..N-1 in order
// and raises on the first that differs (ProcessGroupWrapper.cpp).
std::string fingerprint(int self, int peer, int seq, const char* op) {
  return "[rank" + std::to_string(self) + "]: RuntimeError: Detected mismatch between collectives on ranks. Rank " +
         std::to_string(self) + " is running collective: CollectiveFingerPrint(SequenceNumber=" + std::to_string(seq) +
         ", OpType=" + op + "), but Rank " + std::to_string(peer) +
         " is running collective: CollectiveFingerPrint(SequenceNumber=" + std::to_string(seq) + ", OpType=BROADCAST).\n";
}
std::string zero3(int self) {
  return "[rank" + std::to_string(self) + "]: RuntimeError: disagreement between rank0 and rank" + std::to_string(self) +
         ": rank0: [0, 1, 2, 453], rank" + std::to_string(self) + ": [0, 1, 2, 454]\n";
}
}  // namespace

TEST_CASE("correlator: when every rank names the same rank as different from it, that rank is the odd one") {
  Fixture f;
  // Rank 3 issued a BROADCAST where the others issued an ALLREDUCE: ranks 0-2 and 4-7 all name rank 3;
  // rank 3 names rank 0, its first difference. Printed first by rank 0, at the same second.
  std::string log;
  for (int r = 0; r < 8; ++r) log += fingerprint(r, r == 3 ? 0 : 3, 41, r == 3 ? "BROADCAST" : "ALLREDUCE");
  Diagnosis d = f.run(log);
  check_decision(d, "collective-fingerprint-mismatch", 3, "peer-vote");
  CHECK(d.initiating.reason.find("ranks 0-2,4-7") != std::string::npos);
}

TEST_CASE("correlator: in an excerpt, two ranks naming the same rank outvote the rank that printed first") {
  Fixture f;
  // SimpleTuner#2712's shape: two ranks' circuit-breaker lines name rank 7; rank 7's own traceback follows.
  std::string log = "[RANK 4] 2026-05-19 10:10:29,604 [ERROR] " + fingerprint(4, 7, 101, "ALLGATHER").substr(9) +
                    "[RANK 1] 2026-05-19 10:10:29,701 [ERROR] " + fingerprint(1, 7, 101, "ALLGATHER").substr(9) +
                    "[rank7]: Traceback (most recent call last):\n";
  Diagnosis d = f.run(log);
  check_decision(d, "collective-fingerprint-mismatch", 7, "peer-vote");
  // Two votes against one other vote are not enough when the other rank is named as often.
  std::string split = fingerprint(0, 3, 9, "ALLREDUCE") + fingerprint(1, 3, 9, "ALLREDUCE") + fingerprint(2, 5, 9, "ALLREDUCE") +
                      fingerprint(4, 5, 9, "ALLREDUCE");
  CHECK(f.run(split).initiating.method != "peer-vote");
}

TEST_CASE("correlator: a vote for a reference rank needs more than half of the other ranks") {
  Fixture f;
  SECTION("two ranks name each other: undecided by vote") {
    Diagnosis d = f.run(fingerprint(0, 1, 5, "ALLREDUCE") + fingerprint(1, 0, 5, "BROADCAST"));
    REQUIRE(d.entry);
    CHECK(d.initiating.method != "peer-vote");
  }
  SECTION("ZeRO-3: every non-zero rank disagrees with rank 0, so rank 0 is the odd one") {
    std::string log;
    for (int r = 0; r < 4; ++r) log += "[rank" + std::to_string(r) + "]: step 7\n";
    for (int r = 1; r < 4; ++r) log += zero3(r);
    check_decision(f.run(log), "zero3-trace-disagreement-across-ranks", 0, "peer-vote");
  }
  SECTION("ZeRO-3: two of eight ranks disagree with rank 0: they are the odd ones, not rank 0") {
    std::string log;
    for (int r = 0; r < 8; ++r) log += "[rank" + std::to_string(r) + "]: step 7\n";
    log += zero3(6) + zero3(2);
    Diagnosis d = f.run(log);
    REQUIRE(d.entry);
    CHECK(d.initiating.method != "peer-vote");
    REQUIRE(d.initiating.rank);
    CHECK(*d.initiating.rank == 6);
  }
  SECTION("a subgroup's numbering (Rank N is not the line's rank) does not vote") {
    std::string log;
    for (int r = 0; r < 4; ++r) {
      std::string line = fingerprint(r % 2, r % 2 == 0 ? 1 : 0, 9, "ALLREDUCE");
      log += "[rank" + std::to_string(r) + "]:" + line.substr(line.find(']') + 2);
    }
    Diagnosis d = f.run(log);
    REQUIRE(d.entry);
    CHECK(d.initiating.method != "peer-vote");
  }
}

namespace {
// Four ranks training with timestamped step lines from 10:00, each printing `last_step` last at
// `stop`; then more (harmless) lines from every rank until `end`.
std::string idle_after_progress(const char* stop, const char* end, const char* tail_text = "NCCL INFO Channel 00 : 0[0] -> 1[1] via P2P/IPC") {
  std::string log;
  for (int step = 1; step <= 3; ++step)
    for (int r = 0; r < 4; ++r)
      log += fmt::format("[rank{}]:[2024-05-08 10:0{}:00] step {}/1000 loss 2.31\n", r, step, step);
  for (int r = 0; r < 4; ++r) log += fmt::format("[rank{}]:[2024-05-08 {}] step 4/1000 loss 2.30\n", r, stop);
  for (int r = 0; r < 4; ++r) log += fmt::format("[rank{}]:[2024-05-08 {}] {}\n", r, end, tail_text);
  return log;
}
}  // namespace

TEST_CASE("correlator: progress that stops long before the log ends, with no error, is 'incomplete', not clean") {
  Fixture f;
  Diagnosis d = f.run(idle_after_progress("10:04:00", "10:52:00"));
  CHECK(d.verdict == "incomplete");
  REQUIRE(d.stopped);
  CHECK(d.stopped->idle_minutes == 48);
  CHECK(d.stopped->last_progress.text.find("step 4/1000") != std::string::npos);
  CHECK(d.stopped->ranks == std::vector<int>{0, 1, 2, 3});
  CHECK(d.action.kind == ActionKind::kInvestigate);
}

TEST_CASE("correlator: a log that merely ends in training, or pauses briefly, stays clean") {
  Fixture f;
  // An excerpt of a healthy run: progress to the last lines, no gap.
  CHECK(f.run(idle_after_progress("10:04:00", "10:04:30")).verdict == "clean");
  // A pause shorter than the threshold (a checkpoint save).
  CHECK(f.run(idle_after_progress("10:04:00", "10:12:00")).verdict == "clean");
  // A run that says it finished is clean however long it was quiet before.
  CHECK(f.run(idle_after_progress("10:04:00", "10:52:00", "Training completed. Do not forget to share your model")).verdict ==
        "clean");
}

TEST_CASE("correlator: error lines the run trained past leave it clean, and the first is shown; an error after the last progress does not") {
  Fixture f;
  // A reward checker's "[Error]" and a logger's CRITICAL notice, then training goes on to the end.
  const std::string trained_past =
      "[2024-06-21 10:47:10][CRITICAL][jobs:245] - To launch across ALL GPUs in your job, use:\n"
      "(TaskRunner pid=29) [Error] </answer> appears 0 times (expected 1)\n"
      "Training Progress:   0%|          | 9/47200 [05:00<308:34:14, 23.54s/it]\n"
      "Training Progress:   0%|          | 10/47200 [05:16<308:34:14, 23.54s/it]\n";
  Diagnosis c = f.run(trained_past);
  CHECK(c.verdict == "clean");
  REQUIRE(c.outlived_error);
  CHECK(c.outlived_error->line == 1);
  CHECK_FALSE(c.first_error);
  // The same error after the last progress line ended the run: unrecognized, as before.
  Diagnosis u = f.run("Training Progress:   0%|          | 10/47200 [05:16<308:34:14, 23.54s/it]\n"
                      "(TaskRunner pid=29) [Error] </answer> appears 0 times (expected 1)\n");
  CHECK(u.verdict == "unrecognized");
  CHECK_FALSE(u.outlived_error);
  // One error the run outlived and one it did not: the second is a failure (the last resort reads
  // the RuntimeError), and nothing is called outlived.
  Diagnosis both = f.run(trained_past + "RuntimeError: something broke\n");
  CHECK(both.verdict == "diagnosed");
  CHECK_FALSE(both.outlived_error);
  // In a job of several ranks, another rank's progress does not outlive rank 3's error.
  Diagnosis other = f.run("[rank3]: [Error] reward parse failed\n[rank0]: step 11 loss 2.0\n[rank0]: step 12 loss 1.9\n"
                          "step 13 loss 1.8\n");
  CHECK(other.verdict == "unrecognized");
  CHECK_FALSE(other.outlived_error);
  // Its own progress does.
  Diagnosis own = f.run("[rank3]: [Error] reward parse failed\n[rank3]: step 11 loss 2.0\n[rank0]: step 11 loss 2.0\n");
  CHECK(own.verdict == "clean");
  CHECK(own.outlived_error);
}

TEST_CASE("correlator: an error line before the run says it finished is outlived, for the verdict and for a last resort") {
  Fixture f;
  // A container entrypoint's failed clean-up that a last resort would read as storage, then the
  // run reports success (MLPerf's run_stop); nothing after it.
  const std::string cleanup = "rm: cannot remove '/usr/local/cuda/compat/lib': Read-only file system\n";
  const std::string done =
      ":::MLLOG {\"namespace\": \"\", \"time_ms\": 1593117247312, \"event_type\": \"INTERVAL_END\", \"key\": \"run_stop\", "
      "\"value\": null, \"metadata\": {\"file\": \"ssd_main.py\", \"lineno\": 520, \"status\": \"success\"}}\n";
  Diagnosis before = f.run(cleanup);
  CHECK(before.verdict != "clean");
  Diagnosis after = f.run(cleanup + done + "ENDING TIMING RUN AT 2020-06-25 03:34:13 PM\n");
  CHECK(after.verdict == "clean");
  REQUIRE(after.outlived_error);
  CHECK(after.outlived_error->line == 1);
  // A rank's error after another rank's completion line is not outlived.
  Diagnosis other = f.run("[rank0]: Training completed. Do not forget to share your model\n[rank3]: [Error] reward parse failed\n");
  CHECK(other.verdict == "unrecognized");
}

TEST_CASE("correlator: a GPU fault in the node's kernel log explains the rank's CUDA symptom (explains:)") {
  Fixture f;
  std::string job =
      "node-12:48213:48300 [1] NCCL INFO comm 0x55d0 rank 5 nranks 8 cudaDev 1 nvmlDev 1 busId bd000 commId 0x1a2b - Init "
      "COMPLETE\n"
      "[rank5]: RuntimeError: CUDA error: an illegal memory access was encountered\n"
      "[rank5]: For debugging consider passing CUDA_LAUNCH_BLOCKING=1\n";
  // An Xid number no specific entry knows: the generic Xid entry, which would otherwise give way
  // to any specific entry, is the diagnosis because it explains the symptom.
  std::string kern = "[Thu Nov  7 10:02:45 2024] NVRM: Xid (PCI:0000:bd:00): 168, pid=48213, name=python, Ch 00000010\n";
  Diagnosis d = analyze_paths({f.dir.write("job.log", job), f.dir.write("node-12.dmesg", kern)}, f.matcher, {}).diagnosis;
  REQUIRE(d.entry);
  CHECK(d.entry->id == "generic-gpu-xid");
  REQUIRE(d.initiating.rank);
  CHECK(*d.initiating.rank == 5);
  REQUIRE_FALSE(d.alternatives.empty());
  CHECK(d.alternatives[0].id == "cuda-illegal-memory-access");
  // Alone, the job log names the symptom.
  Diagnosis alone = f.run(job);
  REQUIRE(alone.entry);
  CHECK(alone.entry->id == "cuda-illegal-memory-access");
}

TEST_CASE("correlator: a stall report that lists the ready (or the missing) ranks names the one rank it leaves out") {
  Fixture f;
  // Horovod <= 0.15's stall inspector lists, per stalled op, the ranks that HAD submitted it.
  std::string log = "[1,0]<stderr>:Stalled ops:\n"
                    "[1,0]<stderr>:HorovodAllreduce_grad_0 [ready ranks: 5, 6, 3, 1, 4, 0], \n"
                    "[1,0]<stderr>:HorovodAllreduce_grad_1 [ready ranks: 5, 6, 3, 1, 4, 0], \n";
  Diagnosis d = f.run(log);
  REQUIRE(d.entry);
  CHECK(d.entry->id == "horovod-stalled-ranks");
  REQUIRE(d.initiating.rank);
  CHECK(*d.initiating.rank == 2);
  // Two ranks left out, or a job known to be bigger than the list: no one rank is named by it.
  CHECK_FALSE(f.run("HorovodAllreduce_grad_0 [ready ranks: 5, 6, 3, 4, 0], \n").initiating.rank == 2);
  std::string bigger = "[1,7]<stderr>:step 1\n" + log;
  CHECK_FALSE(f.run(bigger).initiating.rank == 2);
  // A report that waits for every rank but one: that one alone issued the op.
  Diagnosis alone = f.run("Stalled ops:\nMetricAverageCallback_10/HorovodAllreduce_lr_0 [missing ranks: 1, 2, 3, 4, 5, 6, 7]\n");
  REQUIRE(alone.initiating.rank);
  CHECK(*alone.initiating.rank == 0);
  // One missing rank of a list of one says nothing about the others (the single form names it).
  CHECK(f.run("allreduce.loss [missing ranks: 1]\n").initiating.rank == 1);
}

TEST_CASE("correlator: ranks that stop at different steps are a silent hang, unless the script saw the process exit 0") {
  // NVIDIA's MLPerf run_and_time.sh prints ENDING TIMING RUN only after the process exited 0 (a
  // 2-node result cut in the middle, round 89b).
  Fixture f;
  std::string run;
  for (int r = 0; r < 4; ++r) run += std::to_string(r) + ": step 51 loss 2.1\n";
  for (int r : {0, 1, 3}) run += std::to_string(r) + ": step 52 loss 2.0\n";
  Diagnosis hung = f.run(run);
  REQUIRE(hung.entry);
  CHECK(hung.entry->id == "training-hang-silent");
  Diagnosis exited = f.run(run + "0: ENDING TIMING RUN AT 2022-05-23 08:22:49 PM\n"
                                 "0: RESULT,OBJECT_DETECTION,,2847,nvidia,2022-05-23 07:35:22 PM\n");
  CHECK(exited.verdict == "clean");
}

TEST_CASE("correlator: a time limit long after the last progress is a hang, and the rank that stopped is named") {
  Fixture f;
  auto step = [](int rank, const char* time, int n) {
    return "[rank" + std::to_string(rank) + "]: 2024-05-01 " + time + ",000 step " + std::to_string(n) + " loss 2.1\n";
  };
  std::string run;
  for (int r = 0; r < 4; ++r) run += step(r, "10:00:00", 100);
  for (int r : {0, 1, 3}) run += step(r, "10:00:05", 101);
  std::string end12h = "slurmstepd: error: *** JOB 88121 ON gpu-node-03 CANCELLED AT 2024-05-01T22:00:07 DUE TO TIME LIMIT ***\n";
  Diagnosis d = f.run(run + end12h);
  check_decision(d, "training-hang-silent", 2, "silence");
  CHECK_THAT(d.initiating.reason, Catch::Contains("no progress for 720 min"));
  CHECK_THAT(d.initiating.reason, Catch::Contains("slurm-time-limit ended it"));
  REQUIRE(d.initiating.first_evidence);
  CHECK(d.initiating.first_evidence->rank == 2);  // where to look: rank 2's last progress
  REQUIRE_FALSE(d.evidence.empty());
  CHECK_THAT(d.evidence.front().text, Catch::Contains("DUE TO TIME LIMIT"));
  // Ten minutes of silence is a slow step or a checkpoint, not a hang: the time limit stands.
  std::string end10m = "slurmstepd: error: *** JOB 88121 ON gpu-node-03 CANCELLED AT 2024-05-01T10:10:05 DUE TO TIME LIMIT ***\n";
  Diagnosis limit = f.run(run + end10m);
  REQUIRE(limit.entry);
  CHECK(limit.entry->id == "slurm-time-limit");
}

TEST_CASE("correlator: one rank waiting in another collective at the same SeqNum is the odd one (desync by op type)") {
  Fixture f;
  // The seed failure as PyTorch 2.x prints it: rank 3 left the loop (its bar at 100%) and waits
  // in an ALLREDUCE of one element; the others wait in _ALLGATHER_BASE at the same SeqNum.
  std::string log;
  for (int r = 0; r < 8; ++r) log += "[rank" + std::to_string(r) + "]: Epoch 0:  99%|#########9| 990/1000 [10:01<00:06]\n";
  log += "[rank3]: Epoch 0: 100%|##########| 1000/1000 [10:07<00:00]\n";
  for (int r = 0; r < 8; ++r) log += timeout(r, 48211, r == 3 ? "ALLREDUCE" : "_ALLGATHER_BASE", "10:32:41");
  Diagnosis d = f.run(log);
  REQUIRE(d.initiating.rank);
  CHECK(*d.initiating.rank == 3);
  CHECK(d.initiating.method == "op-mismatch");
  CHECK_THAT(d.initiating.reason, Catch::Contains("rank 3 timed out in ALLREDUCE at the same SeqNum"));
  CHECK_THAT(d.initiating.reason, Catch::Contains("1000/1000"));
  // Two ops split evenly say nothing about one rank.
  std::string split;
  for (int r = 0; r < 4; ++r) split += timeout(r, 9, r < 2 ? "ALLREDUCE" : "BROADCAST");
  CHECK(f.run(split).initiating.method != "op-mismatch");
}

TEST_CASE("correlator: a Slurm record (sacct, scontrol show job) given with the log says how the job ended") {
  Fixture f;
  const std::string sacct_header =
      "JobID           JobName  Partition    Account  AllocCPUS      State ExitCode\n"
      "------------ ---------- ---------- ---------- ---------- ---------- --------\n";
  auto record = [&](const std::string& text) {
    Diagnosis d = analyze_paths({f.dir.write("sacct.txt", text)}, f.matcher, {}).diagnosis;
    return d.entry ? d.entry->id : d.verdict;
  };
  CHECK(record(sacct_header + "1234            train       gpu      acct        64     FAILED      1:0\n"
                              "1234.0          python               acct        64 OUT_OF_ME+    0:125\n") ==
        "slurm-cgroup-oom-kill");
  CHECK(record(sacct_header + "1234            train       gpu      acct        64  NODE_FAIL      0:0\n") == "slurm-node-failure");
  CHECK(record("1234|train|TIMEOUT|0:0|gpu-001\n1234.batch|batch|CANCELLED|0:15|gpu-001\n") == "slurm-time-limit");
  CHECK(record("JobId=77 JobName=sweep\n   JobState=PREEMPTED Reason=Preempted Dependency=(null)\n") == "slurm-preemption");
  CHECK(record(sacct_header + "1234            train       gpu      acct        64     FAILED      1:0\n") ==
        "slurm-task-exit-no-cause");
  CHECK(record(sacct_header + "1234            train       gpu      acct        64  COMPLETED      0:0\n") == "clean");
  // With the job's own log, its error decides; the record does not outvote it.
  Diagnosis both = analyze_paths({f.dir.write("job.log", "[rank0]:step 1\n" + oom(3)),
                                  f.dir.write("sacct2.txt", sacct_header + "1234   train  gpu  acct  64  FAILED  1:0\n")},
                                 f.matcher, {}).diagnosis;
  REQUIRE(both.entry);
  CHECK(both.entry->id == "cuda-oom");
}

TEST_CASE("correlator: a host whose clock runs ahead is estimated from the timeouts all ranks report, and its events are ordered on the reference clock") {
  Fixture f;
  Diagnosis d = f.run(test::two_host_skewed_clock_log());
  REQUIRE(d.clock_skew.size() == 1);
  CHECK(d.clock_skew[0].host == "gpu-b");
  CHECK(d.clock_skew[0].reference == "gpu-a");
  CHECK(d.clock_skew[0].offset_ms == 60000);
  REQUIRE(d.initiating.rank);
  CHECK(*d.initiating.rank == 5);
  CHECK_THAT(render_text(d, f.lib, TextStyle{}), Catch::Contains("Clocks: host gpu-b runs 60.0 s ahead of host gpu-a"));
  // A second of disagreement is within the logs' resolution: no estimate, no reordering.
  std::string close;
  for (int r = 0; r < 8; ++r)
    close += fmt::format("[rank{0}]:gpu-{1}:{2}:{2} [{3}] NCCL INFO comm 0x5{0} rank {0} nranks 8 cudaDev {3} nvmlDev {3} busId "
                         "{4}b000 commId 0x1 - Init COMPLETE\n",
                         r, r < 4 ? 'a' : 'b', 4000 + r, r % 4, r % 4 + 1);
  for (int r : {0, 2, 3}) close += timeout(r, 77, "ALLREDUCE", "10:11:00");
  for (int r : {4, 6, 7}) close += timeout(r, 77, "ALLREDUCE", "10:11:01");
  CHECK(f.run(close).clock_skew.empty());
}

TEST_CASE("correlator: a per-rank file whose name and lines disagree is said, and the lines' ranks are used") {
  Fixture f;
  Diagnosis d = f.run("[rank5]:step 1\n[rank5]:step 2\n" + oom(5), "rank3.log");
  REQUIRE(d.initiating.rank);
  CHECK(*d.initiating.rank == 5);
  REQUIRE(d.inputs.size() == 1);
  CHECK_THAT(name_rank_note(d.inputs[0]), Catch::Contains("its name says rank 3, but 3 of its 3 line(s) that name a rank name another (first: rank 5)"));
  CHECK_THAT(render_text(d, f.lib, TextStyle{}), Catch::Contains("Note: "));
  CHECK_THAT(dump_json(diagnosis_to_json(d, f.lib)), Catch::Contains("\"note\": \"its name says rank 3"));
  // Lines with no rank of their own, or the file's own rank, say nothing.
  CHECK(name_rank_note(f.run("step 1\n" + oom(3), "rank3.log").inputs[0]).empty());
}

// Last-resort entries (match.last_resort): the words of an error line no entry knows name a
// category and a rank, never over an entry with a root line, never from a consequence or a guess.
TEST_CASE("correlator: a last resort reads an unknown error's words, by level, and never a consequence or a guess") {
  Fixture f;
  auto id_of = [](const Diagnosis& d) { return d.entry ? d.entry->id : std::string("-"); };
  SECTION("an unknown message about a file on one rank, the others time out") {
    Diagnosis d = f.run("[rank2]:RuntimeError: checkpoint file /ckpt/step_4000/rank_2.pt is truncated\n" + timeout(0, 9) +
                        timeout(1, 9) + timeout(3, 9));
    CHECK(id_of(d) == "generic-error-message-storage");
    REQUIRE(d.initiating.rank);
    CHECK(*d.initiating.rank == 2);
    CHECK(d.confidence <= 0.25);
  }
  SECTION("a resource that broke outranks an earlier fabric word (level 2 before level 4)") {
    Diagnosis d = f.run("[rank1]:RuntimeError: RDMA transport error on mlx5_2:1, retry counter exceeded\n"
                        "[rank0]:RuntimeError: failed to allocate 4096 blocks: not enough free memory on cuda:0\n");
    CHECK(id_of(d) == "generic-error-message-memory");
  }
  SECTION("a lost peer is a consequence, not a network diagnosis") {
    Diagnosis d = f.run("[rank1]:RuntimeError: [gloo/transport/tcp/pair.cc:598] Connection reset by peer\n");
    CHECK(d.verdict == "unrecognized");
  }
  SECTION("a framework's list of possible causes is not evidence") {
    Diagnosis d = f.run(
        "ray.exceptions.ActorDiedError: The actor died. Worker exit type: SYSTEM_ERROR. There are some potential root "
        "causes. (1) The process is killed by SIGKILL by OOM killer due to high memory usage.\n");
    CHECK(d.verdict == "unrecognized");
  }
  SECTION("an entry with a root line of its own wins") {
    Diagnosis d = f.run(oom(1) + "[rank0]:RuntimeError: checkpoint file /ckpt/x.pt is truncated\n");
    CHECK(id_of(d) == "cuda-oom");
  }
  SECTION("the same words outside an error line are not read") {
    Diagnosis d = f.run("Loading checkpoint shards from /ckpt (file 3 of 8 is missing a .index)\nstep 1 loss 2.0\n");
    CHECK(d.verdict == "clean");
  }
}

TEST_CASE("correlator: an entry whose every line came before rank 0 said the run finished did not end it") {
  // After an MLPerf run (training_results_v4.1, Supermicro stable diffusion): PMIx's dstore lock
  // error on every rank at start-up, then rank 0's run_stop with status success. That run's lock
  // ERROR is harmless on its own now (error_benign_line, round 84f); its OUT-OF-RESOURCE, the
  // segment that could not be made, is pmix-dstore-shm-exhausted's.
  Fixture f;
  const std::string pmix = "[rank6]: [sys-821ge:2299088] PMIX ERROR: OUT-OF-RESOURCE in file gds_ds12_lock_pthread.c at line 168\n"
                           "[rank3]: [sys-821ge:2299094] PMIX ERROR: OUT-OF-RESOURCE in file gds_ds12_lock_pthread.c at line 168\n";
  const std::string done =
      "[rank0]: :::MLLOG {\"namespace\": \"\", \"time_ms\": 1728864223053, \"event_type\": \"INTERVAL_END\", \"key\": "
      "\"run_stop\", \"value\": null, \"metadata\": {\"file\": \"utils.py\", \"lineno\": 186, \"status\": \"success\"}}\n";
  CHECK(f.run(pmix).verdict == "diagnosed");
  CHECK(f.run(pmix + done).verdict == "clean");
  // A launcher that reports a failed process: rank 0's "finished" does not speak for it.
  CHECK(f.run(pmix + done + "srun: error: node-3: task 6: Exited with exit code 1\n").verdict == "diagnosed");
  // Another error between them and the completion line: a wrapper that echoes "Training Complete"
  // after the program crashed is no proof the run lived through them.
  Diagnosis crashed = f.run(pmix + "[rank6]: RuntimeError: NCCL communicator was aborted on rank 6.\n" +
                            "[rank0]: === Training Complete ===\n");
  CHECK(crashed.verdict == "diagnosed");
}

TEST_CASE("correlator: a traceback deeper than the window is closed by its exception when its frames run on to it") {
  // 40 library frames, 80 lines: deeper than the fixed window (uvicorn's and Starlette's
  // middleware put 36 frames above a rejected request's exception, real-log round 84c).
  Fixture f;
  std::string frames;
  for (int i = 0; i < 40; ++i)
    frames += fmt::format("  File \"/usr/lib/python3.10/site-packages/pool/m{}.py\", line 10, in f{}\n    f{}()\n", i, i, i + 1);
  const std::string header = "Exception ignored in: <function Pool.__del__ at 0x7f3a2c1e0>\nTraceback (most recent call last):\n";
  // The finalizer's traceback ends at its exception: nothing in it failed the run.
  CHECK(f.run("epoch 1 step 100 loss 2.0\n" + header + frames + "OSError: [Errno 9] Bad file descriptor\n").verdict == "clean");
  // Frames that stop, other output, then an exception far below: that exception is not the
  // traceback's, and it counts.
  std::string other;
  for (int i = 0; i < 70; ++i) other += fmt::format("epoch 2 step {} loss 1.8\n", i);
  Diagnosis d = f.run("epoch 1 step 100 loss 2.0\n" + header + frames.substr(0, frames.size() / 4) + other +
                      "OSError: [Errno 5] Input/output error\n");
  CHECK(d.verdict != "clean");
}

TEST_CASE("correlator: a failure that stops a job before it trains is not one in a job that trained") {
  // CSCS Alps, OpenCLIP on 16 ranks (real-log round 76c): the container's working directory does
  // not exist, slurmstepd starts the tasks in /tmp, and the run trains on absolute paths.
  Fixture f;
  const std::string chdir = " 0: slurmstepd: error: couldn't chdir to `/workspace': No such file or directory: going to /tmp instead\n"
                            " 4: slurmstepd: error: couldn't chdir to `/workspace': No such file or directory: going to /tmp instead\n";
  const std::string trained =
      " 0: 2025-01-24,14:23:39 | INFO | Train Epoch: 0 [  4096/114688 (4%)] Data (t): 1.985 Batch (t): 4.285, 955.782/s, "
      "59.7364/s/gpu LR: 0.000000 Logit Scale: 14.286 Contrastive_loss: 8.3770 (8.3770) Loss: 8.3770 (8.3770)\n"
      " 0: 2025-01-24,14:23:57 | INFO | Train Epoch: 0 [114688/114688 (100%)] Data (t): 0.182 Batch (t): 0.674, 6468.02/s, "
      "404.251/s/gpu LR: 0.000001 Logit Scale: 14.285 Contrastive_loss: 8.3149 (8.3460) Loss: 8.3149 (8.3460)\n";
  Diagnosis stopped = f.run(chdir + " 0: python: can't open file '/tmp/train.py': [Errno 2] No such file or directory\n");
  REQUIRE(stopped.entry);
  CHECK(stopped.entry->id == "slurm-workdir-missing-on-node");
  // Trained past it: neither the entry nor an unknown error, the line is a warning here.
  CHECK(f.run(chdir + trained).verdict == "clean");
  // A later error of its own is the diagnosis, not the warning.
  Diagnosis later = f.run(chdir + trained + " 0: AssertionError: Caught AssertionError in DataLoader worker process 0.\n");
  REQUIRE(later.entry);
  CHECK(later.entry->id != "slurm-workdir-missing-on-node");
}

TEST_CASE("correlator: NCCL's warnings after a rank said its training completed are its teardown, not a failure") {
  // pytorch/torchtitan autoresearch run153: ncclCommDestroy after "Training completed" warns about
  // sockets and IPC buffers of peers that already exited.
  Fixture f;
  const std::string done =
      "[rank0]:[titan] 2026-05-19 22:43:18,270 - root - INFO - step: 10  loss:  6.52811\n"
      "[rank0]:[titan] 2026-05-19 22:43:20,271 - root - INFO - Training completed\n";
  const std::string teardown =
      "[rank0]:[2026-05-19 22:43:20] devgpu020:1553384:1553384 [0] misc/socket.cc:581 NCCL WARN ncclSocketSend: socket "
      "state (9) is not ready\n"
      "[rank0]:[2026-05-19 22:43:20] devgpu020:1553384:1553384 [0] register/register.cc:95 NCCL WARN rank 0 deregister "
      "IPC buffer 0xc7c2000000 peerRank 1 failed\n";
  CHECK(f.run(done + teardown).verdict == "clean");
  // The same warnings before the marker are the failure's.
  CHECK(f.run(teardown + done).verdict != "clean");
  // An error of another kind after the marker still counts: the final save failed.
  Diagnosis save = f.run(done + teardown + "[rank0]: OSError: [Errno 28] No space left on device: '/ckpt/final'\n");
  CHECK(save.verdict == "diagnosed");
}

TEST_CASE("correlator: a rank whose NCCL teardown failed after the run completed fails nothing; without the completion it does") {
  // MLPerf Stable Diffusion on 32 GPUs (round 85f): rank 0 logs run_stop success, then rank 30's
  // watchdog reports that its proxy could not close its connections.
  Fixture f;
  const std::string done =
      " 0: :::MLLOG {\"namespace\": \"\", \"time_ms\": 1746944086909, \"event_type\": \"INTERVAL_END\", \"key\": "
      "\"run_stop\", \"value\": null, \"metadata\": {\"file\": \"train.py\", \"lineno\": 196, \"status\": \"success\"}}\n";
  const std::string close_failed =
      "30: [E511 01:46:13.812290483 ProcessGroupNCCL.cpp:541] [Rank 30] found async exception when checking for NCCL "
      "errors: NCCL error: unhandled system error (run with NCCL_DEBUG=INFO for details), NCCL version 2.22.3\n"
      "30: ncclSystemError: System call (e.g. socket, malloc) or external library call failed or device error. \n"
      "30: Last error:\n"
      "30: [Proxy Service 30] Failed to execute operation Close from rank 30, retcode 3\n";
  CHECK(f.run(done + close_failed).verdict == "clean");
  // Without the marker it is the failure.
  CHECK(f.run(close_failed).verdict == "diagnosed");
  // After the marker, an NCCL failure that is not a teardown step still counts (a final save's
  // collective): without the Close line, the report is the failure.
  const std::string other = close_failed.substr(0, close_failed.find("30: Last error:"));
  CHECK(f.run(done + other).verdict != "clean");
}

TEST_CASE("correlator: errors after a server's engine logged a stop signal are its shutdown; before it they count") {
  // vLLM V1 stopped with SIGTERM after a benchmark (round 87b): the engine core logs the signal,
  // then the API server's output handler finds the engine gone.
  Fixture f;
  const std::string served = "(APIServer pid=23283) INFO:     127.0.0.1:40452 - \"POST /v1/completions HTTP/1.1\" 200 OK\n";
  const std::string stop =
      "(EngineCore pid=23397) INFO 08-01 21:34:51 [core.py:1214] [shutdown] EngineCore: trigger received signal=SIGTERM\n";
  const std::string dead =
      "(APIServer pid=23283) ERROR 08-01 21:34:51 [async_llm.py:704] vllm.v1.engine.exceptions.EngineDeadError: "
      "EngineCore encountered an issue. See stack trace (above) for the root cause.\n";
  CHECK(f.run(served + stop + dead).verdict == "clean");
  // Without the signal the engine died.
  Diagnosis died = f.run(served + dead);
  REQUIRE(died.entry);
  CHECK(died.entry->id == "vllm-engine-dead");
  // An error before the signal is not the shutdown's.
  CHECK(f.run(served + dead + stop).verdict != "clean");
}

TEST_CASE("correlator: vLLM's engine core starting its shutdown is a stop; EngineDeadError after it is that stop") {
  // A TP4/EP4 benchmark server stopped after its run (round 88c): later vLLM logs the requested
  // shutdown in steps instead of the signal, and the streams still open end in EngineDeadError.
  Fixture f;
  const std::string served = "(APIServer pid=12376) INFO:     127.0.0.1:50112 - \"POST /v1/chat/completions HTTP/1.1\" 200 OK\n";
  const std::string stop = "(EngineCore pid=12791) INFO 04-21 15:10:41 [core.py:1210] Shutdown initiated (timeout=0)\n"
                           "(EngineCore pid=12791) INFO 04-21 15:10:41 [core.py:1215] Aborting 235 requests\n";
  const std::string dead =
      "(APIServer pid=12376) ERROR 04-21 15:11:23 [serving.py:1261] vllm.v1.engine.exceptions.EngineDeadError: "
      "EngineCore encountered an issue. See stack trace (above) for the root cause.\n";
  CHECK(f.run(served + stop + dead).verdict == "clean");
  CHECK(f.run(served + dead + stop).verdict != "clean");
}

TEST_CASE("correlator: a line that says an optional step failed and the program went on is no entry's root") {
  Fixture f;
  // PyG disables an extension whose import failed and runs without it (round 87b).
  const std::string pyg =
      "/opt/venv/lib/python3.10/site-packages/torch_geometric/typing.py:86: UserWarning: An issue occurred while "
      "importing 'torch-scatter'. Disabling its usage. Stacktrace: /opt/venv/lib/python3.10/site-packages/"
      "torch_scatter/_version_cuda.so: undefined symbol: _ZN5torch3jit17parseSchemaOrNameERKSsb\n";
  CHECK(f.run(pyg + "Epoch 1/10 loss 0.41\n").verdict == "clean");
  // The same undefined symbol raised as an ImportError stops the program.
  Diagnosis raised = f.run("ImportError: /opt/venv/lib/python3.10/site-packages/torch_scatter/_version_cuda.so: "
                           "undefined symbol: _ZN5torch3jit17parseSchemaOrNameERKSsb\n");
  CHECK(raised.verdict != "clean");
  // TensorFlow's device allocation that its BFC allocator retries smaller is no OOM; the
  // ResourceExhaustedError that ends a TF job is.
  const std::string retried = "2020-10-05 10:21:44.011871: I tensorflow/stream_executor/cuda/cuda_driver.cc:789] failed to "
                              "allocate 17.79G (19104890880 bytes) from device: CUDA_ERROR_OUT_OF_MEMORY: out of memory\n";
  const std::string trained = "Epoch 1/10\n1875/1875 [==============================] - 9s 4ms/step - loss: 0.2947 - accuracy: 0.9143\n";
  CHECK(f.run(retried + trained).verdict == "clean");
  // A row of them that the process did not outlive is the OOM that ended it (horovod#1350).
  Diagnosis stopped = f.run(retried + retried);
  REQUIRE(stopped.entry);
  CHECK(stopped.entry->category == "memory");
  Diagnosis oom = f.run(retried + "tensorflow.python.framework.errors_impl.ResourceExhaustedError: OOM when allocating tensor "
                                  "with shape[64,2016,9,9] and type float on /job:localhost/replica:0/task:0/device:GPU:0 by "
                                  "allocator GPU_0_bfc\n");
  REQUIRE(oom.entry);
  CHECK(oom.entry->id == "tensorflow-oom-allocating-tensor");
}

TEST_CASE("correlator: a store connect retried until it went through is harmless; one that never did is the failure") {
  // A 2-rank PaddleSeg run whose rank 1 retried once while rank 0 started (round 89g).
  Fixture f;
  const std::string retry = "I0306 19:40:57.904001 23873 tcp_utils.cc:107] Retry to connect to 10.9.189.6:61668 while the server is not yet listening.\n";
  const std::string connected = "I0306 19:41:00.904317 23873 tcp_utils.cc:130] Successfully connected to 10.9.189.6:61668\n";
  CHECK(f.run(retry + connected).verdict == "clean");
  // A success to another address says nothing about this one.
  CHECK(f.run(retry + "I0306 19:41:00.904317 23873 tcp_utils.cc:130] Successfully connected to 10.9.189.7:61668\n").verdict != "clean");
  Diagnosis never = f.run(retry + retry + retry);
  REQUIRE(never.entry);
  CHECK(never.entry->id == "rendezvous-store-connect-retrying");
}

TEST_CASE("correlator: an entry that reads where an exception ran reads a frame of that exception's own traceback") {
  // Round 88d: every rank failed an assertion in the model's forward, and the DataLoader's thread
  // printed its own traceback later; the data-pipeline frame of that one says nothing about the
  // assertion.
  Fixture f;
  const std::string model_assert = "Traceback (most recent call last):\n"
                                   "  File \"main_ibot.py\", line 408, in train_one_epoch\n"
                                   "    student_local_cls = student(images[2:])[0]\n"
                                   "  File \"/ws/models/vision_transformer.py\", line 198, in forward\n"
                                   "    assert H == self.img_size[0] and W == self.img_size[1], \\\n"
                                   "AssertionError: Input image size (96*96) doesn't match model (224*224).\n";
  const std::string loader_thread = "Traceback (most recent call last):\n"
                                    "  File \"/usr/lib/python3.8/site-packages/torch/utils/data/dataloader.py\", line 1133, in _try_get_data\n"
                                    "    data = self._data_queue.get(timeout=timeout)\n"
                                    "RuntimeError: DataLoader worker (pid(s) 2854112) exited unexpectedly\n";
  Diagnosis apart = f.run(model_assert + loader_thread);
  REQUIRE(apart.entry);
  CHECK(apart.entry->id != "python-exception-in-data-preparation");
  // The same assertion raised under a collate frame is the data's.
  Diagnosis in_data = f.run("Traceback (most recent call last):\n"
                            "  File \"/usr/lib/python3.10/site-packages/torch/utils/data/_utils/collate.py\", line 171, in default_collate\n"
                            "    assert len(batch) > 0, \"empty batch\"\n"
                            "AssertionError: empty batch\n");
  REQUIRE(in_data.entry);
  CHECK(in_data.entry->id == "python-exception-in-data-preparation");
}

TEST_CASE("correlator: an import the code caught and logged (logging.exception) fails nothing; an uncaught one does") {
  Fixture f;
  const std::string traceback = "Traceback (most recent call last):\n"
                                "  File \"/algoperf/logger_utils.py\", line 27, in <module>\n"
                                "    import wandb\n"
                                "ModuleNotFoundError: No module named 'wandb'\n";
  // Python's logging in its default format prints the record, then the caught exception's traceback.
  CHECK(f.run("ERROR:root:Unable to import wandb.\n" + traceback + "step 10 loss 2.1\n").verdict == "clean");
  // Without the record above it, the traceback is uncaught: the import stopped the process.
  Diagnosis uncaught = f.run(traceback);
  REQUIRE(uncaught.entry);
  CHECK(uncaught.entry->id == "python-module-not-found");
  // A record above a traceback of another kind changes nothing (torchrun logs its summary above
  // its own uncaught ChildFailedError).
  Diagnosis other = f.run("ERROR:torch.distributed.elastic.multiprocessing.api:failed (exitcode: 1) local_rank: 0 (pid: 12) of binary: /usr/bin/python\n"
                          "Traceback (most recent call last):\n"
                          "  File \"/usr/local/bin/torchrun\", line 8, in <module>\n"
                          "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: \n");
  CHECK(other.verdict != "clean");
}

TEST_CASE("correlator: a request rejected in one line is harmless only when the server answered requests after it") {
  Fixture f;
  const std::string rejected =
      "ERROR 02-22 18:32:42 serving_chat.py:147] Error in applying chat template from request: As of transformers v4.44, "
      "default chat template is no longer allowed, so you must provide a chat template if the tokenizer does not define one.\n"
      "INFO:     ::1:33760 - \"POST /v1/chat/completions HTTP/1.1\" 400 Bad Request\n";
  Diagnosis failed = f.run(rejected);
  REQUIRE(failed.entry);
  CHECK(failed.entry->id == "hf-chat-template-missing");
  CHECK(f.run(rejected + "INFO:     ::1:33770 - \"POST /v1/completions HTTP/1.1\" 200 OK\n").verdict == "clean");
}
