#include "firstfault/render/markdown.h"

#include <algorithm>
#include <cstring>

namespace firstfault {

namespace {
size_t longest_backtick_run(std::string_view s) {
  size_t best = 0, run = 0;
  for (char c : s) {
    run = c == '`' ? run + 1 : 0;
    best = std::max(best, run);
  }
  return best;
}
}  // namespace

std::string markdown_code(std::string_view s, bool in_table) {
  std::string body;
  for (char c : s) {
    if (in_table && c == '|') body += "\\|";
    else body.push_back(c == '\n' ? ' ' : c);
  }
  std::string fence(longest_backtick_run(body) + 1, '`');
  bool pad = !body.empty() && (body.front() == '`' || body.back() == '`');
  return fence + (pad ? " " : "") + body + (pad ? " " : "") + fence;
}

std::string markdown_block(const std::vector<std::string>& lines) {
  size_t run = 0;
  for (const auto& l : lines) run = std::max(run, longest_backtick_run(l));
  std::string fence(std::max<size_t>(3, run + 1), '`');
  std::string out = fence + "text\n";
  for (const auto& l : lines) out += l + "\n";
  return out + fence + "\n";
}

std::string markdown_escape(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c != '\0' && std::strchr("\\`*_[]<>|~@&#!", c)) out.push_back('\\');
    out.push_back(c);
  }
  return out;
}

std::string markdown_cell(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '|') out += "\\|";
    else if (c == '\n') out += ' ';
    else out.push_back(c);
  }
  return out;
}

std::string csv_cell(std::string_view s) {
  std::string v(s);
  if (!v.empty() && std::strchr("=+-@\t\r", v.front())) v.insert(0, 1, '\'');
  if (v.find_first_of(",\"\n\r") == std::string::npos) return v;
  std::string out = "\"";
  for (char c : v) out += c == '"' ? std::string("\"\"") : std::string(1, c);
  return out + "\"";
}

}  // namespace firstfault
