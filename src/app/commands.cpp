#include "firstfault/app/commands.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <map>
#include <set>

#include "firstfault/app/exit_policy.h"
#include "firstfault/app/pipeline.h"
#include "firstfault/matcher/matcher.h"
#include "firstfault/render/ci_render.h"
#include "firstfault/render/render.h"
#include "firstfault/signatures/loader.h"
#include "firstfault/util/redact.h"
#include "firstfault/util/safe_text.h"
#include "firstfault/util/strings.h"

namespace firstfault {

namespace fs = std::filesystem;

bool path_regex_ok(const char* flag, const std::string& regex) {
  if (regex.empty()) return true;
  RE2 re(regex, RE2::Quiet);
  if (re.ok() && re.NumberOfCapturingGroups() >= 1) return true;
  fmt::print(stderr, "firstfault: {} '{}' must be a valid regex with one capture group\n", flag, regex);
  return false;
}

bool path_rules_ok(const std::string& rank_from, const std::string& host_from) {
  return path_regex_ok("--rank-from", rank_from) && path_regex_ok("--host-from", host_from);
}

std::shared_ptr<const PathFilter> path_filter_or_report(const FileChoice& files, bool& ok) {
  ok = true;
  if (files.globs.empty() && files.excludes.empty()) return nullptr;
  Result<PathFilter> f = PathFilter::make(files.globs, files.excludes);
  if (f.ok()) return std::make_shared<const PathFilter>(std::move(*f));
  fmt::print(stderr, "firstfault: {}\n", f.error().message);
  ok = false;
  return nullptr;
}

bool want_color(const std::string& mode) {
  if (mode == "always") return true;
  if (mode == "never") return false;
  const char* nc = std::getenv("NO_COLOR");
  if (nc && *nc) return false;
  const char* term = std::getenv("TERM");
  if (term && std::string_view(term) == "dumb") return false;  // a terminal that cannot show colour
  return ::isatty(STDOUT_FILENO) == 1;
}

void report_inputs(const JobResult& r, bool verbose, const std::function<std::string(const std::string&)>& shown) {
  for (const auto& p : r.problems) fmt::print(stderr, "firstfault: {}: {}\n", shown(p.path), shown(p.reason));
  for (const auto& s : r.skipped) {
    bool said = std::any_of(r.problems.begin(), r.problems.end(), [&](const InputProblem& p) { return p.path == s.path; });
    if ((s.named || verbose) && !said) fmt::print(stderr, "firstfault: {}: skipped: {}\n", shown(s.path), s.reason);
  }
  for (const auto& m : r.many_jobs)
    fmt::print(stderr, "firstfault: {0} looks like {1} jobs ({1} folders each hold their own rank-0 log); "
                       "use `firstfault triage {0}` to diagnose each\n", shown(m.path), m.jobs);
}

void report_nothing_to_diagnose(const std::vector<std::string>& paths,
                                const std::function<std::string(const std::string&)>& shown) {
  constexpr size_t kNamed = 3;  // a directory's worth of paths would bury the message
  std::string named;
  for (size_t i = 0; i < std::min(paths.size(), kNamed); ++i) named += (i ? ", " : "") + shown(paths[i]);
  if (paths.empty() || (paths.size() == 1 && paths[0] == "-")) named = "stdin";
  if (paths.size() > kNamed) named += fmt::format(" and {} more", paths.size() - kNamed);
  fmt::print(stderr, "firstfault: nothing to diagnose: no line could be read from {} (the reasons are above)\n", named);
}

namespace {

// Loads the library or reports every problem on stderr; nullopt means exit 2.
std::optional<Library> load_or_report(const CommonOptions& o, bool check_samples, bool keep_samples = true) {
  std::vector<LoadProblem> problems;
  LoadOptions lo;
  lo.check_samples = check_samples;
  lo.keep_samples = keep_samples;
  Library lib = load_library(o.signature_dirs, problems, lo, !o.no_builtin);
  if (!problems.empty()) {
    for (const auto& p : problems) fmt::print(stderr, "{}\n", p.format());
    fmt::print(stderr, "firstfault: the signature library has {} problem(s)\n", problems.size());
    return std::nullopt;
  }
  for (const auto& ov : lib.overrides) fmt::print(stderr, "{}\n", ov.format());  // allowed, never silent
  return lib;
}

std::optional<Library> load_for_run(const CommonOptions& o) {
  // Built-in samples are verified by `firstfault check` in CI; user libraries are checked here.
  // No run command reads the samples after that (they are `check`'s and `catalog`'s).
  return load_or_report(o, !o.signature_dirs.empty(), false);
}

}  // namespace

std::unique_ptr<Engine> load_engine(const CommonOptions& o) {
  auto lib = load_for_run(o);
  if (!lib) return nullptr;
  auto engine = std::make_unique<Engine>();
  engine->library = std::move(*lib);
  engine->matcher = std::make_unique<Matcher>(engine->library);
  if (Status s = engine->matcher->compile(true); !s.ok()) {
    fmt::print(stderr, "firstfault: {}\n", s.message());
    return nullptr;
  }
  return engine;
}

void keep_until_exit(std::unique_ptr<Engine>& engine) {
  // Plain pointers in a static array: nothing runs at exit, and a leak checker still finds the
  // engine reachable. A third engine in one process (tests) stays with the caller and is freed
  // there as usual, after everything that points into its library.
  static Engine* kept[2] = {nullptr, nullptr};
  for (Engine*& slot : kept)
    if (!slot) {
      slot = engine.release();
      return;
    }
}

int run_diagnose(const DiagnoseOptions& o, std::ostream& out) {
  if (!is_diagnose_format(o.format)) {
    fmt::print(stderr, "firstfault: unknown --format '{}' ({})\n", o.format, fmt::join(kDiagnoseFormats, ", "));
    return kExitUsage;
  }
  std::optional<FailOn> fail_on = parse_fail_on(o.fail_on);
  if (!fail_on) {
    fmt::print(stderr, "firstfault: unknown --fail-on '{}' ({})\n", o.fail_on, fail_on_choices());
    return kExitUsage;
  }
  AnalyzeOptions ao;
  ao.rank_from = o.rank_from;
  ao.host_from = o.host_from;
  if (!path_rules_ok(o.rank_from, o.host_from)) return kExitUsage;
  bool filter_ok = true;
  ao.filter = path_filter_or_report(o.files, filter_ok);
  if (!filter_ok) return kExitUsage;
  auto engine = load_engine(o.common);
  if (!engine) return kExitUsage;
  const Library* lib = &engine->library;
  const Matcher& matcher = *engine->matcher;
  JobResult r = analyze_paths(o.paths, matcher, ao);
  // Ingress: mask (when on) and defuse CI commands before anything is printed, stderr included,
  // so no renderer can leak or replay what the log held.
  const RedactLevel level = o.redact.value_or(default_redact_level(o.format));
  const bool redact = level != RedactLevel::kNone;
  Redactor redactor(level);
  if (redact) redact_diagnosis(r.diagnosis, redactor);
  neutralize_diagnosis(r.diagnosis);
  auto shown = [&](const std::string& s) { return safe_line(redact ? redactor.mask(s) : s); };
  report_inputs(r, o.verbose, shown);
  // Interrupted: what was read is still diagnosed, and the exit code says it was cut short.
  if (r.interrupted) fmt::print(stderr, "firstfault: interrupted: the diagnosis is of what was read before Ctrl-C\n");
  // Nothing to show only when no input yielded a single line; a truncated file still has a
  // (partial) diagnosis worth printing.
  bool nothing = r.diagnosis.verdict == "error";
  if (nothing) report_nothing_to_diagnose(o.paths, shown);
  if (o.format == "json") {
    if (!nothing) {
      write_diagnosis_json(r.diagnosis, *lib, out);
      out << "\n";
    }
  } else if (is_ci_format(o.format)) {
    // CI reports are written even when no input was readable: they carry the input errors.
    CiRenderOptions co;
    co.redacted = redact;
    co.redaction = level;
    if (const char* summary = std::getenv("GITHUB_STEP_SUMMARY"); summary && o.format == "github")
      co.github_step_summary = summary;
    if (Status s = render_ci(o.format, r.diagnosis, *lib, co, out); !s.ok()) {
      out.flush();
      fmt::print(stderr, "firstfault: {}\n", s.message());
      return kExitUsage;
    }
  } else if (!nothing) {
    TextStyle style;
    style.color = want_color(o.color);
    style.verbose = o.verbose;
    out << render_text(r.diagnosis, *lib, style);
  }
  out.flush();
  keep_until_exit(engine);
  if (r.interrupted) return kExitInterrupted;
  if (!r.problems.empty() || nothing) return kExitUsage;
  return exit_code_for(r.diagnosis, *fail_on);
}

int run_check(const CheckOptions& o, std::ostream& out) {
  CommonOptions common = o.common;
  if (!o.dir.empty()) common.signature_dirs.push_back(o.dir);
  auto lib = load_or_report(common, true);
  if (!lib) return kExitUsage;
  std::map<std::string, int> per_category;
  std::vector<int> per_action(kActionKinds.size(), 0);
  size_t patterns = lib->patterns.size();
  for (const auto& e : lib->entries) {
    per_category[e.category]++;
    per_action[static_cast<size_t>(e.action)]++;
  }
  out << fmt::format("library: {} entries, {} patterns: all files valid, all sample lines behave\n",
                     lib->entries.size(), patterns);
  for (const auto& [c, n] : per_category) out << fmt::format("  {:<20} {}\n", c, n);
  std::vector<std::string> actions;
  for (size_t k = 0; k < kActionKinds.size(); ++k) actions.push_back(fmt::format("{} {}", kActionKinds[k], per_action[k]));
  out << fmt::format("actions: {}\n", fmt::join(actions, ", "));
  if (!o.examples) return 0;

  std::string testdata = o.testdata;
  if (testdata.empty()) testdata = o.dir.empty() ? "testdata" : (fs::path(o.dir).parent_path() / "testdata").string();
  if (testdata.empty() || !fs::is_directory(testdata)) testdata = o.dir.empty() ? "testdata" : o.dir;
  // `check DIR` checks the entries of DIR (against the whole library, so they must win there);
  // without DIR, the built-in library's own.
  auto in_dir = [dir = o.dir.empty() ? fs::path() : fs::weakly_canonical(o.dir)](const Entry& e) {
    if (dir.empty()) return true;
    std::error_code ec;
    fs::path file = fs::weakly_canonical(e.loc.file, ec);
    auto rel = file.lexically_relative(dir);
    return !ec && !rel.empty() && *rel.begin() != "..";
  };
  Matcher matcher(*lib);
  if (Status s = matcher.compile(true); !s.ok()) {
    fmt::print(stderr, "firstfault: {}\n", s.message());
    return kExitUsage;
  }
  size_t total = 0, correct = 0;
  std::map<std::string, std::map<std::string, int>> confusion;  // expected -> got -> count
  std::vector<std::string> failures;
  for (const auto& e : lib->entries) {
    if (!in_dir(e)) continue;
    for (const auto& x : e.examples) {
      ++total;
      fs::path p = fs::path(testdata) / x.log;
      if (!fs::exists(p)) {
        failures.push_back(fmt::format("{}: example log {} does not exist", e.id, p.string()));
        confusion[e.id]["<missing>"]++;
        continue;
      }
      JobResult r = analyze_paths({p.string()}, matcher, {});
      const Diagnosis& d = r.diagnosis;
      std::string got = d.entry ? d.entry->id : "<" + d.verdict + ">";
      confusion[e.id][got]++;
      bool id_ok = got == e.id;
      bool rank_ok = !x.initiating_rank || (d.initiating.rank && *d.initiating.rank == *x.initiating_rank);
      if (id_ok && rank_ok) {
        ++correct;
        continue;
      }
      std::string got_rank = d.initiating.rank ? std::to_string(*d.initiating.rank) : "null";
      // A user's entry that loses to a built-in one on its own example: say how to win.
      std::string hint = !id_ok && d.entry && !in_dir(*d.entry)
                             ? fmt::format("; the built-in entry {} won: if {} refines it, add `specializes: [{}]` to it",
                                           got, e.id, got)
                             : "";
      failures.push_back(fmt::format("{}: {} diagnosed as {} (rank {}), expected {} (rank {}){}", e.id, x.log, got,
                                     got_rank, e.id,
                                     x.initiating_rank ? std::to_string(*x.initiating_rank) : "any", hint));
    }
  }
  out << fmt::format("examples: {}/{} diagnosed to their own entry with the expected initiating rank\n", correct, total);
  if (!failures.empty()) {
    out << "confusion (expected -> got):\n";
    for (const auto& [exp, gots] : confusion)
      for (const auto& [got, n] : gots)
        if (got != exp) out << fmt::format("  {} -> {} ({})\n", exp, got, n);
    for (const auto& f : failures) fmt::print(stderr, "check: {}\n", f);
    return kExitUnrecognized;
  }
  return 0;
}

int run_list(const ListOptions& o, std::ostream& out) {
  auto lib = load_for_run(o.common);
  if (!lib) return kExitUsage;
  if (!o.category.empty() && std::find(kCategories.begin(), kCategories.end(), o.category) == kCategories.end()) {
    std::vector<std::string> all(kCategories.begin(), kCategories.end());
    auto close = closest_matches(o.category, all, 1);
    fmt::print(stderr, "firstfault: unknown category '{}'{}; the categories are: {}\n", o.category,
               close.empty() ? "" : fmt::format(" (did you mean '{}'?)", close.front()), fmt::join(all, ", "));
    return kExitUsage;
  }
  std::vector<const Entry*> entries;
  for (const auto& e : lib->entries)
    if (o.category.empty() || e.category == o.category) entries.push_back(&e);
  std::sort(entries.begin(), entries.end(), [](const Entry* a, const Entry* b) {
    return std::tie(a->category, a->id) < std::tie(b->category, b->id);
  });
  if (o.patterns) {
    // One regex per line for other tools (rg -f, grep -P): named groups become plain groups,
    // because those tools join the lines into one alternation where names would clash.
    static const RE2 kNamed(R"(\(\?P<\w+>)");
    std::set<std::string> seen;
    for (const auto& p : lib->patterns) {
      std::string r = p.regex;
      RE2::GlobalReplace(&r, kNamed, "(");
      if (seen.insert(r).second) out << r << "\n";
    }
    return 0;
  }
  if (o.format == "json") {
    OutputJson arr = OutputJson::array();
    for (const Entry* e : entries)
      arr.push_back({{"id", e->id}, {"category", e->category}, {"severity", e->severity},
                     {"action", action_kind_name(e->action)}, {"title", e->title}});
    out << dump_json(arr) << "\n";
    return 0;
  }
  if (o.format != "text") {
    fmt::print(stderr, "firstfault: unknown --format '{}' (text, json)\n", o.format);
    return kExitUsage;
  }
  for (const Entry* e : entries)
    out << fmt::format("{:<44} {:<20} {:<9} {:<17} {}\n", e->id, e->category, e->severity, action_kind_name(e->action),
                       e->title);
  return 0;
}

std::string version_string() {
  std::vector<LoadProblem> problems;
  LoadOptions lo;
  lo.check_samples = false;
  Library lib = load_library({}, problems, lo);
  return fmt::format("firstfault {} (built-in library: {} entries)", FIRSTFAULT_VERSION, lib.entries.size());
}

}  // namespace firstfault
