#include "firstfault/attribution/timestamp.h"

#include <fmt/format.h>

namespace firstfault {

namespace {
struct Civil {
  int64_t y;
  unsigned m, d;
};
Civil civil_from_days(int64_t z) {
  z += 719468;
  const int64_t era = (z >= 0 ? z : z - 146096) / 146097;
  const unsigned doe = static_cast<unsigned>(z - era * 146097);
  const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
  const int64_t y = static_cast<int64_t>(yoe) + era * 400;
  const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
  const unsigned mp = (5 * doy + 2) / 153;
  const unsigned d = doy - (153 * mp + 2) / 5 + 1;
  const unsigned m = mp + (mp < 10 ? 3 : -9);
  return {y + (m <= 2), m, d};
}
int64_t floor_div(int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); }
}  // namespace

int year_of(const Timestamp& t) { return static_cast<int>(civil_from_days(floor_div(t.ms, 86400000LL)).y); }
int month_of(const Timestamp& t) { return static_cast<int>(civil_from_days(floor_div(t.ms, 86400000LL)).m); }

Timestamp with_year(const Timestamp& t, int year) {
  if (t.kind != Timestamp::kNoYear) return t;
  int64_t day = floor_div(t.ms, 86400000LL);
  int64_t in_day = t.ms - day * 86400000LL;
  Civil c = civil_from_days(day);
  unsigned d = c.d;
  bool leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
  if (c.m == 2 && d == 29 && !leap) d = 28;
  Timestamp out;
  out.kind = Timestamp::kFull;
  out.ms = days_from_civil(year, c.m, d) * 86400000LL + in_day;
  return out;
}

std::string format_timestamp(const Timestamp& t) {
  if (t.kind == Timestamp::kNone) return "";
  if (t.kind == Timestamp::kBoot) return fmt::format("boot+{}.{:03}s", t.ms / 1000, t.ms % 1000);
  int64_t day = floor_div(t.ms, 86400000LL);
  int64_t in_day = t.ms - day * 86400000LL;
  Civil c = civil_from_days(day);
  unsigned h = static_cast<unsigned>(in_day / 3600000), mi = static_cast<unsigned>(in_day / 60000 % 60),
           s = static_cast<unsigned>(in_day / 1000 % 60), ms = static_cast<unsigned>(in_day % 1000);
  std::string frac = ms ? fmt::format(".{:03}", ms) : "";
  if (t.kind == Timestamp::kNoYear) return fmt::format("--{:02}-{:02}T{:02}:{:02}:{:02}{}", c.m, c.d, h, mi, s, frac);
  return fmt::format("{:04}-{:02}-{:02}T{:02}:{:02}:{:02}{}", c.y, c.m, c.d, h, mi, s, frac);
}

std::string format_output_time(const Timestamp& t) {
  std::string full = format_timestamp(t);
  if (t.kind == Timestamp::kNoYear) return full.substr(full.find('T') + 1);
  return full;
}

}  // namespace firstfault
