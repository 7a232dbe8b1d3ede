#pragma once
// Durations on the command line ("10m", "90s", "1h30m", "500ms"; a bare number is seconds) and
// in alerts ("10m 0s").
#include <chrono>
#include <string>
#include <string_view>

#include "firstfault/util/result.h"

namespace firstfault {

Result<std::chrono::milliseconds> parse_duration(std::string_view text);

// "850ms", "42s", "10m 5s", "2h 3m": whole units, for people.
std::string format_duration(std::chrono::milliseconds d);

}  // namespace firstfault
