#pragma once
// Stage 3 (signature library): failure entries and the patterns they reference, loaded from
// YAML (embedded or --signatures DIR) and validated strictly.
#include <re2/re2.h>

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace firstfault {

enum class Role { kRoot, kCascade, kTeardown, kContext };
const char* role_name(Role r);

// What a scheduler should do with a job that failed this way: an entry's `action:`
// (docs/signature-format.md, "Action").
enum class ActionKind : uint8_t {
  kRestart,           // transient: the same job on the same nodes should get past it
  kRestartExcluding,  // a host or GPU is bad: restart without it
  kStop,              // recurs until someone changes configuration, code, data or versions
  kInvestigate,       // the evidence cannot tell which of the above
};
const char* action_kind_name(ActionKind k);  // "restart", "restart-excluding", "stop", "investigate"
std::optional<ActionKind> parse_action_kind(std::string_view name);

struct SourceLoc {
  std::string file;
  int line = 0;  // 1-based
  int col = 0;   // 1-based
};

// A regex compiled on first use (thread-safe), so start-up compiles only the matcher's set.
// Copies share the compiled RE2. The loader forces compilation to report invalid regexes.
// Memory (src/signatures/lazy_regex.cpp): every regex first compiles in the least RE2 memory it
// fits in (from kColdRegexMemory up); one that is used kHotRegexUses times is compiled again
// with kHotRegexMemory for its DFA cache, while the process's pool of such grants
// (kHotRegexPool) lasts. An input that wakes every pattern of a 2,000-pattern library then costs
// a small DFA per pattern, not 256 KiB each, and the patterns a log really exercises stay fast.
inline constexpr int64_t kColdRegexMemory = int64_t{16} << 10;
inline constexpr int64_t kHotRegexMemory = int64_t{256} << 10;
inline constexpr int64_t kHotRegexPool = int64_t{8} << 20;
inline constexpr uint32_t kHotRegexUses = 256;
class LazyRegex {
 public:
  LazyRegex() = default;
  explicit LazyRegex(std::string pattern);

  const std::string& pattern() const;
  const RE2* get() const;  // null when there is no pattern or it does not compile
  const std::string& error() const;  // why get() is null ("" when it is not)
  explicit operator bool() const { return get() != nullptr; }
  const RE2& operator*() const { return *get(); }
  const RE2* operator->() const { return get(); }

  // Bytes of RE2 memory granted to hot regexes so far in this process (kHotRegexPool bounds it).
  static int64_t hot_bytes_granted();

 private:
  struct State {
    std::string pattern, error;
    std::once_flag once;
    // Set once the first compile is final: get() runs for every candidate line, and a plain
    // acquire load costs far less than std::call_once's pthread_once each time.
    std::atomic<bool> ready{false};
    // `small` is the first compile (the least memory it compiles in); a regex used often gets
    // a second one with room for a real DFA cache (`big`), and `current` moves to it. Neither is
    // freed before the State, so a pointer a matching thread holds stays valid.
    std::unique_ptr<RE2> small, big;
    std::atomic<const RE2*> current{nullptr};
    std::atomic<uint32_t> uses{0};
    std::atomic<bool> settled{false};  // no more counting: upgraded, or the pool was spent
    std::mutex upgrade_mutex;
  };
  static const RE2* upgrade(State& s);
  std::shared_ptr<State> state_;
};

// Every field below is also written to the build-time snapshot (src/signatures/snapshot.cpp):
// a new field goes there too, with a new kSnapshotFormat.

// One distinct regex. Shared patterns (signatures/common) and entry-local ones both end up
// here; the matcher compiles each once.
struct PatternDef {
  std::string name;  // shared: "nccl_watchdog_timeout"; entry-local: "<entry-id>/<name>"
  std::string regex;
  std::string description;
  std::vector<std::string> positive, negative;
  SourceLoc loc;
  LazyRegex re;  // of `regex`
  std::vector<std::string> capture_names;  // index i = capture group i+1 ("" when unnamed)
};

struct PatternRef {
  std::string name;  // the name used inside the entry
  size_t def = 0;    // index into Library::patterns
  Role role = Role::kContext;
};

struct CaptureRule {
  size_t ref = 0;  // index into Entry::refs
  std::string capture;
  LazyRegex re;  // "^(?:<regex from the YAML>)$"
};

struct MatchRule {
  std::vector<size_t> require, any, boost, penalize;  // indices into Entry::refs
  std::vector<size_t> absent;                         // must have no hit at all
  // Where an exception ran (a frame in the data pipeline, in checkpoint loading): these refs
  // count only inside the traceback of one of the entry's root events, and a root only with one
  // of them in its traceback. A frame of another traceback says nothing about this exception.
  std::vector<size_t> same_traceback;
  bool fallback = false;  // considered only when no other entry is supported; context hits suffice
  // A class of failures named by its kind alone (an uncaught KeyError, a SIGBUS, a revoked
  // allocation): evaluated like any entry, but it counts only when no specific entry is
  // supported, and never on a line known to be harmless.
  bool generic = false;
  // Considered only when no rank of the job shows training progress (a step, an iteration, a
  // progress bar): what it describes happens before training, and a log that went on to train
  // shows it passed (startup retries that ended, a task that started in /tmp instead).
  bool no_progress = false;
  // The root is a warning a run can survive (a heartbeat that missed once, a retried call): the
  // entry counts only when the job also shows an error line that is not harmless, so a run that
  // went on and finished is not diagnosed from it.
  bool survivable = false;
  // > 0: a last-resort reading of an error line's words (a message no entry knows that names a
  // disk, a socket, a dataset): generic, and considered only when no other entry has a root line
  // of its own; the lowest level that matches wins (docs/signature-format.md, "Last resort").
  int last_resort = 0;
  std::vector<CaptureRule> captures;
  bool require_is_default = false;  // require was derived from root patterns (then any one suffices)
};

struct Example {
  std::string log;  // relative to testdata/
  std::optional<int> initiating_rank;
};

struct Entry {
  std::string id, title, category, severity;
  std::vector<std::string> systems;
  std::vector<PatternRef> refs;
  MatchRule match;
  std::vector<std::string> specializes;
  // `explains: [id, ...]`: symptoms this (hardware or kernel) event causes on its rank or host (an
  // Xid explains an unspecified launch failure). When both are supported, this one is the diagnosis.
  std::vector<std::string> explains;
  // `scope: job`: a failure every rank of the job hits the same way (a configuration or
  // version error); which rank printed it first says nothing, so no initiating rank is named.
  bool job_scope = false;
  // `ends_job_from_outside: true`: the entry is the job being ended from outside (a time limit,
  // a cancel, a deadline). When training had stopped progressing long before that end, the
  // diagnosis is the hang, and this entry is its context (docs/initiating-rank.md).
  bool ends_job_from_outside = false;
  ActionKind action = ActionKind::kInvestigate;  // `action:` (required)
  std::string root_cause, fix;
  std::vector<std::string> confirm, prevention, references, related;
  std::vector<Example> examples;
  SourceLoc loc;
};

// An extra library replacing a built-in entry or shared pattern: allowed, never silent.
struct Override {
  std::string kind;          // "entry" | "shared pattern" | "file"
  std::string name;          // id, pattern name, or the built-in file's path
  SourceLoc loc;             // the replacement
  std::string builtin_file;  // what it replaces
  std::string format() const;  // "file:line:col: note: entry 'x' overrides the built-in one (signatures/...)"
};

struct Library {
  std::vector<PatternDef> patterns;
  std::vector<Entry> entries;
  std::map<std::string, size_t> pattern_index;  // PatternDef name -> index
  std::map<std::string, size_t> entry_index;    // id -> index
  std::vector<Override> overrides;              // reported as notes by the commands

  const Entry* find_entry(const std::string& id) const;
  std::optional<size_t> find_pattern(const std::string& name) const;
};

extern const std::vector<std::string> kCategories;
extern const std::vector<std::string> kSeverities;
extern const std::vector<std::string> kActionKinds;  // the names, in ActionKind order

}  // namespace firstfault
