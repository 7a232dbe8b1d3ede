#pragma once
// The subcommands, as functions of plain option structs, so the CLI stays thin and the tests
// can run them without a process. Each returns the process exit code.
#include <functional>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "firstfault/util/redact.h"
#include "firstfault/matcher/matcher.h"
#include "firstfault/signatures/library.h"

namespace firstfault {

struct JobResult;  // app/pipeline.h
class PathFilter;  // reader/path_filter.h

// Exit codes (docs: README "Exit codes").
inline constexpr int kExitDiagnosed = 0;
inline constexpr int kExitUnrecognized = 1;
inline constexpr int kExitUsage = 2;
inline constexpr int kExitInterrupted = 130;

// --glob and --exclude (repeatable): which files of a directory or an archive are read
// (reader/path_filter.h).
struct FileChoice {
  std::vector<std::string> globs;
  std::vector<std::string> excludes;
};

struct CommonOptions {
  std::vector<std::string> signature_dirs;  // --signatures DIR (repeatable)
  bool no_builtin = false;                  // --no-builtin: only the --signatures directories
};

struct DiagnoseOptions {
  CommonOptions common;
  std::vector<std::string> paths;  // empty or "-" = stdin
  std::string format = "text";     // text | json | github | markdown | sarif | gitlab | junit
  std::string color = "auto";      // auto | always | never
  std::string rank_from;
  std::string host_from;
  bool verbose = false;
  std::string fail_on = "unrecognized";  // --fail-on: none | unrecognized | any | SEVERITY (app/exit_policy.h)
  std::optional<RedactLevel> redact;            // --redact / --no-redact; unset: the format's default (util/redact.h)
  FileChoice files;
};

struct CheckOptions {
  CommonOptions common;
  std::string dir;        // signatures directory to check (empty: only the built-in library)
  std::string testdata;   // where example logs live (default: <dir>/../testdata)
  bool examples = true;
};

struct ListOptions {
  CommonOptions common;
  std::string category;
  std::string format = "text";
  bool patterns = false;  // one regex per line (for rg -f / benchmarks)
};

struct ExplainOptions {
  CommonOptions common;
  std::string id;
  std::string format = "text";
  std::string color = "auto";
};

struct CatalogOptions {
  CommonOptions common;
  std::string dir = "docs/catalog";
  std::string format = "markdown";
};

// `firstfault new ID --category C [--dir DIR]`: a template entry DIR/C/ID.yaml and its example
// log DIR/ID.log, every part to fill in marked REPLACE, so that `firstfault check DIR` refuses
// them until they are filled in.
struct NewOptions {
  std::string id, category, dir = ".";
};

struct TimelineOptions {
  CommonOptions common;
  std::vector<std::string> paths;
  std::string format = "text";
  std::string rank_from;
  std::string host_from;
  std::optional<RedactLevel> redact;  // --redact / --no-redact; unset: off (text and json stay on the machine)
  FileChoice files;
};

int run_diagnose(const DiagnoseOptions& o, std::ostream& out);
int run_check(const CheckOptions& o, std::ostream& out);
int run_list(const ListOptions& o, std::ostream& out);
int run_explain(const ExplainOptions& o, std::ostream& out);
int run_catalog(const CatalogOptions& o, std::ostream& out);
int run_new(const NewOptions& o, std::ostream& out);
int run_timeline(const TimelineOptions& o, std::ostream& out);
std::string version_string();

// The signature library and its compiled matcher, loaded once per command.
struct Engine {
  Library library;
  std::unique_ptr<Matcher> matcher;  // refers to `library`: an Engine never moves (heap only)
};
// Loads the built-in library plus --signatures and compiles the matcher; on any problem prints
// every message to stderr and returns nullptr (the caller exits 2).
std::unique_ptr<Engine> load_engine(const CommonOptions& o);
// Leaves a command's engine to the end of the process instead of freeing it: freeing the library
// and its compiled patterns (tens of thousands of small allocations) was a tenth of the start-up
// of a one-file diagnose (about 3 of 33 ms), and the OS takes the memory back at exit at once.
void keep_until_exit(std::unique_ptr<Engine>& engine);

// Each input problem on stderr, then each binary input skipped: always when it was named itself
// (as ripgrep does), with `verbose` also those found in a directory or an archive; then a hint for
// each path that looks like many jobs (triage's business). `shown` makes a path safe to print
// (masked with --redact).
void report_inputs(const JobResult& r, bool verbose, const std::function<std::string(const std::string&)>& shown);

// The last stderr line of a run whose inputs yielded no line at all (each input's reason is
// printed before it): there is nothing to diagnose, so stdout stays empty and the exit code is 2.
void report_nothing_to_diagnose(const std::vector<std::string>& paths,
                                const std::function<std::string(const std::string&)>& shown);

// Whether to colour output: --color, NO_COLOR, and whether stdout is a terminal.
bool want_color(const std::string& mode);

// The filter --glob and --exclude ask for, or nullptr after saying on stderr which glob cannot be
// read (the caller exits 2). `ok` tells the two nulls apart: none asked for, or a bad one.
std::shared_ptr<const PathFilter> path_filter_or_report(const FileChoice& files, bool& ok);

// Whether --rank-from REGEX is usable (valid, with a capture group for the rank); when not,
// says so on stderr and the caller exits 2.
// --rank-from / --host-from: each empty or a valid regex with a capture group; else a message on stderr.
bool path_rules_ok(const std::string& rank_from, const std::string& host_from);

}  // namespace firstfault
