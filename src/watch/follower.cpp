#include "firstfault/watch/follower.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <map>
#include <set>

#include "firstfault/reader/input.h"
#include "firstfault/reader/log_reader.h"

namespace firstfault {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

namespace {

// Enough of a file's first bytes to tell it from another file that reuses its inode, and to
// recognise a copy of it (copytruncate rotation, backups).
constexpr size_t kHeadBytes = 256;
constexpr size_t kReadChunk = 1 << 20;

using FileId = std::pair<dev_t, ino_t>;

bool looks_compressed(std::string_view head) {
  auto u = [&](size_t i) { return i < head.size() ? static_cast<unsigned char>(head[i]) : 0u; };
  if (u(0) == 0x1f && u(1) == 0x8b) return true;                                     // gzip
  if (u(0) == 0x28 && u(1) == 0xb5 && u(2) == 0x2f && u(3) == 0xfd) return true;     // zstd
  if (u(0) == 0xfd && u(1) == '7' && u(2) == 'z' && u(3) == 'X' && u(4) == 'Z') return true;  // xz
  return u(0) == 'B' && u(1) == 'Z' && u(2) == 'h' && u(3) >= '1' && u(3) <= '9';   // bzip2
}

std::string read_head(const std::string& path, size_t n) {
  std::string out;
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return out;
  out.resize(n);
  ssize_t r = ::pread(fd, out.data(), n, 0);
  ::close(fd);
  out.resize(r > 0 ? static_cast<size_t>(r) : 0);
  return out;
}

// The file behind a known inode still starts with what was read from it (not a new file that
// reused the inode after the old one was deleted).
bool still_starts_with(const std::string& head, const std::string& known) {
  return head.size() >= known.size() && head.compare(0, known.size(), known) == 0;
}

// Two different files with the same content as far as both go, and enough of it to mean
// something: a copy.
bool same_head(const std::string& a, const std::string& b) {
  size_t n = std::min(a.size(), b.size());
  if (n == 0) return a.empty() && b.empty();
  if (n < std::min<size_t>(64, std::max(a.size(), b.size()))) return false;
  return a.compare(0, n, b, 0, n) == 0;
}

// Forwards a compressed file's decompressed lines to the sink under one stream id.
class ForwardSink : public BlockSink {
 public:
  ForwardSink(FollowSink& sink, size_t id) : sink_(sink), id_(id) {}
  void on_block(std::string_view block) override { sink_.stream_lines(id_, block); }
  void on_long_line(std::string_view head, uint64_t n) override { sink_.stream_long_line(id_, head, n); }

 private:
  FollowSink& sink_;
  size_t id_;
};

}  // namespace

struct Follower::State {
  struct Stream {
    size_t id = 0;
    std::string path;       // where it was found (the label may change after a rotation)
    int fd = -1;
    bool is_stdin = false;
    bool regular = true;
    FileId file{};
    uint64_t offset = 0;    // bytes consumed
    std::string head;       // first bytes read
    std::string carry;      // the partial last line
    Clock::time_point carry_since;
    bool skipping = false;  // inside a line longer than kMaxLineBytes
    std::string long_head;
    uint64_t long_len = 0;
    Clock::time_point last_growth;
    bool retired = false;   // its path names another file now; read until it stops growing
    bool ended = false;
  };
  struct Target {
    std::string path;
    bool dir = false;
  };

  FollowSink& sink;
  FollowOptions opt;
  std::vector<Target> targets;
  bool want_stdin = false;
  std::vector<std::unique_ptr<Stream>> streams;  // every stream ever opened, by id
  std::map<std::string, Stream*> current;        // path -> the live stream reading it
  std::map<FileId, std::string> seen;            // every file read (or skipped), with its head
  struct Copyable {
    std::string path;
    std::string head;
    size_t stream = 0;
  };
  std::vector<Copyable> truncated;               // heads of files that were truncated (copytruncate)
  std::map<std::string, std::string> live_copies;  // followed path -> a copy of it seen before truncation
  std::set<std::string> noticed;                 // notices already given (path + message)
  Stream* stdin_stream = nullptr;
  bool stdin_ended = false;
  Clock::time_point last_rescan{};
  std::vector<char> buf = std::vector<char>(kReadChunk);

  State(FollowSink& s, FollowOptions o) : sink(s), opt(o) {}

