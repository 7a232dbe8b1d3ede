#pragma once
// Stage 1 (reader): streams one input as blocks of complete lines without loading it whole.
// Decompresses gzip/zstd/xz/bz2 (detected by magic bytes), caps pathological lines, and never
// throws: read problems come back as a Status naming the reason, after everything readable
// has been delivered.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

struct archive;

#include "firstfault/reader/input.h"
#include "firstfault/util/result.h"

namespace firstfault {

// Longest line kept for matching; the rest of a longer line is counted, not kept.
inline constexpr size_t kMaxLineBytes = 64 * 1024;

// Binary detection looks at this much of an input's (decompressed) content, as ripgrep looks at
// its first buffer: a model checkpoint or a core dump is not read as millions of text lines.
inline constexpr size_t kBinaryProbeBytes = 64 * 1024;

// The offset of the NUL byte that makes content whose first block is `head` binary, or nullopt
// for text. One exception to ripgrep's rule: text whose NULs all sit in long runs (holes) is a
// log, read as one. A crashed node leaves a zero-filled tail on the log it was writing (its size
// reached the disk, its last pages did not); a writer that kept its offset after the file was
// truncated under it (logrotate's copytruncate) leaves a hole before its next line.
std::optional<uint64_t> binary_marker(std::string_view head);

class BlockSink {
 public:
  virtual ~BlockSink() = default;
  // A run of complete lines, each ending in '\n' (the last block of an input may lack it).
  // Lines can be longer than kMaxLineBytes here; consumers cap them for matching.
  virtual void on_block(std::string_view block) = 0;
  // One line longer than the read buffer: its first kMaxLineBytes bytes and its full length.
  virtual void on_long_line(std::string_view head, uint64_t full_length) = 0;
  // A block from a mapping (mapped_file.h): its bytes stay valid until on_mapped_release(), so a
  // sink may keep views into it across the blocks of one window instead of copying at each
  // block's end. By default, an ordinary block.
  virtual void on_mapped_block(std::string_view block) { on_block(block); }
  virtual void on_mapped_release() {}
};

struct ReadStats {
  uint64_t bytes = 0;             // decompressed bytes delivered
  uint64_t compressed_bytes = 0;  // bytes read from disk (equal to bytes when uncompressed)
  std::string compression;        // "", "gzip", "zstd", "xz", "bzip2"
  // Set when the content is binary (binary_marker()): where its NUL byte is. Nothing was
  // delivered then, and `bytes` is 0.
  std::optional<uint64_t> binary_at;
  // Set when the content is a document read whole and delivered as its text form (a Flight
  // Recorder dump, reader/flight_recorder.h): what was delivered is not the input's bytes.
  bool document = false;
};

// Reads `input` to the end (or to the first unrecoverable error) and feeds `sink`; binary
// content is not read (ReadStats::binary_at).
Status read_input(const InputSource& input, BlockSink& sink, ReadStats& stats);

// Reads bytes [begin, end) of a plain file (begin must be a line start); used to split one
// large file across threads, once its head was found to be text.
Status read_input_range(const InputSource& input, uint64_t begin, uint64_t end, BlockSink& sink, ReadStats& stats);

// Reads the data of the archive member the archive is positioned at (libarchive handle); binary
// content is not read (ReadStats::binary_at).
Status read_archive_member(struct archive* a, BlockSink& sink, ReadStats& stats);

// Splits a block into lines and calls fn(line_without_newline) for each; used by the pipeline
// and the tests.
template <typename Fn>
void for_each_line(std::string_view block, Fn&& fn) {
  size_t start = 0;
  while (start < block.size()) {
    size_t nl = block.find('\n', start);
    size_t end = nl == std::string_view::npos ? block.size() : nl;
    fn(block.substr(start, end - start));
    if (nl == std::string_view::npos) break;
    start = nl + 1;
  }
}

}  // namespace firstfault
