#include "firstfault/app/pipeline.h"

#include "firstfault/attribution/line_attributor.h"
#include "firstfault/correlator/correlator.h"
#include "firstfault/reader/log_reader.h"

namespace firstfault {

std::atomic<bool> g_interrupted{false};

namespace {

class JobSink : public BlockSink {
 public:
  JobSink(const Matcher& matcher, Correlator& correlator, LineAttributor& attributor, uint32_t input,
          InputSummary& summary)
      : matcher_(matcher), corr_(correlator), attr_(attributor), input_(input), summary_(summary) {
    if (auto p = matcher.library().find_pattern("launcher_pdsh_cmd")) pdsh_def_ = static_cast<int>(*p);
  }

  void on_block(std::string_view block) override {
    if (g_interrupted.load(std::memory_order_relaxed)) return;
    // Lines the prefilter rules out are still attributed (per-rank timeline) but not matched.
    size_t next_candidate = 0;
    bool all = !matcher_.has_prefilter();
    candidates_.clear();
    if (!all) matcher_.for_each_candidate_line(block, [&](size_t off) { candidates_.push_back(off); });
    size_t offset = 0;
    for_each_line(block, [&](std::string_view line) {
      size_t start = offset;
      offset += line.size() + 1;
      bool candidate = all;
      while (!all && next_candidate < candidates_.size() && candidates_[next_candidate] < start) ++next_candidate;
      if (!all && next_candidate < candidates_.size() && candidates_[next_candidate] == start) candidate = true;
      process_line(line, candidate);
    });
  }

  void on_long_line(std::string_view head, uint64_t) override {
    ++summary_.long_lines;
    process_line(head, true);
  }

 private:
  void process_line(std::string_view line, bool candidate) {
    ++line_no_;
    ++summary_.lines;
    if (line.size() > kMaxLineBytes) {  // keep the head for matching; the rest is counted only
      ++summary_.long_lines;
      line = line.substr(0, kMaxLineBytes);
    }
    for_each_segment(line, scratch_, [&](std::string_view seg) {
      Attribution a = attr_.attribute(seg);
      corr_.observe_line(a, seg, input_, line_no_);
      if (!candidate) return;
      matcher_.match(a.body, hits_);
      for (int def : hits_) {
        if (def == pdsh_def_) attr_.enable_pdsh();
        Event ev;
        ev.def = static_cast<size_t>(def);
        ev.rank = a.rank;
        ev.local_rank = a.local_rank;
        ev.host = std::string(a.host);
        ev.pid = a.pid;
        ev.time = a.time;
        ev.input = input_;
        ev.line = line_no_;
        ev.text = std::string(seg);
        ev.captures = matcher_.extract(ev.def, a.body);
        corr_.add_event(std::move(ev));
      }
    });
  }

  const Matcher& matcher_;
  Correlator& corr_;
  LineAttributor& attr_;
  uint32_t input_;
  InputSummary& summary_;
  uint64_t line_no_ = 0;
  std::string scratch_;
  std::vector<int> hits_;
  std::vector<size_t> candidates_;
  int pdsh_def_ = -1;
};

}  // namespace

JobResult analyze_job(const std::vector<InputSource>& inputs, const Matcher& matcher, const AnalyzeOptions& options) {
  JobResult result;
  Correlator corr(matcher.library());
  std::vector<InputSummary> summaries(inputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (g_interrupted.load()) {
      result.interrupted = true;
      break;
    }
    const InputSource& in = inputs[i];
    InputSummary& s = summaries[i];
    s.path = in.path;
    LineAttributor attributor(in.is_stdin ? FileIdentity{} : identity_from_path(in.path, options.rank_from));
    JobSink sink(matcher, corr, attributor, static_cast<uint32_t>(i), s);
    ReadStats stats;
    Status st = read_input(in, sink, stats);
    s.bytes = stats.bytes;
    s.compression = stats.compression;
    if (!st.ok()) {
      s.error = st.message();
      result.problems.push_back({in.path, st.message()});
    }
  }
  if (g_interrupted.load()) result.interrupted = true;
  corr.set_inputs(std::move(summaries));
  result.diagnosis = corr.finish();
  return result;
}

JobResult analyze_paths(const std::vector<std::string>& paths, const Matcher& matcher, const AnalyzeOptions& options) {
  std::vector<InputProblem> problems;
  auto inputs = expand_inputs(paths, problems);
  JobResult r = analyze_job(inputs, matcher, options);
  r.problems.insert(r.problems.begin(), problems.begin(), problems.end());
  for (const auto& p : problems) r.diagnosis.inputs.push_back({p.path, 0, 0, 0, "", p.reason});
  return r;
}

}  // namespace firstfault
