// firstfault-scenario: writes a generated multi-rank job (used by bench/ and by hand).
#include <CLI/CLI.hpp>
#include <iostream>
#include <map>

#include "scenario.h"

using namespace firstfault::scenario;

namespace {
// Every value of an enum by its name, from the name functions, so the two never disagree.
template <typename E, typename NameOf>
std::map<std::string, E> names_of(E last, NameOf name_of) {
  std::map<std::string, E> out;
  for (int i = 0; i <= static_cast<int>(last); ++i) out[name_of(static_cast<E>(i))] = static_cast<E>(i);
  return out;
}
}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Write a realistic multi-rank training log with one injected failure"};
  Spec spec;
  std::string dir;
  const auto failures = names_of(Failure::kNone, failure_name);
  const auto node_logs = names_of(NodeLog::kJournal, node_log_name);
  const auto hang_ends = names_of(HangEnd::kWatchdog, hang_end_name);
  const std::map<std::string, Layout> layouts = {
      {"torchrun", Layout::kTorchrun}, {"slurm", Layout::kSlurmLabel}, {"openmpi", Layout::kOpenMpi}, {"files", Layout::kFilePerRank}, {"nodes", Layout::kFilePerNode}};
  app.add_option("dir", dir, "Output directory")->required();
  app.add_option("--ranks", spec.ranks, "Number of ranks");
  app.add_option("--ranks-per-node", spec.ranks_per_node, "Ranks per node");
  app.add_option("--failure", spec.failure, "Failure to inject")->transform(CLI::CheckedTransformer(failures));
  app.add_option("--culprit", spec.culprit, "Rank the failure is injected on");
  app.add_option("--layout", spec.layout, "Rank prefixes / files")->transform(CLI::CheckedTransformer(layouts));
  app.add_option("--node-log", spec.node_log, "Where kernel lines go")->transform(CLI::CheckedTransformer(node_logs));
  app.add_option("--hang-end", spec.hang_end, "What ends a silent hang")->transform(CLI::CheckedTransformer(hang_ends));
  app.add_flag("--flight-recorder", spec.flight_recorder, "Write a Flight Recorder dump per rank");
  app.add_option("--steps", spec.steps, "Progress lines per rank");
  app.add_option("--noise", spec.noise_lines, "Extra healthy lines per rank per step");
  app.add_option("--skew-ms", spec.max_clock_skew_ms, "Maximum per-host clock skew");
  app.add_option("--seed", spec.seed, "Random seed");
  CLI11_PARSE(app, argc, argv);
  for (const auto& f : write(spec, dir)) std::cout << f << "\n";
  std::cerr << "expected: " << expected_entry(spec) << " rank " << spec.culprit << "\n";
  return 0;
}
