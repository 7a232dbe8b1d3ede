#include <catch2/catch.hpp>

#include "firstfault/app/pipeline.h"
#include "firstfault/correlator/traceback.h"
#include "firstfault/render/render.h"
#include "firstfault/util/redact.h"
#include "test_support.h"

using namespace firstfault;

namespace {
TracebackLine header(uint64_t at) { return {at, true, {}}; }
TracebackLine frame(uint64_t at, const char* file, const char* func = "f") {
  TracebackLine l{at, false, {}};
  l.frame.file = file;
  l.frame.lineno = at * 10;
  l.frame.func = func;
  l.frame.log_line = at;
  return l;
}
}  // namespace

TEST_CASE("library frames: installed packages, the interpreter's library, frozen modules") {
  CHECK(is_library_frame("/usr/lib/python3.10/site-packages/torch/nn/modules/module.py"));
  CHECK(is_library_frame("/usr/local/lib/python3.11/dist-packages/transformers/trainer.py"));
  CHECK(is_library_frame("/opt/conda/lib/python3.10/runpy.py"));
  CHECK(is_library_frame("<frozen runpy>"));
  CHECK_FALSE(is_library_frame("/workspace/proj/train.py"));
  CHECK_FALSE(is_library_frame("train.py"));
  CHECK_FALSE(is_library_frame("/home/alice/libs/python_utils/io.py"));
}

TEST_CASE("the traceback an exception closes: last header before it, its frames, the innermost user frame") {
  std::vector<TracebackLine> lines = {
      header(2), frame(3, "/workspace/a.py"), frame(20, "/usr/lib/python3.10/site-packages/x.py"),  // an earlier traceback
      header(30), frame(31, "/workspace/train.py", "main"), frame(33, "/workspace/model.py", "forward"),
      frame(35, "/usr/lib/python3.10/site-packages/torch/nn/modules/module.py", "_call_impl")};
  auto t = traceback_closed_at(lines, 40);
  REQUIRE(t);
  CHECK(t->header_line == 30);
  CHECK(t->exception_line == 40);
  CHECK(t->frames_total == 3);
  REQUIRE(t->user_frame);
  CHECK(t->frames[*t->user_frame].file == "/workspace/model.py");
  CHECK(t->frames[2].library);
  // Frames after the exception belong to the next traceback.
  lines.push_back(frame(41, "/workspace/later.py"));
  CHECK(traceback_closed_at(lines, 40)->frames_total == 3);
}

TEST_CASE("no traceback without a header before the exception, nor one too far away") {
  CHECK_FALSE(traceback_closed_at({frame(3, "/workspace/a.py")}, 5));
  CHECK_FALSE(traceback_closed_at({header(1)}, 5));  // a header with no frames
  CHECK_FALSE(traceback_closed_at({header(1), frame(2, "/w/a.py")}, 2 + kMaxTracebackLines));
}

TEST_CASE("every frame library code: no user frame; a deep stack keeps both ends") {
  std::vector<TracebackLine> lines = {header(1)};
  for (uint64_t i = 0; i < 200; ++i) lines.push_back(frame(2 + i, i == 0 ? "/w/entry.py" : "/x/site-packages/lib.py"));
  auto t = traceback_closed_at(lines, 300);
  REQUIRE(t);
  CHECK(t->frames_total == 200);
  CHECK(t->frames.size() == kMaxTracebackFrames);
  CHECK(t->frames.front().file == "/w/entry.py");   // the entry point is kept
  CHECK(t->frames.back().log_line == 201);          // and the innermost frame
  REQUIRE(t->user_frame);
  CHECK(*t->user_frame == 0);
  lines[1] = frame(2, "/x/site-packages/lib.py");
  CHECK_FALSE(traceback_closed_at(lines, 300)->user_frame);
}

TEST_CASE("an unrecognised error shows its traceback with the user's own frame, on the suspect rank") {
  test::RepoEngine engine;
  test::TempDir dir;
  std::string log =
      "[rank0]: step 10 loss 2.1\n"
      "[rank1]: Traceback (most recent call last):\n"
      "[rank1]:   File \"/opt/conda/lib/python3.10/runpy.py\", line 196, in _run_module_as_main\n"
      "[rank0]: step 11 loss 2.0\n"
      "[rank1]:   File \"/workspace/proj/train.py\", line 50, in main\n"
      "[rank1]:     loss = step(batch)\n"
      "[rank1]:   File \"/workspace/proj/model/heads.py\", line 210, in forward\n"
      "[rank1]:     out = self.fuse(x)\n"
      "[rank1]:   File \"/opt/conda/lib/python3.10/site-packages/torch/nn/modules/module.py\", line 1518, in _wrapped_call_impl\n"
      "[rank1]: FrobnicationError: head mismatch 3 vs 4\n";
  Diagnosis d = analyze_paths({dir.write("job.log", log)}, engine.matcher, {}).diagnosis;
  CHECK(d.verdict == "unrecognized");
  REQUIRE(d.traceback);
  CHECK(d.traceback->exception_line == 10);
  CHECK(d.traceback->frames_total == 4);  // rank 0's line in the middle is not a frame
  REQUIRE(d.traceback->user_frame);
  CHECK(d.traceback->frames[*d.traceback->user_frame].file == "/workspace/proj/model/heads.py");
  std::string text = render_text(d, engine.lib, {});
  CHECK(text.find("/workspace/proj/model/heads.py:210 in forward   <- your code") != std::string::npos);
  CHECK(text.find("... 1 library frame") != std::string::npos);
  CHECK(diagnosis_to_json(d, engine.lib).at("traceback").at("user_frame") == 2);
}

TEST_CASE("two processes of one rank print interleaved tracebacks: each keeps its own frames") {
  // vllm-project/vllm-ascend#4891: the engine core's traceback and a worker's, line by line.
  test::RepoEngine engine;
  test::TempDir dir;
  std::string log =
      "(Worker pid=5094) Traceback (most recent call last):\n"
      "(EngineCore pid=4956) Traceback (most recent call last):\n"
      "(Worker pid=5094)   File \"/work/app/connector.py\", line 92, in register\n"
      "(EngineCore pid=4956)   File \"/work/app/core.py\", line 498, in __init__\n"
      "(Worker pid=5094)   File \"/work/app/spec.py\", line 440, in get_spec\n"
      "(Worker pid=5094) FrobnicationError: no attribute use_sfa\n";
  Diagnosis d = analyze_paths({dir.write("job.log", log)}, engine.matcher, {}).diagnosis;
  REQUIRE(d.traceback);
  CHECK(d.traceback->header_line == 1);
  REQUIRE(d.traceback->frames.size() == 2);
  CHECK(d.traceback->frames[0].file == "/work/app/connector.py");
  CHECK(d.traceback->frames[1].file == "/work/app/spec.py");
}

TEST_CASE("traceback frames are masked like every other log-derived string") {
  test::RepoEngine engine;
  test::TempDir dir;
  std::string log =
      "Traceback (most recent call last):\n"
      "  File \"/home/alice/proj/train.py\", line 50, in main\n"
      "FrobnicationError: head mismatch\n";
  Diagnosis d = analyze_paths({dir.write("job.log", log)}, engine.matcher, {}).diagnosis;
  REQUIRE(d.traceback);
  REQUIRE(d.traceback->frames.size() == 1);
  Redactor r;
  redact_diagnosis(d, r);
  CHECK(d.traceback->frames[0].file.find("alice") == std::string::npos);
  CHECK(d.traceback->frames[0].file.find("train.py") != std::string::npos);
}
