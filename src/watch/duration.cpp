#include "firstfault/watch/duration.h"

#include <fmt/format.h>

#include <cmath>

#include "firstfault/util/strings.h"

namespace firstfault {

Result<std::chrono::milliseconds> parse_duration(std::string_view text) {
  auto bad = [&] { return Error{fmt::format("'{}' is not a duration (e.g. 500ms, 90s, 10m, 1h30m)", text)}; };
  std::string_view s = trim(text);
  if (s.empty()) return bad();
  double total_ms = 0;
  size_t i = 0;
  bool any = false;
  while (i < s.size()) {
    size_t start = i;
    while (i < s.size() && (is_digit(s[i]) || s[i] == '.')) ++i;
    if (i == start) return bad();
    std::string number(s.substr(start, i - start));
    char* end = nullptr;
    double v = std::strtod(number.c_str(), &end);
    if (end != number.c_str() + number.size() || !std::isfinite(v)) return bad();
    size_t unit_start = i;
    while (i < s.size() && s[i] >= 'a' && s[i] <= 'z') ++i;
    std::string_view unit = s.substr(unit_start, i - unit_start);
    double scale = 0;
    if (unit.empty()) {
      // "--stall 10": ten what? A unit is required, so a typo never becomes a 10-second stall.
      return Error{fmt::format("'{}' has no unit: write {}s, {}m or {}h (or ms)", text, number, number, number)};
    } else if (unit == "ms") {
      scale = 1;
    } else if (unit == "s") {
      scale = 1000;
    } else if (unit == "m") {
      scale = 60'000;
    } else if (unit == "h") {
      scale = 3'600'000;
    } else if (unit == "d") {
      scale = 86'400'000;
    } else {
      return bad();
    }
    total_ms += v * scale;
    any = true;
  }
  if (total_ms > 365.0 * 86'400'000) return Error{fmt::format("'{}' is longer than a year", text)};
  return std::chrono::milliseconds(static_cast<int64_t>(std::llround(total_ms)));
}

std::string format_duration(std::chrono::milliseconds d) {
  int64_t ms = d.count();
  if (ms < 0) ms = 0;
  if (ms < 1000) return fmt::format("{}ms", ms);
  int64_t s = ms / 1000;
  if (s < 60) return fmt::format("{}s", s);
  if (s < 3600) return fmt::format("{}m {}s", s / 60, s % 60);
  if (s < 86400) return fmt::format("{}h {}m", s / 3600, (s % 3600) / 60);
  return fmt::format("{}d {}h", s / 86400, (s % 86400) / 3600);
}

}  // namespace firstfault
