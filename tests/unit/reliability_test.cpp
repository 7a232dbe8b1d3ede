// Reliability: bad input of every kind a log can contain, the resource bounds, and the replay of
// every input the fuzzers ever broke. docs/reliability.md lists each case with its test name.
#include <archive.h>
#include <archive_entry.h>
#include <catch2/catch.hpp>
#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <sstream>
#include <thread>

#include "firstfault/app/pipeline.h"
#include "firstfault/correlator/correlator.h"
#include "firstfault/reader/log_reader.h"
#include "firstfault/render/render.h"
#include "firstfault/triage/triage.h"
#include "harness.h"
#include "test_support.h"

using namespace firstfault;
namespace fs = std::filesystem;

namespace {

struct Fixture : test::RepoEngine {
  test::TempDir dir;
  JobResult run_paths(const std::vector<std::string>& paths) { return analyze_paths(paths, matcher, {}); }
  JobResult run(const std::string& text, const std::string& name = "job.log") { return run_paths({dir.write(name, text)}); }
  // The JSON a user would get: must always parse, whatever the log held.
  nlohmann::json json(const Diagnosis& d) {
    std::string text = dump_json(diagnosis_to_json(d, lib));
    nlohmann::json j = nlohmann::json::parse(text, nullptr, false);
    REQUIRE_FALSE(j.is_discarded());
    return j;
  }
  std::string text(const Diagnosis& d) { return render_text(d, lib, TextStyle{}); }
};

std::string oom(int rank, const char* hms = "09:50:00", const char* date = "1107") {
  return fmt::format(
      "[rank{}]:[E{} {}.000000000 train.cpp:1] torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. "
      "GPU 0 has a total capacity of 79.10 GiB\n",
      rank, date, hms);
}
std::string timeout(int rank, int seq, const char* hms = "10:02:41") {
  return fmt::format(
      "[rank{0}]:[E1107 {2}.300000000 ProcessGroupNCCL.cpp:607] [Rank {0}] Watchdog caught collective operation "
      "timeout: WorkNCCL(SeqNum={1}, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, Timeout(ms)=600000) ran for 600071 "
      "milliseconds before timing out.\n",
      rank, seq, hms);
}

bool write_all(int fd, std::string_view s) {
  while (!s.empty()) {
    ssize_t w = ::write(fd, s.data(), s.size());
    if (w <= 0) return false;
    s.remove_prefix(static_cast<size_t>(w));
  }
  return true;
}

// A FIFO fed by a thread, as a producer process would feed it: nothing touches the disk, so
// the 100 MB and 10-million-line cases cost no temporary space.
class FifoFeed {
 public:
  FifoFeed(std::string path, std::function<void(int)> produce) : path_(std::move(path)) {
    REQUIRE(::mkfifo(path_.c_str(), 0600) == 0);
    thread_ = std::thread([this, produce] {
      int fd = ::open(path_.c_str(), O_WRONLY | O_CLOEXEC);
      if (fd < 0) return;
      produce(fd);
      ::close(fd);
    });
  }
  ~FifoFeed() {
    if (thread_.joinable()) thread_.join();
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  std::thread thread_;
};

// The same bytes compressed by libarchive (gzip, zstd, xz, bzip2), as the tools would write them.
std::string compress(const std::string& text, const char* filter) {
  struct archive* a = archive_write_new();
  REQUIRE(archive_write_add_filter_by_name(a, filter) == ARCHIVE_OK);
  REQUIRE(archive_write_set_format_raw(a) == ARCHIVE_OK);
  std::vector<char> buf(text.size() + (1 << 20));
  size_t used = 0;
  REQUIRE(archive_write_open_memory(a, buf.data(), buf.size(), &used) == ARCHIVE_OK);
  struct archive_entry* e = archive_entry_new();
  archive_entry_set_pathname(e, "log");
  archive_entry_set_filetype(e, AE_IFREG);
  archive_entry_set_size(e, static_cast<la_int64_t>(text.size()));
  REQUIRE(archive_write_header(a, e) == ARCHIVE_OK);
  REQUIRE(archive_write_data(a, text.data(), text.size()) == static_cast<la_ssize_t>(text.size()));
  archive_entry_free(e);
  REQUIRE(archive_write_close(a) == ARCHIVE_OK);
  archive_write_free(a);
  return std::string(buf.data(), used);
}

// A healthy-looking middle part that does not compress to nothing (so truncating the
// compressed file cuts the text roughly in half, not after the first kilobyte).
std::string noise_lines(int n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::string out;
  for (int i = 0; i < n; ++i)
    out += fmt::format("[rank0]:[I1107 09:5{}:00.000000000 train.py:1] step {} loss {:.6f} lr {:.3e} tok/s {}\n",
                       (i / 1000) % 10, i, (rng() % 100000) / 100000.0 + 1.0, (rng() % 1000) * 1e-7,
                       40000 + rng() % 10000);
  return out;
}

const nlohmann::json& input_row(const nlohmann::json& j, size_t i) { return j.at("inputs").at(i); }

bool any_contains(const std::vector<std::string>& v, const std::string& needle) {
  for (const auto& s : v)
    if (s.find(needle) != std::string::npos) return true;
  return false;
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Bad input

TEST_CASE("reliability: random bytes without NUL are read to the end, match nothing by accident, JSON stays valid") {
  Fixture f;
  std::mt19937 rng(42);
  std::string bytes(4 << 20, '\0');
  for (auto& c : bytes) c = static_cast<char>(rng() % 255 + 1);  // no NUL: not binary, read as text
  bytes[0] = 'x';  // not a compression magic
  JobResult r = f.run(bytes, "random.bin");
  CHECK(r.problems.empty());
  CHECK(r.skipped.empty());
  CHECK(r.diagnosis.verdict != "diagnosed");
  REQUIRE(r.diagnosis.inputs.size() == 1);
  CHECK(r.diagnosis.inputs[0].bytes == bytes.size());
  CHECK(r.diagnosis.inputs[0].lines == static_cast<uint64_t>(std::count(bytes.begin(), bytes.end(), '\n')) + 1);
  nlohmann::json j = f.json(r.diagnosis);
  CHECK(input_row(j, 0)["bytes"] == bytes.size());
  std::string t = f.text(r.diagnosis);
  CHECK(t.find('\x1b') == std::string::npos);  // log bytes never drive the terminal
}

TEST_CASE("reliability: NUL bytes past the first block are removed before matching and never reach the output") {
  Fixture f;
  std::string line = oom(3);
  line.insert(20, std::string("\0\0", 2));  // inside the c10 header
  line.insert(60, std::string("\0", 1));    // inside the message
  std::string first_block = noise_lines(1000, 7);  // text: NULs past it do not make the file binary
  REQUIRE(first_block.size() > kBinaryProbeBytes);
  JobResult r = f.run(first_block + std::string("\0\0\0\n", 4) + line);
  CHECK(r.skipped.empty());
  REQUIRE(r.diagnosis.entry);
  CHECK(r.diagnosis.entry->id == "cuda-oom");
  REQUIRE(r.diagnosis.initiating.rank);
  CHECK(*r.diagnosis.initiating.rank == 3);
  REQUIRE(r.diagnosis.initiating.first_evidence);
  CHECK(r.diagnosis.initiating.first_evidence->text.find('\0') == std::string::npos);
  CHECK(r.diagnosis.initiating.first_evidence->line == 1002);
  f.json(r.diagnosis);
}

TEST_CASE("reliability: a log with the zero-filled tail of a crashed node is read, not skipped as binary") {
  Fixture f;
  // The node died: the file's size reached the disk, its last page did not and reads as zeros.
  JobResult r = f.run(oom(5) + timeout(0, 3) + "[rank1]:[E1107 10:02:41.3" + std::string(3000, '\0'));
  CHECK(r.skipped.empty());
  REQUIRE(r.diagnosis.entry);
  CHECK(r.diagnosis.initiating.rank == 5);
}

TEST_CASE("reliability: invalid UTF-8 is replaced with U+FFFD in the JSON, which stays valid") {
  Fixture f;
  std::string line = oom(1);
  line.insert(line.size() - 1, " \xff\xfe\xc3(\xed\xa0\x80 end");  // invalid bytes, truncated sequence, surrogate
  JobResult r = f.run("caf\xe9 latin-1 line\n" + line, "bad\xffname.log");
  REQUIRE(r.diagnosis.entry);
  nlohmann::json j = f.json(r.diagnosis);
  std::string text = j["diagnosis"]["first_evidence"]["text"];
  CHECK(text.find("\xEF\xBF\xBD") != std::string::npos);
  CHECK(text.find("end") != std::string::npos);  // valid text after the bad bytes is kept
  std::string path = input_row(j, 0)["path"];
  CHECK(path.find("\xEF\xBF\xBD") != std::string::npos);
}

TEST_CASE("reliability: a single 100 MB line is counted, its head matched, and the lines after it survive") {
  Fixture f;
  constexpr size_t kLine = 100u << 20;
  FifoFeed feed(f.dir.path() + "/long.fifo", [&](int fd) {
    std::string chunk(1 << 20, 'x');
    write_all(fd, "[rank0]:[I1107 09:00:00.000000000 train.py:1] starting\n[rank0]:");
    for (size_t sent = 8; sent < kLine; sent += chunk.size())
      if (!write_all(fd, std::string_view(chunk).substr(0, std::min(chunk.size(), kLine - sent)))) return;
    write_all(fd, "\n" + oom(0));
  });
  JobResult r = f.run_paths({feed.path()});
  CHECK(r.problems.empty());
  const Diagnosis& d = r.diagnosis;
  REQUIRE(d.inputs.size() == 1);
  CHECK(d.inputs[0].bytes == 55 + kLine + 1 + oom(0).size());
  CHECK(d.inputs[0].lines == 3);
  CHECK(d.inputs[0].long_lines == 1);
  REQUIRE(d.entry);
  CHECK(d.entry->id == "cuda-oom");
  CHECK(d.initiating.first_evidence->line == 3);  // line numbers stay exact past the long line
  CHECK(d.limits.truncated);
  CHECK(any_contains(d.limits.dropped, "1 line(s) longer than 65536 bytes"));
  CHECK(f.text(d).find("Note: some detail was dropped at a bound") != std::string::npos);
}

TEST_CASE("reliability: 10 million tiny lines are counted exactly") {
  Fixture f;
  constexpr uint64_t kLines = 10'000'000;
  FifoFeed feed(f.dir.path() + "/tiny.fifo", [&](int fd) {
    std::string chunk;
    for (int i = 0; i < 1 << 18; ++i) chunk += "x\n";
    uint64_t sent = 0;
    while (sent < kLines) {
      uint64_t n = std::min<uint64_t>(1 << 18, kLines - sent);
      if (!write_all(fd, std::string_view(chunk).substr(0, n * 2))) return;
      sent += n;
    }
    write_all(fd, oom(0));
  });
  JobResult r = f.run_paths({feed.path()});
  const Diagnosis& d = r.diagnosis;
  CHECK(d.inputs[0].lines == kLines + 1);
  CHECK(d.total_lines == kLines + 1);
  REQUIRE(d.entry);
  CHECK(d.initiating.first_evidence->line == kLines + 1);
  CHECK_FALSE(d.limits.truncated);
}

TEST_CASE("reliability: an empty file is a clean verdict with zero lines, not an error") {
  Fixture f;
  JobResult r = f.run("", "empty.log");
  CHECK(r.problems.empty());
  CHECK(r.diagnosis.verdict == "clean");
  CHECK(r.diagnosis.inputs[0].lines == 0);
  CHECK(r.diagnosis.inputs[0].bytes == 0);
  CHECK(f.text(r.diagnosis).find("No failure found") != std::string::npos);
  JobResult blank = f.run("\n\n   \n", "blank.log");
  CHECK(blank.diagnosis.verdict == "clean");
  CHECK(blank.diagnosis.inputs[0].lines == 3);
}

TEST_CASE("reliability: CRLF logs diagnose exactly like LF logs") {
  Fixture f;
  std::string lf = test::source_dir() + "/testdata/kb/nccl-allgather-uneven-batches.log";
  std::ifstream in(lf, std::ios::binary);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::string crlf;
  for (char c : text) {
    if (c == '\n') crlf += '\r';
    crlf += c;
  }
  JobResult a = f.run(text, "lf.log"), b = f.run(crlf, "crlf.log");
  REQUIRE(a.diagnosis.entry);
  REQUIRE(b.diagnosis.entry);
  CHECK(a.diagnosis.entry->id == b.diagnosis.entry->id);
  CHECK(a.diagnosis.initiating.rank == b.diagnosis.initiating.rank);
  CHECK(a.diagnosis.initiating.method == b.diagnosis.initiating.method);
  CHECK(a.diagnosis.initiating.first_evidence->line == b.diagnosis.initiating.first_evidence->line);
  CHECK(a.diagnosis.initiating.first_evidence->text == b.diagnosis.initiating.first_evidence->text);  // no '\r' kept
  CHECK(a.diagnosis.inputs[0].lines == b.diagnosis.inputs[0].lines);
}

TEST_CASE("reliability: lone CR (progress-bar redraws) splits a line into segments that are all scanned") {
  Fixture f;
  std::string bar;
  for (int i = 0; i < 50; ++i) bar += fmt::format("\r[rank2]:Epoch 1: {}%|####| {}/100", i * 2, i);
  // The error follows the last redraw on the same physical line, as tqdm leaves it.
  std::string oomline = oom(2);
  oomline.pop_back();
  JobResult r = f.run("[rank2]:start\n" + bar + "\r" + oomline + "\r\n[rank2]:after\n");
  REQUIRE(r.diagnosis.entry);
  CHECK(r.diagnosis.entry->id == "cuda-oom");
  CHECK(*r.diagnosis.initiating.rank == 2);
  CHECK(r.diagnosis.initiating.first_evidence->line == 2);  // physical line numbers ('\n' only)
  CHECK(r.diagnosis.inputs[0].lines == 3);
  // Old Mac-style files (CR only) stay one physical line; every segment is still matched.
  JobResult mac = f.run("[rank1]:start\r" + oom(1).substr(0, oom(1).size() - 1) + "\r[rank1]:end\r", "mac.log");
  REQUIRE(mac.diagnosis.entry);
  CHECK(mac.diagnosis.entry->id == "cuda-oom");
}

TEST_CASE("reliability: truncated gzip, zstd, xz and bzip2 keep the partial diagnosis and name the file") {
  Fixture f;
  // The root event is at the start, the cascade at the end: cutting the file keeps the root.
  std::string log = oom(5, "09:00:00") + noise_lines(60000, 7) + timeout(0, 9) + timeout(1, 9);
  for (const char* filter : {"gzip", "zstd", "xz", "bzip2"}) {
    INFO(filter);
    std::string z = compress(log, filter);
    REQUIRE(z.size() > 4096);
    std::string path = f.dir.write(std::string("cut-") + filter + ".log.z", z.substr(0, z.size() / 2));
    std::string good = f.dir.write(std::string("good-") + filter + ".log.z", z);
    JobResult whole = f.run_paths({good});
    CHECK(whole.problems.empty());
    CHECK(whole.diagnosis.inputs[0].lines == 60003);
    JobResult r = f.run_paths({path});
    REQUIRE(r.problems.size() == 1);
    CHECK(r.problems[0].path == path);
    CHECK(r.problems[0].reason.find(filter == std::string("bzip2") ? "bzip2" : filter) != std::string::npos);
    const Diagnosis& d = r.diagnosis;
    CHECK(d.inputs[0].compression == filter);
    CHECK_FALSE(d.inputs[0].error.empty());
    CHECK(d.inputs[0].lines > 1000);  // what was read before the cut is kept...
    CHECK(d.inputs[0].lines < 60003);
    REQUIRE(d.entry);                 // ...and diagnosed
    CHECK(d.entry->id == "cuda-oom");
    CHECK(*d.initiating.rank == 5);
    nlohmann::json j = f.json(d);
    CHECK(input_row(j, 0).contains("error"));
  }
}

TEST_CASE("reliability: a corrupt or empty compressed stream is an error for that input only") {
  Fixture f;
  std::string good = f.dir.write("good.log", oom(2));
  std::string z = compress(noise_lines(2000, 3), "gzip");
  for (size_t i = 20; i < z.size(); i += 97) z[i] = static_cast<char>(z[i] ^ 0x5a);  // flipped bits mid-stream
  std::string bad = f.dir.write("bad.log.gz", z);
  std::string magic = f.dir.write("magic-only.gz", "\x1f\x8b");
  JobResult r = f.run_paths({good, bad, magic});
  REQUIRE(r.problems.size() == 2);
  CHECK(r.problems[0].path == bad);
  CHECK(r.problems[1].path == magic);
  REQUIRE(r.diagnosis.entry);
  CHECK(r.diagnosis.entry->id == "cuda-oom");
  CHECK(r.diagnosis.inputs.size() == 3);
}

TEST_CASE("reliability: a missing path and an unreadable file among good ones are reported, the rest analysed") {
  Fixture f;
  std::string good = f.dir.write("rank2.log", oom(2));
  std::string other = f.dir.write("rank0.log", timeout(0, 4));
  // /proc/self/mem opens but every read at offset 0 fails (EIO): an unreadable file even for root.
  JobResult r = f.run_paths({good, f.dir.path() + "/nope.log", "/proc/self/mem", other});
  REQUIRE(r.problems.size() == 2);
  CHECK(r.problems[0].path == f.dir.path() + "/nope.log");
  CHECK(r.problems[0].reason == "no such file or directory");
  CHECK(r.problems[1].path == "/proc/self/mem");
  CHECK_FALSE(r.problems[1].reason.empty());
  REQUIRE(r.diagnosis.entry);
  CHECK(r.diagnosis.entry->id == "cuda-oom");
  CHECK(r.diagnosis.inputs.size() == 4);
  if (::geteuid() != 0) {  // permissions only bind non-root users
    std::string locked = f.dir.write("locked.log", oom(1));
    ::chmod(locked.c_str(), 0);
    JobResult l = f.run_paths({good, locked});
    REQUIRE(l.problems.size() == 1);
    CHECK(l.problems[0].reason.find("ermission") != std::string::npos);
  }
}

TEST_CASE("reliability: no input at all is an error naming each input and its reason, never a clean verdict") {
  Fixture f;
  fs::create_directories(f.dir.path() + "/empty");
  std::string cut = f.dir.write("cut.log.gz", "\x1f\x8b\x08");  // a gzip header cut short
  const std::vector<std::vector<std::string>> cases = {
      {f.dir.path() + "/empty"}, {"/proc/self/mem"}, {cut}, {f.dir.path() + "/empty", cut, f.dir.path() + "/nope.log"}};
  for (const auto& paths : cases) {
    INFO(paths.front() << " and " << paths.size() - 1 << " more");
    JobResult r = f.run_paths(paths);
    CHECK(r.diagnosis.verdict == "error");
    CHECK_FALSE(r.diagnosis.entry);
    for (const auto& p : paths) {  // every given path is named with a reason, on stderr and in the inputs
      bool problem = std::any_of(r.problems.begin(), r.problems.end(), [&](const InputProblem& x) { return x.path == p && !x.reason.empty(); });
      bool row = std::any_of(r.diagnosis.inputs.begin(), r.diagnosis.inputs.end(),
                             [&](const InputSummary& x) { return x.path == p && !x.error.empty(); });
      CHECK(problem);
      CHECK(row);
    }
  }
  JobResult empty_dir = f.run_paths({f.dir.path() + "/empty"});
  REQUIRE(empty_dir.problems.size() == 1);
  CHECK(empty_dir.problems[0].reason == "no file to read in this directory");
  // An empty directory beside a good file is no problem: the file is the job.
  JobResult beside = f.run_paths({f.dir.path() + "/empty", f.dir.write("rank1.log", oom(1))});
  CHECK(beside.problems.empty());
  CHECK(beside.diagnosis.verdict == "diagnosed");
}

TEST_CASE("reliability: a FIFO is read like a file, also inside a directory") {
  Fixture f;
  fs::create_directories(f.dir.path() + "/job");
  f.dir.write("job/rank0.log", timeout(0, 7));
  FifoFeed feed(f.dir.path() + "/job/rank1.log", [&](int fd) { write_all(fd, oom(1) + timeout(2, 7)); });
  JobResult r = f.run_paths({f.dir.path() + "/job"});
  CHECK(r.problems.empty());
  REQUIRE(r.diagnosis.inputs.size() == 2);
  CHECK(r.diagnosis.inputs[1].lines == 2);
  REQUIRE(r.diagnosis.entry);
  CHECK(r.diagnosis.entry->id == "cuda-oom");
  CHECK(*r.diagnosis.initiating.rank == 1);
}

TEST_CASE("reliability: a directory with symlink loops reads every file once and never recurses forever") {
  Fixture f;
  f.dir.write("job/a/rank0.log", timeout(0, 3));
  f.dir.write("job/b/rank1.log", oom(1));
  fs::create_directory_symlink(f.dir.path() + "/job", f.dir.path() + "/job/a/up");      // loop to the root
  fs::create_directory_symlink(f.dir.path() + "/job/b", f.dir.path() + "/job/a/b-again");  // second link
  fs::create_symlink("self.log", f.dir.path() + "/job/self.log");                        // ELOOP on itself
  JobResult r = f.run_paths({f.dir.path() + "/job"});
  CHECK(r.diagnosis.inputs.size() == 3);  // two logs + the self-loop reported as a problem row
  REQUIRE(r.problems.size() == 1);
  CHECK(r.problems[0].path.find("self.log") != std::string::npos);
  REQUIRE(r.diagnosis.entry);
  CHECK(*r.diagnosis.initiating.rank == 1);
  // Given by name, a symlink loop is named as one, not as a missing file.
  JobResult named = f.run_paths({f.dir.path() + "/job/self.log", f.dir.path() + "/job/b/rank1.log"});
  REQUIRE(named.problems.size() == 1);
  CHECK(named.problems[0].reason == "symlink loop (too many levels of symbolic links)");
}

TEST_CASE("reliability: timestamps out of order and from the future") {
  Fixture f;
  SECTION("out of order: time decides, not the order of the lines") {
    // Rank 0's OOM is printed first but happened later than rank 1's.
    JobResult r = f.run(oom(0, "10:00:09") + oom(1, "10:00:01") + timeout(2, 5) + timeout(3, 5));
    REQUIRE(r.diagnosis.entry);
    CHECK(*r.diagnosis.initiating.rank == 1);
    CHECK(r.diagnosis.initiating.reason.find("rank 1 hit it first") != std::string::npos);
    CHECK(r.diagnosis.initiating.candidates == std::vector<int>{1, 0});
  }
  SECTION("from the future: printed as the log says, compared as printed, nothing overflows") {
    // Plain timestamps (no c10 header, whose own year-less time would win); ranks from the file names.
    std::string msg = oom(0).substr(oom(0).find("torch."));
    JobResult r = f.run_paths({f.dir.write("rank0.log", "2024-11-07 09:50:00 " + msg),
                               f.dir.write("rank4.log", "2999-12-31 23:59:59 " + msg)});
    REQUIRE(r.diagnosis.entry);
    CHECK(*r.diagnosis.initiating.rank == 0);
    CHECK(r.diagnosis.initiating.candidates == std::vector<int>{0, 4});
    nlohmann::json j = f.json(r.diagnosis);
    bool printed = false;
    for (const auto& rk : j["ranks"])
      if (rk["rank"] == 4) printed = rk["last_time"] == "2999-12-31T23:59:59";
    CHECK(printed);
  }
  SECTION("absurd clocks (year 9999, huge dmesg uptimes) are not times, or are kept exactly") {
    JobResult r = f.run("[99999999999999999.000000] x\n9999-12-31 23:59:59 " + oom(0).substr(8) +
                        "[  +9999999999999.000000] y\n0000-01-01 00:00:00 " + oom(0).substr(8));
    REQUIRE(r.diagnosis.entry);
    f.json(r.diagnosis);
  }
}

TEST_CASE("reliability: a log whose ranks claim thousands of different hosts") {
  Fixture f;
  std::string log;
  constexpr int kRanks = 4000;
  for (int r = 0; r < kRanks; ++r)
    if (r != 1234) log += fmt::format("[pod/worker-{}/main] ", r) + timeout(r, 77);
  JobResult res = f.run(log);
  const Diagnosis& d = res.diagnosis;
  REQUIRE(d.entry);
  CHECK(d.initiating.method == "missing-from-timeout");
  CHECK(*d.initiating.rank == 1234);
  CHECK(d.ranks.size() == kRanks);  // the missing rank too, listed as initiating with no line of its own
  CHECK(d.ranks[1234].role == "initiating");
  CHECK(d.ranks[1234].lines == 0);
  CHECK(d.ranks[1000].host == "worker-1000");
  CHECK(d.collateral.ranks.size() == kRanks - 1);
  CHECK_FALSE(d.limits.truncated);
}

TEST_CASE("reliability: rank numbers no job can have are not ranks, so nothing sized by them blows up") {
  Fixture f;
  std::string log = "[rank2147483647]:" + oom(0).substr(8) + "[rank99999999999999]:step 5\n" +
                    "host-a:1:1 [0] NCCL INFO comm 0x1 rank 4000000000 nranks 4294967295 cudaDev 0 busId 1000 - Init COMPLETE\n" +
                    timeout(0, 3) + timeout(kMaxRankNumber, 3);
  JobResult r = f.run(log);
  const Diagnosis& d = r.diagnosis;
  REQUIRE(d.entry);
  for (const auto& rk : d.ranks) CHECK(rk.rank <= kMaxRankNumber);
  CHECK(rank_or_none(kMaxRankNumber) == kMaxRankNumber);
  CHECK(rank_or_none(int64_t{kMaxRankNumber} + 1) == -1);
  CHECK(rank_or_none(-5) == -1);
  f.json(d);
}

// ---------------------------------------------------------------------------------------------
// Triage (batch mode): a bad job becomes an error row, every other job is still analysed.

namespace {
struct Member {
  std::string name, text;
};
// An archive as tar/zip tools write it: format "ustar" or "zip", filter "none", "gzip", "zstd".
std::string make_archive(const std::vector<Member>& members, const char* format, const char* filter) {
  struct archive* a = archive_write_new();
  REQUIRE(archive_write_set_format_by_name(a, format) == ARCHIVE_OK);
  if (std::string(filter) != "none") REQUIRE(archive_write_add_filter_by_name(a, filter) == ARCHIVE_OK);
  size_t total = 1 << 20;
  for (const auto& m : members) total += m.text.size() + 4096;
  std::vector<char> buf(total);
  size_t used = 0;
  REQUIRE(archive_write_open_memory(a, buf.data(), buf.size(), &used) == ARCHIVE_OK);
  for (const auto& m : members) {
    struct archive_entry* e = archive_entry_new();
    archive_entry_set_pathname(e, m.name.c_str());
    archive_entry_set_filetype(e, AE_IFREG);
    archive_entry_set_perm(e, 0644);
    archive_entry_set_size(e, static_cast<la_int64_t>(m.text.size()));
    REQUIRE(archive_write_header(a, e) == ARCHIVE_OK);
    REQUIRE(archive_write_data(a, m.text.data(), m.text.size()) == static_cast<la_ssize_t>(m.text.size()));
    archive_entry_free(e);
  }
  REQUIRE(archive_write_close(a) == ARCHIVE_OK);
  archive_write_free(a);
  return std::string(buf.data(), used);
}

struct TriageRun {
  int rc = 0;
  std::string out;
  nlohmann::json summary;
};
TriageRun triage(const std::vector<std::string>& paths) {
  TriageOptions o;
  o.paths = paths;
  o.jobs = 2;
  o.progress = false;
  TriageRun t;
  std::ostringstream table;
  t.rc = run_triage(o, table);
  t.out = table.str();
  o.format = "jsonl";
  std::ostringstream jsonl;
  CHECK(run_triage(o, jsonl) == t.rc);  // the exit code does not depend on the format
  std::string last;
  std::istringstream lines(jsonl.str());
  for (std::string l; std::getline(lines, l);)
    if (!l.empty()) last = l;
  t.summary = nlohmann::json::parse(last, nullptr, false);
  REQUIRE_FALSE(t.summary.is_discarded());
  return t;
}
// Different noise per job: identical members would compress to nothing after the first, and
// cutting the archive at 5/6 would then land inside job a.
std::vector<Member> three_jobs() {
  return {{"job-a/rank0.log", oom(0) + noise_lines(20000, 11)},
          {"job-b/rank0.log", oom(1) + noise_lines(20000, 12)},
          {"job-c/rank0.log", oom(2) + noise_lines(20000, 13)}};
}
}  // namespace

TEST_CASE("reliability: binary files in a directory or an archive are skipped by content and counted, not read") {
  Fixture f;
  // A run folder as training leaves it: rank logs beside a checkpoint (> 1 MiB: the mapped path),
  // a pickled optimizer state, a compressed binary, and one sparse file big enough to be split
  // across threads if it were text.
  f.dir.write("run/rank0.log", timeout(0, 4));
  f.dir.write("run/rank1.log", oom(1));
  std::string safetensors = std::string("\x10\x5c\0\0\0\0\0\0{\"w\":{}}", 16) + std::string(3u << 20, '\x3f');
  f.dir.write("run/model.safetensors", safetensors);
  f.dir.write("run/optimizer.pt", std::string("PK\x03\x04\x14\0\0\0", 8) + "archive/data.pkl\n");
  REQUIRE(std::system(("gzip -c " + f.dir.path() + "/run/model.safetensors > " + f.dir.path() + "/run/model.safetensors.gz").c_str()) == 0);
  {
    std::ofstream sparse(f.dir.path() + "/run/core.dump", std::ios::binary);
    sparse.seekp((40 << 20) - 1);
    sparse.put('\n');  // 40 MiB, all zeros but the last byte
  }
  JobResult r = f.run_paths({f.dir.path() + "/run"});
  CHECK(r.problems.empty());  // skipping is not an error
  REQUIRE(r.diagnosis.entry);
  CHECK(r.diagnosis.entry->id == "cuda-oom");
  CHECK(r.diagnosis.initiating.rank == 1);
  CHECK(r.diagnosis.total_lines == 2);  // the checkpoint was 3 MiB of "lines" before
  CHECK(r.diagnosis.skipped_inputs == 4);
  REQUIRE(r.skipped.size() == 4);
  for (const auto& sk : r.skipped) {
    CHECK_FALSE(sk.named);  // found in the walk: noted with -v only
    CHECK(sk.reason.rfind("binary file (NUL byte at offset ", 0) == 0);
  }
  nlohmann::json j = f.json(r.diagnosis);
  size_t skipped_rows = 0;
  for (const auto& in : j["inputs"]) skipped_rows += in.contains("skipped") && in["lines"] == 0 && in["bytes"] == 0;
  CHECK(skipped_rows == 4);
  CHECK(f.text(r.diagnosis).find("Note: 4 binary file(s) skipped") != std::string::npos);

  // The same run as a tar.gz: its binary members are skipped the same way, for diagnose and triage.
  REQUIRE(std::system(("cd " + f.dir.path() + " && tar czf run.tar.gz run").c_str()) == 0);
  JobResult a = f.run_paths({f.dir.path() + "/run.tar.gz"});
  CHECK(a.problems.empty());
  CHECK(a.diagnosis.skipped_inputs == 4);
  CHECK(a.diagnosis.total_lines == 2);
  REQUIRE(a.diagnosis.entry);
  CHECK(a.diagnosis.entry->id == "cuda-oom");
  TriageRun t = triage({f.dir.path()});  // two jobs: the folder run/ and the archive's run/
  CHECK(t.rc == kExitDiagnosed);
  CHECK(t.summary["diagnosed"] == 2);
  CHECK(t.summary["skipped_binary"] == 8);
  CHECK(t.out.find("; 8 binary file(s) skipped") != std::string::npos);
  // Only binary files: nothing to diagnose, and the reason says so.
  f.dir.write("weights/model.safetensors", safetensors);
  JobResult w = f.run_paths({f.dir.path() + "/weights"});
  CHECK(w.diagnosis.verdict == "error");
  REQUIRE(w.problems.size() == 1);
  CHECK(w.problems[0].reason == "only binary files here (1 skipped)");
  // Named itself, a binary file is skipped too; with nothing else, that is the error.
  JobResult named = f.run_paths({f.dir.path() + "/weights/model.safetensors", f.dir.path() + "/run/rank1.log"});
  REQUIRE(named.skipped.size() == 1);
  CHECK(named.skipped[0].named);
  CHECK(named.problems.empty());
  CHECK(named.diagnosis.verdict == "diagnosed");
  JobResult alone = f.run_paths({f.dir.path() + "/weights/model.safetensors"});
  CHECK(alone.diagnosis.verdict == "error");
  REQUIRE(alone.problems.size() == 1);
  CHECK(alone.problems[0].reason == "binary file (NUL byte at offset 2)");
}

TEST_CASE("reliability: diagnose reads a tar or zip member by member, as it reads the unpacked files") {
  Fixture f;
  // rank3.log has no rank prefix: its rank comes from the member's name, as a file's from its path.
  std::vector<Member> job = {{"job/rank0.log", timeout(0, 9)},
                             {"job/rank3.log", "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.\n"},
                             {"job/rank1.log", timeout(1, 9)}};
  for (const auto& m : job) f.dir.write("unpacked/" + m.name, m.text);
  JobResult unpacked = f.run_paths({f.dir.path() + "/unpacked"});
  REQUIRE(unpacked.diagnosis.entry);
  REQUIRE(unpacked.diagnosis.initiating.rank == 3);
  for (auto [format, filter, name] : {std::tuple{"ustar", "gzip", "job.tar.gz"}, {"ustar", "none", "job.tar"},
                                      {"zip", "none", "job.zip"}, {"ustar", "zstd", "job-without-a-suffix"}}) {
    INFO(name);
    JobResult r = f.run_paths({f.dir.write(name, make_archive(job, format, filter))});
    CHECK(r.problems.empty());
    REQUIRE(r.diagnosis.entry);
    CHECK(r.diagnosis.entry->id == unpacked.diagnosis.entry->id);
    CHECK(r.diagnosis.initiating.rank == 3);
    REQUIRE(r.diagnosis.inputs.size() == 3);
    CHECK(r.diagnosis.inputs[1].path == f.dir.path() + "/" + name + "!job/rank3.log");  // archive order
    CHECK(r.diagnosis.inputs[1].lines == 1);
  }
  // A cut tar.gz: the members before the cut are read whole, the cut one up to the damage.
  std::string tgz = make_archive(three_jobs(), "ustar", "gzip");
  JobResult cut = f.run_paths({f.dir.write("cut.tar.gz", tgz.substr(0, tgz.size() * 5 / 6))});
  REQUIRE(cut.diagnosis.inputs.size() == 3);
  CHECK(cut.diagnosis.inputs[0].error.empty());
  CHECK(cut.diagnosis.inputs[1].error.empty());
  CHECK_FALSE(cut.diagnosis.inputs[2].error.empty());
  CHECK(cut.diagnosis.inputs[2].lines > 0);
  CHECK(cut.diagnosis.verdict == "diagnosed");
  REQUIRE(cut.problems.size() == 1);
  CHECK(cut.problems[0].path == f.dir.path() + "/cut.tar.gz!job-c/rank0.log");
  // An archive with no file: nothing to diagnose, and the reason names it.
  JobResult empty = f.run_paths({f.dir.write("empty.tar", make_archive({}, "ustar", "none"))});
  CHECK(empty.diagnosis.verdict == "error");
  REQUIRE(empty.problems.size() == 1);
  CHECK(empty.problems[0].reason == "the archive holds no file");
}

TEST_CASE("reliability: a directory or an archive shaped like many jobs is named, one job is not") {
  Fixture f;
  for (const char* job : {"job-a", "job-b", "job-c"}) {  // three jobs, each with its own rank 0
    f.dir.write(std::string("runs/") + job + "/rank0.log", timeout(0, 4));
    f.dir.write(std::string("runs/") + job + "/rank1.log", oom(1));
  }
  // One job split by node: rank 0 is in one folder only. One job with flat rank files.
  f.dir.write("split/node-0/rank0.log", timeout(0, 4));
  f.dir.write("split/node-0/rank1.log", timeout(1, 4));
  f.dir.write("split/node-1/rank2.log", oom(2));
  f.dir.write("flat/rank0.log", timeout(0, 4));
  f.dir.write("flat/rank1.log", oom(1));
  REQUIRE(std::system(("cd " + f.dir.path() + " && tar czf runs.tgz runs && tar -C runs -czf bare.tgz . && tar czf split.tgz split").c_str()) == 0);
  for (const char* many : {"/runs", "/runs.tgz", "/bare.tgz"}) {
    INFO(many);
    JobResult r = f.run_paths({f.dir.path() + many});
    REQUIRE(r.many_jobs.size() == 1);
    CHECK(r.many_jobs[0].path == f.dir.path() + many);
    CHECK(r.many_jobs[0].jobs == 3);
    CHECK(r.diagnosis.entry);  // still diagnosed, as one job: the hint changes nothing else
  }
  for (const char* one : {"/split", "/split.tgz", "/flat", "/runs/job-a"}) {
    INFO(one);
    CHECK(f.run_paths({f.dir.path() + one}).many_jobs.empty());
  }
  CHECK(f.run_paths({f.dir.path() + "/runs/job-a", f.dir.path() + "/runs/job-b"}).many_jobs.empty());  // named: the user chose
}

TEST_CASE("reliability: triage keeps the good members of an archive with a corrupt one") {
  test::TempDir dir;
  std::string zip = make_archive(three_jobs(), "zip", "none");
  // Zero 300 bytes inside job-b's deflate data (after its local header and extra fields).
  size_t name = zip.find("job-b/rank0.log");
  REQUIRE(name != std::string::npos);
  size_t header = name - 30;
  size_t extra = static_cast<unsigned char>(zip[header + 28]) | static_cast<unsigned char>(zip[header + 29]) << 8;
  size_t data = name + 15 + extra;
  std::fill(zip.begin() + static_cast<long>(data) + 100, zip.begin() + static_cast<long>(data) + 400, '\0');
  TriageRun t = triage({dir.write("jobs.zip", zip)});
  CHECK(t.rc == kExitUsage);  // exit 2: something could not be read
  CHECK(t.summary["diagnosed"] == 2);
  CHECK(t.summary["errors"] == 1);
  REQUIRE(t.summary["error_rows"].size() == 1);
  CHECK(t.summary["error_rows"][0]["job"].get<std::string>().find("!job-b") != std::string::npos);
  CHECK(t.summary["error_rows"][0]["error"].get<std::string>().find("job-b/rank0.log: ") != std::string::npos);
  CHECK(t.out.find("Jobs that could not be read:") != std::string::npos);
}

TEST_CASE("reliability: triage of a truncated tar, tar.gz and tar.zst keeps every job read before the cut") {
  test::TempDir dir;
  for (const char* filter : {"none", "gzip", "zstd"}) {
    INFO(filter);
    std::string tar = make_archive(three_jobs(), "ustar", filter);
    std::string path = dir.write(std::string("cut-") + filter + ".tar", tar.substr(0, tar.size() * 5 / 6));
    TriageRun t = triage({path});
    CHECK(t.rc == kExitUsage);
    CHECK(t.summary["diagnosed"] == 3);  // jobs a and b whole, job c from its first part
    CHECK(t.summary["partial"] == 1);
    bool named = false;
    for (const auto& row : t.summary["error_rows"])
      if (row["job"].get<std::string>().find("!job-c") != std::string::npos) named = true;
    CHECK(named);
  }
}

TEST_CASE("reliability: triage reports an unreadable file and a missing path as error rows, the rest still processed") {
  test::TempDir dir;
  dir.write("jobs/job-a/rank0.log", oom(0));
  dir.write("jobs/job-c/rank0.log", oom(1));
  fs::create_directories(dir.path() + "/jobs/job-b");
  // Unreadable even for root: every read of /proc/self/mem at offset 0 fails (EIO).
  fs::create_symlink("/proc/self/mem", dir.path() + "/jobs/job-b/rank0.log");
  TriageRun t = triage({dir.path() + "/jobs", dir.path() + "/missing"});
  CHECK(t.rc == kExitUsage);
  CHECK(t.summary["jobs"] == 4);
  CHECK(t.summary["diagnosed"] == 2);
  CHECK(t.summary["errors"] == 2);
  std::string rows = t.summary["error_rows"].dump();
  CHECK(rows.find("job-b/rank0.log") != std::string::npos);
  CHECK(rows.find("no such file or directory") != std::string::npos);
}

// ---------------------------------------------------------------------------------------------
// Resource bounds: each one, when hit, is reported as truncated with what was dropped.

TEST_CASE("bounds: nothing hit means truncated false and no dropped list") {
  Fixture f;
  JobResult r = f.run(oom(0) + timeout(1, 2));
  CHECK_FALSE(r.diagnosis.limits.truncated);
  nlohmann::json j = f.json(r.diagnosis);
  CHECK(j["truncated"] == false);
  CHECK_FALSE(j.contains("dropped"));
}

TEST_CASE("bounds: events beyond kMaxEventsPerPattern are dropped from storage, counted, and reported") {
  Fixture f;
  std::string log;
  const size_t n = kMaxEventsPerPattern + 904;
  for (size_t i = 0; i < n; ++i) log += oom(static_cast<int>(i % 8));
  JobResult r = f.run(log);
  const Diagnosis& d = r.diagnosis;
  REQUIRE(d.entry);
  CHECK(d.entry->id == "cuda-oom");
  CHECK(d.limits.truncated);
  // At most kMaxEventsPerPattern are kept; the byte budget for event detail may stop it earlier
  // when many patterns read the same line (every OOM entry reads this one).
  bool counted = false;
  for (const auto& note : d.limits.dropped) {
    size_t at = note.find("cuda-oom/torch_cuda_oom: ");
    if (at == std::string::npos) continue;
    size_t stored = std::stoul(note.substr(at + std::string("cuda-oom/torch_cuda_oom: ").size()));
    CHECK(stored <= kMaxEventsPerPattern);
    CHECK(note.find(fmt::format(" of {} matched line(s) stored", n)) != std::string::npos);
    counted = true;
  }
  CHECK(counted);
  nlohmann::json j = f.json(d);
  CHECK(j["truncated"] == true);
  CHECK(j["dropped"].size() == d.limits.dropped.size());
  CHECK(f.text(d).find("Note: some detail was dropped at a bound") != std::string::npos);
}

TEST_CASE("bounds: the dropped note names the 8 patterns that dropped the most lines and sums the others") {
  // Issue 27: past the event budget a log of every library sample dropped events of ~1,000
  // patterns, each named in the note (200 KB of text in the output and in memory).
  Fixture f;
  std::string pad(1900, 'x');
  std::string log;
  for (int i = 0; i < 8192; ++i) log += "[rank7]: RuntimeError: CUDA error: an illegal memory access was encountered " + pad + "\n";
  for (const PatternDef& p : f.lib.patterns)
    if (!p.positive.empty())
      for (int k = 0; k < 6; ++k) log += p.positive.front() + "\n";
  JobResult r = f.run(log);
  const std::vector<std::string>& dropped = r.diagnosis.limits.dropped;
  size_t named = 0, summed = 0;
  uint64_t most = 0;
  for (const auto& note : dropped) {
    if (note.rfind("events of pattern ", 0) == 0) {
      ++named;
      size_t of = note.find(" of ", note.find(": "));
      most = std::max<uint64_t>(most, std::stoull(note.substr(of + 4)));
    }
    if (note.rfind("events of ", 0) == 0 && note.find(" more pattern(s): ") != std::string::npos) ++summed;
  }
  CHECK(named == 8);
  CHECK(summed == 1);
  CHECK(most >= 8192);  // the patterns of the repeated line, which dropped the most, are named
  nlohmann::json j = f.json(r.diagnosis);
  CHECK(j["dropped"].size() == dropped.size());
  CHECK(f.text(r.diagnosis).size() < 20000);
}

TEST_CASE("bounds: stored event detail has one byte budget for the job, and every rank keeps its first event") {
  // Issue 27: per-pattern caps multiply (4,096 events x 2 KiB x every pattern). Past
  // kEventBudget only a pattern's first events and each rank's first event of a pattern are
  // kept, texts cut; after 8,192 long error lines every other rank's collective timeout is still kept.
  Fixture f;
  std::string pad(1900, 'x');
  std::string log;
  for (int i = 0; i < 4096; ++i) log += "[rank1234]: RuntimeError: CUDA error: an illegal memory access was encountered " + pad + "\n";
  for (int i = 0; i < 4096; ++i) log += "[rank1234]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. " + pad + "\n";
  constexpr int kRanks = 3000;
  for (int r = 0; r < kRanks; ++r)
    if (r != 1234) log += timeout(r, 77);
  JobResult res = f.run(log);
  const Diagnosis& d = res.diagnosis;
  CHECK(any_contains(d.limits.dropped, fmt::format("the {:.3g} MiB bound on stored event detail was reached", static_cast<double>(kEventBudget) / (1 << 20))));
  REQUIRE(d.entry);
  CHECK(d.collateral.ranks.size() == kRanks - 1);  // every rank's timeout was kept
  REQUIRE(d.initiating.rank);
  CHECK(*d.initiating.rank == 1234);
}

TEST_CASE("bounds: more than kMaxRanks distinct ranks are reported, the lines still counted") {
  Fixture f;
  std::string log;
  log.reserve((kMaxRanks + 10) * 16);
  for (size_t r = 0; r < kMaxRanks + 10; ++r) log += fmt::format("[rank{}]:ok\n", r);
  log += oom(0);
  JobResult res = f.run(log);
  const Diagnosis& d = res.diagnosis;
  CHECK(d.ranks.size() == kMaxRanks);
  CHECK(d.total_lines == kMaxRanks + 11);
  CHECK(d.limits.truncated);
  CHECK(any_contains(d.limits.dropped, fmt::format("ranks beyond the first {}", kMaxRanks)));
  REQUIRE(d.entry);
}

TEST_CASE("bounds: a line longer than kMaxLineBytes is matched on its head and reported") {
  Fixture f;
  std::string head = oom(6);
  head.pop_back();
  std::string log = head + std::string(kMaxLineBytes + 10, 'y') + "\n" + "[rank6]:after\n";
  JobResult r = f.run(log);
  const Diagnosis& d = r.diagnosis;
  REQUIRE(d.entry);
  CHECK(d.entry->id == "cuda-oom");
  CHECK(d.inputs[0].long_lines == 1);
  CHECK(d.inputs[0].lines == 2);
  CHECK(d.limits.truncated);
  CHECK(any_contains(d.limits.dropped, fmt::format("longer than {} bytes", kMaxLineBytes)));
  nlohmann::json j = f.json(d);
  CHECK(input_row(j, 0)["long_lines"] == 1);
}

TEST_CASE("bounds: matched text beyond kMaxEventText is cut on a UTF-8 boundary and reported") {
  Fixture f;
  std::string line = oom(0);
  line.pop_back();
  for (size_t i = 0; line.size() < kMaxEventText + 100; ++i) line += "\xC3\xA9";  // 2-byte characters
  JobResult r = f.run(line + "\n");
  const Diagnosis& d = r.diagnosis;
  REQUIRE(d.initiating.first_evidence);
  CHECK(d.initiating.first_evidence->text.size() <= kMaxEventText + 3);
  CHECK(d.limits.truncated);
  CHECK(any_contains(d.limits.dropped, fmt::format("beyond {} bytes", kMaxEventText)));
  f.json(d);  // the cut never splits a character (JSON stays valid)
}

// ---------------------------------------------------------------------------------------------
// Bad signatures: every problem at once, each with file:line:col.

TEST_CASE("bad signatures: invalid regex, unknown key, duplicate id, missing field and bad samples, all at once") {
  std::string entry = R"(id: e
title: T
category: memory
severity: high
patterns:
  - name: root_line
    role: root
    regex: 'boom (unclosed'
    positive: ['boom']
    negative: ['x']
  - name: second
    role: cascade
    regex: 'never'
    positive: ['this does not match']
    negative: ['never here']
root_cause: x
confirm: [x]
prevention: [x]
references: ['https://example.org']
colour: red
examples:
  - log: kb/x.log
    initiating_rank: 0
)";
  std::vector<SourceFile> files = {{"sigs/memory/e.yaml", entry, false}, {"sigs/memory/e2/e.yaml", entry, false}};
  std::vector<LoadProblem> problems;
  load_sources(files, problems);
  std::vector<std::string> lines;
  for (const auto& p : problems) lines.push_back(p.format());
  auto has = [&](const std::string& s) { return any_contains(lines, s); };
  CHECK(has("sigs/memory/e.yaml:8:12: invalid regex for pattern 'e/root_line'"));
  CHECK(has("sigs/memory/e.yaml:20:1: unknown key 'colour' in an entry"));
  CHECK(has("sigs/memory/e.yaml:1:1: missing required key 'fix'"));
  CHECK(has("sigs/memory/e.yaml:1:1: missing required key 'action'"));
  CHECK(has("sigs/memory/e.yaml:14:16: pattern 'e/second' does not match its positive sample"));
  CHECK(has("sigs/memory/e.yaml:15:16: pattern 'e/second' matches its negative sample"));
  CHECK(has("sigs/memory/e2/e.yaml:1:1: duplicate id 'e' (also defined in sigs/memory/e.yaml)"));
  for (const auto& l : lines) CHECK(l.rfind("sigs/memory/", 0) == 0);  // every problem names its file
}

TEST_CASE("bad signatures: `use:` with an empty value is an error, not an entry-local pattern (fuzz finding)") {
  std::ifstream in(test::source_dir() + "/fuzz/regressions/signatures/use-empty-value.yaml");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  REQUIRE_FALSE(text.empty());
  std::vector<LoadProblem> problems;
  load_sources({{"sigs/memory/use-empty-value.yaml", text, false}}, problems);
  REQUIRE(problems.size() == 1);
  CHECK(problems[0].format() == "sigs/memory/use-empty-value.yaml:11:5: 'use' is empty (expected a string)");
}

TEST_CASE("bad signatures: an extra library overriding a built-in entry is announced with file:line:col") {
  std::vector<LoadProblem> problems;
  Library builtin = load_library({}, problems, {});
  REQUIRE(problems.empty());
  test::TempDir dir;
  const Entry* e = builtin.find_entry("cuda-oom");
  REQUIRE(e);
  std::ifstream in(test::source_dir() + "/signatures/memory/cuda-oom.yaml");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  text.replace(text.find("title: "), 7, "title: Site-specific ");
  std::string path = dir.write("memory/cuda-oom.yaml", text);
  LoadOptions lo;
  lo.check_samples = true;
  Library lib = load_library({dir.path()}, problems, lo);
  CHECK(problems.empty());  // a valid override is allowed (documented)...
  REQUIRE(lib.overrides.size() == 1);  // ...but never silent
  CHECK(lib.find_entry("cuda-oom")->title.rfind("Site-specific ", 0) == 0);
  CHECK(lib.overrides[0].format() ==
        fmt::format("{}:1:1: note: entry 'cuda-oom' overrides the built-in one (signatures/memory/cuda-oom.yaml)", path));
  // A broken override is an error like any other (the built-in does not silently take over).
  dir.write("memory/cuda-oom.yaml", text + "colour: red\n");
  std::vector<LoadProblem> p2;
  load_library({dir.path()}, p2, lo);
  REQUIRE(p2.size() == 1);
  CHECK(p2[0].format().rfind(path + ":", 0) == 0);
  // An escape sequence in the override's path is not echoed to the terminal.
  dir.write("evil\x1b]0;pwned\x07/memory/cuda-oom.yaml", text);
  Library evil = load_library({dir.path() + "/evil\x1b]0;pwned\x07"}, problems, lo);
  REQUIRE(evil.overrides.size() == 1);
  CHECK(evil.overrides[0].format().find('\x1b') == std::string::npos);
  CHECK(evil.overrides[0].format().find('\x07') == std::string::npos);
}

// ---------------------------------------------------------------------------------------------
// Fuzz regressions: every input a fuzzer once broke (fuzz/regressions/<target>/), replayed
// through the same harness in every build, plus inputs at the edges of each format.

TEST_CASE("fuzz regressions: every saved input passes its harness") {
  using Fn = std::string (*)(const uint8_t*, size_t);
  const std::pair<const char*, Fn> targets[] = {{"reader", fuzz::reader_one},
                                                {"attribution", fuzz::attribution_one},
                                                {"signatures", fuzz::signatures_one},
                                                {"diagnose", fuzz::diagnose_one},
                                                {"render", fuzz::render_one},
                                                {"archive", fuzz::archive_one}};
  const std::string edges[] = {"", std::string(1, '\0'), "\n", "\r", "\x1f\x8b", "\x28\xb5\x2f\xfd", "BZh9",
                               "\xfd" "7zXZ", "[rank", "id:\n", "patterns:\n  - name: [", "\n---8<---\n"};
  size_t replayed = 0;
  for (const auto& [name, fn] : targets) {
    for (const auto& e : edges) {
      INFO(name << " on edge input of " << e.size() << " bytes");
      CHECK(fn(reinterpret_cast<const uint8_t*>(e.data()), e.size()) == "");
    }
    fs::path dir = fs::path(test::source_dir()) / "fuzz" / "regressions" / name;
    if (!fs::is_directory(dir)) continue;
    for (const auto& file : fs::directory_iterator(dir)) {
      std::ifstream in(file.path(), std::ios::binary);
      std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
      INFO(file.path().string());
      CHECK(fn(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()) == "");
      ++replayed;
    }
  }
  CHECK(replayed > 0);  // the regression corpus is part of the repository
}

TEST_CASE("bounds: past 1,024 ranks a rank keeps 4 tail lines, its last progress read from the longer tail first") {
  // One file per node (merged by Correlator::absorb): each rank's last progress line is followed
  // by more lines than the short tail keeps, so it must be read before the tail is shortened.
  Fixture f;
  constexpr int kNodes = 160, kPerNode = 8;  // 1,280 ranks
  std::vector<std::string> paths;
  for (int n = 0; n < kNodes; ++n) {
    std::string log;
    for (int l = 0; l < kPerNode; ++l) {
      const int r = n * kPerNode + l;
      log += fmt::format("[rank{}]: Epoch 1:  40%|████      | {}/1000 [10:00<15:00,  1.11it/s]\n", r, 400 + r % 7);
      for (int k = 0; k < 6; ++k) log += fmt::format("[rank{}]: checkpoint shard {} written\n", r, k);
    }
    paths.push_back(f.dir.write(fmt::format("node-{:03}.log", n), log));
  }
  JobResult res = f.run_paths(paths);
  const Diagnosis& d = res.diagnosis;
  REQUIRE(d.ranks.size() == kNodes * kPerNode);
  size_t with_step = 0;
  for (const RankSummary& r : d.ranks) with_step += r.last_step == 400 + r.rank % 7;
  CHECK(with_step == d.ranks.size());
}
