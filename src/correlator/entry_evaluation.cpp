// Which entries the job's events support, and how strongly: the first step of
// Correlator::finish(). Rules of the signature format (docs/signature-format.md): require / any /
// absent, capture rules, roles, boost and penalize, `specializes`, generic and fallback entries.
#include <re2/re2.h>

#include <algorithm>
#include <cmath>
#include <set>

#include "correlator_steps.h"

namespace firstfault {

namespace {
// Whether `e` lists `id` under `explains:`.
bool explains(const Entry& e, const std::string& id) {
  return std::find(e.explains.begin(), e.explains.end(), id) != e.explains.end();
}
}  // namespace

// Every root and cascade line of the entry came before the run said it finished (a completion
// line of their rank or of rank 0): the run lived through them, so they did not end it. Not when
// another error that counts lies between them and the file's last completion line (a wrapper that
// echoes "Training Complete" after the program crashed). The caller also skips it when a launcher
// reports a failed process anywhere: one process's "finished" does not speak for the one that failed.
bool Correlator::finished_after_every_signal(const Hits& h, const ErrorLines& errors) const {
  auto marker = lib_.find_pattern("job_completion_marker");
  if (!marker) return false;
  std::set<std::pair<uint32_t, uint64_t>> signals;
  for (size_t r = 0; r < h.entry->refs.size(); ++r) {
    Role role = h.entry->refs[r].role;
    if (role != Role::kRoot && role != Role::kCascade) continue;
    for (const Event* ev : h.by_ref[r]) {
      if (!finished_after(*ev)) return false;
      signals.insert({ev->input, ev->line});
    }
  }
  if (signals.empty()) return false;
  std::map<uint32_t, uint64_t> last_marker;  // input -> its last completion line
  for (const Event& done : events_by_def_[*marker]) last_marker[done.input] = std::max(last_marker[done.input], done.line);
  return std::none_of(errors.lines.begin(), errors.lines.end(), [&](const Event* ev) {
    auto first = signals.lower_bound({ev->input, 0});
    bool after_a_signal = first != signals.end() && first->first == ev->input && ev->line > first->second;
    return after_a_signal && !signals.count({ev->input, ev->line}) && !errors.is_benign(*ev) &&
           ev->line < last_marker[ev->input];
  });
}

bool Correlator::launcher_reported_failure() const {
  for (auto name : {"elastic_child_failed", "srun_task_failed", "mpirun_first_failed", "mpirun_noticed_rank"})
    if (auto def = lib_.find_pattern(name); def && !events_by_def_[*def].empty()) return true;
  return false;
}

// The run said it finished (rank 0's or an unranked completion line) and no launcher reported a
// failed process: a fallback entry, which reads a job that stopped without an error, does not
// apply to it.
bool Correlator::run_said_finished() const {
  auto marker = lib_.find_pattern("job_completion_marker");
  if (!marker || launcher_reported_failure()) return false;
  return std::any_of(events_by_def_[*marker].begin(), events_by_def_[*marker].end(), [](const Event& done) { return done.rank <= 0; });
}

// A survivable entry's root is a warning a run can live through (a missed rendezvous heartbeat).
// When every error that counts came long after it (kOutlivedMs, on comparable clocks), the job
// did live through it: its end is told by those later errors, not by the warning.
bool Correlator::outlived_warning(const Hits& h, const ErrorLines& errors) const {
  constexpr int64_t kOutlivedMs = 10 * 60 * 1000;
  const Event* last_root = nullptr;
  for (size_t r = 0; r < h.entry->refs.size(); ++r)
    if (h.entry->refs[r].role == Role::kRoot)
      for (const Event* ev : h.by_ref[r])
        if (ev->time.valid() && ev->time.kind != Timestamp::kBoot && (!last_root || earlier(*last_root, *ev))) last_root = ev;
  if (!last_root) return false;
  bool later_error = false;
  for (const Event* ev : errors.lines) {
    if (errors.is_benign(*ev) || (ev->input == last_root->input && ev->line == last_root->line)) continue;
    if (!correlator_detail::comparable(ev->time, last_root->time)) continue;  // it decides nothing
    int64_t gap = event_key(*ev) - event_key(*last_root);
    if (gap < kOutlivedMs) return false;  // an error near (or before) the warning: it may be the cause
    later_error = true;
  }
  return later_error;
}

std::vector<Correlator::Hits> Correlator::evaluate_entries(const ErrorLines& errors) const {
  std::vector<size_t> error_line_defs;
  for (auto name : {"error_exception_line", "error_fatal_line", "error_generic_line"})
    if (auto def = lib_.find_pattern(name)) error_line_defs.push_back(*def);
  auto is_error_line_def = [&](size_t def) {
    return std::find(error_line_defs.begin(), error_line_defs.end(), def) != error_line_defs.end();
  };

  // Job-wide facts the rule of every entry reads: computed once, not per entry.
  const bool launcher_failed = launcher_reported_failure();
  const bool run_finished = run_said_finished();
  const bool trained = job_made_progress();

  std::vector<Hits> all, fallbacks, last_resorts;
  all.reserve(lib_.entries.size());
  const Event* earliest_root = nullptr;
  for (const Entry& e : lib_.entries) {
    Hits h;
    h.entry = &e;
    h.by_ref.resize(e.refs.size());
    for (size_t r = 0; r < e.refs.size(); ++r) {
      for (const Event& ev : events_by_def_[e.refs[r].def]) {
        bool ok = true;
        for (const CaptureRule& rule : e.match.captures) {
          if (rule.ref != r) continue;
          const std::string* v = ev.capture(rule.capture);
          if (!v || !RE2::FullMatch(*v, *rule.re)) ok = false;
        }
        // A generic entry reads a kind of error: only on a line that reads as an error and is not
        // known to be harmless (a cudaError name in a fallback warning, a library probe at INFO).
        // Its context lines (where the traceback ran) are not errors and are read as they are.
        if (ok && e.match.generic && e.refs[r].role != Role::kContext && (!errors.is_error(ev) || errors.is_benign(ev)))
          ok = false;
        // Any entry that reads the engine's error lines (a hang shown by an error) reads them as
        // the verdict does: a line known to be harmless is not one.
        if (ok && errors.is_error(ev) && errors.is_benign(ev) && is_error_line_def(e.refs[r].def)) ok = false;
        // A finalizer's traceback that Python ignored ("Exception ignored in: ...") stopped
        // nothing: an error in it is not what ended the job, for any entry.
        if (ok && e.refs[r].role != Role::kContext && !errors.ignored.empty() && errors.in_ignored_block(ev)) ok = false;
        // Nor are NCCL's warnings of a rank tearing down after it completed.
        if (ok && e.refs[r].role != Role::kContext && errors.after_completion.count({ev.input, ev.line})) ok = false;
        if (ok) h.by_ref[r].push_back(&ev);
      }
    }
    if (!e.match.same_traceback.empty()) keep_frames_of_root_tracebacks(h);
    auto hit = [&](size_t r) { return !h.by_ref[r].empty(); };
    bool rule = std::all_of(e.match.require.begin(), e.match.require.end(), hit);
    if (!e.match.any.empty()) rule = rule && std::any_of(e.match.any.begin(), e.match.any.end(), hit);
    rule = rule && std::none_of(e.match.absent.begin(), e.match.absent.end(), hit);
    rule = rule && (!e.match.survivable || (errors.any_counting() && !outlived_warning(h, errors)));
    rule = rule && (launcher_failed || !finished_after_every_signal(h, errors));
    // A failure that stops a job before it trains is contradicted by training progress anywhere
    // in the job (a step counter moved): the message was a warning the job started past.
    rule = rule && !(e.match.no_progress && trained);
    if (e.match.fallback) {
      if (rule && !run_finished) fallbacks.push_back(std::move(h));
      continue;
    }
    bool signal = false;
    for (size_t r = 0; r < e.refs.size(); ++r) {
      if (!hit(r)) continue;
      Role role = e.refs[r].role;
      if (role == Role::kRoot || role == Role::kCascade) signal = true;
      if (role == Role::kRoot) {
        h.has_root = true;
        for (const Event* ev : h.by_ref[r])
          if (!h.first_root || earlier(*ev, *h.first_root)) h.first_root = ev;
      }
      for (const Event* ev : h.by_ref[r])
        if (role != Role::kContext && (!h.first_any || earlier(*ev, *h.first_any))) h.first_any = ev;
    }
    h.supported = rule && signal;
    if (!h.supported) continue;
    if (e.match.last_resort > 0) {
      if (h.has_root) last_resorts.push_back(std::move(h));
      continue;
    }
    // A generic entry's root (an exit code, an exception class) says nothing about which specific
    // entry's root came first.
    if (h.first_root && !e.match.generic && (!earliest_root || earlier(*h.first_root, *earliest_root)))
      earliest_root = h.first_root;
    all.push_back(std::move(h));
  }

  score_entries(all, earliest_root);
  rank_entries(all, errors);
  add_last_resort(all, fallbacks, last_resorts);

  // Fallback entries describe what a log that *lacks* something means (e.g. NCCL init that never
  // completed); they count only when nothing else is supported.
  if (all.empty())
    for (Hits& h : fallbacks) {
      h.supported = true;
      h.confidence = 0.3;
      all.push_back(std::move(h));
    }
  if (all.empty())
    if (auto hang = hang_from_silence(run_finished)) all.push_back(std::move(*hang));
  return all;
}

// The text a pattern reads on an event's line: past its rank/host/time prefix, as the matcher
// read it, so that a last resort can anchor at the message's start ("^RuntimeError: ").
static std::string_view body_of(const Event& ev) {
  std::string_view text(ev.text);
  return text.substr(std::min<size_t>(ev.body_at, text.size()));
}

// The root patterns of last-resort entries are not scanned on every line (Matcher): they are
// read here on the job's error lines that are not harmless, once per line, as events of their own.
// True when any was found.
bool Correlator::read_error_words(const ErrorLines& errors) {
  bool found = false;
  std::set<std::pair<uint32_t, uint64_t>> seen;
  std::vector<const Event*> lines;
  for (const Event* ev : errors.lines)
    if (!errors.is_benign(*ev) && seen.insert({ev->input, ev->line}).second) lines.push_back(ev);
  for (const Entry& e : lib_.entries) {
    if (e.match.last_resort == 0) continue;
    for (const PatternRef& ref : e.refs) {
      if (ref.role != Role::kRoot) continue;
      std::vector<Event>& out = events_by_def_[ref.def];
      out.clear();  // finish() may run again on a copy (watch)
      if (lines.empty()) continue;  // before .get(): its first call compiles (a third of a clean log's start-up)
      const RE2* re = lib_.patterns[ref.def].re.get();
      if (!re) continue;
      for (const Event* ev : lines)
        if (RE2::PartialMatch(body_of(*ev), *re)) {
          Event word = *ev;
          word.def = ref.def;
          word.captures.clear();
          out.push_back(std::move(word));
          found = true;
        }
    }
  }
  return found;
}

// Last-resort entries read the words of an error line no entry knows ("No space left" in a
// message of a library's own): better a category and a rank than `unrecognized`, never better
// than any entry with a root line of its own. The lowest level wins, then the earliest line; a
// job whose only reading is a consequence (a collective timeout) takes it when it came first.
bool Correlator::job_made_progress() const {
  if (unranked_.last_step >= 0) return true;
  return std::any_of(ranks_.begin(), ranks_.end(), [](const auto& r) { return r.second.last_step >= 0; });
}

void Correlator::add_last_resort(std::vector<Hits>& all, const std::vector<Hits>& fallbacks,
                                 std::vector<Hits>& candidates) const {
  constexpr double kLastResortConfidence = 0.2;
  if (candidates.empty()) return;
  if (std::any_of(all.begin(), all.end(), [](const Hits& h) { return h.has_root; })) return;
  // A line another entry reads, in any role (a store timeout it knows as a consequence, the
  // wrapper of a known error, a fallback's line), is not a message no entry knows: a candidate
  // keeps only its other root lines. Lines, not events: each pattern on a line has its own event.
  std::set<std::pair<uint32_t, uint64_t>> known;
  for (const std::vector<Hits>* list : std::initializer_list<const std::vector<Hits>*>{&all, &fallbacks})
    for (const Hits& h : *list)
      for (const auto& events : h.by_ref)
        for (const Event* ev : events) known.insert({ev->input, ev->line});
  // Nor is a line the library knows as a consequence anywhere (a peer lost, torchrun's
  // ChildFailedError, a watchdog timeout), or one that only lists possible causes.
  for (size_t def : consequence_defs())
    for (const Event& ev : events_by_def_[def]) known.insert({ev.input, ev.line});
  const auto hedge_def = lib_.find_pattern("error_hedge_line");
  const RE2* hedge = hedge_def ? lib_.patterns[*hedge_def].re.get() : nullptr;
  auto hedged = [&](const Event& ev) { return hedge && RE2::PartialMatch(ev.text.view(), *hedge); };
  for (Hits& h : candidates) {
    h.first_root = nullptr;
    for (size_t r = 0; r < h.entry->refs.size(); ++r) {
      if (h.entry->refs[r].role != Role::kRoot) continue;
      auto& evs = h.by_ref[r];
      // Nor is a line the run went on past (outlived): whatever it says, it did not end the job.
      evs.erase(std::remove_if(evs.begin(), evs.end(),
                               [&](const Event* ev) { return known.count({ev->input, ev->line}) > 0 || hedged(*ev) || outlived(*ev); }),
                evs.end());
      for (const Event* ev : evs)
        if (!h.first_root || earlier(*ev, *h.first_root)) h.first_root = ev;
    }
  }
  candidates.erase(std::remove_if(candidates.begin(), candidates.end(), [](const Hits& h) { return !h.first_root; }),
                   candidates.end());
  if (candidates.empty()) return;
  std::stable_sort(candidates.begin(), candidates.end(), [&](const Hits& a, const Hits& b) {
    if (a.entry->match.last_resort != b.entry->match.last_resort)
      return a.entry->match.last_resort < b.entry->match.last_resort;
    return a.first_root != b.first_root && earlier(*a.first_root, *b.first_root);
  });
  const Event& first = *candidates.front().first_root;
  for (const Hits& h : all)
    if (h.first_any && !earlier(first, *h.first_any)) return;
  for (Hits& h : candidates) h.confidence = kLastResortConfidence;
  candidates.front().confidence = kLastResortConfidence + 0.05;
  all.insert(all.begin(), std::make_move_iterator(candidates.begin()), std::make_move_iterator(candidates.end()));
}

// The patterns whose lines are never a last resort's root: every pattern some entry reads as a
// cascade or teardown, and the engine's consequence lines.
std::vector<size_t> Correlator::consequence_defs() const {
  std::vector<size_t> defs;
  for (const Entry& e : lib_.entries)
    for (const PatternRef& r : e.refs)
      if (r.role == Role::kCascade || r.role == Role::kTeardown) defs.push_back(r.def);
  if (auto def = lib_.find_pattern("error_consequence_line")) defs.push_back(*def);
  std::sort(defs.begin(), defs.end());
  defs.erase(std::unique(defs.begin(), defs.end()), defs.end());
  return defs;
}

// Confidence from the evidence an entry saw: a root event, more distinct roots and contexts,
// a cascade that confirms it, boost/penalize refs, and whether its root came first in the job.
void Correlator::score_entries(std::vector<Hits>& all, const Event* earliest_root) const {
  for (Hits& h : all) {
    const Entry& e = *h.entry;
    double c = h.has_root ? 0.55 : 0.25;
    int extra = 0;
    bool cascade = false;
    for (size_t r = 0; r < e.refs.size(); ++r) {
      if (h.by_ref[r].empty()) continue;
      Role role = e.refs[r].role;
      if (role == Role::kCascade) cascade = true;
      bool penalizing = std::find(e.match.penalize.begin(), e.match.penalize.end(), r) != e.match.penalize.end();
      if ((role == Role::kRoot || role == Role::kContext) && !penalizing) ++extra;
    }
    c += std::min(0.24, 0.08 * std::max(0, extra - 1));
    if (cascade && h.has_root) c += 0.05;
    for (size_t r : e.match.boost)
      if (!h.by_ref[r].empty()) c += 0.1;
    for (size_t r : e.match.penalize)
      if (!h.by_ref[r].empty()) c -= 0.2;
    if (!e.match.require_is_default && e.match.require.size() > 1) c += 0.05 * static_cast<double>(e.match.require.size() - 1);
    if (h.has_root && h.first_root == earliest_root) c += 0.1;
    c = std::clamp(c, 0.05, h.has_root ? 0.98 : 0.45);
    h.confidence = c;
  }
}

// Orders the supported entries, best first: specific beats generic, root beats cascade-only,
// then confidence, then whose evidence came first.
void Correlator::rank_entries(std::vector<Hits>& all, const ErrorLines& errors) const {
  keep_generic_only_without_specific(all);
  // After the generic entries' common ceiling, so that one generic entry refining another (an
  // ArrowInvalid raised in a DataLoader worker) still ranks above it.
  rank_specializations_above(all);
  give_way_to_wrapped_exceptions(all, errors);
  // A hardware or kernel event explains the software symptoms it causes on its own host (an Xid
  // under an unspecified launch failure, the OOM killer under a SIGKILL): it is the diagnosis and
  // the symptom an alternative, whichever printed first (docs/signature-format.md, `explains`).
  for (const Hits& s : all) {
    if (!s.has_root || s.entry->explains.empty()) continue;
    for (Hits& g : all) {
      if (!explains(*s.entry, g.entry->id)) continue;
      const Event* gs = g.first_root ? g.first_root : g.first_any;
      bool elsewhere = gs && !gs->host.empty() && !s.first_root->host.empty() && gs->host != s.first_root->host;
      if (!elsewhere && g.confidence >= s.confidence) g.confidence = std::max(0.05, s.confidence - 0.05);
    }
  }
  std::sort(all.begin(), all.end(), [&](const Hits& a, const Hits& b) {
    if (a.has_root != b.has_root) return a.has_root;
    if (std::fabs(a.confidence - b.confidence) > 1e-9) return a.confidence > b.confidence;
    const Event* fa = a.first_root ? a.first_root : a.first_any;
    const Event* fb = b.first_root ? b.first_root : b.first_any;
    if (fa && fb && fa != fb) return earlier(*fa, *fb);
    return a.entry->id < b.entry->id;
  });
}

// A supported entry that specializes another ranks above it.
void Correlator::rank_specializations_above(std::vector<Hits>& all) const {
  for (const Hits& s : all) {
    for (const auto& gid : s.entry->specializes) {
      for (Hits& g : all) {
        if (g.entry->id != gid) continue;
        if (g.has_root && !s.has_root) continue;  // a cascade-only refinement never outranks a root event
        g.confidence = std::min(g.confidence, std::max(0.05, s.confidence - 0.05));
        if (s.has_root == g.has_root && s.confidence <= g.confidence) g.confidence = std::max(0.05, s.confidence - 0.05);
      }
    }
  }
}

// A root line that opens a Python traceback ("[TP1] Scheduler hit an exception: Traceback (most
// recent call last):") announces an error told further down: by the exception that closes the
// traceback. An entry that reads a line of that traceback (a CUDA OOM, an NCCL error) names the
// failure, so the wrapper gives way to it as to an entry that specializes it.
void Correlator::give_way_to_wrapped_exceptions(std::vector<Hits>& all, const ErrorLines& errors) const {
  auto header_def = lib_.find_pattern("py_traceback_header");
  if (!header_def || events_by_def_[*header_def].empty()) return;
  std::set<std::pair<uint32_t, uint64_t>> headers;
  for (const Event& ev : events_by_def_[*header_def]) headers.insert({ev.input, ev.line});
  for (Hits& w : all) {
    if (!w.has_root || !w.first_root || w.entry->match.generic) continue;
    const Event& wrapper = *w.first_root;
    if (!headers.count({wrapper.input, wrapper.line})) continue;
    // The wrapped exception is told between the header and the line that closes the traceback;
    // a root in the same rank's next record is another error, not the one wrapped.
    const Event* closing = traceback_closing_exception(wrapper, errors);
    for (const Hits& s : all) {
      if (&s == &w || !s.has_root || s.entry->match.generic) continue;
      bool wrapped = false;
      auto in_traceback = [&](const Event* ev) {
        return correlator_detail::below_in_traceback_window(wrapper, *ev) && (!closing || ev->line <= closing->line);
      };
      for (size_t r = 0; r < s.entry->refs.size() && !wrapped; ++r)
        if (s.entry->refs[r].role == Role::kRoot)
          wrapped = std::any_of(s.by_ref[r].begin(), s.by_ref[r].end(), in_traceback);
      if (wrapped && w.confidence >= s.confidence) w.confidence = std::max(0.05, s.confidence - 0.05);
    }
  }
}

// A root exception's traceback runs from the last traceback header above it in its stream
// (correlator_detail::in_traceback_above, as traceback_of_decisive_line reads it) down to it; with
// no header in reach, the window above it. Its frames are in the same stream.
void Correlator::keep_frames_of_root_tracebacks(Hits& h) const {
  const Entry& e = *h.entry;
  auto header_def = lib_.find_pattern("py_traceback_header");
  auto in_stream = [](const Event& ev, const Event& root) {
    return correlator_detail::in_traceback_above(ev, root.input, root.rank, root.pid, root.line);
  };
  auto traceback_start = [&](const Event& root) {
    std::optional<uint64_t> header;
    if (header_def)
      for (const Event& hd : events_by_def_[*header_def])
        if (in_stream(hd, root) && (!header || hd.line > *header)) header = hd.line;
    if (header) return *header;
    constexpr uint64_t kWindow = correlator_detail::kTracebackWindowLines;
    return root.line > kWindow ? root.line - kWindow : 0;
  };
  auto is_listed = [&](size_t r) {
    return std::find(e.match.same_traceback.begin(), e.match.same_traceback.end(), r) != e.match.same_traceback.end();
  };
  std::set<const Event*> frames_kept;
  for (size_t r = 0; r < e.refs.size(); ++r) {
    if (e.refs[r].role != Role::kRoot) continue;
    auto& roots = h.by_ref[r];
    roots.erase(std::remove_if(roots.begin(), roots.end(), [&](const Event* root) {
      uint64_t start = traceback_start(*root);
      bool has_frame = false;
      for (size_t f : e.match.same_traceback)
        for (const Event* ev : h.by_ref[f])
          if (ev->line > start && in_stream(*ev, *root)) {
            frames_kept.insert(ev);
            has_frame = true;
          }
      return !has_frame;
    }), roots.end());
  }
  for (size_t r = 0; r < e.refs.size(); ++r)
    if (is_listed(r) && e.refs[r].role != Role::kRoot) {
      auto& evs = h.by_ref[r];
      evs.erase(std::remove_if(evs.begin(), evs.end(), [&](const Event* ev) { return !frames_kept.count(ev); }), evs.end());
    }
}

// Generic entries name a failure by its kind alone (an uncaught KeyError, a SIGABRT). A specific
// entry with a root event of its own says more, so they all give way to it. One that only saw
// consequences (a collective timeout, "cause not in the log") gives way to a generic root line
// printed before them (rank 3's KeyError, then the others' timeouts), not to one printed after
// (the watchdog's own abort, exit code -6, is a consequence of the timeout). A generic diagnosis
// never claims more than kGenericConfidence.
void Correlator::keep_generic_only_without_specific(std::vector<Hits>& all) const {
  constexpr double kGenericConfidence = 0.45;
  // A generic entry that `explains` a supported entry (an Xid of any number under an illegal
  // memory access) stays: it is the cause of that entry's symptom.
  auto explains_one_of = [](const Hits& h, const std::vector<Hits>& hits) {
    if (!h.has_root) return false;
    for (const Hits& g : hits)
      if (explains(*h.entry, g.entry->id)) return true;
    return false;
  };
  bool specific_root = false;
  const Event* first_specific = nullptr;  // the first line any specific entry saw
  for (const Hits& h : all)
    if (!h.entry->match.generic) {
      specific_root = specific_root || h.has_root;
      if (h.first_any && (!first_specific || earlier(*h.first_any, *first_specific))) first_specific = h.first_any;
    }
  all.erase(std::remove_if(all.begin(), all.end(),
                           [&](const Hits& h) {
                             if (!h.entry->match.generic || explains_one_of(h, all)) return false;
                             if (specific_root) return true;
                             return first_specific && !(h.first_root && earlier(*h.first_root, *first_specific));
                           }),
            all.end());
  for (Hits& h : all)
    if (h.entry->match.generic) h.confidence = std::min(h.confidence, kGenericConfidence);
}

// A job that simply stopped: no supported entry, no error line, and one or more ranks fell
// behind the others' progress. That is a hang, diagnosed from silence (docs/initiating-rank.md).
std::optional<Correlator::Hits> Correlator::hang_from_silence(bool run_finished) const {
  // A run that said it finished, or whose script saw its process exit 0, did not hang.
  if (run_finished) return std::nullopt;
  if (auto exited = lib_.find_pattern("run_exited_marker"); exited && !events_by_def_[*exited].empty()) return std::nullopt;
  int64_t max_step = -1;
  size_t with_progress = 0, behind = 0;
  for (const auto& [r, rs] : ranks_)
    if (rs.last_step >= 0) {
      ++with_progress;
      max_step = std::max(max_step, rs.last_step);
    }
  for (const auto& [r, rs] : ranks_)
    if (rs.last_step >= 0 && rs.last_step < max_step) ++behind;
  if (with_progress < 2 || behind < 1 || behind * 2 >= with_progress) return std::nullopt;
  return silent_hang(behind == 1 ? 0.5 : 0.3);
}

std::optional<Correlator::Hits> Correlator::silent_hang(double confidence) const {
  const Entry* hang = lib_.find_entry("training-hang-silent");
  if (!hang) return std::nullopt;
  Hits h;
  h.entry = hang;
  h.by_ref.resize(hang->refs.size());
  h.supported = true;
  h.confidence = confidence;
  return h;
}

}  // namespace firstfault
