#pragma once
// The Python traceback that an exception line closes, rebuilt from the frame lines the matcher
// found (py_traceback_header, py_traceback_frame): what a person reads first is the innermost
// frame in their own code, not the library frames around it or only the last line.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace firstfault {

struct TracebackFrame {
  std::string file;
  uint64_t lineno = 0;   // in `file`
  std::string func;
  bool library = false;  // an installed package, the standard library or a frozen module
  uint64_t log_line = 0; // where the frame line is in the log
};

struct Traceback {
  uint64_t header_line = 0;     // "Traceback (most recent call last):" in the log
  uint64_t exception_line = 0;  // the exception line that closes it
  size_t frames_total = 0;      // frames in the log (frames holds at most kMaxFrames of them)
  std::vector<TracebackFrame> frames;  // outermost first, as Python prints them
  // The innermost frame outside library code (the place to look); none when every frame is library code.
  std::optional<size_t> user_frame;
};

inline constexpr size_t kMaxTracebackFrames = 64;
// A traceback is at most this many log lines from its header to its exception (chained
// exceptions print several, each with its own header).
inline constexpr uint64_t kMaxTracebackLines = 400;

// Code a user does not own: site-packages/dist-packages, the interpreter's own lib/pythonX.Y,
// frozen and synthetic modules ("<frozen runpy>", "<string>").
bool is_library_frame(std::string_view file);

// One traceback line seen in a rank's stream: a header (no frame) or a frame.
struct TracebackLine {
  uint64_t log_line = 0;
  bool header = false;
  TracebackFrame frame;
};

// The traceback closed by the exception at `exception_line`, from the header and frame lines of
// the same input and rank (any order): the last header before the exception within
// kMaxTracebackLines and the frames between them, each marked library or not. None without
// such a header or frames.
std::optional<Traceback> traceback_closed_at(const std::vector<TracebackLine>& lines, uint64_t exception_line);

}  // namespace firstfault
