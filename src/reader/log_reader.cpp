#include "firstfault/reader/log_reader.h"
#include "firstfault/util/interrupt.h"

#include <archive.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>
#include <memory>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "firstfault/reader/documents.h"
#include "firstfault/reader/mapped_file.h"

namespace firstfault {
namespace {

// A block is read twice (line templates, then attribution and matching), so it should still be
// in L2 for the second pass. Buffered reads use 1 MiB (4 MiB cost 3% more instructions and ~4%
// more time here; smaller reads mean more read() calls). Mapped blocks cost no call, and 256 KiB
// took ~4% less CPU than 1 MiB (docs/performance.md, 2026-12-02).
constexpr size_t kReadChunk = 1 << 20;
constexpr size_t kMappedBlock = 256 << 10;
constexpr size_t kFirstChunk = 64 << 10;
// Plain files from this size on are read through a mapping (mapped_file.h); for smaller ones
// the mapping's set-up costs about what the copy it saves does.
constexpr uint64_t kMappedMinBytes = 1 << 20;

// A byte stream: plain fd reads, or libarchive's raw decompressor on top of one.
class ByteSource {
 public:
  virtual ~ByteSource() = default;
  // Returns bytes read (0 at end), or -1 with error() set.
  virtual ssize_t read(char* buf, size_t n) = 0;
  const std::string& error() const { return error_; }

 protected:
  std::string error_;
};

class FdSource : public ByteSource {
 public:
  explicit FdSource(int fd) : fd_(fd) {}
  ssize_t read(char* buf, size_t n) override {
    for (;;) {
      ssize_t r = ::read(fd_, buf, n);
      if (r >= 0) return r;
      if (errno == EINTR && !g_interrupted.load()) continue;
      error_ = errno == EINTR ? "interrupted" : std::strerror(errno);
      return -1;
    }
  }

 private:
  int fd_;
};

// Bytes already read from a stream (its magic bytes), then the rest of the stream.
class PrefixedSource : public ByteSource {
 public:
  PrefixedSource(std::string head, ByteSource& rest) : head_(std::move(head)), rest_(rest) {}
  ssize_t read(char* buf, size_t n) override {
    if (pos_ < head_.size()) {
      size_t k = std::min(n, head_.size() - pos_);
      std::memcpy(buf, head_.data() + pos_, k);
      pos_ += k;
      return static_cast<ssize_t>(k);
    }
    ssize_t r = rest_.read(buf, n);
    if (r < 0) error_ = rest_.error();
    return r;
  }

 private:
  std::string head_;
  ByteSource& rest_;
  size_t pos_ = 0;
};

// libarchive reads compressed data through this callback, so stdin and files share one path
// and the already-sniffed magic bytes are not lost.
struct ArchiveFeed {
  ByteSource* raw;
  std::vector<char> buf = std::vector<char>(1 << 20);
  uint64_t* compressed_bytes;
};

la_ssize_t archive_read_cb(struct archive* a, void* client, const void** out) {
  auto* feed = static_cast<ArchiveFeed*>(client);
  ssize_t r = feed->raw->read(feed->buf.data(), feed->buf.size());
  if (r < 0) {
    archive_set_error(a, EIO, "%s", feed->raw->error().c_str());
    return -1;
  }
  *feed->compressed_bytes += static_cast<uint64_t>(r);
  *out = feed->buf.data();
  return r;
}

// The data of libarchive's current entry (a decompressed file, or an archive member), block by
// block, not with archive_read_data(): that call drops everything it had already decompressed
// into `buf` when the stream breaks mid-request, so a truncated file would lose up to the whole
// request (4 MiB) instead of at most libarchive's last 64 KiB block.
class ArchiveDataSource : public ByteSource {
 public:
  ArchiveDataSource(struct archive* a, const char* corrupt) : a_(a), corrupt_(corrupt) {}
  ssize_t read(char* buf, size_t n) override {
    while (pending_ == 0) {
      const void* block = nullptr;
      size_t size = 0;
      la_int64_t offset = 0;
      int r = archive_read_data_block(a_, &block, &size, &offset);
      if (r == ARCHIVE_EOF) return 0;
      if (r < ARCHIVE_WARN) {
        const char* e = archive_error_string(a_);
        error_ = e ? e : corrupt_;
        return -1;
      }
      block_ = static_cast<const char*>(block);
      pending_ = size;
    }
    size_t k = std::min(n, pending_);
    std::memcpy(buf, block_, k);
    block_ += k;
    pending_ -= k;
    return static_cast<ssize_t>(k);
  }

