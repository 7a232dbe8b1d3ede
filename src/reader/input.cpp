#include "firstfault/reader/input.h"

#include "firstfault/reader/archive.h"
#include "firstfault/reader/path_filter.h"

#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <set>
#include <system_error>
#include <utility>

namespace firstfault {
namespace fs = std::filesystem;

namespace {

// One directory given as input, walked recursively in sorted order.
struct Walk {
  const fs::path& root;
  size_t origin;
  const PathFilter* filter;  // null: every file
  std::vector<InputSource>& out;
  std::vector<InputProblem>& problems;
  std::set<std::pair<dev_t, ino_t>>& visited;

  // The path below the directory given, as the globs see it.
  std::string relative(const fs::path& p) const { return p.lexically_relative(root).generic_string(); }

  bool wanted_file(const fs::path& p) const {
    if (!filter) return true;
    std::string rel = relative(p);
    return looks_like_archive_name(rel) ? filter->wants_archive(rel) : filter->wants_file(rel);
  }

  void directory(const fs::path& dir, int depth) {
    struct stat st {};
    if (::stat(dir.c_str(), &st) != 0) {
      problems.push_back({dir.string(), "cannot stat directory"});
      return;
    }
    // A directory reached twice (symlink loop or two links to one tree) is read once.
    if (!visited.insert({st.st_dev, st.st_ino}).second) return;
    if (depth > 64) {
      problems.push_back({dir.string(), "directory nesting deeper than 64 levels; not descending"});
      return;
    }
    std::error_code ec;
    fs::directory_iterator it(dir, fs::directory_options::skip_permission_denied, ec);
    if (ec) {
      problems.push_back({dir.string(), "cannot read directory: " + ec.message()});
      return;
    }
    std::vector<fs::path> children;
    for (; it != fs::directory_iterator(); it.increment(ec)) {
      if (ec) break;
      children.push_back(it->path());
    }
    std::sort(children.begin(), children.end());
    for (const auto& child : children) {
      std::error_code sec;
      auto status = fs::status(child, sec);
      if (sec) {
        problems.push_back({child.string(), "broken symlink or unreadable entry"});
        continue;
      }
      if (fs::is_directory(status)) {
        if (!filter || filter->wants_dir(relative(child))) directory(child, depth + 1);
      } else if (fs::is_regular_file(status) || fs::is_fifo(status)) {
        std::string name = child.filename().string();
        if (!name.empty() && name[0] == '.') continue;  // hidden files (editor swap files, .DS_Store)
        if (wanted_file(child)) out.push_back({child.string(), false, origin});
      }
    }
  }
};

}  // namespace

std::vector<InputSource> expand_inputs(const std::vector<std::string>& paths, std::vector<InputProblem>& problems,
                                       const PathFilter* filter) {
  std::vector<InputSource> out;
  if (paths.empty()) {
    out.push_back({"-", true, 0, true});
    return out;
  }
  std::set<std::pair<dev_t, ino_t>> visited;
  for (size_t origin = 0; origin < paths.size(); ++origin) {
    const std::string& p = paths[origin];
    if (p == "-") {
      out.push_back({"-", true, origin, true});
      continue;
    }
    std::error_code ec;
    auto status = fs::status(p, ec);
    if (ec == std::errc::too_many_symbolic_link_levels) {
      problems.push_back({p, "symlink loop (too many levels of symbolic links)"});
      continue;
    }
    if (ec == std::errc::permission_denied) {
      problems.push_back({p, "permission denied"});
      continue;
    }
    if (ec || !fs::exists(status)) {
      problems.push_back({p, "no such file or directory"});
      continue;
    }
    if (fs::is_directory(status)) {
      fs::path root(p);
      Walk{root, origin, filter, out, problems, visited}.directory(root, 0);
    } else {
      out.push_back({p, false, origin, true});
    }
  }
  return out;
}

}  // namespace firstfault
