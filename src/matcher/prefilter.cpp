#include "firstfault/matcher/prefilter.h"

namespace firstfault {

// Placeholder until the Hyperscan prefilter lands: without it every line is matched by RE2.
std::unique_ptr<Prefilter> Prefilter::build(const Library&) { return nullptr; }

}  // namespace firstfault
