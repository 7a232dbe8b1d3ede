#include <catch2/catch.hpp>

#include <unistd.h>

#include <algorithm>
#include <cstdlib>

#include "firstfault/reader/archive.h"
#include "firstfault/reader/input.h"
#include "firstfault/reader/log_reader.h"
#include "firstfault/reader/path_filter.h"
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

TEST_CASE("reader: empty file and NUL bytes past the first block") {
  test::TempDir dir;
  Collect c;
  ReadStats st;
  REQUIRE(read_input({dir.write("empty.log", ""), false}, c, st).ok());
  CHECK(c.lines.empty());
  CHECK_FALSE(st.binary_at);
  Collect n;
  std::string text = std::string(kBinaryProbeBytes, 'x') + "\n" + std::string("a\0b\nc\n", 6);
  REQUIRE(read_input({dir.write("nul.log", text), false}, n, st).ok());
  CHECK_FALSE(st.binary_at);
  CHECK(n.lines.size() == 3);  // passed on: the line feed removes them
}

TEST_CASE("reader: binary content is a NUL byte in the first block, except holes of NULs in text") {
  CHECK(binary_marker("step 1\nstep 2\n") == std::nullopt);
  CHECK(binary_marker(std::string("\x10\x5c\0\0\0\0\0\0{\"__metadata__\"", 20)) == 2u);  // safetensors header
  CHECK(binary_marker(std::string("a\0b\nc\n", 6)) == 1u);
  CHECK(binary_marker(std::string("step 1\nst\0\0\0\0", 14)) == std::nullopt);  // a crashed node's zero tail
  CHECK(binary_marker(std::string("step 1\nst\0\0x", 12)) == 9u);               // text again after the NULs
  CHECK(binary_marker(std::string("no newline\0\0", 12)) == 10u);                 // no line of text before them
  CHECK(binary_marker(std::string(4096, '\0')) == 0u);
  // A writer that kept its offset after the file was truncated under it: a hole, then text.
  std::string hole(4096, '\0');
  CHECK(binary_marker("[rank0]: step 1\n" + hole + "[rank0]: OSError: [Errno 98] Address already in use\n") == std::nullopt);
  CHECK(binary_marker(hole + "accelerate launch train.py\n") == std::nullopt);  // logrotate copytruncate
  CHECK(binary_marker("step 1\n" + std::string(8, '\0') + "step 2\n") == 7u);    // too short for a hole
  CHECK(binary_marker("step 1\n" + hole + "\x01\x02 step 2\n") == 7u);          // not text after it
  CHECK(binary_marker(std::string("s\0t\0e\0p\0\n\0", 10)) == 1u);            // UTF-16: NULs alone
}

