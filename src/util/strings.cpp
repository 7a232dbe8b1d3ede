#include "firstfault/util/strings.h"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>

namespace firstfault {

std::string_view trim(std::string_view s) {
  size_t b = 0, e = s.size();
  while (b < e && (is_space(s[b]) || s[b] == '\n' || s[b] == '\r')) ++b;
  while (e > b && (is_space(s[e - 1]) || s[e - 1] == '\n' || s[e - 1] == '\r')) --e;
  return s.substr(b, e - b);
}

namespace {
// Length of the valid UTF-8 sequence starting at s[i], or 0 when it is invalid.
size_t utf8_seq_len(std::string_view s, size_t i) {
  unsigned char c = static_cast<unsigned char>(s[i]);
  if (c < 0x80) return 1;
  size_t n;
  if ((c & 0xE0) == 0xC0 && c >= 0xC2) n = 2;
  else if ((c & 0xF0) == 0xE0) n = 3;
  else if ((c & 0xF8) == 0xF0 && c <= 0xF4) n = 4;
  else return 0;
  if (i + n > s.size()) return 0;
  for (size_t k = 1; k < n; ++k)
    if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return 0;
  unsigned char c1 = static_cast<unsigned char>(s[i + 1]);
  if (n == 3 && c == 0xE0 && c1 < 0xA0) return 0;  // overlong
  if (n == 3 && c == 0xED && c1 >= 0xA0) return 0;  // surrogates
  if (n == 4 && c == 0xF0 && c1 < 0x90) return 0;   // overlong
  if (n == 4 && c == 0xF4 && c1 >= 0x90) return 0;  // > U+10FFFF
  return n;
}
}  // namespace

std::string sanitize_utf8(std::string_view s) {
  // ASCII prefix in one copy: most log text never reaches the slow path below.
  size_t i = 0;
  while (i < s.size() && static_cast<unsigned char>(s[i]) < 0x80) ++i;
  std::string out;
  out.reserve(s.size());
  out.append(s.data(), i);
  while (i < s.size()) {
    size_t n = utf8_seq_len(s, i);
    if (n == 0) {
      out += "\xEF\xBF\xBD";
      ++i;
    } else {
      out.append(s.data() + i, n);
      i += n;
    }
  }
  return out;
}

namespace {
size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diag + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diag = up;
    }
  }
  return row[b.size()];
}
}  // namespace

std::vector<std::string> closest_matches(std::string_view word, const std::vector<std::string>& candidates, size_t max) {
  size_t limit = std::max<size_t>(2, word.size() / 3);
  std::vector<std::pair<size_t, std::string>> scored;
  for (const auto& c : candidates) {
    // Length alone rules most out before the quadratic distance.
    size_t gap = c.size() > word.size() ? c.size() - word.size() : word.size() - c.size();
    if (gap > limit) continue;
    if (size_t d = edit_distance(word, c); d <= limit) scored.push_back({d, c});
  }
  std::stable_sort(scored.begin(), scored.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<std::string> out;
  for (size_t i = 0; i < scored.size() && i < max; ++i) out.push_back(scored[i].second);
  return out;
}

bool plausible_host(std::string_view s) {
  if (s.empty() || s.size() > 253 || !std::isalnum(static_cast<unsigned char>(s.front()))) return false;
  return std::all_of(s.begin(), s.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-';
  });
}

std::string strip_control(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c == 0x1b) {
      // Skip CSI / OSC / single-char escapes entirely.
      if (i + 1 < s.size() && s[i + 1] == '[') {
        i += 2;
        while (i < s.size() && !(s[i] >= '@' && s[i] <= '~')) ++i;
      } else if (i + 1 < s.size() && s[i + 1] == ']') {
        i += 2;
        while (i < s.size() && s[i] != '\a' && !(s[i] == 0x1b && i + 1 < s.size() && s[i + 1] == '\\')) ++i;
        if (i < s.size() && s[i] == 0x1b) ++i;
      } else {
        ++i;
      }
      continue;
    }
    if (c < 0x20 && c != '\t') continue;
    if (c == 0x7f) continue;
    // C1 control characters encoded in UTF-8 (U+0080..U+009F) can also drive terminals.
    if (c == 0xC2 && i + 1 < s.size()) {
      unsigned char d = static_cast<unsigned char>(s[i + 1]);
      if (d >= 0x80 && d <= 0x9F) {
        ++i;
        continue;
      }
    }
    // Bidirectional controls reorder what a reader sees ("Trojan Source"): U+200E/200F,
    // U+202A..202E, U+2066..2069.
    if (c == 0xE2 && i + 2 < s.size()) {
      unsigned char d = static_cast<unsigned char>(s[i + 1]), e = static_cast<unsigned char>(s[i + 2]);
      if ((d == 0x80 && (e == 0x8E || e == 0x8F || (e >= 0xAA && e <= 0xAE))) || (d == 0x81 && e >= 0xA6 && e <= 0xA9)) {
        i += 2;
        continue;
      }
    }
    out.push_back(static_cast<char>(c));
  }
  return out;
}

std::string format_ranges(const std::vector<int>& v) {
  std::string out;
  for (size_t i = 0; i < v.size();) {
    size_t j = i;
    while (j + 1 < v.size() && v[j + 1] == v[j] + 1) ++j;
    if (!out.empty()) out += ',';
    if (j == i) out += fmt::format("{}", v[i]);
    else out += fmt::format("{}-{}", v[i], v[j]);
    i = j + 1;
  }
  return out;
}

std::string truncate_utf8(std::string_view s, size_t max) {
  if (s.size() <= max) return std::string(s);
  size_t cut = max;
  while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xC0) == 0x80) --cut;
  return std::string(s.substr(0, cut)) + "\xE2\x80\xA6";
}

std::vector<std::string> split_lines(std::string_view text) {
  std::vector<std::string> out;
  size_t start = 0;
  for (size_t i = 0; i <= text.size(); ++i) {
    if (i == text.size() || text[i] == '\n') {
      if (i > start || i < text.size()) out.emplace_back(text.substr(start, i - start));
      start = i + 1;
    }
  }
  return out;
}

std::vector<std::string> paragraphs(std::string_view text) {
  std::vector<std::string> out;
  bool open = false;
  for (const auto& raw : split_lines(text)) {
    std::string_view l = trim(raw);
    if (l.empty()) {
      open = false;
      continue;
    }
    bool item = starts_with(l, "- ") || starts_with(l, "* ") || (l.size() > 2 && is_digit(l[0]) && l.find(". ") < 4);
    if (open && !item) out.back().append(" ").append(l);
    else out.emplace_back(l);
    open = true;
  }
  return out;
}

}  // namespace firstfault
