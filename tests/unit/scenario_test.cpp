// Initiating rank at scale: generated multi-rank jobs (8, 64 and 1,024 ranks; several launcher
// layouts; shuffled interleaving; skewed host clocks) with one failure injected on a chosen rank.
#include <catch2/catch.hpp>

#include <fmt/format.h>

#include <optional>

#include "../scenario/scenario.h"
#include "firstfault/app/pipeline.h"
#include "firstfault/reader/mapped_file.h"
#include "firstfault/render/render.h"
#include "test_support.h"

using namespace firstfault;
using scenario::Failure;
using scenario::Layout;

namespace {
bool accepted(Failure f, const std::string& id) {
  if (id == scenario::expected_entry(f)) return true;
  // A kernel OOM kill is also correctly described by the generic SIGKILL entry it refines.
  if (f == Failure::kHostOomKill && id == "host-oom-kill") return true;
  // The user's KeyError is a generic entry's root; where the shuffled clocks cannot place it
  // before the other ranks' timeouts, the collective timeout (cause not in the log) names the
  // same culprit from its own error line.
  return f == Failure::kAppException && id == "nccl-collective-timeout";
}
// The initiating rank, or an unrecognised failure's suspect.
std::optional<int> named_rank(const Diagnosis& d) {
  if (d.verdict == "unrecognized") return d.suspect ? d.suspect->rank : std::nullopt;
  return d.initiating.rank;
}
}  // namespace

TEST_CASE("scenarios: the injected rank is found at 8, 64 and 1,024 ranks") {
  test::RepoEngine engine;
  const Library& lib = engine.lib;
  const Matcher& matcher = engine.matcher;
  const Failure failures[] = {Failure::kCudaOom,     Failure::kXid79,        Failure::kUnevenBatches,
                              Failure::kDataLoaderStuck, Failure::kHostOomKill, Failure::kNcclIbError,
                              Failure::kSilentHang, Failure::kAppException};
  const Layout layouts[] = {Layout::kTorchrun, Layout::kSlurmLabel, Layout::kOpenMpi, Layout::kFilePerRank};
  int variant = 0;
  for (int ranks : {8, 64, 1024}) {
    for (Failure f : failures) {
      if (!lib.find_entry(scenario::expected_entry(f))) {
        WARN("entry " << scenario::expected_entry(f) << " not in the library; skipping " << scenario::failure_name(f));
        continue;
      }
      test::TempDir dir;
      scenario::Spec spec;
      spec.ranks = ranks;
      spec.failure = f;
      spec.culprit = (ranks * 5) / 7 + 1;  // not 0, not the last: no accidental wins
      spec.layout = layouts[variant % 4];
      spec.seed = static_cast<uint64_t>(variant + 1);
      spec.shuffle = true;
      spec.max_clock_skew_ms = 4000;
      spec.steps = ranks >= 1024 ? 6 : 12;
      ++variant;
      auto files = scenario::write(spec, dir.path());
      Diagnosis d = analyze_paths({dir.path()}, matcher, {}).diagnosis;
      std::string got = d.entry ? d.entry->id : "<" + d.verdict + ">";
      INFO(fmt::format("{} ranks, {}, layout {}: got {} rank {} ({}: {})", ranks, scenario::failure_name(f),
                       static_cast<int>(spec.layout), got, d.initiating.rank ? std::to_string(*d.initiating.rank) : "null",
                       d.initiating.method, d.initiating.reason));
      CHECK(accepted(f, got));
      REQUIRE(named_rank(d));
      CHECK(*named_rank(d) == spec.culprit);
    }
  }
}

namespace {
scenario::Spec spec_of(int ranks, Failure failure, int culprit, Layout layout, int steps, int noise_lines = 0) {
  scenario::Spec spec;
  spec.ranks = ranks;
  spec.failure = failure;
  spec.culprit = culprit;
  spec.layout = layout;
  spec.seed = static_cast<uint64_t>(ranks + culprit);
  spec.steps = steps;
  spec.noise_lines = noise_lines;
  return spec;
}
}  // namespace

TEST_CASE("scenarios: reading with several threads gives the same diagnosis as one thread") {
  test::RepoEngine engine;
  const Library& lib = engine.lib;
  const Matcher& matcher = engine.matcher;
  // Diagnoses the written job with one and with two threads; the whole JSON must agree byte for byte.
  auto same_either_way = [&](const scenario::Spec& spec, const std::vector<std::string>& paths) {
    AnalyzeOptions one, two;
    one.threads = 1;
    two.threads = 2;
    Diagnosis a = analyze_paths(paths, matcher, one).diagnosis;
    Diagnosis b = analyze_paths(paths, matcher, two).diagnosis;
    REQUIRE(a.entry);
    CHECK(a.entry->id == scenario::expected_entry(spec.failure));
    CHECK(dump_json(diagnosis_to_json(a, lib)) == dump_json(diagnosis_to_json(b, lib)));
    return a;
  };
  SECTION("a job of one file per rank: the files are read by a pool and merged in order") {
    test::TempDir dir;
    auto spec = spec_of(64, Failure::kUnevenBatches, 45, Layout::kFilePerRank, 12);
    scenario::write(spec, dir.path());
    CHECK(same_either_way(spec, {dir.path()}).inputs.size() == 65);
  }
  SECTION("one file large enough to be split at line boundaries") {
    test::TempDir dir;
    auto spec = spec_of(16, Failure::kCudaOom, 11, Layout::kTorchrun, 400, 40);  // ~40 MB: above the 32 MiB split threshold
    auto files = scenario::write(spec, dir.path());
    REQUIRE(files.size() == 1);
    REQUIRE(std::filesystem::file_size(files[0]) > (32u << 20));
    Diagnosis mapped = same_either_way(spec, files);
    // The same file read with read() instead of through a mapping: the mapped reader keeps each
    // rank's last lines as views across the blocks of a window, the buffered one copies them.
    struct ReadWithoutMapping {
      ReadWithoutMapping() { set_mapped_reads(false); }
      ~ReadWithoutMapping() { set_mapped_reads(true); }
    } guard;
    Diagnosis buffered = same_either_way(spec, files);
    CHECK(dump_json(diagnosis_to_json(mapped, lib)) == dump_json(diagnosis_to_json(buffered, lib)));
  }
}

