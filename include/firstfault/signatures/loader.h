#pragma once
// Loads and validates the signature library. Like a compiler: every problem is collected with
// file:line:col, nothing is silently skipped.
#include <string>
#include <vector>

#include "firstfault/signatures/library.h"

namespace firstfault {

struct LoadProblem {
  SourceLoc loc;
  std::string message;
  std::string format() const;  // "file:line:col: message"
};

struct SourceFile {
  std::string path;  // shown in messages
  std::string text;
  bool builtin = false;
};

struct LoadOptions {
  bool check_samples = true;  // run positive/negative sample lines (cheap; always on by default)
  // Keep each pattern's description and positive/negative samples. Only `check`, `catalog` and
  // `explain` read them; the run commands drop them (~2 MB of a 64 MiB bound, issue 27).
  bool keep_samples = true;
};

// Builds a library from the embedded files plus the files under `extra_dirs` (which override
// entries and shared patterns of the same name). Problems are appended; the library is usable
// only when no problem was reported. The built-ins alone without `check_samples` come from the
// snapshot the build validated (signatures/snapshot.h), falling back to the YAML.
Library load_library(const std::vector<std::string>& extra_dirs, std::vector<LoadProblem>& problems,
                     const LoadOptions& options = {}, bool include_builtin = true);

// Loads only the given sources (tests, `check DIR` without the built-ins).
Library load_sources(const std::vector<SourceFile>& sources, std::vector<LoadProblem>& problems,
                     const LoadOptions& options = {});

// Reads every *.yaml below `dir` (sorted) into sources; unreadable files become problems.
void collect_yaml_files(const std::string& dir, std::vector<SourceFile>& out, std::vector<LoadProblem>& problems);

std::vector<SourceFile> builtin_sources();

}  // namespace firstfault
