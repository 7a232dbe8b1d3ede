#pragma once
// The per-line work shared by `diagnose` (pipeline.cpp) and `watch` (live logs): attribute every
// line, keep the correlator's per-rank timeline, match the prefilter's candidate lines and hand
// the events to the correlator; one LineFeed per input (it numbers that input's lines). Watch
// adds an observer tap and lines that arrive in pieces.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "firstfault/attribution/line_attributor.h"
#include "firstfault/correlator/correlator.h"
#include "firstfault/matcher/matcher.h"
#include "firstfault/matcher/template_scanner.h"
#include "firstfault/reader/log_reader.h"

namespace firstfault {

// Optional tap for callers that react to lines as they arrive (watch: progress clocks, alerts).
class LineObserver {
 public:
  virtual ~LineObserver() = default;
  // Every segment of every line (a '\r'-separated tqdm redraw is several segments).
  virtual void on_line(const Attribution& a, std::string_view segment, uint32_t input, uint64_t line_no) {}
  // Called before the event is handed to the correlator; ev.rank is the attributed rank.
  virtual void on_event(const Event& ev) {}
};

class LineFeed : public BlockSink {
 public:
  LineFeed(const Matcher& matcher, Correlator& correlator, LineAttributor& attributor, uint32_t input,
           InputSummary& summary, LineObserver* observer = nullptr);

  void on_block(std::string_view block) override;
  void on_mapped_block(std::string_view block) override;
  void on_mapped_release() override;
  void on_long_line(std::string_view head, uint64_t full_length) override;

  // The start of a line that is still being written, up to a '\r' (a tqdm bar redrawing with no
  // newline yet). Its segments are matched now; the line number is only taken when it completes.
  void on_partial_line(std::string_view head);

  // The input is known to be large: use the prefilter from the first block.
  void prefer_prefilter() { prefer_prefilter_ = true; }
  // The input is one of `parts` ranges of a file read at once: keep that share of the caches.
  void share_bounds(size_t parts) {
    templates_.share_bounds(parts);
    unescaped_templates_.share_bounds(parts);
  }

 private:
  // The patterns a line may match, from the prefilter (TemplateScanner::Line), or all of them.
  struct Potentials {
    bool all;
    const int* patterns;
    const uint32_t* starts;
    MatchMemo* memos;
    size_t count;
  };
  static constexpr Potentials kAllPatterns{true, nullptr, nullptr, nullptr, 0};
  // `plan`: the attribution plan of the line's digit template (lines without CR or escapes only).
  void note_line_rank(int rank);
  void process_line(std::string_view line, const Potentials& potentials, bool partial, LineHints hints = {},
                    AttributionPlan* plan = nullptr);
  // The lines of one block; on_block() settles the tails after it, a mapped block's wait for
  // on_mapped_release().
  void feed_block(std::string_view block);
  // A pasted log's wrapped lines and escape remnants repaired (attribution/paste_repair.h), then
  // fed and settled; false when the block needs no repair (it is fed as it is).
  bool feed_repaired(std::string_view block);

  const Matcher& matcher_;
  Correlator& corr_;
  LineAttributor& attr_;
  uint32_t input_;
  InputSummary& summary_;
  LineObserver* observer_;
  uint64_t line_no_ = 0;
  std::string scratch_;
  std::vector<int> hits_;
  TemplateScanner templates_;  // the prefilter's answers per digit template of a line
  TemplateScanner unescaped_templates_;  // the same, one line at a time, for lines with escapes
  std::string unescaped_;
  // Per template of templates_ (by template_id): how its lines' prefixes were peeled.
  std::vector<AttributionPlan> plans_;
  uint64_t plans_generation_ = 0;
  std::string_view block_;  // the block being fed (its lines' tails are kept as views until released)
  int pdsh_def_ = -1;
  int fatal_def_ = -1;  // error_fatal_line: also reported for a line whose header says F (fatal)
  int error_def_ = -1;  // error_generic_line: also reported for a line whose level (glog E, logging ERROR) says error
  int warning_stack_def_ = -1;  // c10_warning_stack: reported only under a W or I header (under_warning())
  // Per rank, its last line with a glog/c10 header: the header a c10 stack printed after it
  // belongs to. Indexed by rank + 1 (lines without a rank at 0), an array rather than a hash
  // map since a TF/XLA log has such a header on every line; ranks past kMaxRanks are not kept
  // (their stacks stay error lines).
  struct LastHeader {
    uint64_t line = 0;
    char severity = 0;
  };
  std::vector<LastHeader> last_header_;
  void note_header(int rank, uint64_t line_no, char severity);
  bool under_warning(int rank, uint64_t line_no) const;
  bool prefer_prefilter_ = false;
  bool first_block_ = true;   // the input's first block: where a paste is recognised
  bool remnants_ = false;     // escape remnants seen: every later block is repaired too
  size_t wrap_width_ = 0;     // the input's hard-wrap column, 0 when it is not wrapped
  bool wrap_words_ = false;    // wrapped at spaces, not at a fixed column (word_wrap_width())
  std::string repaired_;
};

}  // namespace firstfault
