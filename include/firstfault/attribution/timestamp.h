#pragma once
// Timestamps as logs print them: full wall-clock, wall-clock without a year (glog, c10, vLLM,
// syslog), or seconds since boot (dmesg). Only comparable kinds are compared.
#include <cstdint>
#include <string>

namespace firstfault {

struct Timestamp {
  enum Kind : uint8_t { kNone = 0, kFull, kNoYear, kBoot };
  int64_t ms = 0;  // kFull/kNoYear: ms since 1970 as printed (zone ignored; kNoYear uses year 2000); kBoot: ms since boot
  Kind kind = kNone;
  bool valid() const { return kind != kNone; }
};

// Howard Hinnant's days_from_civil. Inline: the line attributor calls it for nearly every line.
inline int64_t days_from_civil(int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  const int64_t era = (y >= 0 ? y : y - 399) / 400;
  const unsigned yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<int64_t>(doe) - 719468;
}
inline int64_t make_ms(int64_t y, unsigned mon, unsigned day, unsigned h, unsigned mi, unsigned s, unsigned ms) {
  return ((days_from_civil(y, mon, day) * 24 + h) * 60 + mi) * 60000LL + s * 1000LL + ms;
}
// Moves a year-less timestamp into `year` (kNoYear -> kFull).
Timestamp with_year(const Timestamp& t, int year);
int year_of(const Timestamp& t);
int month_of(const Timestamp& t);
// "2024-11-20T14:37:16.012" (kFull), "--11-20T14:37:16" (kNoYear), "boot+12345.678s" (kBoot), "" (kNone).
std::string format_timestamp(const Timestamp& t);
// The form every output prints: as format_timestamp, but a time whose year nobody knows (no line
// of the job has one and no input file dates it, e.g. on stdin) shows its time of day only,
// "14:37:16", never the ISO "--11-20" partial date that few parsers accept (docs/json-schema.md).
std::string format_output_time(const Timestamp& t);

}  // namespace firstfault
