#include "firstfault/reader/path_filter.h"

#include <fmt/format.h>
#include <re2/re2.h>

namespace firstfault {

namespace {

// A character class: `[abc]`, `[a-z]`, `[!abc]` or `[^abc]`; never matches '/'. `i` is at the
// '['; on success it is left at the ']'.
bool translate_class(std::string_view g, size_t& i, std::string& out) {
  size_t j = i + 1;
  bool negate = j < g.size() && (g[j] == '!' || g[j] == '^');
  if (negate) ++j;
  std::string body;
  // A ']' right after the opening (or its negation) is a member, as in shells.
  for (size_t k = j; k < g.size(); ++k) {
    char c = g[k];
    if (c == ']' && k > j) {
      out += negate ? "[^/" + body + "]" : "[" + body + "]";
      i = k;
      return true;
    }
    if (c == '\\' || c == '[' || c == ']' || c == '^') body += '\\';
    body += c;
  }
  return false;
}

}  // namespace

Result<std::string> glob_to_regex(std::string_view glob, bool& dir_only) {
  std::string_view g = glob;
  dir_only = g.size() > 1 && g.back() == '/';
  if (dir_only) g.remove_suffix(1);
  // As in .gitignore: a glob with a '/' (other than a trailing one) is matched against the whole
  // path from the root; one without matches a name at any depth.
  bool anchored = g.find('/') != std::string_view::npos;
  if (!g.empty() && g.front() == '/') g.remove_prefix(1);
  if (g.empty()) return Error{"empty glob"};
  std::string body;
  int braces = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    char c = g[i];
    bool component_start = i == 0 || g[i - 1] == '/';
    if (c == '*' && i + 1 < g.size() && g[i + 1] == '*' && component_start &&
        (i + 2 == g.size() || g[i + 2] == '/')) {  // ** as a whole component: any number of folders
      bool last = i + 2 == g.size();
      body += last ? ".*" : "(?:.*/)?";
      i += last ? 1 : 2;
    } else if (c == '*') {
      body += "[^/]*";
      while (i + 1 < g.size() && g[i + 1] == '*') ++i;  // ** inside a name is one *
    } else if (c == '?') {
      body += "[^/]";
    } else if (c == '[') {
      if (!translate_class(g, i, body)) return Error{"unclosed or empty '[' character class"};
    } else if (c == '{') {
      ++braces;
      body += "(?:";
    } else if (c == '}' && braces > 0) {
      --braces;
      body += ")";
    } else if (c == ',' && braces > 0) {
      body += "|";
    } else if (c == '\\') {
      if (++i == g.size()) return Error{"a '\\' at the end escapes nothing"};
      body += RE2::QuoteMeta(std::string(1, g[i]));
    } else {
      body += RE2::QuoteMeta(std::string(1, c));
    }
  }
  if (braces > 0) return Error{"unclosed '{'"};
  return (anchored ? "^" : "^(?:.*/)?") + body + "$";
}

Result<PathFilter> PathFilter::make(const std::vector<std::string>& globs, const std::vector<std::string>& excludes) {
  PathFilter f;
  auto add = [&](std::string_view text, bool exclude, const char* option) -> Status {
    bool dir_only = false;
    Result<std::string> re = glob_to_regex(text, dir_only);
    if (!re.ok()) return Error{fmt::format("{} '{}': {}", option, text, re.error().message)};
    RE2::Options options;
    options.set_encoding(RE2::Options::EncodingLatin1);  // paths are bytes, not always UTF-8
    options.set_dot_nl(true);
    options.set_log_errors(false);
    auto compiled = std::make_shared<const RE2>(*re, options);
    if (!compiled->ok()) return Error{fmt::format("{} '{}': {}", option, text, compiled->error())};
    (exclude ? f.excludes_ : f.includes_).push_back({compiled, dir_only});
    return Status::Ok();
  };
  for (const auto& g : globs) {
    bool exclude = !g.empty() && g[0] == '!';
    std::string_view text = exclude ? std::string_view(g).substr(1) : std::string_view(g);
    if (Status s = add(text, exclude, "--glob"); !s.ok()) return Error{s.message()};
  }
  for (const auto& g : excludes)
    if (Status s = add(g, true, "--exclude"); !s.ok()) return Error{s.message()};
  return f;
}

bool PathFilter::matches(const std::vector<Glob>& globs, std::string_view rel, bool is_dir) {
  for (const auto& g : globs)
    if ((is_dir || !g.dir_only) && RE2::FullMatch(re2::StringPiece(rel.data(), rel.size()), *g.re)) return true;
  return false;
}

bool PathFilter::wants_dir(std::string_view rel) const { return !matches(excludes_, rel, true); }

bool PathFilter::wants_file(std::string_view rel) const {
  if (matches(excludes_, rel, false)) return false;
  return includes_.empty() || matches(includes_, rel, false);
}

bool PathFilter::wants_path(std::string_view rel) const {
  for (size_t slash = rel.find('/'); slash != std::string_view::npos; slash = rel.find('/', slash + 1))
    if (!wants_dir(rel.substr(0, slash))) return false;
  return wants_file(rel);
}

}  // namespace firstfault