namespace {
// One kind of evidence beyond the job's own log, or one kind of hang or desync (issue 24).
struct Kind {
  Failure failure;
  scenario::NodeLog node_log = scenario::NodeLog::kInJobLog;
  scenario::HangEnd hang_end = scenario::HangEnd::kNone;
  bool flight_recorder = false;
  int ranks_per_node = 8;
};
}  // namespace

TEST_CASE("scenarios: node logs, scheduler records, hangs, desyncs and dumps from 8 to 4,096 ranks") {
  test::RepoEngine engine;
  using scenario::HangEnd;
  using scenario::NodeLog;
  // Kernel events in per-host files (boot-relative, -T, iso, journal) explain the culprit's CUDA
  // or NCCL symptom; the scheduler's records name a task; hangs end in four ways; desyncs by op
  // type and by element count; Flight Recorder dumps with and without the watchdog's lines; a
  // pod's description after its container was OOMKilled.
  const std::vector<Kind> kinds = {
      {Failure::kXid79, NodeLog::kDmesgBoot},         {Failure::kXid48, NodeLog::kDmesgHuman},
      {Failure::kXid94, NodeLog::kDmesgIso},          {Failure::kXid74, NodeLog::kJournal},
      {Failure::kXid119, NodeLog::kDmesgBoot},        {Failure::kHostOomKill, NodeLog::kDmesgHuman},
      {Failure::kXid48, NodeLog::kInJobLog},          {Failure::kSlurmOom},
      {Failure::kK8sOomKilled, NodeLog::kInJobLog, HangEnd::kNone, false, 1},  // one rank per pod
      {Failure::kSilentHang, NodeLog::kInJobLog, HangEnd::kTimeLimit},
      {Failure::kSilentHang, NodeLog::kInJobLog, HangEnd::kHeartbeatMonitor},
      {Failure::kSilentHang, NodeLog::kInJobLog, HangEnd::kWatchdog},
      {Failure::kSilentHang, NodeLog::kInJobLog, HangEnd::kWatchdog, true},
      {Failure::kSilentHang, NodeLog::kInJobLog, HangEnd::kNone, true},
      {Failure::kOpDesync},                           {Failure::kSizeDesync}};
  const Layout layouts[] = {Layout::kTorchrun, Layout::kSlurmLabel, Layout::kOpenMpi, Layout::kFilePerRank};
  int variant = 0;
  for (int ranks : {8, 64, 1024, 4096}) {
    for (const Kind& kind : kinds) {
      scenario::Spec spec;
      spec.ranks = ranks;
      spec.failure = kind.failure;
      spec.node_log = kind.node_log;
      spec.hang_end = kind.hang_end;
      spec.flight_recorder = kind.flight_recorder;
      spec.ranks_per_node = kind.ranks_per_node;
      spec.culprit = (ranks * 5) / 7 + 1;
      spec.layout = layouts[variant % 4];
      spec.seed = static_cast<uint64_t>(variant + 101);
      spec.max_clock_skew_ms = 4000;
      spec.steps = ranks >= 1024 ? 4 : 12;
      ++variant;
      REQUIRE(engine.lib.find_entry(scenario::expected_entry(spec)));
      test::TempDir dir;
      scenario::write(spec, dir.path());
      Diagnosis d = analyze_paths({dir.path()}, engine.matcher, {}).diagnosis;
      std::string got = d.entry ? d.entry->id : "<" + d.verdict + ">";
      INFO(fmt::format("{} ranks, {}, node log {}, hang end {}, dumps {}, layout {}: got {} rank {} ({}: {})", ranks,
                       scenario::failure_name(spec.failure), scenario::node_log_name(spec.node_log),
                       scenario::hang_end_name(spec.hang_end), spec.flight_recorder, static_cast<int>(spec.layout), got,
                       d.initiating.rank ? std::to_string(*d.initiating.rank) : "null", d.initiating.method, d.initiating.reason));
      CHECK(got == scenario::expected_entry(spec));
      REQUIRE(named_rank(d));
      CHECK(*named_rank(d) == spec.culprit);
    }
  }
}
