#pragma once
// Stage 4 (matcher): every pattern of the library in one RE2::Set; the individual RE2 runs only
// for the patterns that hit, to extract captures. A literal prefilter (Hyperscan + RE2's
// FilteredRE2 atoms, when built with Hyperscan) rejects the lines that cannot match before RE2
// sees them, and names the few patterns a surviving line can match.
#include <re2/set.h>

#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "firstfault/matcher/prefilter.h"
#include "firstfault/signatures/library.h"
#include "firstfault/util/result.h"

namespace firstfault {

using Captures = std::vector<std::pair<std::string, std::string>>;

class Matcher {
 public:
  explicit Matcher(const Library& lib);
  ~Matcher();
  Matcher(const Matcher&) = delete;
  Matcher& operator=(const Matcher&) = delete;

  // Compiles the set (and the prefilter when `use_prefilter`). Fails only when RE2 cannot
  // build the set at all; an out-of-memory DFA at match time falls back to one regex at a time.
  Status compile(bool use_prefilter);

  // Indices (into Library::patterns) of every line-matched pattern matching `body`, ascending.
  void match(std::string_view body, std::vector<int>& hits) const;
  // The same, but only trying `potentials` (indices into line_patterns(), from the prefilter).
  void match_potentials(std::string_view body, const int* potentials, size_t count, std::vector<int>& hits) const;

  // Named captures of pattern `def` on `body` (groups that did not take part are left out).
  Captures extract(size_t def, std::string_view body) const;

  // The prefilter is built on first use (it costs about a second to compile, or a few ms from
  // the on-disk cache), so small inputs never pay for it. Null when unavailable.
  const Prefilter* prefilter() const;
  bool has_prefilter() const { return prefilter() != nullptr; }
  const Library& library() const { return lib_; }

  // Progress patterns no entry uses are not matched line by line (they would match most lines
  // of a training log); the correlator applies them to each rank's last lines instead.
  const std::vector<size_t>& tail_patterns() const { return tail_defs_; }

 private:
  const Library& lib_;
  std::vector<size_t> line_defs_;  // patterns matched on every candidate line (set index -> def)
  std::vector<size_t> tail_defs_;
  std::unique_ptr<RE2::Set> set_;
  bool use_prefilter_ = false;
  mutable std::once_flag prefilter_once_;
  mutable std::unique_ptr<Prefilter> prefilter_;
};

}  // namespace firstfault