TEST_CASE("reader: binary content is not read, whether plain, mapped or compressed") {
  test::TempDir dir;
  std::string checkpoint = std::string("\x10\x5c\0\0\0\0\0\0", 8) + "{\"w\": {}}\nsome\nlines\n";
  std::string big = checkpoint + std::string(2u << 20, '\n');  // mapped: 1 MiB and more
  for (const auto& [name, bytes] : {std::pair{"model.safetensors", checkpoint}, {"big.bin", big}}) {
    INFO(name);
    Collect c;
    ReadStats st;
    REQUIRE(read_input({dir.write(name, bytes), false}, c, st).ok());
    CHECK(st.binary_at == 2u);
    CHECK(c.lines.empty());
    CHECK(st.bytes == 0);
  }
  // Compressed: the decompressed content decides (a gzip header has NUL bytes of its own).
  REQUIRE(std::system(("gzip -c " + dir.path() + "/model.safetensors > " + dir.path() + "/model.gz").c_str()) == 0);
  REQUIRE(std::system(("printf 'step 1\\n' | gzip -c > " + dir.path() + "/log.gz").c_str()) == 0);
  Collect z, t;
  ReadStats zs, ts;
  REQUIRE(read_input({dir.path() + "/model.gz", false}, z, zs).ok());
  CHECK(zs.binary_at == 2u);
  CHECK(z.lines.empty());
  REQUIRE(read_input({dir.path() + "/log.gz", false}, t, ts).ok());
  CHECK_FALSE(ts.binary_at);
  CHECK(t.lines == std::vector<std::string>{"step 1"});
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

TEST_CASE("inputs: --glob and --exclude choose what a walk and an archive give, never the paths named") {
  test::TempDir dir;
  dir.write("run/rank0.log", "x\n");
  dir.write("run/launcher.out", "x\n");
  dir.write("run/ckpt/step-100/rank0.log", "x\n");
  dir.write("run/nested/rank1.log", "x\n");
  REQUIRE(std::system(("cd " + dir.path() + " && tar czf logs.tar.gz run").c_str()) == 0);
  Result<PathFilter> f = PathFilter::make({"*.log"}, {"ckpt"});
  REQUIRE(f.ok());
  auto paths = [](const std::vector<InputSource>& inputs) {
    std::vector<std::string> out;
    for (const auto& in : inputs) out.push_back(in.path.substr(in.path.rfind("run/")));
    return out;
  };
  std::vector<InputProblem> problems;
  auto walked = expand_inputs({dir.path() + "/run"}, problems, &*f);
  CHECK(paths(walked) == std::vector<std::string>{"run/nested/rank1.log", "run/rank0.log"});
  auto members = expand_archives(expand_inputs({dir.path() + "/logs.tar.gz"}, problems, &*f), &*f);
  std::vector<std::string> names;
  for (const auto& m : members) names.push_back(m.member);
  std::sort(names.begin(), names.end());
  CHECK(names == std::vector<std::string>{"run/nested/rank1.log", "run/rank0.log"});
  // An archive found in a walk is a container: --glob '*.log' does not drop it, its members decide.
  auto in_walk = expand_archives(expand_inputs({dir.path()}, problems, &*f), &*f);
  CHECK(in_walk.size() == 4);
  // A path named on the command line is read whatever the globs say, as ripgrep does.
  auto named = expand_inputs({dir.path() + "/run/launcher.out"}, problems, &*f);
  CHECK(named.size() == 1);
  CHECK(problems.empty());
}

TEST_CASE("archives: a zip read front to back gives the members its central directory gives") {
  // Front to back (triage's reading of a zip of many members) must agree with the directory on
  // the zips people make: `zip`, Python's zipfile to a pipe (sizes after the data, no seek), and
  // a self-extracting zip (a script before the first member: read through its directory).
  test::TempDir dir;
  dir.write("job-a/rank0.log", "step 1\n");
  dir.write("job-b/rank1.log", "torch.OutOfMemoryError: CUDA out of memory.\n");
  const std::string cd = "cd " + dir.path() + " && ";
  REQUIRE(std::system((cd + "zip -qr plain.zip job-a job-b").c_str()) == 0);
  REQUIRE(std::system((cd + "zip -qr - job-a job-b | cat > piped.zip").c_str()) == 0);
  REQUIRE(std::system((cd + "(printf '#!/bin/sh\\nexit 0\\n'; cat plain.zip) > sfx.zip && zip -qA sfx.zip").c_str()) == 0);
  auto members = [&](const std::string& zip, ZipReading how) {
    std::vector<std::string> out;
    Status s = for_each_archive_member(dir.path() + "/" + zip, [&](const std::string& name, struct archive*) {
      out.push_back(name);
    }, how);
    CHECK(s.ok());
    std::sort(out.begin(), out.end());
    return out;
  };
  const std::vector<std::string> both = {"job-a/rank0.log", "job-b/rank1.log"};
  for (const char* zip : {"plain.zip", "piped.zip", "sfx.zip"}) {
    INFO(zip);
    CHECK(members(zip, ZipReading::kCentralDirectory) == both);
    CHECK(members(zip, ZipReading::kFrontToBack) == both);
  }
}

TEST_CASE("inputs: a symlink loop does not recurse forever") {
  test::TempDir dir;
  dir.write("job/a.log", "x\n");
  std::filesystem::create_directory_symlink(dir.path() + "/job", dir.path() + "/job/loop");
  std::vector<InputProblem> problems;
  auto inputs = expand_inputs({dir.path() + "/job"}, problems);
  CHECK(inputs.size() == 1);
}

namespace {
// Lines as a consumer sees them: each capped at kMaxLineBytes, whichever way the reader
// delivered it (in a block, or as a long line's head).
struct CappedCollect : BlockSink {
  std::vector<std::string> lines;
  uint64_t blocks = 0;
  void on_block(std::string_view block) override {
    ++blocks;
    for_each_line(block, [&](std::string_view l) { lines.emplace_back(l.substr(0, kMaxLineBytes)); });
  }
  void on_long_line(std::string_view head, uint64_t) override { lines.emplace_back(head.substr(0, kMaxLineBytes)); }
};

std::vector<std::string> capped_lines(const std::string& text) {
  CappedCollect c;
  c.on_block(text);
  return c.lines;
}

// ~11 MiB of lines of many lengths: short and empty ones, one of 200 KiB (past kMaxLineBytes,
// inside a block) and one of 3 MiB (longer than a read block), and a last line with no '\n'.
std::string mixed_lines() {
  std::string text;
  uint32_t x = 12345;
  for (int i = 0; text.size() < (11u << 20); ++i) {
    x = x * 1103515245u + 12345u;
    if (i == 20000) text += std::string(200u << 10, 'a') + "\n";
    if (i == 40000) text += std::string(3u << 20, 'b') + "\n";
    text += "[rank" + std::to_string(i % 64) + "]: line " + std::to_string(i) + std::string((x >> 16) % 300, 'z') + "\n";
  }
  return text + "no newline at end";
}
}  // namespace

TEST_CASE("reader: a large plain file read through the mapping gives every line, whole or in ranges") {
  test::TempDir dir;
  std::string text = mixed_lines();
  std::string path = dir.write("big.log", text);
  std::vector<std::string> want = capped_lines(text);

  CappedCollect whole;
  ReadStats st;
  REQUIRE(read_input({path, false}, whole, st).ok());
  CHECK(whole.lines == want);
  CHECK(st.bytes == text.size());

  // Three ranges cut at line starts, as the pipeline splits a file across threads.
  std::vector<uint64_t> cuts{0, text.find('\n', text.size() / 3) + 1, text.find('\n', 2 * text.size() / 3) + 1,
                             text.size()};
  CappedCollect parts;
  for (size_t i = 0; i + 1 < cuts.size(); ++i) {
    ReadStats rs;
    REQUIRE(read_input_range({path, false}, cuts[i], cuts[i + 1], parts, rs).ok());
  }
  CHECK(parts.lines == want);
}

TEST_CASE("reader: a file truncated while it is mapped stops with an error, delivering only its real lines") {
  test::TempDir dir;
  std::string line = "[rank3]: step 100 loss 1.25 and some more text to make a line\n";
  std::string text;
  while (text.size() < (12u << 20)) text += line;
  std::string path = dir.write("shrinking.log", text);
  // The first block is delivered, then the file loses all but its first 1.5 MiB (a rotation by
  // copytruncate does this); the pages past that point now raise SIGBUS in the mapping.
  struct Truncating : CappedCollect {
    std::string path;
    void on_block(std::string_view block) override {
      if (blocks == 0) REQUIRE(::truncate(path.c_str(), (3 << 20) / 2) == 0);
      CappedCollect::on_block(block);
    }
  } sink;
  sink.path = path;
  ReadStats st;
  Status s = read_input({path, false}, sink, st);
  REQUIRE_FALSE(s.ok());
  CHECK(s.message().find("shrank while it was being read") != std::string::npos);
  REQUIRE_FALSE(sink.lines.empty());
  CHECK(sink.lines.size() * line.size() <= (3u << 20) / 2);
  for (const std::string& l : sink.lines) REQUIRE(l + "\n" == line);  // no zeros, no cut line
}
