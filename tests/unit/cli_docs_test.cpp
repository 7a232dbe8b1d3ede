// The man page and completions are read from a CLI11 definition; a small one shows what is
// taken from it (tests/cli_docs_current.sh checks the real one end to end).
#include <CLI/CLI.hpp>
#include <catch2/catch.hpp>

#include "firstfault/app/cli_docs.h"

using namespace firstfault;

namespace {

struct Cli {
  CLI::App app{"prog: do things to logs", "prog"};
  std::vector<std::string> paths;
  std::string mode = "a", dir, secret;
  bool quiet = false;
  Cli() {
    app.add_flag("--version", quiet, "Print the version");
    auto* run = app.add_subcommand("run", "Run over some logs");
    run->add_option("paths", paths, "Log files")->type_name("PATH");
    run->add_option("-m,--mode", mode, "How to run")->check(CLI::IsMember({"a", "b"}));
    run->add_option("--dir", dir, "Where to put it")->type_name("DIR");
    run->add_flag("-q,--quiet", quiet, "Say less");
    run->add_option("--secret", secret, "Not for users")->group("");
    run->footer("More about run.\n\n  prog run x.log\n");
    app.add_subcommand("internal", "Hidden")->group("");
  }
};

}  // namespace

TEST_CASE("cli docs: the man page lists every visible command and option, nothing hidden") {
  Cli c;
  std::string man = render_man_page(c.app, "1.2.3");
  CHECK_THAT(man, Catch::Contains(".TH PROG 1 \"\" \"prog 1.2.3\""));
  CHECK_THAT(man, Catch::Contains("prog \\- do things to logs"));
  CHECK_THAT(man, Catch::Contains(".SS \"prog run [\\fIOPTIONS\\fR] [\\fIPATH\\fR...]\""));
  CHECK_THAT(man, Catch::Contains("\\fB\\-m\\fR, \\fB\\-\\-mode\\fR \\fIMODE\\fR\nHow to run. One of: a, b."));
  CHECK_THAT(man, Catch::Contains("\\fB\\-\\-dir\\fR \\fIDIR\\fR\n"));
  CHECK_THAT(man, Catch::Contains("\\fB\\-q\\fR, \\fB\\-\\-quiet\\fR\nSay less."));
  CHECK_THAT(man, Catch::Contains(".PP\nMore about run.\n.PP\n.nf\n  prog run x.log\n.fi\n"));
  CHECK_THAT(man, !Catch::Contains("secret"));
  CHECK_THAT(man, !Catch::Contains("internal"));
}

TEST_CASE("cli docs: completions offer choices, directories and files where the definition says so") {
  Cli c;
  std::string bash = render_completion(c.app, "bash");
  CHECK_THAT(bash, Catch::Contains("run) cmd=\"${COMP_WORDS[i]}\"; break ;;"));
  CHECK_THAT(bash, Catch::Contains("-m|--mode)\n          COMPREPLY=($(compgen -W 'a b' -- \"$cur\"))"));
  CHECK_THAT(bash, Catch::Contains("--dir)\n          COMPREPLY=($(compgen -d -- \"$cur\"))"));
  CHECK_THAT(bash, Catch::Contains("complete -o filenames -F _prog prog"));
  CHECK_THAT(bash, !Catch::Contains("secret"));

  std::string zsh = render_completion(c.app, "zsh");
  CHECK_THAT(zsh, Catch::Contains("#compdef prog\n"));
  CHECK_THAT(zsh, Catch::Contains("'run:Run over some logs'"));
  CHECK_THAT(zsh, Catch::Contains("'(-m --mode)'{-m,--mode}'[How to run]:mode:(a b)'"));
  CHECK_THAT(zsh, Catch::Contains("'--dir[Where to put it]:dir:_files -/'"));
  CHECK_THAT(zsh, Catch::Contains("'*:path:_files'"));

  std::string fish = render_completion(c.app, "fish");
  CHECK_THAT(fish, Catch::Contains("-a run -d 'Run over some logs'"));
  CHECK_THAT(fish, Catch::Contains("'__fish_seen_subcommand_from run' -s m -l mode -x -a 'a b' -d 'How to run'"));
  CHECK_THAT(fish, Catch::Contains("'__fish_seen_subcommand_from run' -F"));
  CHECK_THAT(fish, !Catch::Contains("internal"));

  CHECK(render_completion(c.app, "tcsh").empty());
}
