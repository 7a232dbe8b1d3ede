#pragma once
// Logs pasted into issues, notebooks and chat are not the bytes the job wrote: a terminal or a
// notebook hard-wrapped long lines at a fixed width, and whatever stored them wrote the colour
// escapes out as text ("#033[2m" from syslog, "\x1b[0m" or "\u001b[31m" from a repr, "^[[0m",
// or a bare "[0m" where the ESC byte was dropped). Both split or pollute the messages the
// library matches. The repair runs on the first block of an input (a paste is small) and on
// every later block of an input where remnants were found; a log written by the job itself
// passes through untouched.
#include <cstddef>
#include <string>
#include <string_view>

namespace firstfault {

// Whether `text` holds colour escapes written out as text, or no-break spaces (U+00A0).
bool has_escape_remnants(std::string_view text);

// `line` without its escape remnants (appended to `out`), and with the no-break spaces a copy
// from a rendered web page leaves as plain spaces; real ESC sequences are left for strip_ansi().
void strip_escape_remnants(std::string_view line, std::string& out);

// The column at which the block's lines were hard-wrapped, or 0: the longest line length (in
// code points) is shared by several lines (or by one, at a terminal's usual width), and most of
// those lines are followed by a line that does not begin like a new record (no rank, time or
// level prefix of its own, and not the same start again).
size_t hard_wrap_width(std::string_view block);

// The width at which the block's lines were word-wrapped (an editor, a mail client or a
// terminal that breaks at spaces), or 0: several lines go on in a line that does not begin like
// a record nor with an indent, and whose first word would not have fitted within the widest
// line, several of them shorter than the widest (which a fixed-column wrap does not leave).
// Consulted before hard_wrap_width().
size_t word_wrap_width(std::string_view block);

// Whether `line` begins like a record of its own rather than the rest of a wrapped line.
bool begins_record(std::string_view line);

// The block repaired into `out`, with as many lines as it had (so line numbers hold): escape
// remnants removed when `remnants`, and each line wrapped at `width` (when non-zero) joined with
// its continuation, which is left as an empty line. Returns false (and leaves `out` unspecified)
// when nothing changed.
// With `words`, a line is joined with a continuation whose first word would not have fitted
// within `width`, one space standing for the break unless the line kept its own.
bool repair_paste(std::string_view block, bool remnants, size_t width, std::string& out, bool words = false);

}  // namespace firstfault
