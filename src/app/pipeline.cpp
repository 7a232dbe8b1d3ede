#include "firstfault/app/pipeline.h"

#include <fcntl.h>
#include <pthread.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <condition_variable>
#include <csignal>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <set>
#include <thread>

#include "firstfault/app/line_feed.h"
#include "firstfault/attribution/line_attributor.h"
#include "firstfault/correlator/correlator.h"
#include "firstfault/reader/archive.h"
#include "firstfault/reader/documents.h"
#include "firstfault/reader/log_reader.h"

namespace firstfault {

namespace fs = std::filesystem;

namespace {

// Below this size a file is read by one thread; splitting costs more than it saves.
constexpr uint64_t kParallelMinBytes = 32ull << 20;

// How many small inputs per thread may be read ahead of the in-order merge (bounds the memory
// of finished but not yet merged correlators).
constexpr size_t kInputsAheadPerThread = 4;

unsigned thread_count(const AnalyzeOptions& options) {
  return std::max(1u, options.threads ? options.threads : std::thread::hardware_concurrency());
}

// Splits a large plain file at line boundaries into `parts` byte ranges.
std::vector<uint64_t> split_points(int fd, uint64_t size, unsigned parts) {
  std::vector<uint64_t> cuts{0};
  char buf[4096];
  for (unsigned i = 1; i < parts; ++i) {
    uint64_t pos = size * i / parts;
    for (;;) {
      ssize_t n = ::pread(fd, buf, sizeof buf, static_cast<off_t>(pos));
      if (n <= 0) {
        pos = size;
        break;
      }
      const void* nl = std::memchr(buf, '\n', static_cast<size_t>(n));
      if (nl) {
        pos += static_cast<uint64_t>(static_cast<const char*>(nl) - buf) + 1;
        break;
      }
      pos += static_cast<uint64_t>(n);
    }
    if (pos > cuts.back() && pos < size) cuts.push_back(pos);
  }
  cuts.push_back(size);
  return cuts;
}

// Whether a plain (uncompressed, regular) file is worth reading with several threads.
bool parallel_candidate(const InputSource& in, uint64_t& size) {
  if (in.is_stdin) return false;
  struct stat st {};
  if (::stat(in.path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return false;
  size = static_cast<uint64_t>(st.st_size);
  if (size < kParallelMinBytes) return false;
  int fd = ::open(in.path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  // The first block, as read_input() would read it: a binary file is skipped there, not split.
  std::string block(kBinaryProbeBytes, '\0');
  ssize_t n = ::pread(fd, block.data(), block.size(), 0);
  ::close(fd);
  if (n < 4 || binary_marker(std::string_view(block.data(), static_cast<size_t>(n)))) return false;
  if (!document_kind(std::string_view(block.data(), static_cast<size_t>(n))).empty()) return false;  // one document
  const auto* head = reinterpret_cast<const unsigned char*>(block.data());
  bool compressed = (head[0] == 0x1f && head[1] == 0x8b) || (head[0] == 0x28 && head[1] == 0xb5) ||
                    (head[0] == 0xfd && head[1] == '7') || (head[0] == 'B' && head[1] == 'Z' && head[2] == 'h');
  return !compressed;
}

// Binary content is skipped, not read (ReadStats::binary_at): the input says so, not as an error.
void note_binary(const ReadStats& stats, InputSummary& s) {
  if (stats.binary_at) s.skipped = fmt::format("binary file (NUL byte at offset {})", *stats.binary_at);
}

// The first 4 KiB of a plain file (what identity_from_head() reads), or "" when it cannot be read.
std::string read_head(const std::string& path) {
  char buf[4096];
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) return "";
  ssize_t n = ::pread(fd, buf, sizeof buf, 0);
  ::close(fd);
  return n > 0 ? std::string(buf, static_cast<size_t>(n)) : "";
}

// Reads one input into `corr`; with `split`, a large plain file (parallel_candidate()), on
// `threads` threads.
void analyze_input(const InputSource& in, uint32_t index, const Matcher& matcher, const AnalyzeOptions& options,
                   bool split, Correlator& corr, InputSummary& s, std::vector<InputProblem>& problems) {
  FileIdentity identity = in.is_stdin ? FileIdentity{} : identity_from_path(in.path, options.rank_from, options.pytorchjob_pods, options.host_from);
  uint64_t size = 0;
  if (struct stat st {}; !in.is_stdin && ::stat(in.path.c_str(), &st) == 0 && S_ISREG(st.st_mode))
    size = static_cast<uint64_t>(st.st_size);
  if (size > 0 && (identity.rank < 0 || identity.host.empty()))
    identity = identity_from_head(read_head(in.path), identity, options.rank_from, options.pytorchjob_pods);
  if (split) {
    unsigned threads = thread_count(options);
    int fd = ::open(in.path.c_str(), O_RDONLY | O_CLOEXEC);
    std::vector<uint64_t> cuts = split_points(fd, size, threads);
    // The DeepSpeed runner announces pdsh at the top of the log; later ranges must know it.
    char head[1 << 16];
    ssize_t hn = ::pread(fd, head, sizeof head, 0);
    bool pdsh = hn > 0 && memmem(head, static_cast<size_t>(hn), "cmd = pdsh ", 11) != nullptr;
    ::close(fd);
    size_t parts = cuts.size() - 1;
    std::vector<std::unique_ptr<Correlator>> partial;
    std::vector<InputSummary> sums(parts);
    std::vector<Status> status(parts);
    std::vector<uint64_t> bytes(parts);
    for (size_t p = 0; p < parts; ++p) {
      partial.push_back(std::make_unique<Correlator>(matcher.library(), options.tables));
      partial.back()->share_event_budget(parts);
    }
    std::vector<std::thread> pool;
    for (size_t p = 0; p < parts; ++p) {
      pool.emplace_back([&, p] {
        LineAttributor attributor(identity);
        if (pdsh) attributor.enable_pdsh();
        LineFeed sink(matcher, *partial[p], attributor, index, sums[p]);
        sink.prefer_prefilter();
        sink.share_bounds(parts);  // like the event budget: the threads together hold one cache
        ReadStats stats;
        status[p] = read_input_range(in, cuts[p], cuts[p + 1], sink, stats);
        bytes[p] = stats.bytes;
      });
    }
    for (auto& t : pool) t.join();
    uint64_t line_offset = 0;
    for (size_t p = 0; p < parts; ++p) {
      corr.absorb(std::move(*partial[p]), line_offset);
      line_offset += sums[p].lines;
      s.lines += sums[p].lines;
      s.long_lines += sums[p].long_lines;
      s.name_rank = std::max(s.name_rank, sums[p].name_rank);
      s.lines_with_rank += sums[p].lines_with_rank;
      s.lines_with_other_rank += sums[p].lines_with_other_rank;
      if (s.other_rank < 0) s.other_rank = sums[p].other_rank;
      s.bytes += bytes[p];
      if (!status[p].ok() && s.error.empty()) {
        s.error = status[p].message();
        problems.push_back({in.path, status[p].message()});
      }
    }
    return;
  }
  LineAttributor attributor(identity);
  LineFeed sink(matcher, corr, attributor, index, s);
  if (size >= (8ull << 20)) sink.prefer_prefilter();
  ReadStats stats;
  Status st = read_input(in, sink, stats);
  s.bytes = stats.bytes;
  s.compression = stats.compression;
  note_binary(stats, s);
  if (!st.ok()) {
    s.error = st.message();
    problems.push_back({in.path, st.message()});
  }
}

// Reads inputs [first, last) (each too small to split: a job of one file per rank) on a pool of
// threads, one input per task, each into its own correlator; those are merged in input order
// (Correlator::absorb), so the result is the one a sequential read gives.
void analyze_inputs_pooled(const std::vector<InputSource>& inputs, size_t first, size_t last, const Matcher& matcher,
                           const AnalyzeOptions& options, unsigned threads, Correlator& corr,
                           std::vector<InputSummary>& summaries, std::vector<InputProblem>& problems) {
  const size_t n = last - first;
  struct Slot {
    std::unique_ptr<Correlator> corr;
    std::vector<InputProblem> problems;
    bool done = false;
  };
  std::vector<Slot> slots(n);
  std::mutex mu;
  std::condition_variable cv;
  size_t next = 0, merged = 0;
  const size_t ahead = kInputsAheadPerThread * threads;
  auto worker = [&] {
    for (;;) {
      size_t k;
      {
        std::unique_lock<std::mutex> lock(mu);
        cv.wait(lock, [&] { return next >= n || next < merged + ahead; });
        if (next >= n) return;
        k = next++;
      }
      auto part = std::make_unique<Correlator>(matcher.library(), options.tables);
      std::vector<InputProblem> probs;
      if (!g_interrupted.load()) {
        summaries[first + k].path = inputs[first + k].path;
        analyze_input(inputs[first + k], static_cast<uint32_t>(first + k), matcher, options, /*split=*/false, *part,
                      summaries[first + k], probs);
      }
      std::lock_guard<std::mutex> lock(mu);
      slots[k].corr = std::move(part);
      slots[k].problems = std::move(probs);
      slots[k].done = true;
      cv.notify_all();
    }
  };
  std::vector<std::thread> pool;
  for (unsigned t = 0; t < std::min<size_t>(threads, n); ++t) pool.emplace_back(worker);
  bool woken = false;
  for (size_t k = 0; k < n; ++k) {
    std::unique_ptr<Correlator> part;
    {
      std::unique_lock<std::mutex> lock(mu);
      // Ctrl-C reaches one thread; a worker waiting in open() or read() of a FIFO or a silent
      // pipe is woken with the same signal (no SA_RESTART: the call returns EINTR) so it gives up.
      while (!cv.wait_for(lock, std::chrono::milliseconds(50), [&] { return slots[k].done; }))
        if (g_interrupted.load() && !woken) {
          woken = true;
          for (auto& t : pool) ::pthread_kill(t.native_handle(), SIGINT);
        }
      part = std::move(slots[k].corr);
    }
    corr.absorb(std::move(*part), 0);
    part.reset();
    problems.insert(problems.end(), slots[k].problems.begin(), slots[k].problems.end());
    std::lock_guard<std::mutex> lock(mu);
    merged = k + 1;
    cv.notify_all();
  }
  for (auto& t : pool) t.join();
}

// Reads the members [first, last) of one archive (expand_archives() lists them in archive
// order) in one pass over it, each as its own input.
void analyze_archive_members(const std::vector<InputSource>& inputs, size_t first, size_t last, const Matcher& matcher,
                             const AnalyzeOptions& options, Correlator& corr, std::vector<InputSummary>& summaries,
                             std::vector<InputProblem>& problems) {
  size_t next = first;
  Status archive = for_each_archive_member(inputs[first].archive, [&](const std::string& name, struct archive* a) {
    if (next >= last || inputs[next].member != name || g_interrupted.load()) return;
    summaries[next].path = inputs[next].path;
    Status s = read_member(a, normalize_member_name(name), static_cast<uint32_t>(next), matcher, options, corr, summaries[next]);
    if (!s.ok()) problems.push_back({inputs[next].path, s.message()});
    ++next;
  });
  if (archive.ok() || g_interrupted.load()) return;
  if (next == last && next > first && summaries[next - 1].error.empty()) {  // broke after its last member
    summaries[next - 1].error = "the archive breaks after this member: " + archive.message();
    problems.push_back({inputs[next - 1].path, summaries[next - 1].error});
  }
  for (; next < last; ++next) {
    summaries[next].path = inputs[next].path;
    summaries[next].error = "not reached, the archive breaks before it: " + archive.message();
    problems.push_back({inputs[next].path, summaries[next].error});
  }
}

}  // namespace

Status read_member(struct archive* a, const std::string& name, uint32_t index, const Matcher& matcher,
                   const AnalyzeOptions& options, Correlator& corr, InputSummary& summary) {
  LineAttributor attributor(identity_from_path(name, options.rank_from, options.pytorchjob_pods, options.host_from));
  LineFeed feed(matcher, corr, attributor, index, summary);
  ReadStats stats;
  Status s = read_archive_member(a, feed, stats);
  summary.bytes = stats.bytes;
  note_binary(stats, summary);
  if (!s.ok()) summary.error = s.message();
  return s;
}

// The newest input file's modification time (an archive member's is its archive's), in ms
// since 1970, for year-less log times; 0 for stdin alone.
static int64_t newest_file_time_ms(const std::vector<InputSource>& inputs) {
  int64_t newest = 0;
  for (const auto& in : inputs) {
    struct stat st {};
    if (!in.is_stdin && ::stat((in.archive.empty() ? in.path : in.archive).c_str(), &st) == 0)
      newest = std::max<int64_t>(newest, static_cast<int64_t>(st.st_mtime) * 1000);
  }
  return newest;
}

JobResult analyze_job(const std::vector<InputSource>& inputs, const Matcher& matcher, const AnalyzeOptions& job_options) {
  JobResult result;
  AnalyzeOptions options = job_options;
  for (const auto& in : inputs)
    if (options.rank_from.empty() && names_pytorchjob_master(in.archive.empty() ? in.path : in.member)) options.pytorchjob_pods = true;
  if (!options.tables) options.tables = std::make_shared<const CorrelatorTables>(matcher.library(), matcher.tail_patterns());
  Correlator corr(matcher.library(), options.tables);
  std::vector<InputSummary> summaries(inputs.size());
  const unsigned threads = thread_count(options);
  // Which inputs are large plain files, split across the threads (checked once per input).
  std::vector<char> split(inputs.size(), 0);
  if (threads > 1)
    for (size_t i = 0; i < inputs.size(); ++i) {
      uint64_t size = 0;
      split[i] = parallel_candidate(inputs[i], size);
    }
  for (size_t i = 0; i < inputs.size();) {
    if (g_interrupted.load()) {
      result.interrupted = true;
      break;
    }
    size_t j = i;
    if (!inputs[i].archive.empty()) {  // the members of one archive, read in one pass
      while (j < inputs.size() && inputs[j].archive == inputs[i].archive) ++j;
      analyze_archive_members(inputs, i, j, matcher, options, corr, summaries, result.problems);
      i = j;
      continue;
    }
    // A run of two or more inputs too small to split goes to the pool; a large file is split.
    if (threads > 1)
      while (j < inputs.size() && !inputs[j].is_stdin && inputs[j].archive.empty() && !split[j]) ++j;
    if (j - i >= 2) {
      analyze_inputs_pooled(inputs, i, j, matcher, options, threads, corr, summaries, result.problems);
      i = j;
      continue;
    }
    summaries[i].path = inputs[i].path;
    analyze_input(inputs[i], static_cast<uint32_t>(i), matcher, options, split[i], corr, summaries[i], result.problems);
    ++i;
  }
  if (g_interrupted.load()) result.interrupted = true;
  for (size_t i = 0; i < inputs.size(); ++i)
    if (!summaries[i].skipped.empty()) result.skipped.push_back({inputs[i].path, summaries[i].skipped, inputs[i].named});
  bool nothing_read = read_nothing(summaries);
  if (int64_t mtime = newest_file_time_ms(inputs); mtime > 0) corr.set_file_time(mtime);
  corr.set_inputs(std::move(summaries));
  result.diagnosis = corr.finish();
  if (nothing_read) result.diagnosis.verdict = "error";
  return result;
}

namespace {

// When no input yielded a line, every given path says why: a missing path or an unreadable
// file has its reason already; a named binary file's skip becomes its error, and a directory or
// an archive that held nothing to read, or only binary files, gets a reason here.
void explain_nothing_read(const std::vector<std::string>& paths, const std::vector<InputSource>& inputs, bool filtered,
                          JobResult& r) {
  for (size_t k = 0; k < paths.size(); ++k) {
    bool explained = std::any_of(r.problems.begin(), r.problems.end(), [&](const InputProblem& p) { return p.path == paths[k]; });
    size_t found = 0, skipped = 0;
    InputSummary* itself = nullptr;  // the path's own input, when it is a file
    for (size_t i = 0; i < inputs.size(); ++i) {
      if (inputs[i].origin != k) continue;
      InputSummary& row = r.diagnosis.inputs[i];
      ++found;
      skipped += !row.skipped.empty();
      explained = explained || !row.error.empty();
      if (inputs[i].named) itself = &row;
    }
    if (explained) continue;
    InputProblem p{paths[k], ""};
    if (itself) {
      p.reason = itself->error = itself->skipped;
      r.problems.push_back(p);
      continue;
    }
    std::error_code ec;
    if (found == 0 && filtered) p.reason = "no file here matches --glob/--exclude";
    else if (found == 0) p.reason = fs::is_directory(paths[k], ec) ? "no file to read in this directory" : "the archive holds no file";
    else p.reason = only_binary_files(skipped);
    r.problems.push_back(p);
    r.diagnosis.inputs.push_back({p.path, 0, 0, 0, "", p.reason});
  }
}

// Which given directories and archives hold two or more sibling folders with a rank-0 log each
// (the rank a file's name gives, as the attributor reads it). An archive's folders are counted
// below its single top folder, when it has one (`tar czf runs.tgz runs/`).
std::vector<ManyJobs> find_many_jobs(const std::vector<std::string>& paths, const std::vector<InputSource>& inputs,
                                     const AnalyzeOptions& options) {
  std::vector<std::vector<std::string>> rank0_logs(paths.size());  // per given path: where they are
  for (const auto& in : inputs) {
    if (in.named || in.origin >= paths.size()) continue;
    const std::string& name = in.archive.empty() ? in.path : in.member;
    if (identity_from_path(name, options.rank_from, options.pytorchjob_pods).rank != 0) continue;
    rank0_logs[in.origin].push_back(in.archive.empty() ? fs::path(in.path).lexically_relative(paths[in.origin]).generic_string()
                                                       : normalize_member_name(in.member));
  }
  std::vector<ManyJobs> out;
  for (size_t k = 0; k < paths.size(); ++k) {
    std::vector<std::string>& rels = rank0_logs[k];
    auto top = [](const std::string& rel) { return rel.substr(0, rel.find('/')); };
    bool wrapped = !rels.empty() && !fs::is_directory(paths[k]) &&
                   std::all_of(rels.begin(), rels.end(), [&](const std::string& r) { return r.find('/') != std::string::npos && top(r) == top(rels[0]); });
    std::set<std::string> folders;
    for (const auto& rel : rels) {
      std::string below = wrapped ? rel.substr(rel.find('/') + 1) : rel;
      if (below.find('/') != std::string::npos) folders.insert(top(below));
    }
    if (folders.size() >= 2) out.push_back({paths[k], folders.size()});
  }
  return out;
}

}  // namespace

JobResult analyze_paths(const std::vector<std::string>& paths, const Matcher& matcher, const AnalyzeOptions& options) {
  std::vector<InputProblem> problems;
  const PathFilter* filter = options.filter.get();
  auto inputs = expand_archives(expand_inputs(paths, problems, filter), filter);
  JobResult r = analyze_job(inputs, matcher, options);
  r.many_jobs = find_many_jobs(paths, inputs, options);
  r.problems.insert(r.problems.begin(), problems.begin(), problems.end());
  for (const auto& p : problems) r.diagnosis.inputs.push_back({p.path, 0, 0, 0, "", p.reason});
  if (r.diagnosis.verdict == "error")
    explain_nothing_read(paths.empty() ? std::vector<std::string>{"-"} : paths, inputs, filter && filter->active(), r);
  return r;
}

std::string only_binary_files(uint64_t skipped) { return fmt::format("only binary files here ({} skipped)", skipped); }

bool read_nothing(const std::vector<InputSummary>& inputs) {
  return std::all_of(inputs.begin(), inputs.end(),
                     [](const InputSummary& in) { return in.lines == 0 && (!in.error.empty() || !in.skipped.empty()); });
}

}  // namespace firstfault
