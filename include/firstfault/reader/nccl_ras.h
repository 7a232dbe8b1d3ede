#pragma once
// Stage 1 (reader): NCCL RAS reports in their JSON form (`ncclras -f json`, NCCL >= 2.28.7;
// docs/userguide/source/troubleshooting/ras.rst in github.com/NVIDIA/nccl). A report is recognised
// by its content and read as the lines of RAS's text form that say the same thing ("The missing
// rank: N", "Process P on node H managing GPU G", "... considered dead ...", "Communicator ranks
// have different collective operation counts"), so nccl-ras-rank-missing reads both forms alike.
#include <string>
#include <string_view>

#include "firstfault/util/result.h"

namespace firstfault {

// Whether the first block of an input is a RAS JSON report (a status report, not a monitor event).
bool looks_like_nccl_ras_json(std::string_view head);

// The report as text lines (each ending in '\n'), or an error saying why it cannot be read.
Result<std::string> nccl_ras_json_to_text(std::string_view report);

}  // namespace firstfault
