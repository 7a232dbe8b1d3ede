// Writes the adversarial log of docs/performance.md ("hostile"): every positive sample line of
// the built-in library, round-robin over ranks 0..N-1, up to a size. Each line is built to match
// (or nearly match) some pattern, so every pattern is woken and confirmed again and again: the
// worst case for the matcher's time and for stored event memory (issue 27).
#include <CLI/CLI.hpp>

#include <fstream>
#include <iostream>

#include "firstfault/signatures/loader.h"

int main(int argc, char** argv) {
  CLI::App app{"Write a log of every library sample line, to measure the worst case"};
  std::string path;
  int ranks = 512;
  double size_mb = 100;
  app.add_option("file", path, "Output file")->required();
  app.add_option("--ranks", ranks, "Ranks the lines are spread over")->check(CLI::Range(1, 1 << 20));
  app.add_option("--size-mb", size_mb, "Size to write, in MB")->check(CLI::PositiveNumber);
  CLI11_PARSE(app, argc, argv);

  std::vector<firstfault::LoadProblem> problems;
  firstfault::Library lib = firstfault::load_library({}, problems);
  std::vector<std::string> samples;
  for (const auto& p : lib.patterns)
    for (const auto& s : p.positive)
      if (s.find('\n') == std::string::npos) samples.push_back(s);
  if (samples.empty()) {
    std::cerr << "firstfault-hostile: the library has no sample lines\n";
    return 2;
  }
  std::ofstream out(path, std::ios::binary);
  const auto target = static_cast<uint64_t>(size_mb * 1e6);
  uint64_t written = 0;
  for (uint64_t i = 0; written < target && out; ++i) {
    std::string line = "[rank" + std::to_string(i % static_cast<uint64_t>(ranks)) + "]: " + samples[i % samples.size()] + "\n";
    out << line;
    written += line.size();
  }
  if (!out) {
    std::cerr << "firstfault-hostile: " << path << ": cannot write\n";
    return 2;
  }
  std::cout << samples.size() << " sample lines, " << written << " bytes\n";
  return 0;
}
