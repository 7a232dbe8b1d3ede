#pragma once
// A fast reject stage in front of RE2: every pattern, rewritten into a byte-level superset of
// itself that cannot tell digits apart, in one Hyperscan database compiled in prefilter mode and
// scanned over many lines at once. Only the lines where some pattern (approximately) matched go to RE2, and only for those
// patterns. It may report lines RE2 then rejects; it never drops a line RE2 would match. RE2
// stays the matcher of record. See docs/performance.md.
#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "firstfault/signatures/library.h"

namespace firstfault {

// The byte-level superset rewrite (exposed for tests).
std::string relax_for_bytes(const std::string& re2_pattern);

// The ways a pattern tells digits apart: the digit sets of its classes and literal digits that
// hold some digits but not all; `unknown` when one cannot be worked out (\p classes).
struct DigitSets {
  std::vector<uint16_t> sets;
  bool unknown = false;
};
// The digit-blind superset of a pattern (see prefilter.cpp); nullopt for syntax it does not read.
std::optional<std::string> digit_closed(const std::string& re2_pattern, DigitSets* sets = nullptr);
// For each digit, the smallest digit the pattern cannot tell it from ("[1-9]\d*": 0 -> '0',
// 1..9 -> '1'): lines that differ only by digits of one class match alike. Nullopt when
// digit_closed() cannot read the pattern or a class's digits are unknown.
std::optional<std::array<char, 10>> digit_classes(const std::string& re2_pattern);
// The same from the sets digit_closed() noted (one reading of the pattern for both).
std::optional<std::array<char, 10>> digit_classes(const DigitSets& sets);

class Prefilter {
 public:
  virtual ~Prefilter() = default;
  // For each line of `block` that may match, appends its start offset and the indices (into
  // the pattern list given to build()) of the patterns it may match. Offsets ascend.
  struct Candidate {
    size_t line_start;
    uint32_t first, count;  // the line's patterns: Candidates::patterns[first, first + count)
  };
  struct Candidates {
    std::vector<Candidate> lines;
    std::vector<int> patterns;
    void clear() {
      lines.clear();
      patterns.clear();
    }
  };
  virtual void scan(std::string_view block, Candidates& out) const = 0;
  // Exactly where relaxed pattern `pattern` first matches in `text` (with RE2, not the
  // approximate prefilter scan), or nullopt when it does not match at all. A line whose digit
  // template is `text` can only match the original pattern at or after that offset.
  virtual std::optional<size_t> leftmost(int pattern, std::string_view text) const = 0;
  // The prefilter for `patterns` from the cheapest source that has it: the database compiled
  // into the binary at build time (builtin_prefilter_db(), when it was made from these very
  // patterns and runs on this CPU), then the on-disk cache; compiling it (about a second for
  // the built-in library, then cached) only when `may_compile`. Nullptr when none is available
  // (no Hyperscan, or not allowed to compile); then every line goes to the RE2 set.
  // `closed`, when given, holds digit_closed() of each pattern, in order (the matcher has read
  // every pattern once already; reading them again was about a tenth of start-up).
  static std::unique_ptr<Prefilter> load(const std::vector<const PatternDef*>& patterns, bool may_compile,
                                         const std::vector<std::optional<std::string>>* closed = nullptr);
  // The compiled database for `patterns`, serialized with its key, for embedding at build time
  // (tools/snapshot.cpp); empty without Hyperscan or when the patterns do not compile.
  static std::string compile_serialized(const std::vector<const PatternDef*>& patterns);
};

// The serialized prefilter database compiled into the binary (generated at build time next to
// the library snapshot; empty in the tool that makes it and without Hyperscan).
std::string_view builtin_prefilter_db();

}  // namespace firstfault
