// The timeline's views (render/timeline_render.h) and the per-rank summaries they draw.
#include <sys/time.h>

#include <sstream>

#include <catch2/catch.hpp>

#include "firstfault/app/pipeline.h"
#include "firstfault/render/render.h"
#include "firstfault/render/timeline_render.h"
#include "test_support.h"

using namespace firstfault;

namespace {

struct Fixture : test::RepoEngine {
  Diagnosis kb(const std::string& name) {
    return analyze_paths({test::source_dir() + "/testdata/kb/" + name + ".log"}, matcher, {}).diagnosis;
  }
  Diagnosis text(const std::string& log) {
    test::TempDir dir;
    return analyze_paths({dir.write("job.log", log)}, matcher, {}).diagnosis;
  }
};

const RankSummary* rank_of(const Diagnosis& d, int rank) {
  for (const RankSummary& r : d.ranks)
    if (r.rank == rank) return &r;
  return nullptr;
}

size_t count(const std::string& s, const std::string& what) {
  size_t n = 0;
  for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
  return n;
}

}  // namespace

TEST_CASE_METHOD(Fixture, "timeline: the initiating rank is listed even when no line is prefixed with it") {
  Diagnosis d = kb("nccl-socket-connect-failed");
  REQUIRE(d.initiating.rank == 3);
  const RankSummary* r = rank_of(d, 3);
  REQUIRE(r);
  CHECK(r->role == "initiating");
  CHECK(r->lines == 0);
  REQUIRE(r->first_event);
  CHECK(r->first_event->text == d.initiating.first_evidence->text);
  std::string text = render_timeline_text(d);
  CHECK_THAT(text, Catch::Contains("3              initiating"));
  CHECK_THAT(text, Catch::Contains("(no line of its own; named by "));
}

TEST_CASE_METHOD(Fixture, "timeline: a rank's first event is the diagnosed entry's line, as in diagnose") {
  Diagnosis d = kb("cuda-oom");
  REQUIRE(d.entry);
  const RankSummary* r = rank_of(d, 3);
  REQUIRE(r);
  REQUIRE(r->first_event);
  CHECK(r->first_event->pattern.rfind(d.entry->id + "/", 0) == 0);
  CHECK(r->first_event->line == d.initiating.first_evidence->line);
}

TEST_CASE_METHOD(Fixture, "timeline: the text view has a time column") {
  std::string text = render_timeline_text(kb("nccl-collective-timeout"));
  CHECK_THAT(text, Catch::Contains("first event at"));
  CHECK_THAT(text, Catch::Contains("-11-07T10:02:41"));  // the year is the file's (next test)
}

TEST_CASE_METHOD(Fixture, "timeline: a log without a year takes it from its file's modification time, else shows no date") {
  const std::string log =
      "Nov 12 14:20:00 gpu-a17 kernel: NVRM: Xid (PCI:0000:9a:00): 79, pid=48215, name=python, GPU has fallen off the bus.\n"
      "Feb 28 09:00:00 gpu-a17 systemd[1]: Started Session 4 of user root.\n";
  test::TempDir dir;
  std::string path = dir.write("node.log", log);
  // Modified on 2025-03-10: February is that year's, November (later than March) the year before.
  struct timeval at[2] = {{1741608000, 0}, {1741608000, 0}};
  REQUIRE(::utimes(path.c_str(), at) == 0);
  Diagnosis d = analyze_paths({path}, matcher, {}).diagnosis;
  REQUIRE(d.initiating.first_evidence);
  CHECK(format_output_time(d.initiating.first_evidence->time) == "2024-11-12T14:20:00");
  // The same lines on stdin: no file to date them, so the outputs show the time of day only.
  Timestamp no_year;
  no_year.kind = Timestamp::kNoYear;
  no_year.ms = make_ms(2000, 11, 12, 14, 20, 0, 0);
  CHECK(format_output_time(no_year) == "14:20:00");
  CHECK(format_timestamp(no_year) == "--11-12T14:20:00");  // the internal form keeps the date
}

TEST_CASE_METHOD(Fixture, "timeline: the HTML page labels the initiating lane, shows the evidence, and is self-contained") {
  Diagnosis d = kb("nccl-collective-timeout");
  std::string html = render_timeline_html(d, lib);
  CHECK(html.rfind("<!DOCTYPE html>", 0) == 0);
  CHECK_THAT(html, Catch::Contains(R"(class="lane initiating" data-rank="5")"));
  CHECK_THAT(html, Catch::Contains(R"(class="label strong">rank 5</text>)"));
  CHECK_THAT(html, Catch::Contains("<b>Initiating rank 5</b>"));
  CHECK(count(html, "class=\"lane ") == 8);
  CHECK(html.find("<script") == std::string::npos);
  CHECK_THAT(html, Catch::Contains("default-src 'none'"));
  std::string svg = render_timeline_svg(d, lib);
  CHECK(svg.rfind("<?xml", 0) == 0);
  CHECK_THAT(svg, Catch::Contains("initiating rank 5"));
}

TEST_CASE_METHOD(Fixture, "timeline: many ranks become a heat strip and a few lanes") {
  std::string log;
  for (int r = 0; r < 300; ++r)
    log += "[rank" + std::to_string(r) + "]:[E1107 10:50:00.000000000 ProcessGroupNCCL.cpp:607] [Rank " + std::to_string(r) +
           "] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=9, OpType=ALLREDUCE, NumelIn=1, NumelOut=1, "
           "Timeout(ms)=600000) ran for 600001 milliseconds before timing out.\n";
  log += "[rank77]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.\n";
  Diagnosis d = text(log);
  REQUIRE(d.ranks.size() == 300);
  std::string html = render_timeline_html(d, lib);
  CHECK_THAT(html, Catch::Contains("all 300 ranks, by role"));
  CHECK(count(html, "class=\"lane ") <= kMaxTimelineLanes);
  CHECK_THAT(html, Catch::Contains(R"(data-rank="77")"));
  CHECK_THAT(html, Catch::Contains("more rank(s) behave like a lane above"));
}

TEST_CASE_METHOD(Fixture, "timeline: log text in the page is text, never markup") {
  Diagnosis d = text("[rank1]: RuntimeError: </title></svg><script>alert(1)</script><img src=x>\n[rank0]: ok\n");
  for (const std::string& page : {render_timeline_html(d, lib), render_timeline_svg(d, lib)}) {
    CHECK(page.find("<script") == std::string::npos);
    CHECK(page.find("<img") == std::string::npos);
    CHECK_THAT(page, Catch::Contains("&lt;script&gt;"));
  }
}

TEST_CASE_METHOD(Fixture, "json: the streamed report is byte for byte the document dump, indented or not") {
  // write_diagnosis_json() writes the per-rank rows one at a time (memory at 4,096 ranks);
  // what it writes must be what dumping the whole document gives.
  for (const char* name : {"nccl-allgather-uneven-batches", "cuda-oom", "generic-killed-sigkill"}) {
    Diagnosis d = kb(name);
    REQUIRE(d.ranks.size() >= 1);
    for (int indent : {2, -1}) {
      CAPTURE(name, indent);
      std::ostringstream streamed;
      write_diagnosis_json(d, lib, streamed, indent);
      CHECK(streamed.str() == dump_json(diagnosis_to_json(d, lib), indent));
    }
  }
  Diagnosis none = text("nothing happened here\n");
  std::ostringstream streamed;
  write_diagnosis_json(none, lib, streamed, 2);
  CHECK(streamed.str() == dump_json(diagnosis_to_json(none, lib), 2));
}
