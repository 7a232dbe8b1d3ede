#include <cctype>
#include <set>

#include <fmt/format.h>

#include "firstfault/render/render.h"
#include "firstfault/util/safe_text.h"
#include "firstfault/util/strings.h"

namespace firstfault {

namespace {

struct Paint {
  bool on;
  std::string operator()(const char* code, const std::string& s) const {
    return on ? fmt::format("\x1b[{}m{}\x1b[0m", code, s) : s;
  }
};

// Log text is untrusted: never let it drive the terminal or a CI runner reading this output.
std::string safe(const std::string& s) { return safe_line(s); }

void wrap(std::string& out, const std::string& text, const std::string& indent, size_t width = 96) {
  for (const auto& para : paragraphs(text)) {
    std::string line;
    size_t pos = 0;
    std::string_view p = trim(para);
    if (p.empty()) continue;
    while (pos < p.size()) {
      size_t sp = p.find(' ', pos);
      std::string_view word = p.substr(pos, sp == std::string_view::npos ? std::string_view::npos : sp - pos);
      if (!line.empty() && line.size() + 1 + word.size() > width) {
        out += indent + line + "\n";
        line.clear();
      }
      if (!line.empty()) line += ' ';
      line += word;
      if (sp == std::string_view::npos) break;
      pos = sp + 1;
    }
    if (!line.empty()) out += indent + line + "\n";
  }
}

std::string where(const Evidence& e) {
  std::string s = fmt::format("{}:{}", safe(e.file), e.line);
  if (e.time.valid()) s += "  " + format_output_time(e.time);
  return s;
}

bool same_line(const Evidence& a, const Evidence& b) { return a.file == b.file && a.line == b.line; }

// The traceback as a person reads it: frames outermost first, runs of library frames folded into
// one line, the innermost frame always shown (where it was raised), the user's own frame marked.
void render_traceback(std::string& out, const Traceback& t, const std::string& indent) {
  out += fmt::format("{}traceback, lines {}-{} ({} frame{}):\n", indent, t.header_line, t.exception_line, t.frames_total,
                     t.frames_total == 1 ? "" : "s");
  if (t.frames_total > t.frames.size())
    out += fmt::format("{}  ({} frames in the middle not kept)\n", indent, t.frames_total - t.frames.size());
  size_t folded = 0;
  for (size_t i = 0; i < t.frames.size(); ++i) {
    const TracebackFrame& f = t.frames[i];
    bool last = i + 1 == t.frames.size();
    if (f.library && !last) {
      ++folded;
      continue;
    }
    if (folded) out += fmt::format("{}  ... {} library frame{}\n", indent, folded, folded == 1 ? "" : "s");
    folded = 0;
    std::string mark = t.user_frame && *t.user_frame == i ? "   <- your code: look here first" : "";
    out += fmt::format("{}  {}:{} in {}{}\n", indent, safe(f.file), f.lineno, safe(f.func), mark);
  }
  if (!t.user_frame) out += indent + "  (every frame is library code: the call into it is where your code is)\n";
}

void render_entry_body(std::string& out, const Diagnosis& d, const Library& lib, const TextStyle& style);

// "\nNote: rank3.log: its name says rank 3, but ..." per input whose name and lines disagree: a
// layout read against its name is said, never silent.
std::string input_notes(const Diagnosis& d) {
  std::string out;
  for (const auto& in : d.inputs)
    if (std::string note = name_rank_note(in); !note.empty()) out += "\nNote: " + safe_line(in.path) + ": " + note + ".";
  return out;
}

}  // namespace

std::string no_rank_phrase(const RankDecision& r) { return r.method == "job-wide" ? "none (job-wide)" : "unknown"; }

std::string suspect_label(const RankDecision& s) {
  std::string who = s.rank ? fmt::format("rank {}{}", *s.rank, s.host.empty() ? "" : " on host " + safe(s.host))
                           : no_rank_phrase(s);
  return fmt::format("Suspected initiating rank: {} (low confidence, {:.2f})", who, s.confidence);
}

std::string action_phrase(const Action& a, const std::function<std::string(const std::string&)>& quote) {
  if (a.kind != ActionKind::kRestartExcluding) return action_kind_name(a.kind);
  auto listed = [&](const std::vector<std::string>& items) {
    std::vector<std::string> out;
    for (const auto& item : items) out.push_back(quote ? quote(safe(item)) : safe(item));
    return fmt::format("{}", fmt::join(out, ", "));
  };
  std::string gpus = a.exclude_gpus.empty() ? ""
                     : fmt::format("{} {}", a.exclude_gpus.size() == 1 ? "GPU" : "GPUs", listed(a.exclude_gpus));
  if (a.exclude_hosts.empty())
    return "restart excluding " + (gpus.empty() ? std::string("the failed node (the log does not name it)") : gpus);
  std::string s = "restart excluding " + listed(a.exclude_hosts);
  return gpus.empty() ? s : s + " (" + gpus + ")";
}

// Values the entry's patterns captured (the library a crash is in, an address, a file): what a
// reader needs next after the first line, from the initiating event and its context. Rank
// bookkeeping captures are the correlator's, not the reader's, and are left out; the first value
// of each name wins, a handful at most.
std::string notable_details(const Diagnosis& d) {
  static const std::set<std::string> bookkeeping = {
      "rank", "local_rank", "self_rank", "peer_rank", "reference_rank", "ready_ranks", "missing_ranks",
      "pid", "step", "timeout_ms", "ran_ms", "at", "seq", "enqueued", "completed", "op", "pg", "host", "exitcode"};
  constexpr size_t kMaxDetails = 5;
  std::vector<std::string> shown;
  std::set<std::string> names;
  for (const auto& ev : d.evidence) {
    if (ev.role == "teardown" || ev.role == "cascade") continue;  // what the other ranks saw
    for (const auto& [name, value] : ev.captures) {
      // a trailing digit marks a pattern's second spelling of a capture (pid2, mib2), not a new fact
      bool alternate = !name.empty() && std::isdigit(static_cast<unsigned char>(name.back()));
      if (value.empty() || alternate || bookkeeping.count(name) || !names.insert(name).second) continue;
      shown.push_back(name + "=" + safe(truncate_utf8(value, 120)));
      if (shown.size() == kMaxDetails) return fmt::format("{}", fmt::join(shown, "  "));
    }
  }
  return fmt::format("{}", fmt::join(shown, "  "));
}

std::string action_label(const Action& a) { return "Action: " + action_phrase(a) + " — " + safe(a.reason); }

std::string first_error_label(const Evidence& e) {
  return e.rank >= 0 ? fmt::format("First error line (rank {})", e.rank) : "First error line";
}

std::vector<std::string> stopped_run_lines(const Diagnosis& d, const std::function<std::string(const Evidence&)>& where) {
  std::vector<std::string> out;
  if (!d.stopped) return out;
  const StoppedRun& s = *d.stopped;
  const Evidence& p = s.last_progress;
  out.push_back((p.rank >= 0 ? fmt::format("Last progress (rank {}): ", p.rank) : std::string("Last progress: ")) + where(p));
  out.push_back("  " + safe(truncate_utf8(p.text, 300)));
  if (s.ranks.size() > 1) out.push_back("Ranks with progress in their last lines: " + format_ranges(s.ranks));
  if (!s.behind.empty())
    out.push_back("Behind the others' last step: " + std::string(s.behind.size() == 1 ? "rank " : "ranks ") + format_ranges(s.behind));
  out.push_back(fmt::format("No progress for {} min after it{}, then the log ends without an error or a completion marker.",
                            s.idle_minutes, s.last_time ? " (last line " + format_output_time(*s.last_time) + ")" : ""));
  if (s.first_time && s.last_time && s.first_time->kind == s.last_time->kind && s.last_time->ms >= s.first_time->ms)
    out.push_back(fmt::format("The log runs from {} to {} ({} min).", format_output_time(*s.first_time),
                              format_output_time(*s.last_time), (s.last_time->ms - s.first_time->ms) / 60000));
  out.push_back("The job sat idle, a hang, and was ended from outside (time limit, cancel, kill) without a message. "
                "Take stacks while it is stuck (py-spy dump --pid on each rank) or enable the NCCL flight recorder, and "
                "read the scheduler's record of how it ended.");
  return out;
}

std::string render_text(const Diagnosis& d, const Library& lib, const TextStyle& style) {
  Paint paint{style.color};
  std::string out;
  if (d.verdict != "diagnosed") {
    if (d.verdict == "unrecognized") {
      out += paint("1;33", "No known failure matched.") + "\n";
      out += action_label(d.action) + "\n";
      if (d.first_error) {
        out += first_error_label(*d.first_error) + ": " + where(*d.first_error) + "\n";
        out += "  " + safe(truncate_utf8(d.first_error->text, 400)) + "\n";
        if (d.traceback && d.traceback->exception_line == d.first_error->line &&
            (!d.suspect || !d.suspect->first_evidence || same_line(*d.suspect->first_evidence, *d.first_error)))
          render_traceback(out, *d.traceback, "  ");
      }
      if (const auto& sus = d.suspect) {
        out += suspect_label(*sus) + "\n";
        out += "  why: " + safe(sus->reason) + "\n";
        const auto& ev = sus->first_evidence;
        if (ev && d.first_error && !same_line(*ev, *d.first_error)) {
          out += "  its error: " + where(*ev) + "\n";
          out += "    " + safe(truncate_utf8(ev->text, 400)) + "\n";
          if (d.traceback && d.traceback->exception_line == ev->line) render_traceback(out, *d.traceback, "    ");
        }
      }
      if (const auto& l = d.launcher_first_failure) {
        out += fmt::format("Rank {} failed first, by {}: {}\n", l->rank, l->source, where(l->line));
        out += "  " + safe(truncate_utf8(l->line.text, 400)) + "\n";
        out += fmt::format("  Read rank {}'s own output before that point for its error.\n", l->rank);
      }
      out += "If this is a real failure mode, consider writing an entry (docs/signature-format.md).\n";
    } else if (d.verdict == "incomplete") {
      out += paint("1;33", std::string(kStoppedTitle) + ".") + "\n";
      out += action_label(d.action) + "\n";
      for (const auto& l : stopped_run_lines(d, where)) out += l + "\n";
    } else if (d.verdict == "error") {
      out += "Nothing to diagnose: no input yielded a line.\n";
    } else {
      out += d.outlived_error ? "No failure found: the run went on past every error line it printed (it trained on, or said it "
                                "finished), and no known failure signature is in the input.\n"
                              : "No failure found: no error line and no known failure signature in the input.\n";
      out += action_label(d.action) + "\n";
    }
    if (const auto& o = d.outlived_error) {  // never hidden: the reader judges the line too
      out += "Error line the run outlived: " + where(*o) + "\n";
      out += "  " + safe(truncate_utf8(o->text, 400)) + "\n";
    }
    out += read_summary(d) + "\n";
    if (d.limits.truncated)  // a bound is never silent, whatever the verdict
      out += fmt::format("Note: some detail was dropped at a bound: {}\n", safe(fmt::format("{}", fmt::join(d.limits.dropped, "; "))));
    return out;
  }
  out += render_text_head(d, style);
  render_entry_body(out, d, lib, style);
  return out;
}

std::string render_text_head(const Diagnosis& d, const TextStyle& style) {
  Paint paint{style.color};
  std::string out;
  const Entry& e = *d.entry;
  out += paint("1", e.title) + "  [" + e.id + "]\n";
  out += fmt::format("  {} · severity {} · confidence {:.2f}\n", e.category, e.severity, d.confidence);
  out += "  " + action_label(d.action) + "\n\n";

  const RankDecision& r = d.initiating;
  if (r.rank) {
    std::string host = r.host.empty() ? "" : fmt::format(" on host {}", safe(r.host));
    out += paint("1;31", fmt::format("Initiating rank: {}{}", *r.rank, host)) + "\n";
  } else {
    out += paint("1", "Initiating rank: " + no_rank_phrase(r)) + "\n";
  }
  if (!r.reason.empty()) out += "  why: " + safe(r.reason) + "\n";
  if (r.candidates.size() > 1 && r.confidence < 0.7)
    out += fmt::format("  candidates in order: {}\n", fmt::join(r.candidates, ", "));
  const Evidence* first = d.decisive_evidence();
  if (first) {
    out += "  first evidence: " + where(*first) + "\n";
    out += "    " + safe(truncate_utf8(first->text, 400)) + "\n";
    if (d.traceback && r.first_evidence && d.traceback->exception_line == first->line) render_traceback(out, *d.traceback, "    ");
  }
  if (std::string details = notable_details(d); !details.empty()) out += "  details: " + details + "\n";
  out += "\n" + paint("1", "Collateral: ") + safe(d.collateral.summary) + "\n";
  for (const ClockSkew& c : d.clock_skew)
    out += fmt::format("Clocks: host {} runs {:.1f} s {} host {} (from {} collective timeout(s) both reported); events are ordered on {}'s clock, times are shown as printed\n",
                       safe(c.host), std::abs(static_cast<double>(c.offset_ms)) / 1000.0, c.offset_ms > 0 ? "ahead of" : "behind",
                       safe(c.reference), c.samples, safe(c.reference));
  return out;
}

namespace {

// The entry's text (root cause to references), the alternatives, and with --verbose the evidence.
void render_entry_body(std::string& out, const Diagnosis& d, const Library& lib, const TextStyle& style) {
  Paint paint{style.color};
  const Entry& e = *d.entry;
  out += "\n" + paint("1", "Root cause") + "\n";
  wrap(out, e.root_cause, "  ");
  out += "\n" + paint("1", "How to confirm") + "\n";
  for (size_t i = 0; i < e.confirm.size(); ++i) wrap(out, fmt::format("{}. {}", i + 1, e.confirm[i]), "  ");
  out += "\n" + paint("1", "Fix") + "\n";
  wrap(out, e.fix, "  ");
  out += "\n" + paint("1", "Prevention") + "\n";
  for (const auto& p : e.prevention) wrap(out, "- " + p, "  ");
  out += "\n" + paint("1", "References") + "\n";
  for (const auto& ref : e.references) out += "  " + ref + "\n";
  if (!d.alternatives.empty()) {
    out += "\n" + paint("1", "Alternatives") + "\n";
    for (const auto& a : d.alternatives) {
      const Entry* ae = lib.find_entry(a.id);
      out += fmt::format("  {:.2f}  {}  {}\n", a.confidence, a.id, ae ? ae->title : "");
    }
  }
  if (style.verbose) {
    out += "\n" + paint("1", "Evidence") + "\n";
    for (const auto& ev : d.evidence)
      out += fmt::format("  [{}] {} rank {}  {}\n    {}\n", ev.role, ev.pattern, ev.rank >= 0 ? std::to_string(ev.rank) : "?",
                         where(ev), safe(truncate_utf8(ev.text, 300)));
    out += "\n" + paint("1", "Last line of every rank") + "\n";
    for (const auto& rk : d.ranks)
      out += fmt::format("  rank {:>4} {:<10} {}\n", rk.rank, rk.role, safe(truncate_utf8(rk.last_line, 160)));
  }
  if (d.limits.truncated)
    out += fmt::format("\nNote: some detail was dropped at a bound: {}\n", safe(fmt::format("{}", fmt::join(d.limits.dropped, "; "))));
  if (d.skipped_inputs)
    out += fmt::format("\nNote: {} binary file(s) skipped (-v names them on stderr)\n", d.skipped_inputs);
  if (std::string notes = input_notes(d); !notes.empty()) out += notes + "\n";
}

}  // namespace

std::string read_summary(const Diagnosis& d) {
  std::string skipped = d.skipped_inputs ? fmt::format("; {} binary file(s) skipped", d.skipped_inputs) : "";
  std::string out = fmt::format("Read {} line(s), {} byte(s) from {} input(s){}.", d.total_lines, d.total_bytes,
                                d.inputs.size() - d.skipped_inputs, skipped);
  return out + input_notes(d);
}

}  // namespace firstfault
