#pragma once
// Helpers shared by the unit tests: temporary files and a small library built from YAML text.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "firstfault/matcher/matcher.h"
#include "firstfault/signatures/loader.h"

namespace firstfault::test {

inline std::string source_dir() { return FIRSTFAULT_SOURCE_DIR; }

inline std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

class TempDir {
 public:
  TempDir() {
    path_ = std::filesystem::temp_directory_path() /
            ("firstfault-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter()++));
    std::filesystem::create_directories(path_);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  std::string write(const std::string& name, const std::string& content) const {
    auto p = path_ / name;
    std::filesystem::create_directories(p.parent_path());
    std::ofstream(p, std::ios::binary) << content;
    return p.string();
  }
  std::string path() const { return path_.string(); }

 private:
  static int& counter() {
    static int c = 0;
    return c;
  }
  std::filesystem::path path_;
};

// The real library from the source tree (same files the binary embeds).
inline Library repo_library() {
  std::vector<LoadProblem> problems;
  LoadOptions lo;
  lo.check_samples = false;
  Library lib = load_library({}, problems, lo);
  return lib;
}

// The real library and its matcher, readied as the binary readies them (prefilter on).
struct RepoEngine {
  Library lib = repo_library();
  Matcher matcher{lib};
  RepoEngine() { REQUIRE(matcher.compile(true).ok()); }
};

}  // namespace firstfault::test
