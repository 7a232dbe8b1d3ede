#pragma once
// Stage 1 (reader): --glob and --exclude, which files a directory walk or an archive gives, with
// ripgrep's glob semantics (docs/cli.md, "Choosing files: --glob and --exclude"). Paths named on the command line are
// always read; the filter applies to what is found below them.
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "firstfault/util/result.h"

namespace re2 {
class RE2;
}

namespace firstfault {

// The help footer of the commands that read directories and archives (the man page has it too).
inline constexpr const char* kFileChoiceHelp =
    "Directories are read recursively, tar and zip archives member by member, and binary files (a NUL "
    "byte in their first 64 KiB) are skipped. --glob GLOB reads only the files whose path below the "
    "directory, or inside the archive, matches; --exclude GLOB (or --glob '!GLOB') skips the files and "
    "folders that match, and wins over --glob. Both repeat. A glob without '/' matches a name at any "
    "depth (*.log), one with '/' the whole path (job-*/rank?.log); * and ? stop at '/', ** spans "
    "folders, [a-z], [!a] and {log,txt} work as in ripgrep, and a trailing '/' matches folders only. "
    "Paths named on the command line are always read (docs/cli.md).\n";

class PathFilter {
 public:
  // `globs` are includes (a leading '!' makes one an exclude, as in ripgrep), `excludes` are
  // excludes. A glob that cannot be read is an error naming it.
  static Result<PathFilter> make(const std::vector<std::string>& globs, const std::vector<std::string>& excludes);

  // Whether any glob was given (a filter without one reads everything).
  bool active() const { return !includes_.empty() || !excludes_.empty(); }
  // Whether a walk descends into the directory at `rel` ('/'-separated, relative to the
  // directory walked): not when an exclude matches it.
  bool wants_dir(std::string_view rel) const;
  // Whether the file at `rel` is read: no exclude matches it and, when there are includes, one
  // does. Its directories are wants_dir()'s business (a walk prunes them).
  bool wants_file(std::string_view rel) const;
  // wants_file(), and wants_dir() for every folder of `rel`: for an archive's member list.
  bool wants_path(std::string_view rel) const;
  // Whether an archive found at `rel` is opened: it is a container, so only excludes apply to
  // it; includes apply to its members.
  bool wants_archive(std::string_view rel) const { return !matches(excludes_, rel, false); }

 private:
  struct Glob {
    std::shared_ptr<const re2::RE2> re;
    bool dir_only = false;  // written with a trailing '/'
  };
  static bool matches(const std::vector<Glob>& globs, std::string_view rel, bool is_dir);
  std::vector<Glob> includes_, excludes_;
};

// The regular expression (RE2 syntax, whole path) a glob means, or an error saying why it
// cannot be read; `dir_only` is set for a glob with a trailing '/'. Exposed for the tests.
Result<std::string> glob_to_regex(std::string_view glob, bool& dir_only);

}  // namespace firstfault
