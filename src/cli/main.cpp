// firstfault: thin command-line front end. Parses arguments, installs the signal handler and
// maps everything to the command functions in firstfault_core.
#include <CLI/CLI.hpp>
#include <spdlog/sinks/stdout_color_sinks.h>
#include <spdlog/spdlog.h>

#include <csignal>
#include <cstring>
#include <iostream>
#include <set>

#include "firstfault/app/commands.h"
#include "firstfault/app/pipeline.h"

using namespace firstfault;

namespace {
void on_sigint(int) { g_interrupted.store(true); }
}  // namespace

int main(int argc, char** argv) {
  spdlog::set_default_logger(spdlog::stderr_color_mt("firstfault"));  // diagnostics never go to stdout
  spdlog::set_pattern("firstfault: %v");
  std::signal(SIGINT, on_sigint);
  std::signal(SIGPIPE, SIG_IGN);

  // `firstfault job.log` and `cat job.log | firstfault` mean `firstfault diagnose ...`.
  static const std::set<std::string> kCommands = {"diagnose", "check", "list", "explain", "catalog", "timeline"};
  std::vector<std::string> args(argv + 1, argv + argc);
  bool global_flag = !args.empty() && (args[0] == "-h" || args[0] == "--help" || args[0] == "--version" || args[0] == "-V");
  if (args.empty() || (!kCommands.count(args[0]) && !global_flag)) args.insert(args.begin(), "diagnose");
  std::reverse(args.begin(), args.end());

  CLI::App app{"firstfault: find which rank broke first in a failed distributed training job, and how to fix it"};
  app.require_subcommand(0, 1);
  bool show_version = false;
  app.add_flag("-V,--version", show_version, "Print the version and the library's entry count");

  CommonOptions common;
  auto add_common = [&](CLI::App* sub) {
    sub->add_option("--signatures", common.signature_dirs, "Extra signature directory (same id overrides a built-in)")
        ->allow_extra_args(false)
        ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
    sub->add_flag("--no-builtin", common.no_builtin, "Use only the --signatures directories, not the built-in library");
  };

  DiagnoseOptions dopt;
  auto* diag = app.add_subcommand("diagnose", "Diagnose one job from its log files (default command)");
  diag->add_option("paths", dopt.paths, "Log files or directories of one job; '-' or nothing reads stdin");
  diag->add_option("-f,--format", dopt.format, "Output format")->check(CLI::IsMember({"text", "json"}));
  diag->add_option("--color", dopt.color, "Colour: auto, always, never")->check(CLI::IsMember({"auto", "always", "never"}));
  diag->add_option("--rank-from", dopt.rank_from, "Regex with one capture group that takes the rank from a file path");
  diag->add_flag("-v,--verbose", dopt.verbose, "Show all evidence and every rank's last line");
  add_common(diag);

  CheckOptions copt;
  auto* check = app.add_subcommand("check", "Validate a signature directory and diagnose every example log");
  check->add_option("dir", copt.dir, "Signature directory (default: only the built-in library)");
  check->add_option("--testdata", copt.testdata, "Directory the example logs are relative to");
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
  explain->add_option("id", eopt.id, "Entry id")->required();
  explain->add_option("-f,--format", eopt.format, "Output format")->check(CLI::IsMember({"text", "markdown", "json"}));
  explain->add_option("--color", eopt.color, "Colour: auto, always, never")->check(CLI::IsMember({"auto", "always", "never"}));
  add_common(explain);

  CatalogOptions catopt;
  auto* catalog = app.add_subcommand("catalog", "Write one Markdown page per entry plus an index");
  catalog->add_option("dir", catopt.dir, "Output directory (default docs/catalog)");
  catalog->add_option("-f,--format", catopt.format, "Output format")->check(CLI::IsMember({"markdown"}));
  add_common(catalog);

  TimelineOptions topt;
  auto* timeline = app.add_subcommand("timeline", "Per-rank view of a job, identical ranks collapsed");
  timeline->add_option("paths", topt.paths, "Log files or directories of one job; '-' or nothing reads stdin");
  timeline->add_option("-f,--format", topt.format, "Output format")->check(CLI::IsMember({"text", "json"}));
  timeline->add_option("--rank-from", topt.rank_from, "Regex with one capture group that takes the rank from a file path");
  add_common(timeline);

  try {
    app.parse(args);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);  // help goes to stdout, as users expect from --help
  } catch (const CLI::ParseError& e) {
    std::cerr << "firstfault: " << e.what() << "\n";
    return kExitUsage;
  }
  if (show_version) {
    std::cout << version_string() << "\n";
    return 0;
  }
  try {
    if (*diag) {
      dopt.common = common;
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
    if (*catalog) {
      catopt.common = common;
      return run_catalog(catopt, std::cout);
    }
    if (*timeline) {
      topt.common = common;
      return run_timeline(topt, std::cout);
    }
  } catch (const std::exception& e) {
    // The one fatal path: anything unexpected ends here with a message, never a crash.
    std::cerr << "firstfault: internal error: " << e.what() << "\n";
    return kExitUsage;
  }
  return kExitUsage;
}
