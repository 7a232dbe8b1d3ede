#include "firstfault/util/interrupt.h"

namespace firstfault {

std::atomic<bool> g_interrupted{false};

}  // namespace firstfault
