#include "firstfault/util/resident.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>

namespace firstfault {

void drop_embedded_pages(std::string_view embedded) {
  const uintptr_t page = static_cast<uintptr_t>(::sysconf(_SC_PAGESIZE));
  const uintptr_t begin = (reinterpret_cast<uintptr_t>(embedded.data()) + page - 1) & ~(page - 1);
  const uintptr_t end = (reinterpret_cast<uintptr_t>(embedded.data()) + embedded.size()) & ~(page - 1);
  if (end > begin) ::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);
}

}  // namespace firstfault
