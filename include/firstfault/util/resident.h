#pragma once
// Read-only data compiled into the binary (the library snapshot, the Hyperscan database) is
// read once at start-up and then copied into the structures that use it; its pages would stay
// in the process's resident set for the whole run (8 MB of the 64 MiB bound).
#include <string_view>

namespace firstfault {

// Tells the kernel that the whole pages inside `embedded` are not needed now: they leave the
// resident set and are read again from the binary if ever touched (MADV_DONTNEED on a private
// file mapping that was never written). Only for bytes in the binary's read-only data.
void drop_embedded_pages(std::string_view embedded);

}  // namespace firstfault
