#pragma once
// Stage 2 (line attribution): peels the prefixes that launchers, loggers and NCCL stack on a
// line, from the outside in, and records rank, host, pid and time from them. Hand-written
// parsers (no regex) because this runs on every line of a multi-gigabyte log.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "firstfault/attribution/timestamp.h"
#include "firstfault/util/line_hints.h"

namespace firstfault {

// Largest number read as a rank (docs/reliability.md). A bigger "rank" is garbage or a counter,
// not a process: it is treated as no rank, so rank arithmetic (world size, the ranks missing
// from a timeout) stays bounded whatever a line claims.
inline constexpr int kMaxRankNumber = (1 << 20) - 1;

// `v` as a rank, or -1 when it cannot be one.
inline int rank_or_none(int64_t v) { return v >= 0 && v <= kMaxRankNumber ? static_cast<int>(v) : -1; }

struct Attribution {
  int rank = -1;              // global rank, -1 unknown
  int local_rank = -1;        // local rank (torchrun [default3]:), -1 unknown
  std::string_view host;      // host or pod name or IP from a prefix (view into the line)
  int64_t pid = -1;
  Timestamp time;
  std::string_view body;      // the line with prefixes removed
  bool inherited = false;     // rank carried over from the previous line (continuation line)
  bool fatal = false;         // a glog/c10 header of severity F: the process is about to abort
  char severity = 0;          // the letter of the line's glog/c10 header (I, W, E, F), 0 when it has none
  bool about_rank = false;    // the launcher's line about `rank` (torchrun's failure summary), not its output
  bool rank_from_name = false;  // the rank is the file name's (FileIdentity), the line names none
};

// Field by field, the body by its text (checks that a replayed plan gives what a full peel does).
inline bool same_attribution(const Attribution& x, const Attribution& y) {
  return x.rank == y.rank && x.local_rank == y.local_rank && x.host == y.host && x.pid == y.pid &&
         x.time.kind == y.time.kind && x.time.ms == y.time.ms && x.body == y.body && x.inherited == y.inherited &&
         x.fatal == y.fatal && x.severity == y.severity && x.about_rank == y.about_rank &&
         x.rank_from_name == y.rank_from_name;
}

// What a file's name says about its lines (rank3.log, worker-3, node-07.out, ...).
struct FileIdentity {
  int rank = -1;
  std::string host;
};

// Derives rank/host from a path; `rank_from` (a regex with one capture or a (?P<rank>) group)
// overrides the built-in rules when non-empty.
// `pytorchjob_pods`: the job's inputs include a Kubeflow PyTorchJob's master pod, so a path
// naming `master-0` is rank 0 and `worker-N` is rank N+1 (the operator's numbering).
// `host_from` (a regex with one capture) likewise overrides the built-in host rules.
FileIdentity identity_from_path(std::string_view path, const std::string& rank_from = "", bool pytorchjob_pods = false,
                                const std::string& host_from = "");
// What a file's first bytes say about all its lines, for what its name left unknown: the output
// of `kubectl describe pod` ("Name: <pod>" then "Namespace:") is about that pod, so its rank is
// the pod name's (the same rules as a path, PyTorchJob numbering included) and its host the
// "Node: <node>/<ip>" field.
FileIdentity identity_from_head(std::string_view head, FileIdentity from_path, const std::string& rank_from = "",
                                bool pytorchjob_pods = false);
// Whether `path` names a PyTorchJob's master pod (`<job>-master-0`, as a file or a folder).
bool names_pytorchjob_master(std::string_view path);

// The prefix layers attribute() peeled from one line, kept per digit template (the matcher's
// TemplateScanner groups lines by it) so that the next line of the template runs only the
// parsers that accepted, not every parser that turns it down on the way: lines of one template
// have one shape. A replayed parser must take the same bytes again, or the line is peeled in full.
struct AttributionPlan {
  static constexpr int kMaxLayers = 12;
  enum State : uint8_t { kUnknown, kReplay, kNever };  // kNever: peel in full (a digit's value decided a layer, or a replay failed)
  State state = kUnknown;
  uint8_t layers = 0;
  bool pdsh = false;           // recorded while "host: " prefixes were read (enable_pdsh())
  uint16_t outermost = 0;      // bit r: nothing known yet when round r began (pdsh is tried)
  uint8_t parsers[kMaxLayers] = {};
  uint16_t lengths[kMaxLayers] = {};
  char severity = 0;           // set by a level word inside a layer ("[ERROR]"): letters, the same on all the template's lines
};

class LineAttributor {
 public:
  explicit LineAttributor(FileIdentity file = {}) : file_(file), whole_file_(std::move(file)) {}
  const FileIdentity& file() const { return file_; }

