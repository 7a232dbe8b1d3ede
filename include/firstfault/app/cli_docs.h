#pragma once
// The man page and the shell completions, generated from the CLI11 definition itself (the one
// source), so neither can drift from what the binary accepts: `firstfault --help-man` and
// `firstfault completions bash|zsh|fish` print them; CMake installs them; a test keeps the
// committed docs/firstfault.1 equal to the generated one.
//
// Value completion follows each option's type name: DIR (directories), FILE and PATH (files),
// CMD (commands), ID (entry ids, asked from `firstfault list` at completion time); options with
// a fixed set of values (CLI::IsMember) complete those. Hidden options and subcommands (empty
// group) are left out.
#include <string>

namespace CLI {
class App;
}

namespace firstfault {

std::string render_man_page(const CLI::App& app, const std::string& version);

// `shell`: bash, zsh or fish. Returns "" for another shell.
std::string render_completion(const CLI::App& app, const std::string& shell);

}  // namespace firstfault
