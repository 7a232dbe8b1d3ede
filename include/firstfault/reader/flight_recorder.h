#pragma once
// Stage 1 (reader): PyTorch Flight Recorder dumps (TORCH_NCCL_TRACE_BUFFER_SIZE > 0 and
// TORCH_NCCL_DUMP_ON_TIMEOUT=1 write one per rank, `${TORCH_NCCL_DEBUG_INFO_TEMP_FILE}<rank>`,
// as a pickle; `_dump_nccl_trace_json()` gives the same content as JSON). A dump is recognised by
// its content, not its name, and read as a few text lines that say, per process group, how far
// the rank got: its last enqueued, started and completed collective, and the oldest one still
// pending with its op, sizes and Python stack. Those lines are matched like any log line
// (signatures/common/pytorch-nccl.yaml, flight_recorder_pg_status), so a rank whose dump stops
// below the collective the others wait in is found by the same rung as a watchdog's counters.
#include <string>
#include <string_view>

#include "firstfault/util/result.h"

namespace firstfault {

// Whether the first block of an input is a Flight Recorder dump (pickle or JSON).
bool looks_like_flight_recorder_dump(std::string_view head);

// The dump as text lines (each ending in '\n'), or an error saying why it cannot be read.
Result<std::string> flight_recorder_to_text(std::string_view dump);

}  // namespace firstfault
