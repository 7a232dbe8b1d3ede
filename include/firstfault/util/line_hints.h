#pragma once
// What a caller already knows a line cannot hold: ANSI escapes and NULs (stripped before
// matching) and carriage returns (which split a line into segments). Finding these bytes once per
// block, or in a pass that reads the line anyway (TemplateScanner), spares every line three
// searches of its own.
#include <cstddef>
#include <cstring>
#include <string_view>

namespace firstfault {

struct LineHints {
  bool may_have_escapes = true;  // ESC or NUL
  bool may_have_cr = true;       // '\r'
};

// The hints of one line, found by searching it (for lines no block-wide pass has read).
inline LineHints hints_of(std::string_view line) {
  LineHints h;
  h.may_have_escapes = std::memchr(line.data(), '\x1b', line.size()) || std::memchr(line.data(), '\0', line.size());
  h.may_have_cr = std::memchr(line.data(), '\r', line.size()) != nullptr;
  return h;
}

// Where byte `c` next occurs in a block, found with one memchr per occurrence rather than one
// search per line: escapes, NULs and carriage returns are rare in most logs, so most lines are
// known to be clean without being looked at. Queries must come with ascending offsets.
class ByteCursor {
 public:
  ByteCursor(std::string_view block, char c) : block_(block), c_(c) { seek(0); }
  // Whether [start, end) holds the byte.
  bool within(size_t start, size_t end) {
    if (next_ < start) seek(start);
    return next_ < end;
  }

 private:
  void seek(size_t from) {
    const void* p = from < block_.size() ? std::memchr(block_.data() + from, c_, block_.size() - from) : nullptr;
    next_ = p ? static_cast<size_t>(static_cast<const char*>(p) - block_.data()) : block_.size();
  }
  std::string_view block_;
  char c_;
  size_t next_ = 0;
};

// The hints of a block's lines, from three cursors over the block.
class BlockHints {
 public:
  explicit BlockHints(std::string_view block) : esc_(block, '\x1b'), nul_(block, '\0'), cr_(block, '\r') {}
  LineHints at(size_t start, size_t end) {
    LineHints h;
    h.may_have_escapes = esc_.within(start, end) || nul_.within(start, end);
    h.may_have_cr = cr_.within(start, end);
    return h;
  }

 private:
  ByteCursor esc_, nul_, cr_;
};

}  // namespace firstfault
