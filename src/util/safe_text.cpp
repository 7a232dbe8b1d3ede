#include "firstfault/util/safe_text.h"

#include "firstfault/util/strings.h"

namespace firstfault {

namespace {

// Bytes of a line break at s[i] (the ones CI runners split lines on, plus Unicode's), or 0.
size_t line_break_len(std::string_view s, size_t i) {
  unsigned char c = static_cast<unsigned char>(s[i]);
  if (c == '\n' || c == '\r' || c == '\v' || c == '\f') return 1;
  if (c == 0xC2 && i + 1 < s.size() && static_cast<unsigned char>(s[i + 1]) == 0x85) return 2;  // NEL
  if (c == 0xE2 && i + 2 < s.size() && static_cast<unsigned char>(s[i + 1]) == 0x80 &&
      (static_cast<unsigned char>(s[i + 2]) == 0xA8 || static_cast<unsigned char>(s[i + 2]) == 0xA9))
    return 3;  // U+2028, U+2029
  return 0;
}

// Bytes at s[i] that a runner would skip before looking for "::" (blanks, controls, escape
// sequences, Unicode spaces and zero-width characters), or 0.
size_t ignorable_len(std::string_view s, size_t i) {
  unsigned char c = static_cast<unsigned char>(s[i]);
  if (c == 0x1b) {  // ESC: a CSI/OSC sequence or a two-byte escape
    size_t j = i + 1;
    if (j < s.size() && s[j] == '[') {
      ++j;
      while (j < s.size() && !(s[j] >= '@' && s[j] <= '~')) ++j;
      return std::min(j + 1, s.size()) - i;
    }
    if (j < s.size() && s[j] == ']') {
      while (j < s.size() && s[j] != '\a' && !(s[j] == 0x1b && j + 1 < s.size() && s[j + 1] == '\\')) ++j;
      return std::min(j + (j < s.size() && s[j] == 0x1b ? 2 : 1), s.size()) - i;
    }
    return std::min(i + 2, s.size()) - i;
  }
  if (c <= 0x20 || c == 0x7f) return 1;  // blanks and C0 controls
  if (c == 0xC2 && i + 1 < s.size()) {
    unsigned char d = static_cast<unsigned char>(s[i + 1]);
    if ((d >= 0x80 && d <= 0x9F) || d == 0xA0) return 2;  // C1 controls, NBSP
  }
  if (c == 0xE1 && s.substr(i, 3) == "\xE1\x9A\x80") return 3;  // U+1680
  if (c == 0xE2 && i + 2 < s.size()) {
    unsigned char d = static_cast<unsigned char>(s[i + 1]), e = static_cast<unsigned char>(s[i + 2]);
    if (d == 0x80 && (e <= 0x8F || e == 0xAF)) return 3;  // U+2000..U+200F, U+202F
    if (d == 0x81 && (e == 0x9F || e == 0xA0)) return 3;  // U+205F, U+2060
  }
  if (c == 0xE3 && s.substr(i, 3) == "\xE3\x80\x80") return 3;  // U+3000
  if (c == 0xEF && s.substr(i, 3) == "\xEF\xBB\xBF") return 3;  // BOM / U+FEFF
  return 0;
}

bool iequals_at(std::string_view s, size_t i, std::string_view lit) {
  if (i + lit.size() > s.size()) return false;
  for (size_t k = 0; k < lit.size(); ++k) {
    char a = s[i + k], b = lit[k];
    if (a >= 'A' && a <= 'Z') a = static_cast<char>(a - 'A' + 'a');
    if (a != b) return false;
  }
  return true;
}

}  // namespace

std::string neutralize_ci_commands(std::string_view s) {
  std::string out;
  out.reserve(s.size() + 4);
  bool line_start = true;
  for (size_t i = 0; i < s.size();) {
    if (size_t n = line_break_len(s, i)) {
      out.append(s.substr(i, n));
      i += n;
      line_start = true;
      continue;
    }
    if (line_start) {
      if (size_t n = ignorable_len(s, i)) {
        out.append(s.substr(i, n));
        i += n;
        continue;
      }
      line_start = false;
      if (s.substr(i, 2) == "::") {  // GitHub Actions workflow command
        out += ": :";
        i += 2;
        continue;
      }
    }
    if (s[i] == '#' && iequals_at(s, i, "##vso[")) {  // Azure Pipelines logging command
      out.append(s.substr(i, 5));
      out += " [";
      i += 6;
      continue;
    }
    if (s[i] == '#' && s.substr(i, 3) == "##[") {  // Azure Pipelines formatting command
      out += "## [";
      i += 3;
      continue;
    }
    out.push_back(s[i]);
    ++i;
  }
  return out;
}

std::string safe_line(std::string_view s) { return neutralize_ci_commands(strip_control(sanitize_utf8(s))); }

namespace {
void visit_evidence(Evidence& e, const std::function<void(std::string&)>& fn) {
  fn(e.file);
  fn(e.host);
  fn(e.text);
  for (auto& kv : e.captures) fn(kv.second);
}
void visit_decision(RankDecision& r, const std::function<void(std::string&)>& fn) {
  fn(r.host);
  fn(r.reason);
  if (r.first_evidence) visit_evidence(*r.first_evidence, fn);
}
}  // namespace

void for_each_text(Diagnosis& d, const std::function<void(std::string&)>& fn) {
  visit_decision(d.initiating, fn);
  for (auto& e : d.evidence) visit_evidence(e, fn);
  fn(d.collateral.summary);
  fn(d.collateral.op);
  for (auto& r : d.ranks) {
    fn(r.host);
    if (r.first_event) visit_evidence(*r.first_event, fn);
    fn(r.last_line);
    fn(r.last_file);
    fn(r.last_progress);
  }
  for (auto& in : d.inputs) {
    fn(in.path);
    fn(in.error);
  }
  if (d.first_error) visit_evidence(*d.first_error, fn);
  if (d.launcher_first_failure) visit_evidence(d.launcher_first_failure->line, fn);
  if (d.suspect) visit_decision(*d.suspect, fn);
  if (d.traceback)
    for (auto& f : d.traceback->frames) {
      fn(f.file);
      fn(f.func);
    }
  for (auto& c : d.clock_skew) {
    fn(c.host);
    fn(c.reference);
  }
  for (auto& h : d.action.exclude_hosts) fn(h);
  for (auto& g : d.action.exclude_gpus) fn(g);
  fn(d.action.reason);
  for (auto& s : d.limits.dropped) fn(s);
}

void neutralize_diagnosis(Diagnosis& d) {
  for_each_text(d, [](std::string& s) { s = safe_line(s); });
}

}  // namespace firstfault
