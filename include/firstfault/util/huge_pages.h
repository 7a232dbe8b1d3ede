#pragma once
// Large, long-lived buffers that are filled at start-up (the Hyperscan database, 5.5 MB for the
// built-in library) cost one page fault per 4 KiB page when first written: ~1,300 faults and
// 18 ms of start-up on a KVM guest, where a fault is expensive. Backed by transparent huge pages
// instead, the same buffer takes three faults (1.5 ms). docs/performance.md has the numbers.
#include <cstddef>

namespace firstfault {

// A zeroed buffer of `size` bytes in a mapping of its own, 2 MiB-aligned and advised for
// transparent huge pages (MADV_HUGEPAGE; ignored where THP is off, and then it is an ordinary
// mapping). The pointer is 64-byte aligned. Null when the mapping fails. malloc's signature, so
// it can be handed to libraries that take an allocator.
void* alloc_huge_backed(size_t size);
// Frees what alloc_huge_backed() returned (null is ignored).
void free_huge_backed(void* p);

// Grows malloc's main heap by about `bytes` in one step and backs that part with huge pages, so
// that the structures built next (the library, ~2x its snapshot) do not take one fault per 4 KiB
// page. glibc only, once per process; elsewhere (and under AddressSanitizer) it does nothing.
void reserve_heap_on_huge_pages(size_t bytes);

}  // namespace firstfault
