// firstfault: thin command-line front end. Parses arguments, installs the signal handler and
// maps everything to the command functions in firstfault_core.
#include <CLI/CLI.hpp>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <malloc.h>
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <cstring>
#include <iostream>
#include <optional>
#include <set>

#include "firstfault/app/cli_docs.h"
#include "firstfault/util/strings.h"
#include "firstfault/app/commands.h"
#include "firstfault/app/exit_policy.h"
#include "firstfault/app/pipeline.h"
#include "firstfault/reader/path_filter.h"
#include "firstfault/triage/triage.h"
#include "firstfault/render/ci_render.h"
#include "firstfault/watch/watch_command.h"

using namespace firstfault;

namespace {
void on_sigint(int) { g_interrupted.store(true); }

// --fail-on takes one word or action kinds joined with commas, so no fixed list can check it; the
// description still lists every word, for the man page and completions.
CLI::Validator fail_on_validator() {
  std::string words;
  for (const auto& w : fail_on_names()) words += (words.empty() ? "" : ",") + w;
  return CLI::Validator(
      [](std::string& v) { return parse_fail_on(v) ? std::string() : "unknown value '" + v + "' (" + fail_on_choices() + ")"; },
      "{" + words + "}");
}

// --glob and --exclude, for the commands that walk directories and open archives.
void add_file_choice(CLI::App* sub, FileChoice& files) {
  sub->add_option("--glob", files.globs, "Read only the files of a directory or archive whose path matches GLOB ('!GLOB' excludes)")
      ->type_name("GLOB")
      ->allow_extra_args(false)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  sub->add_option("--exclude", files.excludes, "Skip the files and folders of a directory or archive whose path matches GLOB")
      ->type_name("GLOB")
      ->allow_extra_args(false)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  sub->footer(kFileChoiceHelp);
}
const std::vector<std::string> kCommands = {"diagnose", "check", "list", "explain", "catalog", "timeline",
                                            "watch",    "completions", "triage", "new", "help", "version"};

// `firstfault job.log` and `cat job.log | firstfault` mean `firstfault diagnose ...`; `help [CMD]`
// and `version` are the flags. A first word that is neither a command nor a file, but close to a
// command, is a typo: say so rather than "no such file". Returns an exit code when done.
std::optional<int> rewrite_arguments(std::vector<std::string>& args) {
  if (!args.empty() && args[0] == "help") {
    args.erase(args.begin());
    args.resize(std::min<size_t>(args.size(), 1));
    args.push_back("--help");
    return std::nullopt;
  }
  if (!args.empty() && args[0] == "version") {
    args = {"--version"};
    return std::nullopt;
  }
  std::error_code exists_error;  // a path that cannot even be looked at (a symlink loop) is read, and reported, as a path
  bool flag = !args.empty() && !args[0].empty() && args[0][0] == '-' && args[0] != "-";
  bool command = !args.empty() && std::find(kCommands.begin(), kCommands.end(), args[0]) != kCommands.end();
  if (!args.empty() && !flag && !command && args[0].find_first_of("/.") == std::string::npos &&
      !std::filesystem::exists(args[0], exists_error) && !exists_error) {
    if (auto close = closest_matches(args[0], kCommands, 1); !close.empty()) {
      fmt::print(stderr, "firstfault: '{}' is neither a command nor a file; did you mean '{}'? (firstfault --help)\n",
                 args[0], close.front());
      return kExitUsage;
    }
  }
  if (args.empty() || (!command && !(flag && (args[0] == "-h" || args[0] == "--help" || args[0] == "--version" ||
                                               args[0] == "-V" || args[0] == "--help-man"))))
    args.insert(args.begin(), "diagnose");
  bool reads_stdin = args.size() == 1 || (args.size() == 2 && args[1] == "-");
  if (args[0] == "diagnose" && reads_stdin && ::isatty(STDIN_FILENO))
    fmt::print(stderr, "firstfault: reading a log from stdin (end it with Ctrl-D; firstfault --help for usage)\n");
  return std::nullopt;
}

// " (did you mean --format?)" for an unknown flag close to one the command has.
std::string flag_suggestion(const CLI::App& app, const CLI::ParseError& e) {
  std::string what = e.what();
  size_t at = what.find("--");
  if (at == std::string::npos) return "";
  size_t end = what.find_first_of(" =,", at);
  std::string given = what.substr(at, end == std::string::npos ? std::string::npos : end - at);
  std::vector<std::string> names;
  auto collect = [&names](const CLI::App* a) {
    for (const CLI::Option* o : a->get_options())
      for (const auto& n : o->get_lnames()) names.push_back("--" + n);
  };
  collect(&app);
  for (const CLI::App* sub : app.get_subcommands({})) collect(sub);
  auto close = closest_matches(given, names, 1);
  return close.empty() || close.front() == given ? "" : fmt::format(" (did you mean {}?)", close.front());
}
// `watch` follows thousands of rank logs and `triage` opens archives in parallel: use every file
// descriptor the hard limit allows (the soft default, 1,024, is smaller than a big job's logs).
void raise_open_file_limit() {
  struct rlimit rl {};
  if (::getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
    rl.rlim_cur = rl.rlim_max;
    ::setrlimit(RLIMIT_NOFILE, &rl);
  }
}
// glibc gives each thread that allocates an arena of its own, and a freed block stays in the
// arena that made it: with two reading threads a hostile log's peak RSS wandered up to 65.6 MB of
// the 64 MiB bound. Two arenas cost no speed here (the hot path allocates little) and cut that
// peak by 2.6 MB (docs/performance.md). MALLOC_ARENA_MAX, when set, still decides.
void limit_malloc_arenas() {
#if defined(__GLIBC__)
  if (!std::getenv("MALLOC_ARENA_MAX")) ::mallopt(M_ARENA_MAX, 2);
#endif
}
}  // namespace

