#include <catch2/catch.hpp>

#include <filesystem>

#include "firstfault/app/pipeline.h"
#include "firstfault/attribution/paste_repair.h"
#include "test_support.h"

using namespace firstfault;

namespace {

std::string stripped(std::string_view line) {
  std::string out;
  strip_escape_remnants(line, out);
  return out;
}

// What a terminal does to a log: every line cut into rows of `width` code points.
std::string hard_wrap(const std::string& text, size_t width) {
  std::string out;
  size_t column = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '\n') {
      out.push_back(c);
      column = 0;
      continue;
    }
    bool starts_code_point = (static_cast<unsigned char>(c) & 0xC0) != 0x80;
    if (starts_code_point && column == width) {
      out.push_back('\n');
      column = 0;
    }
    out.push_back(c);
    column += starts_code_point;
  }
  return out;
}

// What an editor or a mail client does: each line broken at the last space before `width`,
// the space kept at the end of the row when `keep_space` (a word longer than a row stays whole).
std::string word_wrap(const std::string& text, size_t width, bool keep_space) {
  std::string out;
  for (size_t start = 0; start < text.size();) {
    size_t nl = text.find('\n', start);
    std::string line = text.substr(start, (nl == std::string::npos ? text.size() : nl) - start);
    start = nl == std::string::npos ? text.size() : nl + 1;
    // Only lines of words are wrapped: an indented line stays as it is (as `fmt`/`fold -s` on prose).
    while (line.size() > width && line[0] != ' ') {
      size_t cut = line.rfind(' ', width);
      if (cut == std::string::npos || cut == 0) break;
      out += line.substr(0, keep_space ? cut + 1 : cut) + "\n";
      line = line.substr(cut + 1);
    }
    out += line + "\n";
  }
  return out;
}

std::string entry_and_rank(const Diagnosis& d) {
  return (d.entry ? d.entry->id : d.verdict) + " rank " + (d.initiating.rank ? std::to_string(*d.initiating.rank) : "-");
}

}  // namespace

TEST_CASE("escape remnants written out as text are removed, real escapes and brackets are not") {
  for (const char* intro : {"#033[", "\\033[", "\\x1b[", "\\x1B[", "\\u001b[", "\\e[", "^[[", "ESC["}) {
    CAPTURE(intro);
    std::string line = std::string(intro) + "1;31mCUDA out" + intro + "0m of memory" + intro + "K";
    CHECK(has_escape_remnants(line));
    CHECK(stripped(line) == "CUDA out of memory");
  }
  CHECK(stripped("[0mCUDA [1;31mout[0m of memory[2K") == "CUDA out of memory");  // the ESC byte dropped
  // Not remnants: rank tags, timestamps, tqdm's bars, a bracketed list, a real escape.
  for (const char* keep : {"[rank0]:[E1107 09:50:00.000 x.cpp:1] step", "[2024-05-08 08:54:58,690] [INFO] ok",
                           " 41%|####  | 2050/5004 [1:52:11<2:41:40,  0.30it/s]", "devices [0,1,2,3] [m] [10]",
                           "\x1b[0m plain"}) {
    CAPTURE(keep);
    CHECK(stripped(keep) == keep);
  }
  CHECK_FALSE(has_escape_remnants("[rank0]: step 1 loss 2.0 [1/10]"));
  CHECK_FALSE(has_escape_remnants("\x1b[31mred\x1b[0m"));  // real escapes are strip_ansi()'s
}