  void notice_once(const std::string& path, const std::string& message) {
    if (noticed.insert(path + "\n" + message).second) sink.follow_notice(path, message);
  }

  Stream& new_stream(const std::string& path, bool is_stdin) {
    auto st = std::make_unique<Stream>();
    st->id = streams.size();
    st->path = path;
    st->is_stdin = is_stdin;
    st->last_growth = Clock::now();
    streams.push_back(std::move(st));
    sink.stream_opened(streams.back()->id, path, is_stdin);
    return *streams.back();
  }

  // Delivers complete lines from `data` appended to the stream's carry.
  void consume(Stream& s, const char* data, size_t n, Clock::time_point now) {
    bool was_empty = s.carry.empty();
    if (s.skipping) {
      const void* nl = std::memchr(data, '\n', n);
      if (!nl) {
        s.long_len += n;
        return;
      }
      size_t k = static_cast<size_t>(static_cast<const char*>(nl) - data);
      s.long_len += k;
      sink.stream_long_line(s.id, s.long_head, s.long_len);
      s.skipping = false;
      s.long_head.clear();
      data += k + 1;
      n -= k + 1;
      was_empty = true;
    }
    s.carry.append(data, n);
    size_t last_nl = s.carry.rfind('\n');
    if (last_nl != std::string::npos) {
      sink.stream_lines(s.id, std::string_view(s.carry).substr(0, last_nl + 1));
      s.carry.erase(0, last_nl + 1);
      was_empty = true;
    }
    if (s.carry.size() > kMaxLineBytes) {
      s.long_head = s.carry.substr(0, kMaxLineBytes);
      s.long_len = s.carry.size();
      s.skipping = true;
      s.carry.clear();
    }
    if (was_empty && !s.carry.empty()) s.carry_since = now;
  }

  // A tqdm bar redraws with '\r' and writes no newline for minutes: deliver what it drew.
  void deliver_stale_partial(Stream& s, Clock::time_point now) {
    if (s.carry.empty() || now - s.carry_since < opt.partial_after) return;
    size_t cr = s.carry.rfind('\r');
    if (cr == std::string::npos) return;  // a writer in the middle of a line: wait for the rest
    sink.stream_partial(s.id, std::string_view(s.carry).substr(0, cr + 1));
    s.carry.erase(0, cr + 1);
    s.carry_since = now;
  }

  void flush(Stream& s) {
    if (s.skipping) {
      sink.stream_long_line(s.id, s.long_head, s.long_len);
      s.skipping = false;
      s.long_head.clear();
    } else if (!s.carry.empty()) {
      sink.stream_lines(s.id, s.carry);
    }
    s.carry.clear();
  }

  void end(Stream& s) {
    if (s.ended) return;
    flush(s);
    if (s.fd > 0) ::close(s.fd);  // never close stdin: it belongs to the process
    s.fd = -1;
    s.ended = true;
  }

  // Reads what the stream has, up to the budget. Returns true when more is waiting.
  bool read_stream(Stream& s, Clock::time_point now) {
    if (s.ended || s.fd < 0) return false;
    size_t budget = opt.read_budget;
    while (budget > 0) {
      if (!s.regular) {
        // Pipes and terminals: read only when poll() says it will not block.
        struct pollfd p {s.fd, POLLIN, 0};
        if (::poll(&p, 1, 0) <= 0) break;  // nothing now (or EINTR): the next round reads it
        if (p.revents & POLLNVAL) {
          if (s.is_stdin) stdin_ended = true;
          end(s);
          return false;
        }
      }
      ssize_t n = ::read(s.fd, buf.data(), std::min(buf.size(), budget));
      if (n < 0) {
        if (errno == EINTR) continue;
        if (errno == EAGAIN || errno == EWOULDBLOCK) break;
        notice_once(s.path, std::string("read error: ") + std::strerror(errno));
        if (s.is_stdin) stdin_ended = true;
        end(s);
        return false;
      }
      if (n == 0) {
        if (s.is_stdin) {
          stdin_ended = true;
          end(s);
        }
        break;
      }
      size_t k = static_cast<size_t>(n);
      s.offset += k;
      budget -= k;
      s.last_growth = now;
      if (s.head.size() < kHeadBytes) {
        s.head.append(buf.data(), std::min(k, kHeadBytes - s.head.size()));
        if (!s.is_stdin) seen[s.file] = s.head;
      }
      consume(s, buf.data(), k, now);
    }
    deliver_stale_partial(s, now);
    return budget == 0;
  }

