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

int64_t days_from_civil(int64_t y, unsigned m, unsigned d);
int64_t make_ms(int64_t y, unsigned mon, unsigned day, unsigned h, unsigned mi, unsigned s, unsigned ms);
// Moves a year-less timestamp into `year` (kNoYear -> kFull).
Timestamp with_year(const Timestamp& t, int year);
int year_of(const Timestamp& t);
int month_of(const Timestamp& t);
// "2024-11-20T14:37:16.012" (kFull), "--11-20T14:37:16" (kNoYear), "boot+12345.678s" (kBoot), "" (kNone).
std::string format_timestamp(const Timestamp& t);

}  // namespace firstfault