TEST_CASE("the hard-wrap width: several lines at the widest length that continue on the next line") {
  std::string log =
      "[rank0]: a message long enough to be wrapped by the terminal at sixty co\n"
      "lumns, which it was\n"
      "[rank1]: another message long enough to be wrapped by the terminal at si\n"
      "xty columns too\n"
      "[rank1]: short\n";
  CHECK(hard_wrap_width(log) == 72);
  // The same message repeated at the widest length is not a wrap.
  std::string repeated =
      "still waiting to acquire lock on /home/u/.cache/huggingface/hub/.locks/model.lock\n"
      "still waiting to acquire lock on /home/u/.cache/huggingface/hub/.locks/model.lock\n"
      "still waiting to acquire lock on /home/u/.cache/huggingface/hub/.locks/model.lock\n"
      "^CTraceback (most recent call last):\n";
  CHECK(hard_wrap_width(repeated) == 0);
  // Lines that each begin a record of their own are not wrapped, whatever their lengths.
  std::string records =
      "[rank0]: step 100 loss 2.345678 lr 0.0001 grad_norm 1.234 tokens/s 12345 mem 45.6G\n"
      "[rank1]: step 100 loss 2.345679 lr 0.0001 grad_norm 1.234 tokens/s 12346 mem 45.6G\n"
      "[rank0]: step 101 loss 2.345678 lr 0.0001 grad_norm 1.234 tokens/s 12345 mem 45.6G\n";
  CHECK(hard_wrap_width(records) == 0);
  // The longest lines followed by records of the same prefix the attributor cannot read (a pdsh
  // host before NCCL's header, without the pdsh line) are whole too (NVIDIA/nccl#394, round 78b).
  std::string same_prefix =
      "node01: VM-0-14-centos:108:593 [0] transport/net_ib.cc:816 NCCL WARN NET/IB : Got completion with error 12\n"
      "node01: VM-0-14-centos:108:593 [0] NCCL INFO include/net.h:28 -> 2\n"
      "node01: VM-0-14-centos:109:594 [0] transport/net_ib.cc:816 NCCL WARN NET/IB : Got completion with error 12\n"
      "node01: VM-0-14-centos:109:594 [0] NCCL INFO include/net.h:28 -> 2\n";
  CHECK(hard_wrap_width(same_prefix) == 0);
}

TEST_CASE("a repaired paste keeps its line count: a continuation becomes an empty line") {
  std::string log = "[rank1]: torch.OutOfMemoryError: CUDA out of me\nmory. Tried\n[rank0]: #033[0mok\n";
  std::string out;
  REQUIRE(repair_paste(log, true, 47, out));
  CHECK(out == "[rank1]: torch.OutOfMemoryError: CUDA out of memory. Tried\n\n[rank0]: ok\n");
  std::string unchanged = "[rank0]: nothing to repair\n";
  CHECK_FALSE(repair_paste(unchanged, true, 0, out));
}

TEST_CASE("every example log, hard-wrapped by a terminal, with its colours written out, or copied from a web page, gets the same diagnosis") {
  test::RepoEngine engine;
  test::TempDir dir;
  size_t logs = 0;
  for (const auto& f : std::filesystem::directory_iterator(test::source_dir() + "/testdata/kb")) {
    if (f.path().extension() != ".log") continue;
    ++logs;
    std::string text = test::slurp(f.path().string());
    std::string want = entry_and_rank(analyze_paths({f.path().string()}, engine.matcher, {}).diagnosis);
    for (size_t width : {80, 120}) {
      CAPTURE(f.path().filename().string(), width);
      std::string path = dir.write("wrapped.log", hard_wrap(text, width));
      CHECK(entry_and_rank(analyze_paths({path}, engine.matcher, {}).diagnosis) == want);
    }
    // Colour codes around every line, written out as syslog stores them.
    std::string coloured;
    for (size_t start = 0; start < text.size();) {
      size_t nl = text.find('\n', start);
      size_t end = nl == std::string::npos ? text.size() : nl;
      coloured += "#033[2m" + text.substr(start, end - start) + "#033[0m\n";
      start = end + 1;
    }
    CAPTURE(f.path().filename().string());
    std::string path = dir.write("coloured.log", coloured);
    CHECK(entry_and_rank(analyze_paths({path}, engine.matcher, {}).diagnosis) == want);
    // Copied from a rendered page: every space a no-break space (U+00A0).
    std::string copied;
    for (char c : text) copied += c == ' ' ? std::string("\xC2\xA0") : std::string(1, c);
    CHECK(entry_and_rank(analyze_paths({dir.write("copied.log", copied)}, engine.matcher, {}).diagnosis) == want);
  }
  CHECK(logs > 250);
}

