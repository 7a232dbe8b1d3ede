#include "firstfault/app/cli_docs.h"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <cctype>

namespace firstfault {

namespace {

// ---- a plain model of the CLI definition, read from CLI11 ----

enum class ValueKind { kNone, kFile, kDir, kCommand, kEntryId, kChoice };

struct OptModel {
  std::vector<std::string> shorts;  // "-f"
  std::vector<std::string> longs;   // "--format"
  bool takes_value = false;
  bool positional = false;
  bool repeatable = false;
  bool required = false;
  std::string value_name;  // "FORMAT", "PATH"
  std::vector<std::string> choices;
  ValueKind kind = ValueKind::kNone;
  std::string description;
};

struct CmdModel {
  std::string name;  // "" for the top level
  std::string description;
  std::string footer;
  std::vector<OptModel> options;     // named options and flags, definition order
  std::vector<OptModel> positionals;
};

std::string upper(std::string s) {
  for (char& c : s) c = c == '-' ? '_' : static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

OptModel read_option(const CLI::Option* o) {
  OptModel m;
  for (const auto& s : o->get_snames()) m.shorts.push_back("-" + s);
  for (const auto& l : o->get_lnames()) m.longs.push_back("--" + l);
  m.positional = o->get_positional() && !o->nonpositional();
  m.takes_value = o->get_items_expected_max() > 0;  // flags expect 0 items
  m.repeatable = m.takes_value && (o->get_expected_max() > 1 ||
                                   o->get_multi_option_policy() == CLI::MultiOptionPolicy::TakeAll);
  m.required = o->get_required();
  m.description = o->get_description();
  // CLI11 reports "TYPE" plus one ":desc" per validator; IsMember describes itself as "{a,b}".
  std::string type = o->get_type_name();
  std::string primary = type.substr(0, type.find(':'));
  size_t open = type.find(":{");
  if (open != std::string::npos) {
    size_t close = type.find('}', open);
    std::string list = type.substr(open + 2, close == std::string::npos ? std::string::npos : close - open - 2);
    size_t start = 0;
    while (start <= list.size()) {
      size_t comma = list.find(',', start);
      std::string item = list.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
      if (!item.empty()) m.choices.push_back(item);
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
  }
  if (primary.empty() || primary == "TEXT") primary = upper(m.longs.empty() ? o->get_name(true) : m.longs[0].substr(2));
  m.value_name = primary;
  if (!m.choices.empty()) m.kind = ValueKind::kChoice;
  else if (primary == "DIR") m.kind = ValueKind::kDir;
  else if (primary == "FILE" || primary == "PATH") m.kind = ValueKind::kFile;
  else if (primary == "CMD") m.kind = ValueKind::kCommand;
  else if (primary == "ID") m.kind = ValueKind::kEntryId;
  return m;
}

CmdModel read_command(const CLI::App& app) {
  CmdModel c;
  c.name = app.get_name();
  c.description = app.get_description();
  c.footer = app.get_footer();
  for (const CLI::Option* o : app.get_options()) {
    if (o->get_group().empty()) continue;  // hidden
    OptModel m = read_option(o);
    if (m.positional) c.positionals.push_back(std::move(m));
    else c.options.push_back(std::move(m));
  }
  return c;
}

struct CliModel {
  std::string name;
  CmdModel top;
  std::vector<CmdModel> commands;
};

CliModel read_cli(const CLI::App& app) {
  CliModel m;
  m.name = app.get_name().empty() ? "firstfault" : app.get_name();
  m.top = read_command(app);
  for (const CLI::App* sub : app.get_subcommands([](const CLI::App*) { return true; }))
    if (!sub->get_group().empty()) m.commands.push_back(read_command(*sub));
  return m;
}

std::string strip_prefix(const std::string& description, const std::string& name) {
  std::string p = name + ": ";
  return description.rfind(p, 0) == 0 ? description.substr(p.size()) : description;
}

// ---- man page (roff, man macros) ----

// Text: backslashes escaped, a line never starts with a control character.
std::string roff(const std::string& s) {
  std::string out;
  bool line_start = true;
  for (char c : s) {
    if (line_start && (c == '.' || c == '\'')) out += "\\&";
    if (c == '\\') out += "\\e";
    else out += c;
    line_start = c == '\n';
  }
  return out;
}

// Option names: '-' is a real minus in names people type.
std::string roff_name(const std::string& s) {
  std::string out;
  for (char c : s) out += c == '-' ? std::string("\\-") : std::string(1, c);
  return out;
}

std::string man_option_head(const OptModel& o) {
  std::vector<std::string> names;
  for (const auto& s : o.shorts) names.push_back("\\fB" + roff_name(s) + "\\fR");
  for (const auto& l : o.longs) names.push_back("\\fB" + roff_name(l) + "\\fR");
  std::string head;
  for (size_t i = 0; i < names.size(); ++i) head += (i ? ", " : "") + names[i];
  if (o.takes_value) head += " \\fI" + roff(o.value_name) + "\\fR";
  return head;
}

std::string man_option_body(const OptModel& o) {
  std::string body = roff(o.description);
  if (!body.empty() && body.back() != '.') body += '.';
  bool listed = std::all_of(o.choices.begin(), o.choices.end(),
                            [&](const std::string& c) { return o.description.find(c) != std::string::npos; });
  if (!o.choices.empty() && !listed) {
    body += " One of:";
    for (size_t i = 0; i < o.choices.size(); ++i) body += (i ? ", " : " ") + roff(o.choices[i]);
    body += ".";
  }
  if (o.repeatable && !o.positional) body += " May be given more than once.";
  return body;
}

std::string synopsis_args(const CmdModel& c) {
  std::string s;
  bool options = std::any_of(c.options.begin(), c.options.end(), [](const OptModel& o) {
    return std::find(o.longs.begin(), o.longs.end(), "--help") == o.longs.end();
  });
  if (options) s += " [\\fIOPTIONS\\fR]";
  for (const auto& p : c.positionals) {
    std::string v = "\\fI" + roff(p.value_name) + "\\fR" + (p.repeatable ? "..." : "");
    s += p.required ? " " + v : " [" + v + "]";
  }
  return s;
}

// The footer of a command is free text: paragraphs separated by blank lines, and lines that
// start with two spaces are kept as they are (examples).
std::string man_paragraphs(const std::string& text) {
  std::string out, para;
  bool in_example = false;
  auto flush = [&] {
    if (!para.empty()) out += ".PP\n" + roff(para) + "\n";
    para.clear();
  };
  size_t start = 0;
  while (start <= text.size()) {
    size_t nl = text.find('\n', start);
    std::string line = text.substr(start, nl == std::string::npos ? std::string::npos : nl - start);
    bool example = line.rfind("  ", 0) == 0;
    if (example) {
      flush();
      if (!in_example) out += ".PP\n.nf\n";
      in_example = true;
      out += roff(line) + "\n";
    } else {
      if (in_example) out += ".fi\n";
      in_example = false;
      if (line.empty()) flush();
      else para += (para.empty() ? "" : " ") + line;
    }
    if (nl == std::string::npos) break;
    start = nl + 1;
  }
  if (in_example) out += ".fi\n";
  flush();
  return out;
}

// ---- completions ----

std::vector<std::string> all_names(const OptModel& o) {
  std::vector<std::string> v = o.shorts;
  v.insert(v.end(), o.longs.begin(), o.longs.end());
  return v;
}

std::string join(const std::vector<std::string>& v, const std::string& sep) {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) out += (i ? sep : "") + v[i];
  return out;
}

// Single-quoted for POSIX shells.
std::string sh_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

// The compgen command that lists candidates for a value ("" when there is nothing to offer).
std::string bash_candidates(ValueKind kind, const std::vector<std::string>& choices) {
  switch (kind) {
    case ValueKind::kChoice:
      return "compgen -W " + sh_quote(join(choices, " ")) + " -- \"$cur\"";
    case ValueKind::kDir:
      return "compgen -d -- \"$cur\"";
    case ValueKind::kFile:
      return "compgen -f -- \"$cur\"";
    case ValueKind::kCommand:
      return "compgen -c -- \"$cur\"";
    case ValueKind::kEntryId:
      return "compgen -W \"$(\"${COMP_WORDS[0]}\" list 2>/dev/null | cut -d' ' -f1)\" -- \"$cur\"";
    case ValueKind::kNone:
      break;
  }
  return "";
}

// `words`: extra candidates for a non-option word (the command names at the top level).
std::string bash_command_body(const CmdModel& c, const std::string& words, const std::string& indent) {
  std::string out;
  std::vector<std::string> value_cases;
  for (const auto& o : c.options) {
    if (!o.takes_value) continue;
    std::string gen = bash_candidates(o.kind, o.choices);
    value_cases.push_back(indent + "  " + join(all_names(o), "|") + ")\n" + indent + "    " +
                          (gen.empty() ? "COMPREPLY=()" : "COMPREPLY=($(" + gen + "))") + "\n" + indent +
                          "    return ;;\n");
  }
  if (!value_cases.empty()) {
    out += indent + "case \"$prev\" in\n";
    for (const auto& v : value_cases) out += v;
    out += indent + "esac\n";
  }
  std::vector<std::string> flags;
  for (const auto& o : c.options)
    for (const auto& n : all_names(o)) flags.push_back(n);
  out += indent + "if [[ \"$cur\" == -* ]]; then\n" + indent + "  COMPREPLY=($(compgen -W " +
         sh_quote(join(flags, " ")) + " -- \"$cur\"))\n" + indent + "  return\n" + indent + "fi\n";
  std::vector<std::string> gens;
  if (!words.empty()) gens.push_back("$(compgen -W " + sh_quote(words) + " -- \"$cur\")");
  if (!c.positionals.empty()) {
    std::string gen = bash_candidates(c.positionals.front().kind, c.positionals.front().choices);
    if (!gen.empty()) gens.push_back("$(" + gen + ")");
  }
  out += indent + "COMPREPLY=(" + join(gens, " ") + ")\n";
  return out;
}

std::string render_bash(const CliModel& m) {
  std::vector<std::string> names;
  for (const auto& c : m.commands) names.push_back(c.name);
  // With no command, firstfault runs `diagnose`: offer the commands and its arguments.
  CmdModel top = m.top;
  for (const auto& c : m.commands)
    if (c.name == "diagnose") {
      top.positionals = c.positionals;
      for (const auto& o : c.options) {
        bool clash = false;
        for (const auto& t : m.top.options)
          for (const auto& n : all_names(t))
            for (const auto& k : all_names(o)) clash = clash || n == k;
        if (!clash) top.options.push_back(o);
      }
    }
  std::string fn = "_" + m.name;
  std::string out = fmt::format(
      "# bash completion for {0} (generated by `{0} completions bash` from the CLI definition; do not edit)\n"
      "{1}() {{\n"
      "  local cur prev cmd i\n"
      "  COMPREPLY=()\n"
      "  cur=\"${{COMP_WORDS[COMP_CWORD]}}\"\n"
      "  prev=\"\"\n"
      "  ((COMP_CWORD > 0)) && prev=\"${{COMP_WORDS[COMP_CWORD-1]}}\"\n"
      "  # --opt=value: bash splits at '='\n"
      "  if [[ \"$cur\" == = ]]; then cur=\"\"; elif [[ \"$prev\" == = ]] && ((COMP_CWORD > 1)); then prev=\"${{COMP_WORDS[COMP_CWORD-2]}}\"; fi\n"
      "  cmd=\"\"\n"
      "  for ((i = 1; i < COMP_CWORD; i++)); do\n"
      "    case \"${{COMP_WORDS[i]}}\" in\n"
      "      {2}) cmd=\"${{COMP_WORDS[i]}}\"; break ;;\n"
      "    esac\n"
      "  done\n"
      "  case \"$cmd\" in\n",
      m.name, fn, join(names, "|"));
  for (const auto& c : m.commands) {
    out += "    " + c.name + ")\n";
    out += bash_command_body(c, "", "      ");
    out += "      ;;\n";
  }
  out += "    *)\n";
  out += bash_command_body(top, join(names, " "), "      ");
  out += "      ;;\n";
  out += "  esac\n}\n";
  out += "complete -o filenames -F " + fn + " " + m.name + "\n";
  return out;
}

// zsh _arguments specs: brackets, colons and backslashes in descriptions are escaped.
std::string zsh_desc(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '[' || c == ']' || c == ':' || c == '\\') out += '\\';
    if (c == '\'') out += "'\\''";
    else out += c;
  }
  return out;
}

std::string zsh_action(const OptModel& o) {
  std::string msg = o.value_name;
  std::transform(msg.begin(), msg.end(), msg.begin(), [](unsigned char c) { return std::tolower(c); });
  switch (o.kind) {
    case ValueKind::kChoice:
      return ":" + msg + ":(" + join(o.choices, " ") + ")";
    case ValueKind::kDir:
      return ":" + msg + ":_files -/";
    case ValueKind::kFile:
      return ":" + msg + ":_files";
    case ValueKind::kCommand:
      return ":" + msg + ":_command_names -e";
    case ValueKind::kEntryId:
      return ":" + msg + ":{compadd -- ${(f)\"$($prog list 2>/dev/null | cut -d\" \" -f1)\"}}";
    case ValueKind::kNone:
      break;
  }
  return ":" + msg + ": ";
}

std::string zsh_specs(const CmdModel& c, const std::string& indent) {
  std::string out;
  for (const auto& o : c.options) {
    std::vector<std::string> names = all_names(o);
    std::string action = o.takes_value ? zsh_action(o) : "";
    std::string desc = "[" + zsh_desc(o.description) + "]";
    std::string excl = o.repeatable ? "*" : "";
    if (names.size() == 1) {
      out += indent + "'" + excl + names[0] + desc + action + "' \\\n";
    } else {
      out += indent + "'(" + join(names, " ") + ")'{" + join(names, ",") + "}'" + desc + action + "' \\\n";
    }
  }
  for (const auto& p : c.positionals) {
    std::string action = zsh_action(p);
    out += indent + "'" + std::string(p.repeatable ? "*" : "1") + action + "' \\\n";
  }
  return out;
}

std::string render_zsh(const CliModel& m) {
  std::string fn = "_" + m.name;
  std::string out = fmt::format(
      "#compdef {0}\n"
      "# zsh completion for {0} (generated by `{0} completions zsh` from the CLI definition; do not edit)\n"
      "{1}() {{\n"
      "  local curcontext=\"$curcontext\" state line prog=$words[1]\n"
      "  local -a commands\n"
      "  commands=(\n",
      m.name, fn);
  for (const auto& c : m.commands) out += "    '" + c.name + ":" + zsh_desc(c.description) + "'\n";
  out += "  )\n";
  out += "  _arguments -C \\\n" + zsh_specs(m.top, "    ") + "    '1: :->command' \\\n    '*:: :->args' && return\n";
  out += "  case $state in\n";
  out += "    command)\n      _describe -t commands '" + m.name +
         " command' commands\n      _files\n      ;;\n";  // no command = diagnose, which takes files
  out += "    args)\n      case $line[1] in\n";
  for (const auto& c : m.commands) {
    out += "        " + c.name + ")\n          _arguments \\\n" + zsh_specs(c, "            ") + "            && return\n          ;;\n";
  }
  out += "        *)\n          _files\n          ;;\n";
  out += "      esac\n      ;;\n  esac\n}\n";
  out += fn + " \"$@\"\n";
  return out;
}

std::string fish_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'' || c == '\\') out += '\\';
    out += c;
  }
  return out + "'";
}

