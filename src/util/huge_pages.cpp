#include "firstfault/util/huge_pages.h"

#include <sys/mman.h>

#include <cstdint>

namespace firstfault {

namespace {
constexpr size_t kHugePage = size_t{2} << 20;
constexpr size_t kHeader = 64;  // the mapping's base and length, before the returned pointer

struct MappingHeader {
  void* base;
  size_t length;
};
}  // namespace

void* alloc_huge_backed(size_t size) {
  // One extra huge page of address space, so that a 2 MiB-aligned start exists inside it.
  size_t used = (size + kHeader + kHugePage - 1) / kHugePage * kHugePage;
  size_t length = used + kHugePage;
  void* base = ::mmap(nullptr, length, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (base == MAP_FAILED) return nullptr;
  auto start = (reinterpret_cast<uintptr_t>(base) + kHugePage - 1) & ~(kHugePage - 1);
  auto* aligned = reinterpret_cast<char*>(start);
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

}  // namespace firstfault
