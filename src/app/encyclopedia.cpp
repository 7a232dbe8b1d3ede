// `explain` and `catalog`: the library read as an encyclopedia, on the terminal or as Markdown.
#include <algorithm>
#include <filesystem>
#include <fmt/format.h>
#include <fstream>
#include <map>

#include "firstfault/app/commands.h"
#include "firstfault/render/render.h"
#include "firstfault/signatures/loader.h"
#include "firstfault/util/strings.h"

namespace firstfault {

namespace fs = std::filesystem;

namespace {

// Markdown's inline markup as a terminal shows it: **bold** in bold (or plain without colour),
// `code` in cyan (or plain), [text](url) as "text (url)". Log lines in the entry are in fenced
// blocks and never pass through here.
std::string terminal_inline(std::string_view line, bool color) {
  std::string out;
  // A span between `mark`s at `i`, shown with `sgr` (or plain): its length, 0 when none is there.
  auto span = [&](size_t i, std::string_view mark, const char* sgr) -> size_t {
    if (line.compare(i, mark.size(), mark) != 0) return 0;
    size_t end = line.find(mark, i + mark.size());
    if (end == std::string_view::npos || end == i + mark.size()) return 0;
    std::string_view inner = line.substr(i + mark.size(), end - i - mark.size());
    out += color ? fmt::format("\x1b[{}m{}\x1b[0m", sgr, inner) : std::string(inner);
    return end + mark.size() - i;
  };
  for (size_t i = 0; i < line.size();) {
    if (size_t n = span(i, "**", "1")) {
      i += n;
      continue;
    }
    if (size_t n = span(i, "`", "36")) {
      i += n;
      continue;
    }
    if (line[i] == '[') {
      size_t close = line.find("](", i + 1), end = close == std::string_view::npos ? close : line.find(')', close + 2);
      if (end != std::string_view::npos && line.substr(i + 1, close - i - 1).find('[') == std::string_view::npos) {
        out += fmt::format("{} ({})", line.substr(i + 1, close - i - 1), line.substr(close + 2, end - close - 2));
        i = end + 1;
        continue;
      }
    }
    out += line[i++];
  }
  return out;
}


std::optional<Library> load_quiet(const CommonOptions& o) {
  std::vector<LoadProblem> problems;
  LoadOptions lo;
  lo.check_samples = !o.signature_dirs.empty();
  Library lib = load_library(o.signature_dirs, problems, lo, !o.no_builtin);
  if (!problems.empty()) {
    for (const auto& p : problems) fmt::print(stderr, "{}\n", p.format());
    return std::nullopt;
  }
  return lib;
}

std::string first_sentence(const std::string& s) {
  std::string flat;
  for (char c : s) flat.push_back(c == '\n' ? ' ' : c);
  size_t dot = flat.find(". ");
  return std::string(trim(dot == std::string::npos ? flat : flat.substr(0, dot + 1)));
}

std::string one_line(const std::string& s) {
  std::string flat;
  for (char c : s) flat.push_back(c == '\n' ? ' ' : c);
  return std::string(trim(flat));
}

const char* symptom_meaning(Role r) {
  switch (r) {
    case Role::kRoot: return "the cause, on the rank that broke";
    case Role::kCascade: return "a consequence, seen on the other ranks";
    case Role::kTeardown: return "launcher shutdown noise";
    case Role::kContext: return "supporting context";
  }
  return "";
}

// The page as Markdown; the terminal view is the same text with light decoration.
std::string entry_markdown(const Entry& e, const Library& lib) {
  std::string md;
  md += fmt::format("# {}\n\n", e.title);
  md += fmt::format("`{}` · category **{}** · severity **{}** · action **{}**", e.id, e.category, e.severity,
                    action_kind_name(e.action));
  if (!e.systems.empty()) md += fmt::format(" · {}", fmt::join(e.systems, ", "));
  md += "\n\n## Quick answer\n\n";
  md += first_sentence(e.root_cause) + "\n\n**Fix:** " + first_sentence(e.fix) + "\n\n";
  md += "## Symptoms and what they mean\n\n";
  for (const auto& ref : e.refs) {
    const PatternDef& p = lib.patterns[ref.def];
    md += fmt::format("- **{}** ({}: {})", ref.name, role_name(ref.role), symptom_meaning(ref.role));
    if (!p.description.empty()) md += " — " + one_line(p.description);
    md += "\n";
    if (!p.positive.empty()) md += fmt::format("  ```\n  {}\n  ```\n", truncate_utf8(p.positive.front(), 300));
  }
  md += "\n## Root cause\n\n" + std::string(trim(e.root_cause)) + "\n\n";
  md += "## How to confirm\n\n";
  for (size_t i = 0; i < e.confirm.size(); ++i) md += fmt::format("{}. {}\n", i + 1, e.confirm[i]);
  md += "\n## Fix\n\n" + std::string(trim(e.fix)) + "\n\n";
  md += "## Prevention\n\n";
  for (const auto& p : e.prevention) md += "- " + p + "\n";
  if (!e.specializes.empty()) {
    md += "\n## Refines\n\n";
    for (const auto& s : e.specializes) md += fmt::format("- [{}]({}.md)\n", s, s);
  }
  if (!e.related.empty()) {
    md += "\n## Related\n\n";
    for (const auto& r : e.related) {
      const Entry* re = lib.find_entry(r);
      md += fmt::format("- [{}]({}.md){}\n", r, r, re ? " — " + re->title : "");
    }
  }
  md += "\n## References\n\n";
  for (const auto& r : e.references) md += "- " + r + "\n";
  return md;
}

}  // namespace

int run_explain(const ExplainOptions& o, std::ostream& out) {
  auto lib = load_quiet(o.common);
  if (!lib) return kExitUsage;
  const Entry* e = lib->find_entry(o.id);
  if (!e) {
    std::vector<std::string> ids, close;
    for (const auto& x : lib->entries) ids.push_back(x.id);
    close = closest_matches(o.id, ids);
    for (const auto& id : ids)
      if (close.size() < 8 && std::find(close.begin(), close.end(), id) == close.end() &&
          (id.find(o.id) != std::string::npos || o.id.find(id) != std::string::npos))
        close.push_back(id);
    fmt::print(stderr, "firstfault: no entry '{}'{}\n", o.id,
               close.empty() ? "" : fmt::format(" (did you mean: {})", fmt::join(close, ", ")));
    return kExitUsage;
  }
  if (o.format == "json") {
    out << dump_json(entry_to_json(*e, *lib)) << "\n";
    return 0;
  }
  std::string md = entry_markdown(*e, *lib);
  if (o.format == "markdown") {
    out << md;
    return 0;
  }
  bool color = want_color(o.color);
  bool in_code = false;  // a fenced block holds log lines: shown as they are
  for (const auto& line : split_lines(md)) {
    if (trim(line) == "```") {
      in_code = !in_code;
      continue;
    }
    if (in_code) out << line << "\n";
    else if (starts_with(line, "# ")) out << (color ? "\x1b[1;4m" + line.substr(2) + "\x1b[0m" : line.substr(2)) << "\n";
    else if (starts_with(line, "## ")) out << (color ? "\x1b[1m" + line.substr(3) + "\x1b[0m" : line.substr(3)) << "\n";
    else out << terminal_inline(line, color) << "\n";
  }
  return 0;
}

int run_catalog(const CatalogOptions& o, std::ostream& out) {
  if (o.format != "markdown") {
    fmt::print(stderr, "firstfault: catalog supports --format markdown\n");
    return kExitUsage;
  }
  auto lib = load_quiet(o.common);
  if (!lib) return kExitUsage;
  std::error_code ec;
  fs::create_directories(o.dir, ec);
  if (ec) {
    fmt::print(stderr, "firstfault: {}: cannot create directory: {}\n", o.dir, ec.message());
    return kExitUsage;
  }
  // Remove pages of entries that no longer exist so the catalog stays exact.
  for (const auto& f : fs::directory_iterator(o.dir, ec))
    if (f.path().extension() == ".md" && f.path().filename() != "README.md" &&
        !lib->find_entry(f.path().stem().string()))
      fs::remove(f.path(), ec);
  std::map<std::string, std::vector<const Entry*>> by_cat;
  for (const auto& e : lib->entries) by_cat[e.category].push_back(&e);
  for (const auto& e : lib->entries) {
    std::ofstream f(fs::path(o.dir) / (e.id + ".md"), std::ios::binary);
    f << entry_markdown(e, *lib);
    if (!f) {
      fmt::print(stderr, "firstfault: {}: cannot write\n", (fs::path(o.dir) / (e.id + ".md")).string());
      return kExitUsage;
    }
  }
  std::string index = "# firstfault failure catalog\n\nGenerated by `firstfault catalog --format markdown docs/catalog` from `signatures/`. Do not edit by hand.\n\n";
  index += fmt::format("{} entries.\n\n", lib->entries.size());
  for (auto& [cat, list] : by_cat) {
    std::sort(list.begin(), list.end(), [](const Entry* a, const Entry* b) { return a->id < b->id; });
    index += fmt::format("## {} ({})\n\n| id | severity | action | title |\n|---|---|---|---|\n", cat, list.size());
    for (const Entry* e : list)
      index += fmt::format("| [{}]({}.md) | {} | {} | {} |\n", e->id, e->id, e->severity, action_kind_name(e->action), e->title);
    index += "\n";
  }
  std::ofstream f(fs::path(o.dir) / "README.md", std::ios::binary);
  f << index;
  out << fmt::format("wrote {} pages and an index to {}\n", lib->entries.size(), o.dir);
  return 0;
}

}  // namespace firstfault
