#include "firstfault/reader/mapped_file.h"

#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <mutex>
#include <string>

namespace firstfault {
namespace {

// 1 MiB per window: the mapped pages count in the process's RSS until the window is unmapped,
// so this bounds the memory a thread adds (4 MiB windows were 8 of a 64 MiB bound with two
// threads, issue 27); larger windows saved nothing measurable.
constexpr uint64_t kWindowBytes = 1ull << 20;

// The window the calling thread is reading, for the SIGBUS handler. Written only by its own
// thread; SIGBUS from a memory access is delivered to the thread that made it. Initial-exec
// TLS: reading it in a signal handler must not allocate.
struct Window {
  char* base = nullptr;
  size_t length = 0;
  char* volatile lost = nullptr;  // first page the file no longer backs (set by the handler)
};
__attribute__((tls_model("initial-exec"))) thread_local Window* t_window = nullptr;

struct sigaction g_previous_sigbus;
size_t g_page = 4096;
std::atomic<bool> g_mapped_reads{true};

void on_sigbus(int, siginfo_t* info, void*) {
  Window* w = t_window;
  char* addr = static_cast<char*>(info->si_addr);
  if (w && addr >= w->base && addr < w->base + w->length) {
    // The file shrank under the window: zeros from the lost page on, so the access that
    // faulted completes, and the reader stops at the first line it cannot trust.
    char* page = w->base + (static_cast<size_t>(addr - w->base) & ~(g_page - 1));
    void* z = ::mmap(page, static_cast<size_t>(w->base + w->length - page), PROT_READ,
                     MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
    if (z != MAP_FAILED) {
      if (!w->lost || page < w->lost) w->lost = page;
      return;
    }
  }
  // Not a window's fault: put back what was there before (the default action, a sanitizer's
  // report, an embedding program's handler) and let the access fault again under it.
  ::sigaction(SIGBUS, &g_previous_sigbus, nullptr);
}

void install_sigbus_handler() {
  static std::once_flag once;
  std::call_once(once, [] {
    long page = ::sysconf(_SC_PAGESIZE);
    if (page > 0) g_page = static_cast<size_t>(page);
    struct sigaction sa {};
    sa.sa_sigaction = on_sigbus;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    ::sigaction(SIGBUS, &sa, &g_previous_sigbus);
  });
}

// Reads one byte per page of [p, e), so that page faults (and a SIGBUS for a shrunken file)
// happen here, before the bytes are handed on, rather than in the middle of matching them.
void touch_pages(const char* p, const char* e) {
  const volatile char* v = p;
  for (size_t i = 0, n = static_cast<size_t>(e - p); i < n; i += g_page) (void)v[i];
  if (e > p) (void)v[e - p - 1];
}

const char* last_newline(const char* p, const char* e) {
  const void* nl = ::memrchr(p, '\n', static_cast<size_t>(e - p));
  return nl ? static_cast<const char*>(nl) : nullptr;
}

}  // namespace

MappedRead read_mapped_lines(int fd, uint64_t begin, uint64_t end, size_t block_bytes, BlockSink& sink,
                             uint64_t& bytes) {
  if (!g_mapped_reads.load(std::memory_order_relaxed)) return {begin, Status::Ok()};
  install_sigbus_handler();
  uint64_t cur = begin;
  while (cur < end) {
    uint64_t window_begin = cur - cur % g_page;
    size_t length = static_cast<size_t>(std::min(end, window_begin + kWindowBytes) - window_begin);
    void* m = ::mmap(nullptr, length, PROT_READ, MAP_PRIVATE, fd, static_cast<off_t>(window_begin));
    if (m == MAP_FAILED) break;  // read() takes over
    ::madvise(m, length, MADV_SEQUENTIAL);
    Window w;
    w.base = static_cast<char*>(m);
    w.length = length;
    t_window = &w;

    const char* p = w.base + (cur - window_begin);
    // Complete lines only; a window holding no '\n' at all is one line too long to map.
    const char* nl = last_newline(p, w.base + length);
    const char* last = nl && !w.lost ? nl + 1 : p;
    while (p < last) {
      const char* q = std::min(last, p + block_bytes);
      if (q < last) {
        const char* cut = last_newline(p, q);
        // One line longer than a block goes whole up to its '\n', as in the buffered reader.
        if (!cut) cut = static_cast<const char*>(std::memchr(q, '\n', static_cast<size_t>(last - q)));
        q = cut + 1;
      }
      if (static_cast<size_t>(q - p) > block_bytes + kMaxLineBytes) break;  // read() counts it out
      touch_pages(p, q);
      if (const char* lost = w.lost) {  // cut before it: only lines the file still held go on
        const char* cut = lost > p ? last_newline(p, std::min(lost, q)) : nullptr;
        q = cut ? cut + 1 : p;
      }
      if (q > p) {
        sink.on_mapped_block(std::string_view(p, static_cast<size_t>(q - p)));
        bytes += static_cast<uint64_t>(q - p);
      }
      p = q;
      if (w.lost) break;  // (also when the fault came while the sink read the block: zeros then)
    }
    sink.on_mapped_release();
    t_window = nullptr;
    uint64_t next = window_begin + static_cast<uint64_t>(p - w.base);
    const char* lost = w.lost;
    ::munmap(m, length);
    if (lost)
      return {next, Error{"the file shrank while it was being read (truncated or rotated?) at byte " +
                          std::to_string(window_begin + static_cast<uint64_t>(lost - w.base)) +
                          "; lines after it were not read"}};
    if (next == cur) break;  // a line too long for a window or a block: read() takes over
    cur = next;
  }
  return {cur, Status::Ok()};
}

void set_mapped_reads(bool on) { g_mapped_reads.store(on, std::memory_order_relaxed); }

}  // namespace firstfault
