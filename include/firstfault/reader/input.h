#pragma once
// Stage 1 (reader): which inputs make up a job. Directories are walked recursively (one job),
// symlink loops are detected, and problems are reported per path without stopping the rest.
#include <string>
#include <vector>

namespace firstfault {

struct InputSource {
  std::string path;       // as given or found; "-" for stdin; "ARCHIVE!MEMBER" for an archive member
  bool is_stdin = false;
  size_t origin = 0;      // which of the paths given to expand_inputs() it came from
  bool named = false;     // given itself, not found in a directory or an archive
  std::string archive{};  // for an archive member (reader/archive.h): the archive's path
  std::string member{};   // and the member's name as stored in it
};

struct InputProblem {
  std::string path;
  std::string reason;
};

class PathFilter;  // reader/path_filter.h

// Expands files and directories into the list of inputs of one job, in a stable (sorted) order.
// An empty `paths` means stdin. `filter` (--glob, --exclude) chooses the files a directory walk
// finds; the paths given are always read.
std::vector<InputSource> expand_inputs(const std::vector<std::string>& paths, std::vector<InputProblem>& problems,
                                       const PathFilter* filter = nullptr);

}  // namespace firstfault
