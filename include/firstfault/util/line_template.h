#pragma once
// The "Drain-style" template of a log line: what stays when everything that varies between
// occurrences of one message is masked. Triage clusters unrecognised jobs by it; the correlator
// uses it to tell one error every rank raised from different errors on different ranks.
#include <string>
#include <string_view>

namespace firstfault {

// Numbers, hex, paths, quoted values, addresses and rank prefixes masked; at most 200 bytes.
std::string line_template(std::string_view line);

}  // namespace firstfault