 protected:
  struct archive* a_;

 private:
  const char* corrupt_;          // the reason when libarchive gives none
  const char* block_ = nullptr;  // the rest of libarchive's current block (valid until the next call)
  size_t pending_ = 0;
};

class ArchiveSource : public ArchiveDataSource {
 public:
  ArchiveSource(ByteSource* raw, uint64_t* compressed_bytes)
      : ArchiveDataSource(archive_read_new(), "corrupt compressed stream"),
        feed_{raw, std::vector<char>(1 << 20), compressed_bytes} {
    archive_read_support_filter_all(a_);
    archive_read_support_format_raw(a_);
    archive_read_support_format_empty(a_);
  }
  ~ArchiveSource() override { archive_read_free(a_); }
  bool open() {
    if (archive_read_open(a_, &feed_, nullptr, archive_read_cb, nullptr) != ARCHIVE_OK) {
      error_ = archive_error_string(a_) ? archive_error_string(a_) : "cannot open compressed stream";
      return false;
    }
    // The magic bytes matched but libarchive found no decoder for them: the header itself is
    // cut short. Passing the bytes through as text would hide that.
    if (archive_filter_count(a_) <= 1 || archive_filter_code(a_, 0) == ARCHIVE_FILTER_NONE) {
      error_ = "incomplete header (the file is truncated)";
      return false;
    }
    struct archive_entry* entry = nullptr;
    int r = archive_read_next_header(a_, &entry);
    if (r == ARCHIVE_EOF) {
      empty_ = true;
      return true;
    }
    if (r != ARCHIVE_OK && r != ARCHIVE_WARN) {
      error_ = archive_error_string(a_) ? archive_error_string(a_) : "corrupt compressed stream";
      return false;
    }
    return true;
  }
  ssize_t read(char* buf, size_t n) override { return empty_ ? 0 : ArchiveDataSource::read(buf, n); }

 private:
  ArchiveFeed feed_;
  bool empty_ = false;
};

std::string sniff_compression(const std::string& head) {
  auto u = [&](size_t i) { return i < head.size() ? static_cast<unsigned char>(head[i]) : 0u; };
  if (u(0) == 0x1f && u(1) == 0x8b) return "gzip";
  if (u(0) == 0x28 && u(1) == 0xb5 && u(2) == 0x2f && u(3) == 0xfd) return "zstd";
  if (u(0) == 0xfd && u(1) == '7' && u(2) == 'z' && u(3) == 'X' && u(4) == 'Z' && u(5) == 0) return "xz";
  if (u(0) == 'B' && u(1) == 'Z' && u(2) == 'h') return "bzip2";
  return "";
}

// A structured document (reader/documents.h: a Flight Recorder dump, an NCCL RAS JSON report) is
// one document, not lines: read it whole (bounded), then deliver its text form. `content` holds what was read of it already.
Status read_document(std::string_view kind, ByteSource& src, std::string content, BlockSink& sink, ReadStats& stats) {
  stats.document = true;
  char buf[64 * 1024];
  for (;;) {
    ssize_t r = src.read(buf, sizeof buf);
    if (r < 0) return Error{src.error()};
    if (r == 0) break;
    stats.bytes += static_cast<uint64_t>(r);
    if (content.size() + static_cast<size_t>(r) > kMaxDocumentBytes)
      return Error{fmt::format("{} larger than {} MiB, not read", kind, kMaxDocumentBytes >> 20)};
    content.append(buf, static_cast<size_t>(r));
  }
  auto text = document_to_text(kind, content);
  if (!text) return Error{text.error().message};
  if (!text->empty()) sink.on_block(*text);
  return Status::Ok();
}

// Splits the byte stream into blocks of complete lines, with a carry for the partial tail.
class Splitter {
 public:
  // The buffer starts small and doubles while reads fill it, up to kReadChunk: most inputs of a
  // job directory are small files, and a 4 MiB buffer per file is wasted work for them. With
  // `detect_binary`, nothing is delivered before the first block is known to be text.
  Splitter(BlockSink& sink, bool detect_binary) : sink_(sink), detect_binary_(detect_binary) {
    buf_.resize(kFirstChunk + kMaxLineBytes + 1);
    static_assert(kBinaryProbeBytes <= kFirstChunk + kMaxLineBytes, "the first block fits the first buffer");
  }

