#pragma once
// A fast reject stage in front of RE2: finds the lines of a block that could match some
// pattern. It may report false positives (RE2 decides), never false negatives.
#include <memory>
#include <string_view>
#include <vector>

#include "firstfault/signatures/library.h"

namespace firstfault {

class Prefilter {
 public:
  virtual ~Prefilter() = default;
  // Appends the start offsets of candidate lines, ascending and unique.
  virtual void scan(std::string_view block, std::vector<size_t>& line_starts) const = 0;
  // Returns nullptr when no prefilter can be built (then every line goes to RE2).
  static std::unique_ptr<Prefilter> build(const Library& lib);
};

}  // namespace firstfault