TEST_CASE("the word-wrap width: the longest lines end near one column and go on in a line of words") {
  // NCCL's warning quoted by XLA, as pasted in AI-Hypercomputer/xpk#492 (wrapped at spaces).
  std::string log =
      "E0605 09:26:44.248647    1054 pjrt_stream_executor_client.cc:2839] Execution of replica 0\n"
      "failed: INTERNAL: NCCL operation ncclGroupEnd() failed: unhandled system error (run with \n"
      "NCCL_DEBUG=INFO for details). Last NCCL warning(error) log entry (may be unrelated)  'Error \n"
      "while creating shared memory segment /dev/shm/nccl-TfciGV (size 31850880), error: No space\n"
      "left on device (28)'.\n";
  CHECK(hard_wrap_width(log) == 0);
  const size_t width = word_wrap_width(log);
  REQUIRE(width >= 90);
  std::string out;
  REQUIRE(repair_paste(log, false, width, out, /*words=*/true));
  CHECK(out.find("(may be unrelated)  'Error while creating shared memory segment /dev/shm/nccl-TfciGV (size 31850880), "
                 "error: No space left on device (28)'.\n\n\n\n\n") != std::string::npos);
  // A traceback's frames are indented: its long lines are not a word wrap.
  std::string traceback =
      "Traceback (most recent call last):\n"
      "  File \"/opt/conda/lib/python3.10/site-packages/torch/distributed/distributed_c10d.py\", line 2050, in all_reduce\n"
      "    work = group.allreduce([tensor], opts)\n"
      "  File \"/opt/conda/lib/python3.10/site-packages/torch/distributed/distributed_c10d.py\", line 3703, in barrier\n"
      "    work = default_pg.barrier(opts=opts)\n"
      "RuntimeError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1970, unhandled system error\n";
  CHECK(word_wrap_width(traceback) == 0);
}

TEST_CASE("every example log, word-wrapped at 80 or 120 columns, gets the same diagnosis") {
  test::RepoEngine engine;
  test::TempDir dir;
  size_t logs = 0, wrapped = 0;
  for (const auto& f : std::filesystem::directory_iterator(test::source_dir() + "/testdata/kb")) {
    if (f.path().extension() != ".log") continue;
    ++logs;
    std::string text = test::slurp(f.path().string());
    std::string want = entry_and_rank(analyze_paths({f.path().string()}, engine.matcher, {}).diagnosis);
    for (size_t width : {80, 120})
      for (bool keep_space : {true, false}) {
        std::string w = word_wrap(text, width, keep_space);
        if (w == text || !word_wrap_width(w)) continue;  // nothing wrapped, or too little to tell
        ++wrapped;
        CAPTURE(f.path().filename().string(), width, keep_space);
        std::string path = dir.write("wrapped.log", w);
        CHECK(entry_and_rank(analyze_paths({path}, engine.matcher, {}).diagnosis) == want);
      }
  }
  CHECK(logs > 250);
  CHECK(wrapped > 200);
}

TEST_CASE("paste repair: the rows of a text table are not a hard wrap") {
  std::string border = "+--------+---------+" + std::string(60, '-') + "+";
  auto row = [&](std::string a, std::string b, std::string c) {
    auto pad = [](std::string s, size_t n) { return s + std::string(n - s.size(), ' '); };
    return "| " + pad(a, 7) + "| " + pad(b, 8) + "| " + pad(c, 59) + "|";
  };
  std::string table = border + "\n" + row("Model", "Version", "Status") + "\n" + border + "\n" + row("llama2", "1", "READY") +
                      "\n" + row("llama3", "1", "UNAVAILABLE: Invalid argument: unsupported gpu id 2") + "\n" + border + "\n";
  CHECK(firstfault::hard_wrap_width(table) == 0);
}
