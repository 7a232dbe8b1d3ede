// Initiating rank at scale: generated multi-rank jobs (8, 64 and 1,024 ranks; several launcher
// layouts; shuffled interleaving; skewed host clocks) with one failure injected on a chosen rank.
#include <catch2/catch.hpp>

#include <fmt/format.h>

#include "../scenario/scenario.h"
#include "firstfault/app/pipeline.h"
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