  Status pump(ByteSource& src, ReadStats& stats) {
    if (detect_binary_) {
      Status probe = fill_probe(src, stats);
      if (std::string_view kind = probe.ok() ? document_kind(std::string_view(buf_.data(), used_)) : ""; !kind.empty()) {
        std::string head(buf_.data(), used_);
        used_ = 0;
        return read_document(kind, src, std::move(head), sink_, stats);
      }
      if ((stats.binary_at = binary_marker(std::string_view(buf_.data(), used_)))) {
        stats.bytes = 0;
        used_ = 0;
        return probe;
      }
      if (!probe.ok()) {
        flush_tail();
        return probe;
      }
      deliver();
    }
    for (;;) {
      ssize_t r = src.read(buf_.data() + used_, buf_.size() - used_);
      if (r < 0) {
        flush_tail();
        return Error{src.error()};
      }
      if (r == 0) break;
      stats.bytes += static_cast<uint64_t>(r);
      used_ += static_cast<size_t>(r);
      bool filled = used_ == buf_.size();
      deliver();
      if (filled && buf_.size() < kReadChunk + kMaxLineBytes + 1)
        buf_.resize(std::min(buf_.size() * 2, kReadChunk + kMaxLineBytes + 1));
    }
    flush_tail();
    return Status::Ok();
  }

 private:
  void deliver() {
    size_t start = 0;
    if (skipping_) {
      // Inside an over-long line: count bytes until its newline.
      const char* nl = static_cast<const char*>(std::memchr(buf_.data(), '\n', used_));
      if (!nl) {
        long_len_ += used_;
        used_ = 0;
        return;
      }
      size_t n = static_cast<size_t>(nl - buf_.data());
      long_len_ += n;
      sink_.on_long_line(std::string_view(long_head_), long_len_);
      skipping_ = false;
      long_head_.clear();
      start = n + 1;
    }
    // Last newline in the buffer: everything before it is complete lines.
    if (const void* nl = ::memrchr(buf_.data() + start, '\n', used_ - start)) {
      size_t last_nl = static_cast<size_t>(static_cast<const char*>(nl) - buf_.data());
      sink_.on_block(std::string_view(buf_.data() + start, last_nl + 1 - start));
      start = last_nl + 1;
    }
    size_t tail = used_ - start;
    if (tail > kMaxLineBytes) {
      // A line longer than the cap: keep its head, count the rest.
      long_head_.assign(buf_.data() + start, kMaxLineBytes);
      long_len_ = tail;
      skipping_ = true;
      used_ = 0;
      return;
    }
    std::memmove(buf_.data(), buf_.data() + start, tail);
    used_ = tail;
  }

  void flush_tail() {
    if (skipping_) {
      long_len_ += used_;
      sink_.on_long_line(std::string_view(long_head_), long_len_);
      skipping_ = false;
      used_ = 0;
      return;
    }
    if (used_ > 0) sink_.on_block(std::string_view(buf_.data(), used_));
    used_ = 0;
  }

  // Reads until kBinaryProbeBytes are buffered or the stream ends.
  Status fill_probe(ByteSource& src, ReadStats& stats) {
    while (used_ < kBinaryProbeBytes) {
      ssize_t r = src.read(buf_.data() + used_, kBinaryProbeBytes - used_);
      if (r < 0) return Error{src.error()};
      if (r == 0) break;
      stats.bytes += static_cast<uint64_t>(r);
      used_ += static_cast<size_t>(r);
    }
    return Status::Ok();
  }

