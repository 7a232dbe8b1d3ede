#pragma once
// The prefilter's answer per line template: most lines of a training log differ from an earlier
// line only in their digits (step, loss, time, rank), and the prefilter is built from
// digit-blind patterns (digit_closed()), so its answer for a line holds for every line with the
// same digit template. A block's lines are looked up by template; only templates not seen
// before are scanned, in one Hyperscan call. When a template comes again, each of its
// candidates is checked once with the relaxed pattern in RE2 on the template: that drops the
// prefilter's false alarms and gives the first offset where a match can start. Each candidate
// also keeps a MatchMemo (matcher.h). RE2 still decides every match, on the real line or, for a
// digit-blind pattern, on an earlier line of the same template. A block of mostly new lines is
// scanned directly instead (and so are the next few): caching would only cost there.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "firstfault/matcher/matcher.h"
#include "firstfault/matcher/prefilter.h"
#include "firstfault/util/line_hints.h"

namespace firstfault {

// Appends `line` with every ASCII digit replaced by '0' (its digit template) to `out`.
void append_digit_template(std::string_view line, std::string& out);
// Writes the digit template of `line` to `out` (line.size() bytes) and returns its hash; notes
// in `hints` whether the line holds ESC/NUL or CR (the same pass).
uint64_t digit_template(std::string_view line, char* out, LineHints* hints = nullptr);

// Every implementation of digit_template() this CPU runs (portable SWAR, SSE2, AVX2), for tests:
// each must give the same template and hints; hashes agree only within one variant.
struct DigitTemplateVariant {
  const char* name;
  uint64_t (*fn)(std::string_view line, char* out, LineHints* hints);
};
std::vector<DigitTemplateVariant> digit_template_variants();

// One per thread (it is not synchronised); bounded: past its limits it starts afresh.
class TemplateScanner {
 public:
  // One block's lines, each with the prefilter's candidate patterns (indices into the list the
  // prefilter was built from; count 0: the line cannot match). Valid until the next scan.
  struct Line {
    std::string_view text;
    const int* patterns;
    const uint32_t* starts;  // per pattern: no match can start before this offset (null: anywhere)
    MatchMemo* memos;        // per pattern: what it did on this template (null: not cached)
    uint32_t count;
    LineHints hints;
    // The line's template (index below templates(); -1: not cached), for callers that keep their
    // own per-template state: it stays valid until templates() changes generation.
    int32_t template_id = -1;
  };
  const std::vector<Line>& scan(const Prefilter& prefilter, std::string_view block);

  struct Stats {
    uint64_t lines = 0, scanned = 0, resets = 0, bypassed_blocks = 0;
  };
  const Stats& stats() const { return stats_; }
  size_t templates() const { return templates_.size(); }
  // Changes whenever template ids are given afresh (the cache was reset).
  uint64_t generation() const { return stats_.resets; }
  // This scanner reads one of `parts` ranges of a file at the same time as the others (one per
  // thread): it keeps that share of the cache, so the threads together hold one scanner's worth.
  void share_bounds(size_t parts);

 private:
  static constexpr size_t kMaxTemplateBytes = 2048;      // longer lines are scanned each time
  static constexpr size_t kMaxArenaBytes = 1u << 20;     // template bytes kept
  static constexpr size_t kMaxTemplates = 1u << 13;
  // Candidate patterns kept over all templates (each with a MatchMemo of ~150 bytes): lines that
  // wake dozens of patterns each would otherwise grow these lists without bound (issue 27).
  static constexpr size_t kMaxPatternRefs = 1u << 13;
  // The bounds this scanner applies: the above, or a share of them (share_bounds()).
  size_t max_arena_bytes_ = kMaxArenaBytes, max_templates_ = kMaxTemplates, max_pattern_refs_ = kMaxPatternRefs;
  // A block where most lines are new templates (a log of unique lines) is not worth caching: the
  // next kBypassBlocks blocks are scanned directly, then caching is tried again.
  static constexpr int kBypassBlocks = 8;
  static constexpr size_t kMaxMissBytes = 1u << 20;  // new templates queued in one block, at most
  int bypass_ = 0;
  const std::vector<Line>& scan_directly(const Prefilter& prefilter, std::string_view block);
  static constexpr uint32_t kPending = UINT32_MAX;       // scanned in this block, answer not in yet
  // Its candidates did not fit under max_pattern_refs_: this block's lines use the prefilter's
  // answer (Template::miss) and the next block starts with an empty cache.
  static constexpr uint32_t kOverflow = UINT32_MAX - 1;
  bool reset_before_next_block_ = false;

  struct Template {
    uint64_t hash = 0;
    uint32_t offset = 0, length = 0;  // its bytes in arena_
    uint32_t first = 0, count = 0;    // its patterns in patterns_; first == kPending until scanned
    uint32_t miss = 0;                // with first == kOverflow: its index among this block's misses
    bool located = false;             // its patterns were checked with RE2 on it (locate())
  };
  // Keeps only the candidates whose relaxed pattern matches the template in RE2, with the offset
  // where each can first match; done when a template is seen a second time.
  void locate(const Prefilter& prefilter, Template& t);
  // The template's index in templates_, or -1 (`equal` compares two templates' bytes).
  template <typename EqualFn>
  int64_t find(uint64_t hash, std::string_view tmpl, EqualFn equal) const;
  int64_t insert(uint64_t hash, std::string_view tmpl);
  void reset();
  // Step 1 of scan(), in the widest variant this CPU runs (see the .cpp).
  bool look_up_lines(const Prefilter& prefilter, std::string_view block);
  bool look_up_lines_avx2(const Prefilter& prefilter, std::string_view block);
  template <typename NextLineFn, typename EqualFn>
  bool look_up_lines(const Prefilter& prefilter, std::string_view block, NextLineFn next_line, EqualFn equal);

  std::vector<Template> templates_;  // indices stay valid until reset()
  // Open addressing over templates_ (index + 1; 0 empty), at most half full; starts small (a job
  // of many small files has one scanner per file) and doubles as templates come.
  std::vector<uint32_t> table_;
  void grow();
  std::string arena_;
  std::vector<int> patterns_;
  std::vector<uint32_t> starts_;  // beside patterns_
  std::vector<MatchMemo> memos_;  // beside patterns_

  // Per block: each line's template (-1: not cached) and, if it was queued, its index among
  // the templates scanned.
  struct LineRef {
    int64_t slot;
    uint32_t miss;
  };
  std::vector<LineRef> refs_;
  std::vector<Line> lines_;
  char tmpl_[kMaxTemplateBytes];       // the current line's template
  std::string misses_text_;            // the templates scanned this block, one per line
  std::vector<size_t> miss_starts_;    // where each starts in misses_text_
  std::vector<int64_t> miss_slots_;    // and its template (-1: not cached)
  Prefilter::Candidates miss_candidates_;
  // Per miss: its prefilter candidates, [first, first + count) in miss_candidates_.patterns.
  std::vector<std::pair<uint32_t, uint32_t>> miss_answer_;
  Stats stats_;
};

}  // namespace firstfault
