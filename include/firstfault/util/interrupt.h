#pragma once
// Ctrl-C. The CLI's SIGINT handler sets it (without SA_RESTART, so a read or an open that waits on
// a FIFO or a silent pipe returns EINTR); the reader then stops waiting and the pipeline at its
// next block, and what was read is still diagnosed.
#include <atomic>

namespace firstfault {

extern std::atomic<bool> g_interrupted;

}  // namespace firstfault
