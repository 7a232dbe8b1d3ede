#include "firstfault/correlator/traceback.h"

#include <algorithm>

namespace firstfault {

bool is_library_frame(std::string_view file) {
  if (file.empty() || file.front() == '<') return true;
  for (std::string_view marker : {"/site-packages/", "/dist-packages/", "/lib/python", "/lib64/python"})
    if (file.find(marker) != std::string_view::npos) return true;
  return false;
}

std::optional<Traceback> traceback_closed_at(const std::vector<TracebackLine>& lines, uint64_t exception_line) {
  const TracebackLine* header = nullptr;
  for (const TracebackLine& l : lines)
    if (l.header && l.log_line < exception_line && exception_line - l.log_line <= kMaxTracebackLines &&
        (!header || l.log_line > header->log_line))
      header = &l;
  if (!header) return std::nullopt;
  std::vector<const TracebackFrame*> frames;
  for (const TracebackLine& l : lines)
    if (!l.header && l.log_line > header->log_line && l.log_line < exception_line) frames.push_back(&l.frame);
  if (frames.empty()) return std::nullopt;
  std::sort(frames.begin(), frames.end(),
            [](const TracebackFrame* a, const TracebackFrame* b) { return a->log_line < b->log_line; });

  Traceback t;
  t.header_line = header->log_line;
  t.exception_line = exception_line;
  t.frames_total = frames.size();
  // Keep both ends when the stack is deep: the entry point and the innermost frames say most.
  size_t keep_head = kMaxTracebackFrames / 4;
  for (size_t i = 0; i < frames.size(); ++i)
    if (frames.size() <= kMaxTracebackFrames || i < keep_head || i >= frames.size() - (kMaxTracebackFrames - keep_head))
    {
      t.frames.push_back(*frames[i]);
      t.frames.back().library = is_library_frame(t.frames.back().file);
    }
  for (size_t i = t.frames.size(); i-- > 0;)
    if (!t.frames[i].library) {
      t.user_frame = i;
      break;
    }
  return t;
}

}  // namespace firstfault
