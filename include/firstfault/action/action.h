#pragma once
// Between stage 5 (correlator) and stage 6 (renderers): what a scheduler should do with the job,
// decided from the diagnosed entry's `action:` and the initiating evidence. The correlator fills
// Diagnosis::action with it; renderers only print it.
#include <string>

#include "firstfault/correlator/diagnosis.h"

namespace firstfault {

// The action for a finished diagnosis. A diagnosed entry gives the kind; for restart-excluding
// the failed host (the initiating rank's, else the one its first evidence names) and, for a
// hardware entry, the GPUs its root lines on that rank or host name. Unrecognised and clean
// logs get investigate.
Action decide_action(const Diagnosis& d);

// The GPU a log line names: a PCI address "0000:bd:00" (an Xid's "PCI:0000:bd:00", NVML's
// "GPU 0000:BD:00.0", NCCL's "busId bd000", a `pci` capture), else a CUDA device index "cuda:3"
// (NCCL's "cudaDev 3" or its "host:pid:tid [3]" device tag); "" when it names none.
std::string gpu_named_by(const Evidence& e);

}  // namespace firstfault
