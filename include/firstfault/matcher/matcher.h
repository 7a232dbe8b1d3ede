#pragma once
// Stage 4 (matcher): every pattern of the library in one RE2::Set; the individual RE2 runs only
// for the patterns that hit, to extract captures. A literal prefilter (Hyperscan, when built
// with it) rejects whole stretches of text that cannot match before RE2 sees a line.
#include <re2/set.h>

#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "firstfault/signatures/library.h"
#include "firstfault/util/result.h"

namespace firstfault {

using Captures = std::vector<std::pair<std::string, std::string>>;

class Prefilter;

class Matcher {
 public:
  explicit Matcher(const Library& lib);
  ~Matcher();
  Matcher(const Matcher&) = delete;
  Matcher& operator=(const Matcher&) = delete;

  // Compiles the set (and the prefilter when `use_prefilter`). Fails only when RE2 cannot
  // build the set at all; an out-of-memory DFA at match time falls back to one regex at a time.
  Status compile(bool use_prefilter);

  // Indices (into Library::patterns) of every pattern matching `body`, ascending.
  void match(std::string_view body, std::vector<int>& hits) const;

  // Named captures of pattern `def` on `body` (empty values for groups that did not take part).
  Captures extract(size_t def, std::string_view body) const;

  // For a block of lines: calls on_candidate(line_start_offset) for each line that may match;
  // lines not reported are guaranteed not to match any pattern. Without a prefilter every line
  // is a candidate.
  template <typename Fn>
  void for_each_candidate_line(std::string_view block, Fn&& fn) const;

  bool has_prefilter() const { return prefilter_ != nullptr; }
  const Library& library() const { return lib_; }

 private:
  void candidate_offsets(std::string_view block, std::vector<size_t>& out) const;

  const Library& lib_;
  std::unique_ptr<RE2::Set> set_;
  std::unique_ptr<Prefilter> prefilter_;
  mutable std::vector<size_t> scratch_offsets_;
};

template <typename Fn>
void Matcher::for_each_candidate_line(std::string_view block, Fn&& fn) const {
  if (!prefilter_) {
    size_t start = 0;
    while (start < block.size()) {
      fn(start);
      size_t nl = block.find('\n', start);
      if (nl == std::string_view::npos) break;
      start = nl + 1;
    }
    return;
  }
  candidate_offsets(block, scratch_offsets_);
  for (size_t off : scratch_offsets_) fn(off);
}

}  // namespace firstfault
