#include "firstfault/app/line_feed.h"

#include "firstfault/app/pipeline.h"
#include "firstfault/attribution/paste_repair.h"

#include <algorithm>
#include <cstring>
#include <optional>

namespace firstfault {

namespace {
// Where `body` starts within `text`, when it is a view into it (not when it is a repaired copy).
std::optional<size_t> offset_within(std::string_view body, std::string_view text) {
  if (body.data() < text.data() || body.data() > text.data() + text.size()) return std::nullopt;
  return static_cast<size_t>(body.data() - text.data());
}
constexpr uint64_t kPrefilterAfterBytes = 8ull << 20;
}  // namespace

LineFeed::LineFeed(const Matcher& matcher, Correlator& correlator, LineAttributor& attributor, uint32_t input,
                   InputSummary& summary, LineObserver* observer)
    : matcher_(matcher), corr_(correlator), attr_(attributor), input_(input), summary_(summary), observer_(observer) {
  if (auto p = matcher.library().find_pattern("launcher_pdsh_cmd")) pdsh_def_ = static_cast<int>(*p);
  if (auto p = matcher.library().find_pattern("error_fatal_line")) fatal_def_ = static_cast<int>(*p);
  if (auto p = matcher.library().find_pattern("error_generic_line")) error_def_ = static_cast<int>(*p);
  if (auto p = matcher.library().find_pattern("c10_warning_stack")) warning_stack_def_ = static_cast<int>(*p);
}

// A c10 stack ("Exception raised from ... (most recent call first):") belongs to the rank's last
// glog/c10 header; it is a warning's stack when that header, a few lines before, says W or I
// (ProcessGroupNCCL logs a watchdog that caught "driver shutting down" at exit at INFO).
bool LineFeed::under_warning(int rank, uint64_t line_no) const {
  constexpr uint64_t kWarningStackLines = 20;
  size_t i = static_cast<size_t>(rank + 1);
  if (rank < -1 || i >= last_header_.size()) return false;
  const LastHeader& h = last_header_[i];
  return (h.severity == 'W' || h.severity == 'I') && line_no > h.line && line_no - h.line <= kWarningStackLines;
}

void LineFeed::note_header(int rank, uint64_t line_no, char severity) {
  size_t i = static_cast<size_t>(rank + 1);
  if (rank < -1 || i > kMaxRanks) return;
  if (i >= last_header_.size()) last_header_.resize(i + 1);
  last_header_[i] = {line_no, severity};
}

void LineFeed::on_block(std::string_view block) {
  if (feed_repaired(block)) return;
  feed_block(block);
  corr_.settle_tails();  // the reader reuses the block's buffer next
}

// The window stays mapped over several blocks: the tails are copied once, when it goes.
void LineFeed::on_mapped_block(std::string_view block) {
  if (!feed_repaired(block)) feed_block(block);
}

bool LineFeed::feed_repaired(std::string_view block) {
  // A paste is small: its width is read from the first block's first MiB. Remnants found there
  // mark the whole input (a log stored through syslog keeps its "#033[" to the end).
  constexpr size_t kWrapProbeBytes = 1 << 20;
  if (first_block_) {
    first_block_ = false;
    remnants_ = has_escape_remnants(block);
    std::string_view probe = block.substr(0, kWrapProbeBytes);
    if (probe.size() < block.size()) probe = probe.substr(0, probe.rfind('\n') + 1);
    // A word wrap also leaves rows at the widest length; its shorter wrapped rows tell it apart.
    wrap_words_ = (wrap_width_ = word_wrap_width(probe)) != 0;
    if (!wrap_words_) wrap_width_ = hard_wrap_width(probe);
  } else if (!remnants_) {
    return false;
  }
  if ((!remnants_ && !wrap_width_) || !repair_paste(block, remnants_, wrap_width_, repaired_, wrap_words_)) return false;
  feed_block(repaired_);
  corr_.settle_tails();  // the repaired copy is reused by the next block
  return true;
}
void LineFeed::on_mapped_release() { corr_.settle_tails(); }

void LineFeed::feed_block(std::string_view block) {
  if (g_interrupted.load(std::memory_order_relaxed)) return;
  // The prefilter (shared by all threads) when one is at hand: compiled into the binary for the
  // built-in library, or cached. Compiling one costs about a second, so that happens only once
  // the inputs given to this matcher prove large; until then lines go to the RE2 set.
  const Prefilter* pf =
      prefer_prefilter_ ? matcher_.prefilter(true) : matcher_.prefilter_after(block.size(), kPrefilterAfterBytes);
  if (!pf) {
    BlockHints hints(block);
    size_t offset = 0;
    for_each_line(block, [&](std::string_view line) {
      process_line(line, kAllPatterns, false, hints.at(offset, offset + line.size()));
      offset += line.size() + 1;
    });
    return;
  }
  // Lines the prefilter rules out are still attributed (per-rank timeline) but not matched.
  block_ = block;
  const std::vector<TemplateScanner::Line>& lines = templates_.scan(*pf, block);
  if (plans_generation_ != templates_.generation()) {  // template ids were given afresh
    plans_.clear();
    plans_generation_ = templates_.generation();
  }
  plans_.resize(templates_.templates());
  for (const TemplateScanner::Line& line : lines) {
    LineHints h = line.hints;  // found by the scanner in the pass that made the line's template
    // RE2 sees the line without its escapes and NULs, where a colour code inside a message
    // ("CUDA \x1b[1mout of memory") no longer splits it: the prefilter must see it so too.
    if (h.may_have_escapes) {
      std::string_view clean = strip_ansi(line.text, unescaped_);
      h.may_have_escapes = false;
      const auto& scanned = unescaped_templates_.scan(*pf, clean);  // no line when it was all escapes
      if (scanned.empty()) {
        process_line(clean, kAllPatterns, false, h);
      } else {
        const TemplateScanner::Line& c = scanned.front();
        process_line(clean, {false, c.patterns, c.starts, c.memos, c.count}, false, h);
      }
    } else {
      AttributionPlan* plan = line.template_id >= 0 && !h.may_have_cr ? &plans_[static_cast<size_t>(line.template_id)] : nullptr;
      process_line(line.text, {false, line.patterns, line.starts, line.memos, line.count}, false, h, plan);
    }
  }
  block_ = {};
}

void LineFeed::on_long_line(std::string_view head, uint64_t) {
  ++summary_.long_lines;
  process_line(head, kAllPatterns, false);
}

// The file's name gives a rank (FileIdentity): a line whose prefix names another is counted, so
// that a per-rank file whose name and lines disagree is reported (name_rank_note()).
void LineFeed::note_line_rank(int rank) {
  summary_.name_rank = attr_.file().rank;
  ++summary_.lines_with_rank;
  if (rank == attr_.file().rank) return;
  ++summary_.lines_with_other_rank;
  if (summary_.other_rank < 0) summary_.other_rank = rank;
}

void LineFeed::on_partial_line(std::string_view head) { process_line(head, kAllPatterns, true); }

void LineFeed::process_line(std::string_view line, const Potentials& pot, bool partial, LineHints hints,
                            AttributionPlan* plan) {
  const bool candidate = pot.all || pot.count > 0;
  uint64_t line_no = line_no_ + 1;
  if (!partial) {
    line_no_ = line_no;
    ++summary_.lines;
  }
  if (line.size() > kMaxLineBytes) {  // keep the head for matching; the rest is counted only
    ++summary_.long_lines;
    line = line.substr(0, kMaxLineBytes);
  }
  auto on_segment = [&](std::string_view seg) {
    Attribution a = attr_.attribute(seg, plan);  // one segment when there is a plan: the whole line
    if (attr_.file().rank >= 0 && a.rank >= 0 && !a.rank_from_name && !a.inherited && !partial) note_line_rank(a.rank);
    if (a.severity) note_header(a.rank, line_no, a.severity);
    // A segment inside the block outlives this call (until the tails are settled: at the end of
    // on_block(), or at on_mapped_release()); one in a scratch buffer (escapes stripped) or a
    // partial line does not.
    bool in_block = !block_.empty() && seg.data() >= block_.data() && seg.data() + seg.size() <= block_.data() + block_.size();
    corr_.observe_line(a, seg, input_, line_no, in_block);
    if (observer_) observer_->on_line(a, seg, input_, line_no);
    const bool error_level = a.severity == 'E' && error_def_ >= 0;
    if (!candidate && !a.fatal && !error_level) return;
    bool inside = false;
    size_t body_offset = 0;
    // The memo of pattern `def` when it describes this very body (its groups are read from it).
    auto memo_of = [&](size_t def) -> const MatchMemo* {
      int group = matcher_.group_of(def);
      if (!inside || !pot.memos || group < 0) return nullptr;
      for (size_t k = 0; k < pot.count; ++k)
        if (pot.patterns[k] == group && pot.memos[k].has_groups && pot.memos[k].describes(body_offset, a.body.size()))
          return &pot.memos[k];
      return nullptr;
    };
    if (!candidate) hits_.clear();
    else if (pot.all) matcher_.match(a.body, hits_);
    else {
      // Offsets and memos from the prefilter are about the line given here (lines with escapes
      // come stripped by on_block()), so the body is a view into it; checked all the same, since
      // an offset into another buffer would be meaningless.
      const std::optional<size_t> at = offset_within(a.body, line);
      inside = at.has_value();
      body_offset = at.value_or(0);
      matcher_.match_potentials(a.body, pot.patterns, inside ? pot.starts : nullptr, inside ? pot.memos : nullptr,
                                pot.count, body_offset, hits_);
    }
    // glog/c10 severity F ("F0801 ...] ", "[F1029 ...] ") is peeled with the header, so no
    // pattern sees it: such a line is a failure line whatever its text, never a clean run.
    if (a.fatal && fatal_def_ >= 0 && std::find(hits_.begin(), hits_.end(), fatal_def_) == hits_.end())
      hits_.push_back(fatal_def_);
    // So is an ERROR level (glog/c10 'E', or a logging level peeled with its prefix): an error
    // line, though not one that names a failure.
    if (error_level && std::find(hits_.begin(), hits_.end(), error_def_) == hits_.end()) hits_.push_back(error_def_);
    SharedText text;  // one copy of the segment for all of its events, made by the first
    const auto body_at = static_cast<uint32_t>(offset_within(a.body, seg).value_or(0));
    for (int def : hits_) {
      if (def == pdsh_def_) attr_.enable_pdsh();
      if (def == warning_stack_def_ && !under_warning(a.rank, line_no)) continue;
      // Past its storage bound a pattern is only counted (cheap); see docs/reliability.md.
      if (corr_.only_steps(static_cast<size_t>(def))) {  // a progress line: no event to build
        if (auto step = matcher_.capture(static_cast<size_t>(def), a.body, "step", memo_of(static_cast<size_t>(def))))
          corr_.add_step(static_cast<size_t>(def), a.rank, *step, seg, in_block);
        else
          corr_.count_event(static_cast<size_t>(def));
        continue;
      }
      if (!corr_.wants_event(static_cast<size_t>(def))) {
        corr_.count_event(static_cast<size_t>(def));
        continue;
      }
      Event ev;
      ev.def = static_cast<size_t>(def);
      ev.rank = a.rank;
      ev.local_rank = a.local_rank;
      ev.host = std::string(a.host);
      ev.pid = a.pid;
      ev.time = a.time;
      ev.input = input_;
      ev.line = line_no;
      if (text.empty()) text = SharedText(seg);
      ev.text = text;
      ev.body_at = body_at;
      ev.captures = matcher_.extract(ev.def, a.body, memo_of(ev.def));
      if (observer_) observer_->on_event(ev);
      corr_.add_event(std::move(ev));
    }
  };
  // A paste that lost a progress bar's carriage returns still glues the next record after the
  // bar. Only lines that may match something are looked at, so a common line pays nothing.
  const bool glued_bar = candidate && !hints.may_have_cr && !hints.may_have_escapes &&
                         progress_bar_glued_end(line) != std::string_view::npos;
  if (!glued_bar) {
    for_each_segment(line, scratch_, on_segment, hints);
    return;
  }
  plan = nullptr;  // a plan describes the whole line
  split_glued_bars(line, on_segment);
}

}  // namespace firstfault
