// PyTorch Flight Recorder dumps (reader/flight_recorder.h) and the pickle subset they are written
// in (reader/pickle.h): fixtures from tools/make_flight_recorder_fixtures.py, in the layout of
// torch/csrc/distributed/c10d/FlightRecorder.hpp.
#include <catch2/catch.hpp>

#include <filesystem>
#include <string>

#include "firstfault/app/pipeline.h"
#include "firstfault/reader/flight_recorder.h"
#include "firstfault/reader/pickle.h"
#include "test_support.h"

using namespace firstfault;

namespace {
std::string fixture(const std::string& c, int rank) {
  return test::source_dir() + "/testdata/flight-recorder/" + c + "/nccl_trace_rank_" + std::to_string(rank);
}
}  // namespace

TEST_CASE("pickle: protocol 2 and 4 dumps decode to the same data, shared containers complete") {
  auto p2 = parse_pickle(test::slurp(fixture("rank2-never-issued", 0)));
  auto p4 = parse_pickle(test::slurp(fixture("rank2-never-issued", 3)));
  REQUIRE(p2.ok());
  REQUIRE(p4.ok());
  CHECK(*p2 == *p4);  // ranks 0 and 3 wrote the same trace, with protocol 2 and 4
  const auto& last = (*p2)["entries"].back();
  CHECK(last["collective_seq_id"] == 42);
  CHECK(last["state"] == "started");
  CHECK(last["output_sizes"] == last["input_sizes"]);  // one list, pickled once and referenced again
  CHECK(last["process_group"] == nlohmann::json::array({"0", "default_pg"}));
}

TEST_CASE("pickle: damaged or hostile input is an error with its offset, never a crash") {
  std::string good = test::slurp(fixture("rank2-never-issued", 0));
  auto cut = parse_pickle(good.substr(0, good.size() / 2));
  REQUIRE_FALSE(cut.ok());
  CHECK(cut.error().message.find("pickle") != std::string::npos);
  std::string deep = "\x80\x02" + std::string(100000, '(') + ".";
  auto nested = parse_pickle(deep);
  REQUIRE_FALSE(nested.ok());
  CHECK(nested.error().message.find("too deep") != std::string::npos);
  auto code = parse_pickle(std::string("\x80\x02") + "cos\nsystem\n(S'ls'\ntR.");
  REQUIRE_FALSE(code.ok());  // 'S' (text STRING) is outside the subset; nothing is ever called anyway
  CHECK_FALSE(parse_pickle(std::string("\x80\x02h\x07.")).ok());  // memo key never stored
}

TEST_CASE("flight recorder: a dump reads as one status line per process group with the pending collective") {
  std::string dump = test::slurp(fixture("rank2-never-issued", 1));
  REQUIRE(looks_like_flight_recorder_dump(dump.substr(0, 4096)));
  auto text = flight_recorder_to_text(dump);
  REQUIRE(text.ok());
  CHECK(text->find("Flight Recorder dump (version 2.4): 5 entries, 1 process group(s)") != std::string::npos);
  CHECK(text->find("[PG 0 (default_pg)] Flight Recorder dump: last enqueued work: 42, last started work: 42, "
                   "last completed work: 41; oldest pending work: 42 OpType=ALLREDUCE (nccl:all_reduce) state=started") !=
        std::string::npos);
  CHECK(text->find("    at /workspace/train.py:188 in reduce_loss") != std::string::npos);
  auto behind = flight_recorder_to_text(test::slurp(fixture("rank2-never-issued", 2)));
  REQUIRE(behind.ok());
  CHECK(behind->find("last enqueued work: 41, last started work: 41, last completed work: 41; no pending work") != std::string::npos);
}

TEST_CASE("flight recorder: the JSON form reads like the pickle; other JSON is not a dump") {
  std::string json_dump = test::slurp(fixture("all-ranks-in-collective", 1));
  REQUIRE(looks_like_flight_recorder_dump(json_dump.substr(0, 65536)));
  auto a = flight_recorder_to_text(json_dump);
  auto b = flight_recorder_to_text(test::slurp(fixture("all-ranks-in-collective", 0)));
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  CHECK(*a == *b);
  CHECK_FALSE(looks_like_flight_recorder_dump(R"({"level": "error", "msg": "NCCL timeout"})"));
  CHECK_FALSE(looks_like_flight_recorder_dump("[rank0]: entries pg_config"));
}

TEST_CASE("flight recorder: the rank whose dump stops below the others' pending collective is the initiating rank") {
  test::RepoEngine engine;
  std::string dir = test::source_dir() + "/testdata/flight-recorder/rank2-never-issued";
  Diagnosis d = analyze_paths({dir}, engine.matcher, {}).diagnosis;
  REQUIRE(d.entry);
  CHECK(d.entry->id == "flight-recorder-desync");
  REQUIRE(d.initiating.rank);
  CHECK(*d.initiating.rank == 2);
  REQUIRE(d.initiating.first_evidence);
  CHECK(d.initiating.first_evidence->text.find("last enqueued work: 41") != std::string::npos);

  Diagnosis all = analyze_paths({test::source_dir() + "/testdata/flight-recorder/all-ranks-in-collective"}, engine.matcher, {}).diagnosis;
  REQUIRE(all.entry);
  CHECK_FALSE(all.initiating.rank);  // every rank waits in the same collective: none is behind
}

TEST_CASE("flight recorder: a damaged dump is an input problem naming the reason, other inputs still read") {
  test::TempDir tmp;
  std::string good = test::slurp(fixture("rank2-never-issued", 0));
  std::string bad = tmp.write("nccl_trace_rank_5", good.substr(0, good.size() - 40));
  std::string log = tmp.write("rank1.log", "[rank1]: RuntimeError: CUDA error: an illegal memory access was encountered\n");
  test::RepoEngine engine;
  auto run = analyze_paths({bad, log}, engine.matcher, {});
  REQUIRE(run.problems.size() == 1);
  CHECK(run.problems[0].reason.find("Flight Recorder dump") != std::string::npos);
  REQUIRE(run.diagnosis.entry);
  CHECK(run.diagnosis.entry->id == "cuda-illegal-memory-access");
}