std::string fish_value(const OptModel& o, const std::string& prog) {
  switch (o.kind) {
    case ValueKind::kChoice:
      return " -x -a " + fish_quote(join(o.choices, " "));
    case ValueKind::kDir:
      return " -x -a '(__fish_complete_directories (commandline -ct))'";
    case ValueKind::kFile:
      return " -r -F";
    case ValueKind::kCommand:
      return " -x -a '(__fish_complete_command)'";
    case ValueKind::kEntryId:
      return " -x -a '(" + prog + " list 2>/dev/null | string split -f1 \" \")'";
    case ValueKind::kNone:
      break;
  }
  return " -x";
}

std::string fish_lines(const CmdModel& c, const std::string& prog, const std::string& condition) {
  std::string out;
  for (const auto& o : c.options) {
    std::string line = "complete -c " + prog + " -n " + fish_quote(condition);
    for (const auto& s : o.shorts) line += " -s " + s.substr(1);
    for (const auto& l : o.longs) line += " -l " + l.substr(2);
    if (o.takes_value) line += fish_value(o, prog);
    line += " -d " + fish_quote(o.description);
    out += line + "\n";
  }
  for (const auto& p : c.positionals) {
    std::string v = fish_value(p, prog);
    if (v == " -r -F") v = " -F";
    else if (v.rfind(" -x -a ", 0) == 0) v = " -a " + v.substr(7);
    else continue;
    out += "complete -c " + prog + " -n " + fish_quote(condition) + v + "\n";
  }
  return out;
}

