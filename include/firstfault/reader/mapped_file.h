#pragma once
// Stage 1 (reader): the complete lines of a regular file read through a sliding read-only
// mapping instead of read(). On a large plain log the kernel's copy of every block into the
// read buffer was 8-10% of the CPU time of `diagnose`; a mapping hands the page cache's bytes
// over as they are. A file truncated while it is mapped raises SIGBUS on the lost pages: a
// process-wide handler (installed on first use, chaining to any earlier handler for faults
// that are not in a window) maps zeros over them, and the read stops with an error naming the
// offset, delivering no line past it.
#include <cstdint>

#include "firstfault/reader/log_reader.h"
#include "firstfault/util/result.h"

namespace firstfault {

struct MappedRead {
  uint64_t offset = 0;  // where the mapped read stopped: a line start at or before `end`
  Status status = Status::Ok();
};

// Delivers the complete lines of bytes [begin, end) of the regular file `fd` (begin is a line
// start) to `sink` in blocks of at most `block_bytes` (plus one line). Stops early, with an OK
// status, where the rest needs read(): the last line has no '\n' before `end`, a line is too
// long for a window, or the kernel refuses the mapping. `bytes` grows by what was delivered.
MappedRead read_mapped_lines(int fd, uint64_t begin, uint64_t end, size_t block_bytes, BlockSink& sink,
                             uint64_t& bytes);

// Off: read_mapped_lines() delivers nothing and read() does all the reading (the tests compare
// the two readers' diagnoses). On by default.
void set_mapped_reads(bool on);

}  // namespace firstfault
