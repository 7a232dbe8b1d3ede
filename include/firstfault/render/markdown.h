#pragma once
// Markdown and CSV for untrusted text. Log lines, file names and job names come from whoever
// wrote the job; in a CI summary or a spreadsheet they must stay text: no cell ends early, no
// code span closes, no link, image, HTML or @mention renders, no formula runs.
#include <string>
#include <string_view>
#include <vector>

namespace firstfault {

// Inline code that no backtick in `s` can close early. In a table cell (`in_table`) a "|" is
// escaped as well: GitHub splits table cells before it parses code spans.
std::string markdown_code(std::string_view s, bool in_table = false);

// A fenced ```text block of lines, its fence longer than any backtick run in them.
std::string markdown_block(const std::vector<std::string>& lines);

// Log-derived prose: every character that could start emphasis, a link, HTML, a mention or a
// cell boundary is backslash-escaped.
std::string markdown_escape(std::string_view s);

// Library text (trusted, authored) inside a table cell: only the cell delimiter and line
// breaks matter.
std::string markdown_cell(std::string_view s);

// One CSV cell (RFC 4180 quoting). A cell that a spreadsheet would read as a formula (first
// character =, +, -, @, tab or CR) gets a leading apostrophe, as OWASP's CSV-injection advice
// says, so it is shown as text.
std::string csv_cell(std::string_view s);

}  // namespace firstfault
