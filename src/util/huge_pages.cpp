#include "firstfault/util/huge_pages.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdlib>

namespace firstfault {

namespace {
constexpr size_t kHugePage = size_t{2} << 20;
constexpr size_t kHeader = 64;  // the mapping's base and length, before the returned pointer

struct MappingHeader {
  void* base;
  size_t length;
};

// `x` rounded up / down to a multiple of `align`, a power of two.
uintptr_t align_up(uintptr_t x, uintptr_t align) { return (x + align - 1) & ~(align - 1); }
uintptr_t align_down(uintptr_t x, uintptr_t align) { return x & ~(align - 1); }
}  // namespace

void* alloc_huge_backed(size_t size) {
  // One extra huge page of address space, so that a 2 MiB-aligned start exists inside it.
  size_t used = align_up(size + kHeader, kHugePage);
  size_t length = used + kHugePage;
  void* base = ::mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (base == MAP_FAILED) return nullptr;
  auto* aligned = reinterpret_cast<char*>(align_up(reinterpret_cast<uintptr_t>(base), kHugePage));
  ::madvise(aligned, used, MADV_HUGEPAGE);  // advice only: without THP the pages are 4 KiB
  auto* header = reinterpret_cast<MappingHeader*>(aligned);
  header->base = base;
  header->length = length;
  return aligned + kHeader;
}

void free_huge_backed(void* p) {
  if (!p) return;
  const auto* header = reinterpret_cast<const MappingHeader*>(static_cast<char*>(p) - kHeader);
  ::munmap(header->base, header->length);
}

namespace {
#ifndef MADV_POPULATE_WRITE
constexpr int MADV_POPULATE_WRITE = 23;  // Linux 5.14; older kernels refuse it and nothing happens
#endif
#ifndef MADV_COLLAPSE
constexpr int MADV_COLLAPSE = 25;  // Linux 6.1
#endif

uintptr_t heap_end() { return reinterpret_cast<uintptr_t>(::sbrk(0)); }

// Backs [begin, end) of the heap with huge pages where 2 MiB-aligned ones fit, base pages at the
// edges, all faulted in by two calls instead of one fault per page.
void populate(uintptr_t begin, uintptr_t end) {
  const uintptr_t lo = align_up(begin, kHugePage), hi = align_down(end, kHugePage);
  if (hi > lo) ::madvise(reinterpret_cast<void*>(lo), hi - lo, MADV_COLLAPSE);
  // The base page size, as util/resident.cpp reads it (4 KiB here; 16 or 64 KiB on some arm64).
  const uintptr_t first_page = align_up(begin, static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE)));
  if (end > first_page) ::madvise(reinterpret_cast<void*>(first_page), end - first_page, MADV_POPULATE_WRITE);
}
}  // namespace

void reserve_heap_on_huge_pages(size_t bytes) {
#if defined(__GLIBC__) && !defined(__SANITIZE_ADDRESS__)
  static std::atomic<bool> done{false};
  if (done.exchange(true)) return;
  const int saved_errno = errno;
  // malloc grows the heap from its top as blocks below its mmap threshold (128 KiB) are taken;
  // the last block stays taken for good, so the freed ones below it merge into one free chunk
  // that later allocations split, instead of a free top that malloc would trim right away.
  constexpr size_t kBlock = size_t{64} << 10;
  static std::array<void*, 1024> held;
  const uintptr_t begin = heap_end();
  size_t taken = 0;
  const size_t most = std::min(held.size(), bytes / kBlock + 8);  // the heap may not grow (no brk)
  while (taken < most && heap_end() - begin < bytes) {
    held[taken] = std::malloc(kBlock);
    if (!held[taken]) break;
    ++taken;
  }
  if (heap_end() > begin) populate(begin, heap_end());
  for (size_t i = 0; i + 1 < taken; ++i) std::free(held[i]);
  errno = saved_errno;
#else
  (void)bytes;
#endif
}

}  // namespace firstfault
