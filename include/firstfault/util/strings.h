#pragma once
// String helpers shared by every stage. Kept allocation-free where the hot path uses them.
#include <charconv>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace firstfault {

inline bool is_digit(char c) { return c >= '0' && c <= '9'; }
inline bool is_space(char c) { return c == ' ' || c == '\t'; }

// The compare's length is the prefix's own, a constant for a literal, so the compiler inlines
// it (called for every line by the prefix parsers).
inline bool starts_with(std::string_view s, std::string_view p) {
  return s.size() >= p.size() && std::char_traits<char>::compare(s.data(), p.data(), p.size()) == 0;
}

inline bool ends_with(std::string_view s, std::string_view p) {
  return s.size() >= p.size() && s.substr(s.size() - p.size()) == p;
}

// Parses an unsigned decimal number at the start of `s`; returns digits consumed (0 if none).
inline size_t parse_uint(std::string_view s, int64_t& out) {
  size_t i = 0;
  int64_t v = 0;
  while (i < s.size() && is_digit(s[i]) && i < 18) {
    v = v * 10 + (s[i] - '0');
    ++i;
  }
  if (i == 0) return 0;
  out = v;
  return i;
}

inline std::optional<int64_t> to_int(std::string_view s) {
  int64_t v = 0;
  auto r = std::from_chars(s.data(), s.data() + s.size(), v);
  if (r.ec != std::errc() || r.ptr != s.data() + s.size()) return std::nullopt;
  return v;
}

std::string_view trim(std::string_view s);

// Replaces invalid UTF-8 sequences with U+FFFD so JSON output always stays valid.
std::string sanitize_utf8(std::string_view s);

// The candidates closest to `word` by edit distance (at most 2, or a third of the word's length
// when longer), best first, at most `max` of them: the "did you mean" of the command line.
std::vector<std::string> closest_matches(std::string_view word, const std::vector<std::string>& candidates,
                                         size_t max = 3);

// Whether `s` can be used as a host name on a command line (ssh, scontrol, kubectl): 1-253
// characters of [A-Za-z0-9._-], starting with a letter or digit. Rejects what log text could
// smuggle in: options ("-oProxyCommand=..."), Slurm host lists ("gpu[001-999]"), lists, blanks.
bool plausible_host(std::string_view s);

// Removes control characters and escape sequences so log text cannot drive a terminal.
std::string strip_control(std::string_view s);

// "0-2,4-7" from a sorted list of ranks.
std::string format_ranges(const std::vector<int>& sorted_values);

// Truncates to at most `max` bytes on a UTF-8 boundary, adding "…" when cut.
std::string truncate_utf8(std::string_view s, size_t max);

std::vector<std::string> split_lines(std::string_view text);

// Re-flows text: lines of one paragraph (YAML block scalars break them anywhere) are joined,
// blank lines separate paragraphs, and list items ("- ", "* ", "1. ") start a new paragraph.
std::vector<std::string> paragraphs(std::string_view text);

}  // namespace firstfault