  // A new file at `path`: skip it when it is one we read already (a rotated name) or a copy of
  // one; read a compressed one whole at start-up; otherwise follow it from its first byte.
  void try_open(const std::string& path, bool initial) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) {
      if (errno != ENOENT) notice_once(path, std::string("cannot stat: ") + std::strerror(errno));
      return;
    }
    if (S_ISDIR(st.st_mode)) return;
    FileId id{st.st_dev, st.st_ino};
    bool regular = S_ISREG(st.st_mode);
    std::string head = regular ? read_head(path, kHeadBytes) : std::string();
    if (regular) {
      auto it = seen.find(id);
      if (it != seen.end() && still_starts_with(head, it->second)) return;  // already read under another name
      for (auto c = truncated.begin(); c != truncated.end(); ++c) {
        if (!same_head(c->head, head) || c->head.empty()) continue;
        fs::path a(path), b(c->path);
        if (a.parent_path() == b.parent_path() && a.filename().string().rfind(b.filename().string(), 0) == 0) {
          notice_once(path, "skipped: a copy of " + c->path + " made before it was truncated (already read)");
          sink.stream_renamed(c->stream, path);  // its lines are in that copy now
          seen[id] = head;
          truncated.erase(c);
          return;
        }
      }
      for (const auto& [p, live] : current) {
        if (live->is_stdin || !same_head(live->head, head) || live->head.empty()) continue;
        fs::path a(path), b(p);
        struct stat lst {};
        if (a.parent_path() == b.parent_path() && a.filename().string().rfind(b.filename().string(), 0) == 0 &&
            ::stat(p.c_str(), &lst) == 0 && st.st_size <= lst.st_size) {
          notice_once(path, "skipped: a copy of " + p + ", which is being followed");
          live_copies[p] = path;  // copytruncate copies first: the truncation comes next
          seen[id] = head;
          return;
        }
      }
      if (looks_compressed(head)) {
        seen[id] = head;
        if (!initial) {
          notice_once(path, "skipped: a compressed file that appeared while watching (taken for a rotated copy)");
          return;
        }
        Stream& s = new_stream(path, false);
        s.file = id;
        ForwardSink fwd(sink, s.id);
        ReadStats stats;
        Status r = read_input({path, false}, fwd, stats);
        if (!r.ok()) notice_once(path, r.message());
        s.ended = true;
        return;
      }
    }
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) {
      notice_once(path, std::string("cannot open: ") + std::strerror(errno));
      return;
    }
    Stream& s = new_stream(path, false);
    s.fd = fd;
    s.regular = regular;
    s.file = id;
    current[path] = &s;
    if (regular) seen[id] = std::string();  // filled in as the head is read
  }

  // Where a rotated-away file went: a sibling with the same inode ("train.log.1").
  std::string rotated_name(const Stream& s) {
    std::error_code ec;
    fs::path dir = fs::path(s.path).parent_path();
    if (dir.empty()) dir = ".";
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
      struct stat st {};
      if (::stat(it->path().c_str(), &st) == 0 && FileId{st.st_dev, st.st_ino} == s.file)
        return it->path().string();
    }
    return s.path + " (rotated)";
  }

  // Per poll: has the file at this stream's path been replaced, truncated or removed?
  void check_path(Stream& s, Clock::time_point now) {
    struct stat st {};
    if (::stat(s.path.c_str(), &st) != 0) {
      // Deleted or renamed without a replacement yet: read on until it stops growing.
      read_stream(s, now);
      if (now - s.last_growth >= opt.retire_after) {
        current.erase(s.path);
        end(s);
      }
      return;
    }
    FileId id{st.st_dev, st.st_ino};
    if (id != s.file) {
      // Rotated: finish what is in the old file, keep reading it for a while (the writer may
      // not have reopened yet), and follow the new file from its start.
      read_stream(s, now);
      std::string path = s.path;
      current.erase(path);
      s.retired = true;
      std::string label = rotated_name(s);
      sink.stream_renamed(s.id, label);
      s.path = label;
      try_open(path, false);
      return;
    }
    if (s.regular && static_cast<uint64_t>(st.st_size) < s.offset) {
      // Truncated in place (copytruncate): what was read stays; the file starts again.
      std::string path = s.path;
      flush(s);
      if (auto c = live_copies.find(path); c != live_copies.end()) {
        sink.stream_renamed(s.id, c->second);  // its lines are in that copy now
        live_copies.erase(c);
      } else {
        truncated.push_back({path, s.head, s.id});
        sink.stream_renamed(s.id, path + " (before truncation)");
      }
      int fd = s.fd;
      s.fd = -1;
      s.ended = true;
      ::lseek(fd, 0, SEEK_SET);
      Stream& n = new_stream(path, false);
      n.fd = fd;
      n.file = id;
      current[path] = &n;
      seen[id] = std::string();
      read_stream(n, now);
      return;
    }
    read_stream(s, now);
  }

  void rescan(bool initial) {
    for (Target& t : targets) {
      if (!t.dir && !current.count(t.path)) {
        std::error_code ec;
        t.dir = fs::is_directory(t.path, ec);  // a path waited for may turn out to be a directory
        if (!t.dir) {
          try_open(t.path, initial);
          continue;
        }
      }
      if (!t.dir) continue;
      std::vector<InputProblem> problems;
      std::vector<InputSource> found = expand_inputs({t.path}, problems);
      for (const auto& p : problems) notice_once(p.path, p.reason);
      for (const auto& f : found)
        if (!current.count(f.path)) try_open(f.path, initial);
    }
  }
};

