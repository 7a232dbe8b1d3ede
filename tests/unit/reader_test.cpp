#include <catch2/catch.hpp>

#include "firstfault/reader/log_reader.h"
#include "test_support.h"

using namespace firstfault;

namespace {
struct Collect : BlockSink {
  std::vector<std::string> lines;
  std::vector<uint64_t> long_lengths;
  void on_block(std::string_view block) override {
    for_each_line(block, [&](std::string_view l) { lines.emplace_back(l); });
  }
  void on_long_line(std::string_view head, uint64_t len) override {
    lines.emplace_back(head);
    long_lengths.push_back(len);
  }
};
std::string td(const std::string& f) { return test::source_dir() + "/testdata/reader/" + f; }
}  // namespace

TEST_CASE("reader: plain file keeps every line, including a last line without newline") {
  Collect c;
  ReadStats st;
  REQUIRE(read_input({td("plain.log"), false}, c, st).ok());
  REQUIRE(c.lines.size() == 4);
  CHECK(c.lines[0] == "line one\r");  // CR is removed later, per segment
  CHECK(c.lines[3] == "no newline at end");
  CHECK(st.compression.empty());
  CHECK(st.bytes == 102);
}

TEST_CASE("reader: gzip, bzip2, xz and zstd are detected by magic bytes, not by extension") {
  for (const char* f : {"plain.log.gz", "plain.log.bz2", "plain.log.xz", "plain.log.zst", "misnamed.txt"}) {
    Collect c;
    ReadStats st;
    INFO(f);
    REQUIRE(read_input({td(f), false}, c, st).ok());
    REQUIRE(c.lines.size() == 4);
    CHECK(c.lines[3] == "no newline at end");
    CHECK_FALSE(st.compression.empty());
  }
}

TEST_CASE("reader: a truncated gzip reports an error but keeps what was read") {
  Collect c;
  ReadStats st;
  Status s = read_input({td("truncated.log.gz"), false}, c, st);
  CHECK_FALSE(s.ok());
  CHECK(s.message().find("gzip") != std::string::npos);
}

TEST_CASE("reader: missing file and directory give a clear reason") {
  Collect c;
  ReadStats st;
  Status s = read_input({"/nonexistent/x.log", false}, c, st);
  CHECK_FALSE(s.ok());
  CHECK(s.message().find("No such file") != std::string::npos);
  Status d = read_input({test::source_dir() + "/testdata", false}, c, st);
  CHECK_FALSE(d.ok());
}

TEST_CASE("reader: a line longer than the read buffer is counted, not kept, and lines after it survive") {
  test::TempDir dir;
  std::string big((5u << 20) + 17, 'x');
  std::string path = dir.write("long.log", "first\n" + big + "\nlast\n");
  Collect c;
  ReadStats st;
  REQUIRE(read_input({path, false}, c, st).ok());
  REQUIRE(c.lines.size() == 3);
  CHECK(c.lines[1].size() == kMaxLineBytes);
  REQUIRE(c.long_lengths.size() == 1);
  CHECK(c.long_lengths[0] == big.size());
  CHECK(c.lines[2] == "last");
}

TEST_CASE("reader: empty file and NUL bytes") {
  test::TempDir dir;
  Collect c;
  ReadStats st;
  REQUIRE(read_input({dir.write("empty.log", ""), false}, c, st).ok());
  CHECK(c.lines.empty());
  Collect n;
  REQUIRE(read_input({dir.write("nul.log", std::string("a\0b\nc\n", 6)), false}, n, st).ok());
  CHECK(n.lines.size() == 2);
}

TEST_CASE("inputs: directories are walked in sorted order; missing paths are reported, the rest kept") {
  test::TempDir dir;
  dir.write("job/rank1.log", "x\n");
  dir.write("job/rank0.log", "y\n");
  dir.write("job/sub/rank2.log", "z\n");
  dir.write("job/.hidden", "z\n");
  std::vector<InputProblem> problems;
  auto inputs = expand_inputs({dir.path() + "/job", dir.path() + "/missing.log"}, problems);
  REQUIRE(inputs.size() == 3);
  CHECK(inputs[0].path.find("rank0.log") != std::string::npos);
  CHECK(inputs[2].path.find("sub/rank2.log") != std::string::npos);
  REQUIRE(problems.size() == 1);
  CHECK(problems[0].reason == "no such file or directory");
}

TEST_CASE("inputs: a symlink loop does not recurse forever") {
  test::TempDir dir;
  dir.write("job/a.log", "x\n");
  std::filesystem::create_directory_symlink(dir.path() + "/job", dir.path() + "/job/loop");
  std::vector<InputProblem> problems;
  auto inputs = expand_inputs({dir.path() + "/job"}, problems);
  CHECK(inputs.size() == 1);
}
