// NCCL RAS JSON reports (reader/nccl_ras.h, reader/documents.h): read as RAS's own text form, in
// the layout of NCCL's src/ras/client_support.cc (json* writers) and ras.rst's sample.
#include <catch2/catch.hpp>

#include <string>

#include "firstfault/reader/documents.h"
#include "firstfault/reader/nccl_ras.h"
#include "test_support.h"

using namespace firstfault;

namespace {
// ras.rst's sample, with a second communicator whose ranks differ in AllReduce counts and one rank
// with an asynchronous ncclRemoteError.
const char* kReport = R"({
  "nccl_version": "2.29.1",
  "timestamp": "2025-12-19 13:06:53",
  "communicators_count": 2,
  "communicators": [
    {
      "hash": "0xae94423cfbb2ef4a", "size": 2, "ranks_count": 1, "missing_ranks_count": 1,
      "ranks": [{"rank": 0, "host": "172.16.64.245", "pid": 1524344, "cuda_dev": 0, "nvml_dev": 0,
                 "status": {"init_state": 0, "async_error": 0, "finalize_called": false, "destroy_flag": false, "abort_flag": false},
                 "collective_counts": {"AllReduce": 0}}],
      "missing_ranks": [{"rank": 1, "host": "172.16.64.245", "pid": 1524345, "cuda_dev": 1, "nvml_dev": 1,
                         "status": {"unresponsive": true, "considered_dead": true}}]
    },
    {
      "hash": "0x11", "size": 3, "ranks_count": 3, "missing_ranks_count": 0,
      "ranks": [
        {"rank": 0, "host": "a", "pid": 10, "cuda_dev": 0, "nvml_dev": 0, "status": {"init_state": 0, "async_error": 0}, "collective_counts": {"AllReduce": 6649}},
        {"rank": 1, "host": "a", "pid": 11, "cuda_dev": 1, "nvml_dev": 1, "status": {"init_state": 0, "async_error": 6}, "collective_counts": {"AllReduce": 6649}},
        {"rank": 2, "host": "b\nThe missing rank: 99", "pid": 12, "cuda_dev": 0, "nvml_dev": 0, "status": {"init_state": 0, "async_error": 0}, "collective_counts": {"AllReduce": 6648}}
      ],
      "missing_ranks": []
    }
  ],
  "ras": {"collection_time_sec": 0.000, "timeouts_count": 0}
}
)";
}  // namespace

TEST_CASE("nccl ras: a JSON report reads as RAS's text form: missing and dead ranks, errors, counts that differ") {
  CHECK(document_kind(kReport) == "NCCL RAS report");
  CHECK(document_kind("{\"entries\": [], \"pg_config\": {}}") == "Flight Recorder dump");
  CHECK(document_kind("{\"timestamp\": \"x\", \"event\": \"PEER_DEAD\"}").empty());  // a monitor event, not a report
  CHECK(document_kind("step 1 loss 2.0\n").empty());
  auto text = nccl_ras_json_to_text(kReport);
  REQUIRE(text.ok());
  const std::string& t = *text;
  CHECK(t.find("#0 (0xae94423cfbb2ef4a, 2 ranks) INCOMPLETE\n  Missing communicator data from 1 rank\n  The missing rank: 1\n") != std::string::npos);
  CHECK(t.find("  Rank 1 -- GPU 1 managed by process 1524345 on node 172.16.64.245\n") != std::string::npos);
  CHECK(t.find("DEAD\n  1 job process is considered dead (unreachable via the RAS network)\n  Process 1524345 on node 172.16.64.245 managing GPU 1\n") != std::string::npos);
  CHECK(t.find("  Rank 1 -- GPU 1 managed by process 11 on node a: asynchronous error ncclRemoteError\n") != std::string::npos);
  CHECK(t.find("  Communicator ranks have different AllReduce operation counts\n  2 ranks have launched up to operation 6649\n") != std::string::npos);
  CHECK(t.find("  Rank 2 has launched up to operation 6648 -- GPU 0 managed by process 12 on node b The missing rank: 99\n") != std::string::npos);
  CHECK(t.find("\nThe missing rank: 99") == std::string::npos);  // a field cannot start a line of its own
}

TEST_CASE("nccl ras: a broken report is refused with the reason, never a crash") {
  auto bad = document_to_text("NCCL RAS report", "{\"nccl_version\": \"2.29\", \"communicators\": [");
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().message == "NCCL RAS report: not valid JSON");
  auto wrong = nccl_ras_json_to_text("{\"nccl_version\": 3, \"communicators\": {}}");
  REQUIRE_FALSE(wrong.ok());
  CHECK(wrong.error().message == "NCCL RAS report: no 'communicators' list");
  auto odd = nccl_ras_json_to_text(R"({"nccl_version": 1, "communicators": [1, {"missing_ranks": [2, {"rank": "x"}]}]})");
  REQUIRE(odd.ok());  // fields of the wrong type are read as unknown, not trusted
}