  // `line` has no trailing newline, no '\r' and no ANSI escapes. With `plan` (the plan of the
  // line's digit template, kUnknown for a new one), the layers are replayed from it or it is
  // recorded; the result is the same either way.
  Attribution attribute(std::string_view line, AttributionPlan* plan = nullptr);

  // DeepSpeed's runner prints `cmd = pdsh ...` before remote output; only then is
  // "host: text" read as a pdsh prefix (it would eat ordinary "word: text" lines otherwise).
  void enable_pdsh() { pdsh_ = true; }

 private:
  size_t peel(std::string_view line, Attribution& a, AttributionPlan* record) const;
  bool replay(std::string_view line, const AttributionPlan& plan, Attribution& a, size_t& consumed) const;

  // Enters the section a `head`/`tail` header of several files opens ("==> log/workerlog.3 <=="):
  // its lines are that file's, so its name says their rank as a file's would.
  void enter_section(std::string_view path);

  FileIdentity file_;
  FileIdentity whole_file_;  // the input's own identity, for sections whose name says nothing
  bool pdsh_ = false;
  int last_rank_ = -1;
  int header_rank_ = -1;  // the rank of a record whose header stood alone on the last line (a wrapped paste)
  bool traceback_open_ = false;  // the record's rank printed a traceback header; its frames and exception line inherit
  int spawn_local_rank_ = -1;  // inside a child's traceback re-raised by torch.multiprocessing.spawn
  int summary_rank_ = -1;  // inside a torchrun failure-summary block: the rank its "rank :" row named
  std::string last_host_;
};

// Normalises one physical line for matching: removes ANSI escapes and NULs; returns the
// '\r'-separated segments via `fn` (tqdm redraws; each is scanned, and a record glued after a
// redraw's bar is a segment of its own: split_glued_bars), trailing '\r' dropped.
// `scratch` is reused to avoid allocations.
template <typename Fn>
void for_each_segment(std::string_view line, std::string& scratch, Fn&& fn, LineHints hints = {});

std::string_view strip_ansi(std::string_view line, std::string& scratch);

// Where a tqdm bar at the head of a redraw segment ends (just past its "[elapsed<left, rate]"),
// when another writer's record (a bracket, a timestamp, a glog header, another bar) follows on
// the same segment; npos otherwise. A bar redraws without a newline, so whatever another writer
// prints next (a glog warning, a "[rank3]:" traceback line) is glued to its last redraw and would
// carry neither its own time nor its rank prefix at the line start.
size_t progress_bar_glued_end(std::string_view segment);

// Gives `fn` each bar of `segment` that has a record glued after it, then the rest: one call for
// a segment with no glued bar. Each step scans forward only, so a line of many bars stays linear.
template <typename Fn>
void split_glued_bars(std::string_view segment, Fn&& fn) {
  for (size_t end; (end = progress_bar_glued_end(segment)) != std::string_view::npos;) {
    fn(segment.substr(0, end));
    segment.remove_prefix(end);
  }
  fn(segment);
}

template <typename Fn>
void for_each_segment(std::string_view line, std::string& scratch, Fn&& fn, LineHints hints) {
  if (!hints.may_have_cr) {
    fn(hints.may_have_escapes ? strip_ansi(line, scratch) : line);
    return;
  }
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  if (hints.may_have_escapes) line = strip_ansi(line, scratch);
  size_t cr = line.find('\r');
  if (cr == std::string_view::npos) {
    fn(line);
    return;
  }
  size_t start = 0;
  for (;;) {
    size_t end = cr == std::string_view::npos ? line.size() : cr;
    if (end > start) split_glued_bars(line.substr(start, end - start), fn);
    if (cr == std::string_view::npos) break;
    start = cr + 1;
    cr = line.find('\r', start);
  }
}

}  // namespace firstfault