std::string render_fish(const CliModel& m) {
  std::string out = fmt::format(
      "# fish completion for {0} (generated by `{0} completions fish` from the CLI definition; do not edit)\n"
      "complete -c {0} -f\n",
      m.name);
  std::vector<std::string> names;
  for (const auto& c : m.commands) names.push_back(c.name);
  const std::string none = "not __fish_seen_subcommand_from " + join(names, " ");
  for (const auto& c : m.commands)
    out += "complete -c " + m.name + " -n " + fish_quote(none) + " -a " + c.name + " -d " + fish_quote(c.description) + "\n";
  out += fish_lines(m.top, m.name, none);
  out += "complete -c " + m.name + " -n " + fish_quote(none) + " -F\n";  // no command = diagnose files
  for (const auto& c : m.commands) out += fish_lines(c, m.name, "__fish_seen_subcommand_from " + c.name);
  return out;
}

}  // namespace

std::string render_man_page(const CLI::App& app, const std::string& version) {
  CliModel m = read_cli(app);
  std::string title = m.name;
  std::transform(title.begin(), title.end(), title.begin(), [](unsigned char c) { return std::toupper(c); });
  std::string out;
  out += fmt::format(".\\\" Generated by `{} --help-man` from the CLI definition; do not edit.\n", m.name);
  out += fmt::format(".TH {} 1 \"\" \"{} {}\" \"User Commands\"\n", title, m.name, version);
  out += ".SH NAME\n" + m.name + " \\- " + roff(strip_prefix(m.top.description, m.name)) + "\n";
  out += ".SH SYNOPSIS\n";
  out += ".B " + m.name + "\n[\\fIPATH\\fR...]\n.br\n";
  out += ".B " + m.name + "\n\\fICOMMAND\\fR [\\fIOPTIONS\\fR] [\\fIARGS\\fR]\n";
  out += ".SH DESCRIPTION\n";
  out += roff(m.name) +
         " reads the logs of a failed distributed ML training or serving job and tells you what broke, which rank "
         "broke first, and how to fix it.\n"
         ".PP\n"
         "It separates the \\fIinitiating\\fR rank from the \\fIcollateral\\fR ranks (the ones that only timed out, "
         "lost a connection or were killed by the launcher) and maps the initiating event to a failure entry: root "
         "cause, how to confirm it, the fix, and how to prevent it. It works offline from text logs alone; the "
         "failure library is compiled into the binary.\n"
         ".PP\n"
         "Without a command, " +
         m.name + " diagnoses: \\fB" + m.name + " job.log\\fR and \\fBcat job.log | " + m.name +
         "\\fR mean \\fB" + m.name +
         " diagnose\\fR. Logs may be gzip, zstd, xz or bzip2 compressed (detected by content); a directory stands "
         "for every file under it. Results go to standard output; warnings and errors go to standard error.\n";
  if (!m.top.options.empty()) {
    out += ".SH OPTIONS\n";
    for (const auto& o : m.top.options) out += ".TP\n" + man_option_head(o) + "\n" + man_option_body(o) + "\n";
    out += ".PP\nEvery command also accepts \\fB\\-h\\fR, \\fB\\-\\-help\\fR.\n";
  }
  out += ".SH COMMANDS\n";
  for (const auto& c : m.commands) {
    out += ".SS \"" + m.name + " " + c.name + synopsis_args(c) + "\"\n";
    out += roff(c.description) + (c.description.empty() || c.description.back() == '.' ? "" : ".") + "\n";
    for (const auto& p : c.positionals)
      out += ".TP\n\\fI" + roff(p.value_name) + "\\fR" + (p.repeatable ? "..." : "") + "\n" + man_option_body(p) + "\n";
    for (const auto& o : c.options)
      if (std::find(o.longs.begin(), o.longs.end(), "--help") == o.longs.end())  // said once, under OPTIONS
        out += ".TP\n" + man_option_head(o) + "\n" + man_option_body(o) + "\n";
    if (!c.footer.empty()) out += man_paragraphs(c.footer);
  }
  out += ".SH EXIT STATUS\n"
         ".TP\n.B 0\nA known failure was diagnosed (or the command succeeded).\n"
         ".TP\n.B 1\nNothing recognised: no known failure (the output says whether error lines were seen).\n"
         ".TP\n.B 2\nUsage error, invalid signature library, or an input that could not be read completely (results "
         "for the other inputs are still printed).\n"
         ".TP\n.B 130\nInterrupted (SIGINT).\n";
  out += ".SH ENVIRONMENT\n"
         ".TP\n.B NO_COLOR\nWhen set and not empty, \\fB\\-\\-color auto\\fR prints no colour.\n";
  out += ".SH EXAMPLES\n.nf\n";
  for (const char* ex : {"firstfault job.log", "kubectl logs job-worker-3 | firstfault",
                         "firstfault diagnose \\-\\-format json logs/", "firstfault timeline logs/",
                         "firstfault explain nccl\\-allgather\\-uneven\\-batches",
                         "firstfault watch \\-\\-stall 10m \\-\\-metrics\\-file /var/lib/node_exporter/job.prom logs/",
                         "firstfault completions bash > /etc/bash_completion.d/firstfault"})
    out += std::string(ex) + "\n";
  out += ".fi\n";
  out += ".SH SEE ALSO\n"
         "In the source tree: docs/architecture.md, docs/json-schema.md (the JSON format), "
         "docs/signature-format.md (writing failure entries), docs/initiating-rank.md, docs/watch.md.\n";
  return out;
}

std::string render_completion(const CLI::App& app, const std::string& shell) {
  CliModel m = read_cli(app);
  if (shell == "bash") return render_bash(m);
  if (shell == "zsh") return render_zsh(m);
  if (shell == "fish") return render_fish(m);
  return "";
}

}  // namespace firstfault
