#pragma once
// Stage 4 (matcher): every pattern of the library in one RE2::Set; the individual RE2 runs only
// for the patterns that hit, to extract captures. A literal prefilter (Hyperscan + RE2's
// FilteredRE2 atoms, when built with Hyperscan) rejects the lines that cannot match before RE2
// sees them, and names the few patterns a surviving line can match.
#include <re2/set.h>

#include <array>
#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "firstfault/matcher/prefilter.h"
#include "firstfault/signatures/library.h"
#include "firstfault/util/result.h"

namespace firstfault {

using Captures = std::vector<std::pair<std::string, std::string>>;

// What one pattern did on the body of a line with a given digit template (TemplateScanner keeps
// one per template and candidate). A pattern that cannot tell digits apart matches, and places
// its groups, the same way on every body cut at the same offset from lines of that template, so
// the next such line needs no RE2 run.
//
// A pattern that tells some digits apart ("[1-9]\d*") gives the same answer on bodies whose
// text from the search start on is the same once each digit is read as its class
// (digit_classes()); such a memo keeps that text as its key and no groups.
struct MatchMemo {
  static constexpr size_t kMaxGroups = 8;
  int64_t body_offset = -1;  // the body this describes: offset in the line and length; -1 none
  size_t body_length = 0;
  bool matched = false;
  bool has_groups = false;   // groups[] hold the match's groups (digit-blind patterns only)
  std::array<std::pair<int32_t, int32_t>, kMaxGroups> groups{};  // capture i+1: start, length; start -1 unset
  std::string key;           // digit-class text from one byte before the search start (others)
  std::string raw;           // the same text as last seen, digits as they were (a cheaper first test)
  bool describes(size_t offset, size_t length) const {
    return body_offset == static_cast<int64_t>(offset) && body_length == length;
  }
};

class Matcher {
 public:
  explicit Matcher(const Library& lib);
  ~Matcher();
  Matcher(const Matcher&) = delete;
  Matcher& operator=(const Matcher&) = delete;

  // Readies matching: with `use_prefilter`, loads the prefilter if one is at hand without
  // compiling (embedded in the binary or cached); otherwise compiles the RE2 set now. Fails only
  // when RE2 cannot build the set at all; an out-of-memory DFA at match time falls back to one
  // regex at a time.
  Status compile(bool use_prefilter);

  // Indices (into Library::patterns) of every line-matched pattern matching `body`, ascending.
  void match(std::string_view body, std::vector<int>& hits) const;
  // The same, but only trying `potentials` (indices into line_patterns(), from the prefilter);
  // with `starts`, potential k cannot match before offset starts[k] of the raw line, whose
  // body begins at `body_offset`.
  // `memos` (beside `potentials`, may be null) are read and updated for digit-blind patterns.
  void match_potentials(std::string_view body, const int* potentials, const uint32_t* starts, MatchMemo* memos,
                        size_t count, size_t body_offset, std::vector<int>& hits) const;
  // The line group (index into line_patterns()) that pattern `def` is matched in, or -1.
  int group_of(size_t def) const { return def < group_of_def_.size() ? group_of_def_[def] : -1; }

  // Named captures of pattern `def` on `body` (groups that did not take part are left out).
  // With `memo` (one that describes this body), the groups are read from it instead.
  Captures extract(size_t def, std::string_view body, const MatchMemo* memo = nullptr) const;
  // One named capture of pattern `def` on `body` (a view into body), without allocating.
  std::optional<std::string_view> capture(size_t def, std::string_view body, std::string_view name,
                                          const MatchMemo* memo = nullptr) const;

  // The prefilter: embedded or cached ones are used for any input; compiling one (about a
  // second) only happens when `may_compile` (the caller saw a large input). Null when unavailable.
  const Prefilter* prefilter(bool may_compile = true) const;
  bool has_prefilter() const { return prefilter() != nullptr; }
  // The prefilter for a block of `bytes`, compiling one once this matcher has been given more
  // than `threshold` bytes in all: many small inputs (a triage run, a job of per-rank files)
  // repay the compile as one large input does, when no embedded or cached one is usable.
  const Prefilter* prefilter_after(uint64_t bytes, uint64_t threshold) const;
  // The distinct regexes matched line by line (one pattern per regex text: several entries may
  // define the same one), in the order the prefilter and the set number them.
  std::vector<const PatternDef*> line_patterns() const;
  const Library& library() const { return lib_; }

  // Progress patterns no entry uses are not matched line by line (they would match most lines
  // of a training log); the correlator applies them to each rank's last lines instead.
  const std::vector<size_t>& tail_patterns() const { return tail_defs_; }

 private:
  const Library& lib_;
  // Patterns matched on every candidate line, grouped by regex text: group i (the set's and the
  // prefilter's index i) is tried once and reports all of its patterns.
  std::vector<std::vector<size_t>> line_groups_;
  void report_group(size_t group, std::vector<int>& hits) const;
  std::vector<int> group_of_def_;
  std::vector<std::optional<std::string>> digit_closed_;  // per group: digit_closed() of its regex
  std::vector<bool> digit_blind_;  // per group: its regex is its own digit_closed() form
  // Per group that is not digit-blind: each digit's class (digit_classes()), when known.
  std::vector<std::optional<std::array<char, 10>>> digit_classes_;
  // Submatch positions of pattern `def` on `body` from RE2 or from `memo`: false if no match.
  bool groups(size_t def, std::string_view body, const MatchMemo* memo, std::vector<re2::StringPiece>& out) const;
  std::vector<size_t> tail_defs_;
  Status compile_set() const;  // the RE2 set, compiled once when first needed
  mutable std::once_flag set_once_;
  mutable std::unique_ptr<RE2::Set> set_;
  mutable Status set_status_ = Status::Ok();
  bool use_prefilter_ = false;
  mutable std::mutex prefilter_mu_;
  mutable bool load_tried_ = false, compile_tried_ = false;
  mutable std::unique_ptr<Prefilter> prefilter_;
  mutable std::atomic<const Prefilter*> ready_{nullptr};
  mutable std::atomic<uint64_t> bytes_seen_{0};  // by prefilter_after()
};

}  // namespace firstfault
