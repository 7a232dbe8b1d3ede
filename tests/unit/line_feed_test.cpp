// LineFeed finds escapes, NULs and carriage returns once per block (BlockHints) and skips the
// per-line searches on lines without them. These tests prove the shortcut changes nothing: every
// segment, rank and event is what the unhinted per-line path produces.
#include <catch2/catch.hpp>

#include <string>
#include <vector>

#include "firstfault/app/line_feed.h"
#include "test_support.h"

using namespace firstfault;

namespace {

struct Seen {
  std::string segment;
  int rank;
  uint64_t line_no;
  bool operator==(const Seen& o) const { return segment == o.segment && rank == o.rank && line_no == o.line_no; }
};

class Recorder : public LineObserver {
 public:
  void on_line(const Attribution& a, std::string_view segment, uint32_t, uint64_t line_no) override {
    lines.push_back({std::string(segment), a.rank, line_no});
  }
  void on_event(const Event& ev) override { events.push_back({ev.text.str(), ev.rank, ev.line}); }
  std::vector<Seen> lines, events;
};

// The reference: each line on its own, through the unhinted for_each_segment.
std::vector<Seen> per_line(std::string_view block) {
  std::vector<Seen> out;
  LineAttributor attr;
  std::string scratch;
  uint64_t line_no = 0;
  for_each_line(block, [&](std::string_view line) {
    ++line_no;
    for_each_segment(line, scratch, [&](std::string_view seg) { out.push_back({std::string(seg), attr.attribute(seg).rank, line_no}); });
  });
  return out;
}

// One block through a LineFeed, with the prefiltered path or without it: what it saw.
Recorder feed_block(const test::RepoEngine& engine, const std::string& block, bool prefilter) {
  Correlator corr(engine.lib, engine.matcher.tail_patterns());
  LineAttributor attr;
  InputSummary summary;
  Recorder rec;
  LineFeed feed(engine.matcher, corr, attr, 0, summary, &rec);
  if (prefilter) feed.prefer_prefilter();
  feed.on_block(block);
  return rec;
}

}  // namespace

TEST_CASE("line feed: per-block escape/CR hints give the same segments, ranks and events as per-line searches") {
  test::RepoEngine engine;
  const Library& lib = engine.lib;
  const Matcher& matcher = engine.matcher;
  // Clean lines around every kind of line the hints single out, at the block's start and end
  // too: ANSI colour, a NUL, CRLF, a tqdm redraw with bare '\r's, and an ESC that is the
  // block's last byte.
  const std::string block =
      std::string("\x1b[31m[rank1]:[E1107 09:50:00.000000000 train.cpp:1] torch.OutOfMemoryError: CUDA out of memory. Tried to "
      "allocate 2.00 GiB.\x1b[0m\n"
      "[rank0]:2026-11-27 13:00:00,035 - train - INFO - step 1 loss 2.5\n"
      "[rank2]:step 2") + std::string("\0", 1) + std::string(" loss 2.4\n"
      "[rank3]:2026-11-27 13:00:01,035 - train - INFO - step 2 loss 2.4\r\n"
      "[rank0]:Epoch 1:  10%|#         | 1/10 [00:01<00:09]\r[rank0]:Epoch 1:  20%|##        | 2/10 [00:02<00:08]\r\n"
      "gpu-node-001:20014:20014 [6] NCCL INFO Channel 00/32 :    0   1   2   3\n"
      "[rank5]:[E1107 09:51:00.000000000 train.cpp:1] torch.OutOfMemoryError: CUDA out of memory.\n"
      "[rank6]:plain line\n"
      "[rank7]:last line \x1b");
  for (bool prefilter : {false, true}) {
    CAPTURE(prefilter);
    Correlator corr(lib, matcher.tail_patterns());
    LineAttributor attr;
    InputSummary summary;
    Recorder rec;
    LineFeed feed(matcher, corr, attr, 0, summary, &rec);
    if (prefilter) feed.prefer_prefilter();
    feed.on_block(block);
    CHECK(rec.lines == per_line(block));
    REQUIRE(rec.events.size() >= 2);  // both OOM lines, escapes and all
    CHECK(rec.events.front().rank == 1);
    CHECK(rec.events.front().segment.find('\x1b') == std::string::npos);
    CHECK(summary.lines == 9);
  }
}

TEST_CASE("line feed: a colour code inside a message does not hide it from the prefiltered path") {
  // The prefilter scans raw bytes, where "\x1b[1m" splits the message; RE2 matches the line
  // with its escapes removed. Both paths must see the same events.
  test::RepoEngine engine;
  const std::string block =
      "[rank0]:2026-11-27 13:00:00,035 - train - INFO - step 1 loss 2.5\n"
      "[rank3]: torch.OutOfMemoryError: CUDA \x1b[1mout of memory\x1b[0m. Tried to allocate 2.00 GiB\n"
      "[rank1]: NCCL\0 error: unhandled system error\n";
  std::vector<std::vector<Seen>> seen;
  for (bool prefilter : {false, true}) {
    CAPTURE(prefilter);
    Recorder rec = feed_block(engine, block, prefilter);
    REQUIRE(rec.events.size() >= 2);
    CHECK(rec.events.front().rank == 3);
    seen.push_back(rec.events);
  }
  CHECK(seen[0] == seen[1]);
}

TEST_CASE("line feed: hints that rule out escapes and CRs pass the line through unchanged") {
  std::string scratch;
  std::vector<std::string> segs;
  LineHints clean;
  clean.may_have_escapes = false;
  clean.may_have_cr = false;
  for_each_segment("[rank3]: hello", scratch, [&](std::string_view s) { segs.emplace_back(s); }, clean);
  CHECK(segs == std::vector<std::string>{"[rank3]: hello"});
}

TEST_CASE("line feed: a record glued to a progress bar that lost its carriage returns is read as its own line") {
  // ultralytics/yolov5#4400 (docs/accuracy.md, round 69): the paste kept the bar and the
  // watchdog's line on one row. The glued record gets its own rank prefix, level and time.
  test::RepoEngine engine;
  const std::string block =
      "train: Scanning labels...:  97%|##9| 43830/45049 [01:07<00:18, 66.12it/s][rank1]:[E1107 09:50:00.000000000 "
      "ProcessGroupNCCL.cpp:567] [Rank 1] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=3, "
      "OpType=ALLREDUCE, Timeout(ms)=60000) ran for 67438 milliseconds before timing out.\n"
      "train: Scanning labels...: 100%|###| 45049/45049 [01:09<00:00, 66.12it/s]\n";
  for (bool prefilter : {false, true}) {
    CAPTURE(prefilter);
    Recorder rec = feed_block(engine, block, prefilter);
    REQUIRE(!rec.events.empty());
    CHECK(rec.events.front().rank == 1);
    CHECK(rec.events.front().line_no == 1);
    REQUIRE(rec.lines.size() >= 2);
    CHECK(rec.lines[0].segment == "train: Scanning labels...:  97%|##9| 43830/45049 [01:07<00:18, 66.12it/s]");
    CHECK(rec.lines[1].segment.rfind("[rank1]:[E1107", 0) == 0);
    CHECK(rec.lines[1].rank == 1);
  }
}
