// Initiating rank at scale: generated multi-rank jobs (8, 64 and 1,024 ranks; several launcher
// layouts; shuffled interleaving; skewed host clocks) with one failure injected on a chosen rank.
#include <catch2/catch.hpp>

#include <fmt/format.h>

#include "../scenario/scenario.h"
#include "firstfault/app/pipeline.h"
#include "firstfault/render/render.h"
#include "test_support.h"

using namespace firstfault;
using scenario::Failure;
using scenario::Layout;

namespace {
bool accepted(Failure f, const std::string& id) {
  if (id == scenario::expected_entry(f)) return true;
  // A kernel OOM kill is also correctly described by the generic SIGKILL entry it refines.
  return f == Failure::kHostOomKill && id == "host-oom-kill";
}
}  // namespace

TEST_CASE("scenarios: the injected rank is found at 8, 64 and 1,024 ranks") {
  Library lib = test::repo_library();
  Matcher matcher(lib);
  REQUIRE(matcher.compile(true).ok());
  const Failure failures[] = {Failure::kCudaOom,     Failure::kXid79,        Failure::kUnevenBatches,
                              Failure::kDataLoaderStuck, Failure::kHostOomKill, Failure::kNcclIbError,
                              Failure::kSilentHang};
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
      REQUIRE(d.initiating.rank);
      CHECK(*d.initiating.rank == spec.culprit);
    }
  }
}

namespace {
// The whole diagnosis as JSON: two runs must agree byte for byte.
std::string diagnosis_json(const Diagnosis& d, const Library& lib) { return dump_json(diagnosis_to_json(d, lib)); }
}  // namespace

TEST_CASE("scenarios: reading with several threads gives the same diagnosis as one thread") {
  Library lib = test::repo_library();
  Matcher matcher(lib);
  REQUIRE(matcher.compile(true).ok());
  AnalyzeOptions one, two;
  one.threads = 1;
  two.threads = 2;
  SECTION("a job of one file per rank: the files are read by a pool and merged in order") {
    test::TempDir dir;
    scenario::Spec spec;
    spec.ranks = 64;
    spec.failure = Failure::kUnevenBatches;
    spec.culprit = 45;
    spec.layout = Layout::kFilePerRank;
    spec.seed = 7;
    spec.steps = 12;
    scenario::write(spec, dir.path());
    Diagnosis a = analyze_paths({dir.path()}, matcher, one).diagnosis;
    Diagnosis b = analyze_paths({dir.path()}, matcher, two).diagnosis;
    REQUIRE(a.entry);
    CHECK(a.entry->id == scenario::expected_entry(spec.failure));
    CHECK(a.inputs.size() == 65);
    CHECK(diagnosis_json(a, lib) == diagnosis_json(b, lib));
  }
  SECTION("one file large enough to be split at line boundaries") {
    test::TempDir dir;
    scenario::Spec spec;
    spec.ranks = 16;
    spec.failure = Failure::kCudaOom;
    spec.culprit = 11;
    spec.layout = Layout::kTorchrun;
    spec.seed = 3;
    spec.steps = 400;
    spec.noise_lines = 40;  // ~40 MB: above the 32 MiB split threshold
    auto files = scenario::write(spec, dir.path());
    REQUIRE(files.size() == 1);
    REQUIRE(std::filesystem::file_size(files[0]) > (32u << 20));
    Diagnosis a = analyze_paths(files, matcher, one).diagnosis;
    Diagnosis b = analyze_paths(files, matcher, two).diagnosis;
    REQUIRE(a.entry);
    CHECK(a.entry->id == "cuda-oom");
    CHECK(diagnosis_json(a, lib) == diagnosis_json(b, lib));
  }
}
