// firstfault-scenario: writes a generated multi-rank job (used by bench/ and by hand).
#include <CLI/CLI.hpp>
#include <iostream>
#include <map>

#include "scenario.h"

using namespace firstfault::scenario;

int main(int argc, char** argv) {
  CLI::App app{"Write a realistic multi-rank training log with one injected failure"};
  Spec spec;
  std::string dir, failure = "cuda-oom", layout = "torchrun";
  app.add_option("dir", dir, "Output directory")->required();
  app.add_option("--ranks", spec.ranks, "Number of ranks");
  app.add_option("--ranks-per-node", spec.ranks_per_node, "Ranks per node");
  app.add_option("--failure", failure, "cuda-oom, xid79, uneven-batches, dataloader-stuck, host-oom-kill, nccl-ib-error, silent-hang, app-exception, healthy");
  app.add_option("--culprit", spec.culprit, "Rank the failure is injected on");
  app.add_option("--layout", layout, "torchrun, slurm, openmpi, files");
  app.add_option("--steps", spec.steps, "Progress lines per rank");
  app.add_option("--noise", spec.noise_lines, "Extra healthy lines per rank per step");
  app.add_option("--skew-ms", spec.max_clock_skew_ms, "Maximum per-host clock skew");
  app.add_option("--seed", spec.seed, "Random seed");
  CLI11_PARSE(app, argc, argv);
  static const std::map<std::string, Failure> kFailures = {
      {"cuda-oom", Failure::kCudaOom},         {"xid79", Failure::kXid79},
      {"uneven-batches", Failure::kUnevenBatches}, {"dataloader-stuck", Failure::kDataLoaderStuck},
      {"host-oom-kill", Failure::kHostOomKill},  {"nccl-ib-error", Failure::kNcclIbError},
      {"silent-hang", Failure::kSilentHang},     {"app-exception", Failure::kAppException},     {"healthy", Failure::kNone}};
  static const std::map<std::string, Layout> kLayouts = {
      {"torchrun", Layout::kTorchrun}, {"slurm", Layout::kSlurmLabel}, {"openmpi", Layout::kOpenMpi}, {"files", Layout::kFilePerRank}};
  if (!kFailures.count(failure) || !kLayouts.count(layout)) {
    std::cerr << "unknown --failure or --layout\n";
    return 2;
  }
  spec.failure = kFailures.at(failure);
  spec.layout = kLayouts.at(layout);
  for (const auto& f : write(spec, dir)) std::cout << f << "\n";
  return 0;
}