Follower::Follower(std::vector<std::string> paths, FollowSink& sink, FollowOptions options)
    : s_(std::make_unique<State>(sink, options)) {
  if (paths.empty()) paths.push_back("-");
  for (auto& p : paths) {
    if (p == "-") {
      s_->want_stdin = true;
      continue;
    }
    std::error_code ec;
    bool dir = fs::is_directory(p, ec);
    s_->targets.push_back({p, dir});
  }
}

Follower::~Follower() { close_all(); }

bool Follower::has_stdin() const { return s_->want_stdin; }
bool Follower::only_stdin() const { return s_->want_stdin && s_->targets.empty(); }

void Follower::start() {
  State& s = *s_;
  if (s.want_stdin) {
    State::Stream& st = s.new_stream("-", true);
    st.fd = STDIN_FILENO;
    st.regular = false;
    s.stdin_stream = &st;
  }
  for (const auto& t : s.targets) {
    std::error_code ec;
    if (!t.dir && !fs::exists(t.path, ec)) s.notice_once(t.path, "does not exist yet; waiting for it to appear");
  }
  s.rescan(true);
  s.last_rescan = Clock::now();
}

PollResult Follower::poll(std::chrono::milliseconds wait) {
  State& s = *s_;
  int wait_ms = static_cast<int>(std::max<int64_t>(0, wait.count()));
  if (s.stdin_stream && !s.stdin_stream->ended) {
    struct pollfd p {STDIN_FILENO, POLLIN, 0};
    ::poll(&p, 1, wait_ms);  // wakes as soon as stdin has data; EINTR (SIGINT) just returns
  } else if (wait_ms > 0) {
    ::poll(nullptr, 0, wait_ms);
  }
  auto now = Clock::now();
  PollResult r;
  if (s.stdin_stream) r.backlog |= s.read_stream(*s.stdin_stream, now);
  // Copy: check_path may replace entries of `current`.
  std::vector<State::Stream*> live;
  for (auto& [path, st] : s.current) live.push_back(st);
  for (State::Stream* st : live) {
    uint64_t offset = st->offset;
    s.check_path(*st, now);
    if (st->offset - offset >= s.opt.read_budget) r.backlog = true;
  }
  for (auto& st : s.streams) {
    if (!st->retired || st->ended) continue;
    r.backlog |= s.read_stream(*st, now);
    if (now - st->last_growth >= s.opt.retire_after) s.end(*st);
  }
  if (now - s.last_rescan >= s.opt.rescan_interval) {
    s.rescan(false);
    s.last_rescan = now;
  }
  r.stdin_ended = s.stdin_ended;
  return r;
}

void Follower::close_all() {
  if (!s_) return;
  for (auto& st : s_->streams) s_->end(*st);
  s_->current.clear();
}

}  // namespace firstfault
