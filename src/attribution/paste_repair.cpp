#include "firstfault/attribution/paste_repair.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "firstfault/attribution/line_attributor.h"
#include "firstfault/reader/log_reader.h"

namespace firstfault {

namespace {

using sv = std::string_view;

// How an escape introducer was written out: syslog's octal "#033[", C/Python "\033[" and
// "\x1b[", JSON "\u001b[", bash "\e[", caret notation "^[[", and the control's name "ESC[" (how
// some viewers and web pages show the byte; vllm-project/vllm-gaudi#451).
constexpr sv kIntroducers[] = {"#033[", "\\033[", "\\x1b[", "\\x1B[", "\\u001b[", "\\u001B[", "\\e[", "^[[", "ESC["};

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_letter(char c) { return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z'); }

// Length of a CSI's parameters and final letter at `s[i]` (after the introducer), 0 if none.
size_t csi_tail(sv s, size_t i, size_t max_params) {
  size_t j = i;
  while (j < s.size() && j - i <= max_params && (is_digit(s[j]) || s[j] == ';' || s[j] == '?')) ++j;
  if (j >= s.size() || j - i > max_params || !is_letter(s[j])) return 0;
  return j + 1 - i;
}

// Length of a remnant starting at s[i], 0 if none. A bare "[" (the ESC byte dropped) counts only
// for SGR with parameters ("[0m", "[1;31m") and erase-line ("[K", "[2K"), where text rarely has it.
size_t remnant_at(sv s, size_t i) {
  for (sv intro : kIntroducers)
    if (s.compare(i, intro.size(), intro) == 0)
      if (size_t t = csi_tail(s, i + intro.size(), 16)) return intro.size() + t;
  if (s[i] != '[' || (i > 0 && s[i - 1] == '\x1b')) return 0;  // a real escape is strip_ansi()'s
  size_t t = csi_tail(s, i + 1, 12);
  if (!t) return 0;
  char final = s[i + t];
  bool sgr = final == 'm' && t >= 2;
  bool erase = final == 'K' && (t == 1 || (t == 2 && is_digit(s[i + 1])));
  return sgr || erase ? 1 + t : 0;
}

size_t code_points(sv line) {
  size_t n = 0;
  for (char c : line) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
  return n;
}

sv trim_cr(sv line) { return !line.empty() && line.back() == '\r' ? line.substr(0, line.size() - 1) : line; }

}  // namespace

// A no-break space (U+00A0): what a log copied from a rendered web page (a GitHub issue, a
// forum) has instead of its spaces; nothing a program prints to a terminal uses it.
constexpr sv kNoBreakSpace = "\xC2\xA0";

bool has_escape_remnants(sv text) {
  for (sv intro : kIntroducers)
    if (text.find(intro) != sv::npos) return true;
  if (text.find(kNoBreakSpace) != sv::npos) return true;
  // The reset that ends every coloured span, with its ESC dropped (not a real escape's).
  for (size_t at = text.find("[0m"); at != sv::npos; at = text.find("[0m", at + 1))
    if (at == 0 || text[at - 1] != '\x1b') return true;
  return false;
}

namespace {
// The colour escapes written out as text (see kIntroducers), removed.
void strip_colour_remnants(sv line, std::string& out) {
  size_t i = 0;
  while (i < line.size()) {
    const char* p = static_cast<const char*>(std::memchr(line.data() + i, '[', line.size() - i));
    size_t bracket = p ? static_cast<size_t>(p - line.data()) : line.size();
    // An introducer ends in '['; step back to where the longest one would start.
    size_t from = bracket;
    size_t n = 0;
    if (bracket < line.size())
      for (size_t back = std::min<size_t>(6, bracket - i) + 1; back-- > 0 && !n;)
        if ((n = remnant_at(line, bracket - back))) from = bracket - back;
    if (!n) {
      size_t to = bracket < line.size() ? bracket + 1 : bracket;
      out.append(line.substr(i, to - i));
      i = to;
      continue;
    }
    out.append(line.substr(i, from - i));
    i = from + n;
  }
}
}  // namespace

void strip_escape_remnants(sv line, std::string& out) {
  const size_t start = out.size();
  strip_colour_remnants(line, out);
  // One pass over what was appended, each no-break space written as one space.
  size_t w = start;
  for (size_t r = start; r < out.size(); ++r) {
    if (out.compare(r, kNoBreakSpace.size(), kNoBreakSpace) == 0) {
      out[w++] = ' ';
      r += kNoBreakSpace.size() - 1;
    } else {
      out[w++] = out[r];
    }
  }
  out.resize(w);
}

bool begins_record(sv line) {
  line = trim_cr(line);
  if (line.empty()) return true;
  std::string scratch;
  LineAttributor probe;
  Attribution a = probe.attribute(strip_ansi(line, scratch));
  // A process tag alone begins one too (Ray's "(Worker pid=5094) ", which names no rank or host).
  if (a.rank >= 0 || a.time.valid() || !a.host.empty() || a.severity || a.pid >= 0) return true;
  for (sv head : {sv("Traceback (most recent call last)"), sv("During handling of"), sv("The above exception")})
    if (line.compare(0, head.size(), head) == 0) return true;
  return false;
}

// srun --label's "  3: " (also a wrapped number's tail: "1292: ...").
bool srun_label_start(sv s) {
  size_t i = 0;
  while (i < s.size() && i < 4 && s[i] == ' ') ++i;
  size_t digits = i;
  while (i < s.size() && is_digit(s[i])) ++i;
  return i > digits && i - digits <= 6 && i + 1 < s.size() && s[i] == ':' && s[i + 1] == ' ';
}

// A table's rule: only dashes, equals signs, pluses, bars and spaces, mostly dashes or equals.
bool table_rule(sv line) {
  size_t marks = 0;
  for (char c : line) {
    if (c == '-' || c == '=') ++marks;
    else if (c != ' ' && c != '+' && c != '|' && c != '\r') return false;
  }
  return marks >= 8 && marks * 2 > line.size();
}

// Whether `line` is the rest of `wrapped`, a line that filled the width: it does not begin a
// record, and does not begin as `wrapped` did.
bool continues(sv wrapped, sv line) {
  // A wrap cuts a message anywhere, so its rest almost never begins with the same dozen
  // characters as the row it was cut from; a log's next record often does (the same host, pid
  // and thread prefix: "node01: host:108:593 [0] NCCL ..."), whatever its length.
  constexpr size_t kSameStart = 12;
  if (line.size() >= kSameStart && wrapped.compare(0, kSameStart, line.substr(0, kSameStart)) == 0 &&
      line.substr(0, kSameStart).find_first_not_of(" \t") != sv::npos)
    return false;
  // A text table's rows and borders all fill the same width (Triton's model status, sacct):
  // a line that ends at the table's edge is whole, and so is a rule under or over a row
  // ("------------ ---------- -----", "+----+----+").
  if (!wrapped.empty() && (wrapped.back() == '|' || wrapped.back() == '+')) return false;
  if (table_rule(line) || table_rule(wrapped)) return false;
  // "1292: indexSelect..." is the rest of a number the wrap cut, unless the log labels its lines so.
  if (srun_label_start(line) && !srun_label_start(wrapped)) return true;
  return !begins_record(line);
}

size_t hard_wrap_width(sv block) {
  std::vector<std::pair<size_t, sv>> lines;  // code points, text
  size_t widest = 0;
  for_each_line(block, [&](sv line) {
    line = trim_cr(line);
    size_t n = code_points(line);
    widest = std::max(widest, n);
    lines.push_back({n, line});
  });
  // Terminals and notebooks wrap at 60 columns or more; wider than a few hundred is not a screen.
  if (widest < 60 || widest > 400) return 0;
  size_t at_width = 0, continued = 0;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (lines[i].first != widest) continue;
    ++at_width;
    if (i + 1 < lines.size() && continues(lines[i].second, lines[i + 1].second)) ++continued;
  }
  // One wrapped line proves a width only when it is a terminal's usual one.
  bool usual = false;
  for (size_t w : {80, 100, 120, 132, 140, 150, 160, 180, 200, 240})
    usual = usual || widest == w;
  return (at_width >= 2 || usual) && continued * 2 > at_width ? widest : 0;
}

namespace {
// The width counts text, not the blanks a wrap may leave at the end of a row.
sv without_trailing_blanks(sv s) {
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

// How `next` follows `row` in a text word-wrapped at `width`: as a line of its own (a record, an
// indented line: code and frames are), as the rest of a row broken where its first word would
// not fit (a wrap), or as the rest of a row that word would have fitted on (a log's own
// multi-line message, which is no wrap).
enum class Follows { kOwnLine, kWrapped, kWouldHaveFitted };
Follows follows(sv row, sv next, size_t width) {
  if (row.empty() || next.empty() || next[0] == ' ' || next[0] == '\t' || !continues(row, next)) return Follows::kOwnLine;
  size_t with_word = code_points(without_trailing_blanks(row)) + 1 + code_points(next.substr(0, next.find(' ')));
  return with_word > width ? Follows::kWrapped : Follows::kWouldHaveFitted;
}
}  // namespace

size_t word_wrap_width(sv block) {
  std::vector<sv> lines;
  size_t widest = 0, widest_raw = 0;
  for_each_line(block, [&](sv line) {
    line = trim_cr(line);
    widest = std::max(widest, code_points(without_trailing_blanks(line)));
    widest_raw = std::max(widest_raw, code_points(line));
    lines.push_back(line);
  });
  if (widest < 60 || widest > 400) return 0;
  size_t wrapped = 0, not_wrapped = 0, kept_space = 0, short_of_width = 0;
  for (size_t i = 0; i + 1 < lines.size(); ++i) {
    sv row = lines[i], next = lines[i + 1];
    // A word as long as a third of the width fits on no row: its line proves nothing (a list
    // of long names, one per line, as Horovod's stalled-ops report prints them).
    if (code_points(next.substr(0, next.find(' '))) * 3 > widest) continue;
    switch (follows(row, next, widest)) {
      case Follows::kOwnLine: break;
      case Follows::kWrapped:
        ++wrapped;
        kept_space += row.back() == ' ';
        short_of_width += code_points(row) < widest_raw;
        break;
      case Follows::kWouldHaveFitted: ++not_wrapped; break;
    }
  }
  // Two wrapped rows at least when the wrap kept its spaces (a trailing blank shows it), three
  // otherwise; few rows that go on although the next word would have fitted; and wrapped rows
  // short of the widest (a third of them at least), which a wrap at a fixed column does not leave.
  bool enough = wrapped >= 3 || (wrapped >= 2 && kept_space >= 1);
  return enough && short_of_width >= 2 && short_of_width * 3 >= wrapped && not_wrapped * 4 <= wrapped ? widest : 0;
}

bool repair_paste(sv block, bool remnants, size_t width, std::string& out, bool words) {
  out.clear();
  out.reserve(block.size());
  std::string stripped, joined;
  size_t joined_lines = 0;  // physical lines in `joined`
  bool changed = false;
  // A logical line, then an empty line for each continuation it absorbed.
  auto flush = [&] {
    if (!joined_lines) return;
    out.append(joined);
    out.append(joined_lines, '\n');
    joined.clear();
    joined_lines = 0;
  };
  std::string previous;   // the previous physical line, when it filled the width
  bool wrapped = false;
  for_each_line(block, [&](sv line) {
    sv text = trim_cr(line);
    if (remnants) {
      stripped.clear();
      strip_escape_remnants(text, stripped);
      changed = changed || stripped.size() != text.size();
      text = stripped;
    }
    if (wrapped && (words ? follows(previous, text, width) == Follows::kWrapped : continues(previous, text))) {
      changed = true;
      if (words && previous.back() != ' ') joined.push_back(' ');
    } else {
      flush();
    }
    joined.append(text);
    ++joined_lines;
    const size_t n = code_points(text);
    wrapped = width && (words ? n > 0 : n == width);
    if (wrapped) previous.assign(text);
  });
  flush();
  if (!block.empty() && block.back() != '\n' && !out.empty()) out.pop_back();
  return changed;
}

}  // namespace firstfault
