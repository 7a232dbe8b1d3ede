#pragma once
// Stage 1 (reader): which inputs make up a job. Directories are walked recursively (one job),
// symlink loops are detected, and problems are reported per path without stopping the rest.
#include <string>
#include <vector>

namespace firstfault {

struct InputSource {
  std::string path;       // as given or found; "-" for stdin
  bool is_stdin = false;
  size_t origin = 0;      // which of the paths given to expand_inputs() it came from
};

struct InputProblem {
  std::string path;
  std::string reason;
};

// Expands files and directories into the list of inputs of one job, in a stable (sorted) order.
// An empty `paths` means stdin.
std::vector<InputSource> expand_inputs(const std::vector<std::string>& paths,
                                       std::vector<InputProblem>& problems);

}  // namespace firstfault