int main(int argc, char** argv) {
  limit_malloc_arenas();
  raise_open_file_limit();
  spdlog::set_default_logger(spdlog::stderr_color_mt("firstfault"));  // diagnostics never go to stdout
  spdlog::set_pattern("firstfault: %v");
  // No SA_RESTART: a blocked open or read (a FIFO without a writer, a silent pipe) returns
  // EINTR, so Ctrl-C ends every wait and what was read is still diagnosed.
  struct sigaction sa {};
  sa.sa_handler = on_sigint;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = 0;
  ::sigaction(SIGINT, &sa, nullptr);
  std::signal(SIGPIPE, SIG_IGN);

  std::vector<std::string> args(argv + 1, argv + argc);
  if (auto done = rewrite_arguments(args)) return *done;
  std::reverse(args.begin(), args.end());

  CLI::App app{"firstfault: find which rank broke first in a failed distributed training job, and how to fix it",
               "firstfault"};
  app.require_subcommand(0, 1);
  bool show_version = false;
  app.add_flag("-V,--version", show_version, "Print the version and the library's entry count");
  bool show_man = false;
  app.add_flag("--help-man", show_man, "Print the man page (roff), generated from this definition")->group("");

  // --redact[=LEVEL]/--no-redact. A flag whose value comes only after '=' (as ripgrep's
  // --color=WHEN), so `--redact job.log` never reads the log's name as a level. Without either
  // the option stays unset and the format's default applies.
  struct RedactFlag {
    std::string level;
    CLI::Option* flag = nullptr;
    std::optional<RedactLevel> value() const {
      return flag->count() > 0 ? parse_redact_level(level) : std::nullopt;
    }
  };
  // `--redact pii job.log` reads "pii" as a path: say how the level is written, once.
  auto hint_redact_level = [](const RedactFlag& f, const std::vector<std::string>& paths) {
    if (f.flag->count() == 0) return;
    for (const auto& p : paths)
      if (parse_redact_level(p) && !std::filesystem::exists(p))
        fmt::print(stderr, "firstfault: '{}' was read as a path; a masking level is written --redact={}\n", p, p);
  };
  auto add_redact = [](CLI::App* sub, RedactFlag& f, const std::string& help) {
    f.flag = sub->add_flag("--redact{all},!--no-redact{none}", f.level,
                           "Mask secrets; =pii also e-mails and user names; =all (the default of a bare --redact) "
                           "also hosts and IPs" + help)
                 ->check(CLI::IsMember({"none", "secrets", "pii", "all"}))
                 ->type_name("[=LEVEL]");
  };

  CommonOptions common;
  auto add_common = [&](CLI::App* sub) {
    sub->add_option("--signatures", common.signature_dirs, "Extra signature directory (same id overrides a built-in)")
        ->type_name("DIR")
        ->allow_extra_args(false)
        ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
    sub->add_flag("--no-builtin", common.no_builtin, "Use only the --signatures directories, not the built-in library");
  };

  DiagnoseOptions dopt;
  auto* diag = app.add_subcommand("diagnose", "Diagnose one job from its log files (default command)");
  diag->add_option("paths", dopt.paths, "Log files or directories of one job; '-' or nothing reads stdin")->type_name("PATH");
  diag->add_option("-f,--format", dopt.format, "Output format: text, json, github, markdown, sarif, gitlab, junit")
      ->check(CLI::IsMember(kDiagnoseFormats));
  diag->add_option("--fail-on", dopt.fail_on,
                   "When to exit 1: none, unrecognized (default), any, a severity, or action kinds joined with commas "
                   "(e.g. stop,investigate: fail unless the job may be restarted)")
      ->check(fail_on_validator());
  RedactFlag diag_redact;
  add_redact(diag, diag_redact, " (default: pii for github, gitlab, sarif, junit, markdown, none otherwise)");
  diag->add_option("--color", dopt.color, "Colour: auto, always, never")->check(CLI::IsMember({"auto", "always", "never"}));
  diag->add_option("--rank-from", dopt.rank_from, "Regex with one capture group that takes the rank from a file path")
      ->type_name("REGEX");
  diag->add_option("--host-from", dopt.host_from, "Regex with one capture group that takes the host from a file path")
      ->type_name("REGEX");
  diag->add_flag("-v,--verbose", dopt.verbose, "Show all evidence and every rank's last line; name skipped binary files on stderr");
  add_file_choice(diag, dopt.files);
  add_common(diag);

  CheckOptions copt;
  auto* check = app.add_subcommand("check", "Validate a signature directory and diagnose every example log");
  check->add_option("dir", copt.dir, "Signature directory (default: only the built-in library)")->type_name("DIR");
  check->add_option("--testdata", copt.testdata, "Directory the example logs are relative to")->type_name("DIR");
  check->add_flag("!--no-examples", copt.examples, "Only validate files and samples");
  add_common(check);

  ListOptions lopt;
  auto* list = app.add_subcommand("list", "List the failure entries");
  list->add_option("--category", lopt.category, "Only this category");
  list->add_option("-f,--format", lopt.format, "Output format")->check(CLI::IsMember({"text", "json"}));
  list->add_flag("--patterns", lopt.patterns, "Print every distinct pattern regex, one per line");
  add_common(list);

  ExplainOptions eopt;
  auto* explain = app.add_subcommand("explain", "Show one entry as an encyclopedia page");
  explain->add_option("id", eopt.id, "Entry id")->required()->type_name("ID");
  explain->add_option("-f,--format", eopt.format, "Output format")->check(CLI::IsMember({"text", "markdown", "json"}));
  explain->add_option("--color", eopt.color, "Colour: auto, always, never")->check(CLI::IsMember({"auto", "always", "never"}));
  add_common(explain);

  NewOptions nopt;
  auto* new_entry = app.add_subcommand("new", "Write a template failure entry and its example log to fill in");
  new_entry->add_option("id", nopt.id, "Entry id ([a-z0-9-]+)")->required()->type_name("ID");
  new_entry->add_option("--category", nopt.category, "One of: " + fmt::format("{}", fmt::join(kCategories, ", ")))
      ->required();
  new_entry->add_option("--dir", nopt.dir, "Signature directory to write into (default: .)")->type_name("DIR");

  CatalogOptions catopt;
  auto* catalog = app.add_subcommand("catalog", "Write one Markdown page per entry plus an index");
  catalog->add_option("dir", catopt.dir, "Output directory (written into; created when missing)")->type_name("DIR")->required();
  catalog->add_option("-f,--format", catopt.format, "Output format")->check(CLI::IsMember({"markdown"}));
  add_common(catalog);

  TimelineOptions topt;
  auto* timeline = app.add_subcommand("timeline", "Per-rank view of a job, identical ranks collapsed");
  timeline->add_option("paths", topt.paths, "Log files or directories of one job; '-' or nothing reads stdin")->type_name("PATH");
  timeline->add_option("-f,--format", topt.format, "Output format: text, json, html (one self-contained page) or svg")->check(CLI::IsMember({"text", "json", "html", "svg"}));
  timeline->add_option("--rank-from", topt.rank_from, "Regex with one capture group that takes the rank from a file path")
      ->type_name("REGEX");
  timeline->add_option("--host-from", topt.host_from, "Regex with one capture group that takes the host from a file path")
      ->type_name("REGEX");
  RedactFlag timeline_redact;
  add_redact(timeline, timeline_redact, " (default: off)");
  add_file_choice(timeline, topt.files);
  add_common(timeline);

  WatchOptions wopt;
  auto* watch = app.add_subcommand("watch", "Follow a running job's logs and alert the moment it fails or stalls");
  watch->add_option("paths", wopt.paths, "Log files (need not exist yet) or directories to follow; '-' or nothing reads stdin")
      ->type_name("PATH");
  watch->add_option("-f,--format", wopt.format, "Alert format")->check(CLI::IsMember({"text", "jsonl"}));
  watch->add_option("--stall", wopt.stall, "Alert when no rank prints progress for this long, or one rank stops while others go on (e.g. 10m)")
      ->type_name("DURATION");
  watch->add_option("--exec", wopt.exec, "Run CMD (via /bin/sh -c) for every alert, with the alert JSON on its stdin")
      ->type_name("CMD");
  watch->add_option("--exec-timeout", wopt.exec_timeout, "Stop an --exec command that runs longer than this (default 30s)")
      ->type_name("DURATION");
  watch->add_option("--metrics-file", wopt.metrics_file, "Keep Prometheus metrics in this file (node_exporter textfile collector)")
      ->type_name("FILE");
  watch->add_option("--metrics-label", wopt.metrics_labels,
                    "Add KEY=VALUE to every metric (repeatable), e.g. job=$SLURM_JOB_ID, so that two watches on a node stay apart")
      ->type_name("KEY=VALUE")
      ->allow_extra_args(false);  // one pair per flag: a path after it stays a path
  watch->add_option("--update-interval", wopt.update_interval, "Least time between two alerts about one failure (default 2s)")
      ->type_name("DURATION");
  watch->add_option("--color", wopt.color, "Colour: auto, always, never")->check(CLI::IsMember({"auto", "always", "never"}));
  watch->add_option("--rank-from", wopt.rank_from, "Regex with one capture group that takes the rank from a file path")
      ->type_name("REGEX");
  watch->add_option("--host-from", wopt.host_from, "Regex with one capture group that takes the host from a file path")
      ->type_name("REGEX");
  RedactFlag watch_redact;
  add_redact(watch, watch_redact, " in alerts, --exec input and metrics (default: off)");
  add_common(watch);
  watch->footer(kWatchHelp);

  std::string shell;
  auto* completions = app.add_subcommand("completions", "Print a shell completion script, generated from this definition");
  completions->add_option("shell", shell, "Shell")->required()->check(CLI::IsMember({"bash", "zsh", "fish"}));

  TriageOptions tropt;
  auto* triage = app.add_subcommand("triage", "Diagnose many archived jobs in parallel and group them by failure");
  triage->add_option("paths", tropt.paths, "Files, directories of jobs, or archives (.tar, .tar.gz, .tar.zst, .zip)")->type_name("PATH");
  triage->add_option("-f,--format", tropt.format, "Output format")->check(CLI::IsMember({"table", "jsonl", "csv", "markdown", "html"}));
  triage->add_option("-j,--jobs", tropt.jobs, "Jobs analysed in parallel (default: all cores)");
  triage->add_option("--job-depth", tropt.job_depth, "In directories and archives, a job is a path this many levels down (0: the whole directory or archive)");
  triage->add_option("--job-pattern", tropt.job_pattern, "A job is a relative path fully matching this regex (overrides --job-depth)");
  triage->add_option("--shard", tropt.shard, "Process a deterministic 1/N of the jobs: I/N");
  triage->add_flag("--unknown-only", tropt.unknown_only, "Only the unrecognised failures, clustered by their first error line");
  triage->add_option("--merge", tropt.merge, "Combine the jsonl outputs of shards instead of reading logs")
      ->type_name("FILE")
      ->allow_extra_args(true);
  triage->add_option("--rank-from", tropt.rank_from, "Regex with one capture group that takes the rank from a file path");
  triage->add_option("--host-from", tropt.host_from, "Regex with one capture group that takes the host from a file path")
      ->type_name("REGEX");
  triage->add_flag("!--no-progress", tropt.progress, "No progress bar on stderr");
  triage->add_option("--since", tropt.since, "Only jobs dated on or after this day (YYYY-MM-DD; from the failure's log time, else a date in the job's path)")
      ->type_name("DATE");
  triage->add_option("--until", tropt.until, "Only jobs dated on or before this day (YYYY-MM-DD)")->type_name("DATE");
  RedactFlag triage_redact;
  add_redact(triage, triage_redact, " (default: pii for markdown, none otherwise)");
  add_file_choice(triage, tropt.files);
  add_common(triage);

  try {
    app.parse(args);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);  // help goes to stdout, as users expect from --help
  } catch (const CLI::ParseError& e) {
    std::cerr << "firstfault: " << e.what() << flag_suggestion(app, e) << "\n";
    return kExitUsage;
  }
  if (show_version) {
    std::cout << version_string() << "\n";
    return 0;
  }
  if (show_man) {
    std::cout << render_man_page(app, FIRSTFAULT_VERSION);
    return 0;
  }
  try {
    if (*triage) {
      tropt.common = common;
      tropt.redact = triage_redact.value();
      hint_redact_level(triage_redact, tropt.paths);
      return run_triage(tropt, std::cout);
    }
    if (*diag) {
      dopt.common = common;
      dopt.redact = diag_redact.value();
      hint_redact_level(diag_redact, dopt.paths);
      return run_diagnose(dopt, std::cout);
    }
    if (*check) {
      copt.common = common;
      return run_check(copt, std::cout);
    }
    if (*list) {
      lopt.common = common;
      return run_list(lopt, std::cout);
    }
    if (*explain) {
      eopt.common = common;
      return run_explain(eopt, std::cout);
    }
    if (*new_entry) return run_new(nopt, std::cout);
    if (*catalog) {
      catopt.common = common;
      return run_catalog(catopt, std::cout);
    }
    if (*timeline) {
      topt.common = common;
      topt.redact = timeline_redact.value();
      hint_redact_level(timeline_redact, topt.paths);
      return run_timeline(topt, std::cout);
    }
    if (*watch) {
      wopt.common = common;
      wopt.redact = watch_redact.value();
      hint_redact_level(watch_redact, wopt.paths);
      return run_watch(wopt, std::cout);
    }
    if (*completions) {
      std::cout << render_completion(app, shell);
      return 0;
    }
  } catch (const std::exception& e) {
    // The one fatal path: anything unexpected ends here with a message, never a crash.
    std::cerr << "firstfault: internal error: " << e.what() << "\n";
    return kExitUsage;
  }
  return kExitUsage;
}