  BlockSink& sink_;
  bool detect_binary_;
  std::vector<char> buf_;
  size_t used_ = 0;
  bool skipping_ = false;
  std::string long_head_;
  uint64_t long_len_ = 0;
};

struct FdCloser {
  int fd;
  ~FdCloser() {
    if (fd > 2) ::close(fd);
  }
};

// Plain reads limited to a byte range.
class RangeSource : public ByteSource {
 public:
  RangeSource(int fd, uint64_t begin, uint64_t end) : fd_(fd), pos_(begin), end_(end) {}
  ssize_t read(char* buf, size_t n) override {
    if (pos_ >= end_) return 0;
    n = static_cast<size_t>(std::min<uint64_t>(n, end_ - pos_));
    for (;;) {
      ssize_t r = ::pread(fd_, buf, n, static_cast<off_t>(pos_));
      if (r < 0 && errno == EINTR) continue;
      if (r < 0) {
        error_ = std::strerror(errno);
        return -1;
      }
      pos_ += static_cast<uint64_t>(r);
      return r;
    }
  }

 private:
  int fd_;
  uint64_t pos_, end_;
};

// The current member of an archive that is being walked: a damaged member keeps what was
// decompressed before the damage.
class MemberSource : public ArchiveDataSource {
 public:
  explicit MemberSource(struct archive* a) : ArchiveDataSource(a, "corrupt archive member") {}
};

// Up to `n` first bytes of `src` (fewer at its end), or nothing with `error` set.
std::optional<std::string> read_head(ByteSource& src, size_t n, std::string& error) {
  std::string head(n, '\0');
  size_t got = 0;
  while (got < n) {
    ssize_t r = src.read(head.data() + got, n - got);
    if (r < 0) {
      error = src.error();
      return std::nullopt;
    }
    if (r == 0) break;
    got += static_cast<size_t>(r);
  }
  head.resize(got);
  return head;
}

// An uncompressed input whose first bytes, `head`, were already read from `fd`. A regular
// file of kMappedMinBytes or more is read through a mapping; the rest (a last line without
// '\n', lines written since, or what a mapping cannot give) with read() from where it ended.
Status read_plain(int fd, bool may_map, std::string head, BlockSink& sink, ReadStats& stats) {
  struct stat st {};
  if (may_map && ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && static_cast<uint64_t>(st.st_size) >= kMappedMinBytes) {
    MappedRead mapped = read_mapped_lines(fd, 0, static_cast<uint64_t>(st.st_size), kMappedBlock, sink, stats.bytes);
    if (!mapped.status.ok()) return mapped.status;
    if (::lseek(fd, static_cast<off_t>(mapped.offset), SEEK_SET) < 0) return Error{std::strerror(errno)};
    head.clear();
  }
  FdSource file(fd);
  PrefixedSource raw(std::move(head), file);
  Splitter splitter(sink, /*detect_binary=*/false);  // the head was checked
  return splitter.pump(raw, stats);
}

}  // namespace

namespace {

// Text whose NULs all sit in holes: runs of at least kMinHole zero bytes (or a run to the end of
// the block) between bytes that are text, with at least one line break. A writer that kept its
// offset after the file was truncated under it (logrotate's copytruncate, `> log` on a running
// job) leaves such a hole before its next line; a crashed node leaves a zero-filled tail. Binary
// formats have short NUL runs (tar's fields, UTF-16's every other byte) or other control bytes.
bool text_with_holes(std::string_view head) {
  constexpr size_t kMinHole = 16;
  bool line_break = false;
  for (size_t i = 0; i < head.size();) {
    const auto c = static_cast<unsigned char>(head[i]);
    if (c == 0) {
      size_t end = head.find_first_not_of('\0', i);
      if (end == std::string_view::npos) break;
      if (end - i < kMinHole) return false;
      i = end;
      continue;
    }
    bool text_control = c == '\n' || c == '\r' || c == '\t' || c == '\f' || c == '\v' || c == '\b' || c == 0x1b;
    if (c < 0x20 && !text_control) return false;
    line_break = line_break || c == '\n';
    ++i;
  }
  return line_break;
}

}  // namespace

std::optional<uint64_t> binary_marker(std::string_view head) {
  size_t nul = head.find('\0');
  if (nul == std::string_view::npos || text_with_holes(head)) return std::nullopt;
  return nul;
}

// A compressed stream (`stats.compression` names its format; `raw` still holds its magic bytes),
// decompressed and split into lines: a file, a pipe, or an archive member.
Status read_compressed(ByteSource& raw, BlockSink& sink, ReadStats& stats) {
  Splitter splitter(sink, /*detect_binary=*/true);  // on the decompressed content
  ArchiveSource archive(&raw, &stats.compressed_bytes);
  if (!archive.open()) return Error{stats.compression + ": " + archive.error()};
  Status s = splitter.pump(archive, stats);
  if (!s.ok()) return Error{stats.compression + " stream: " + s.message() + " (kept what was read before it)"};
  return s;
}

Status read_archive_member(struct archive* a, BlockSink& sink, ReadStats& stats) {
  MemberSource member(a);
  std::string error;
  std::optional<std::string> head = read_head(member, kBinaryProbeBytes, error);
  if (!head) return Error{error};
  stats.compression = sniff_compression(*head);
  PrefixedSource src(std::move(*head), member);
  if (stats.compression.empty()) {
    Splitter splitter(sink, /*detect_binary=*/true);
    Status s = splitter.pump(src, stats);
    stats.compressed_bytes = stats.bytes;
    return s;
  }
  return read_compressed(src, sink, stats);  // rank0.log.gz in a tar, as a compressed file is read
}

Status read_input_range(const InputSource& input, uint64_t begin, uint64_t end, BlockSink& sink, ReadStats& stats) {
  int fd = ::open(input.path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Error{std::strerror(errno)};
  FdCloser closer{fd};
  MappedRead mapped = read_mapped_lines(fd, begin, end, kMappedBlock, sink, stats.bytes);
  Status s = mapped.status;
  if (s.ok() && mapped.offset < end) {  // a last line without '\n', or lines a mapping cannot give
    RangeSource src(fd, mapped.offset, end);
    Splitter splitter(sink, /*detect_binary=*/false);
    s = splitter.pump(src, stats);
  }
  stats.compressed_bytes = stats.bytes;
  return s;
}

Status read_input(const InputSource& input, BlockSink& sink, ReadStats& stats) {
  int fd = 0;
  if (!input.is_stdin) {
    // Opening a FIFO waits for its writer: Ctrl-C (EINTR) ends the wait.
    while ((fd = ::open(input.path.c_str(), O_RDONLY | O_CLOEXEC)) < 0 && errno == EINTR && !g_interrupted.load()) {
    }
    if (fd < 0) return Error{errno == EINTR ? "interrupted" : std::strerror(errno)};
    struct stat st {};
    if (::fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
      ::close(fd);
      return Error{"is a directory"};
    }
  }
  FdCloser closer{fd};

  // Read the first block (the magic bytes, and what binary detection looks at) without losing it.
  FdSource file(fd);
  std::string error;
  std::optional<std::string> first = read_head(file, kBinaryProbeBytes, error);
  if (!first) return Error{error};
  std::string head = std::move(*first);
  stats.compression = sniff_compression(head);

  if (stats.compression.empty()) {
    if (std::string_view kind = document_kind(head); !kind.empty()) {
      stats.bytes = head.size();
      Status s = read_document(kind, file, std::move(head), sink, stats);
      stats.compressed_bytes = stats.bytes;
      return s;
    }
    if ((stats.binary_at = binary_marker(head))) return Status::Ok();
    Status s = read_plain(fd, !input.is_stdin, head, sink, stats);
    stats.compressed_bytes = stats.bytes;
    return s;
  }
  PrefixedSource raw(std::move(head), file);
  return read_compressed(raw, sink, stats);
}

}  // namespace firstfault
