#include "firstfault/matcher/matcher.h"

#include <spdlog/spdlog.h>

#include <algorithm>

#include "firstfault/matcher/prefilter.h"

namespace firstfault {

Matcher::Matcher(const Library& lib) : lib_(lib) {}
Matcher::~Matcher() = default;

Status Matcher::compile(bool use_prefilter) {
  RE2::Options opt;
  opt.set_log_errors(false);
  opt.set_max_mem(256 << 20);  // the set's DFA grows with the library; the default 8 MiB is too small
  set_ = std::make_unique<RE2::Set>(opt, RE2::UNANCHORED);
  for (size_t i = 0; i < lib_.patterns.size(); ++i) {
    std::string err;
    int idx = set_->Add(lib_.patterns[i].regex, &err);
    if (idx < 0) return Error{"pattern '" + lib_.patterns[i].name + "': " + err};
  }
  if (!set_->Compile()) return Error{"RE2 could not compile the pattern set (out of memory)"};
  if (use_prefilter) prefilter_ = Prefilter::build(lib_);
  return Status::Ok();
}

void Matcher::match(std::string_view body, std::vector<int>& hits) const {
  hits.clear();
  RE2::Set::ErrorInfo info{};
  re2::StringPiece text(body.data(), body.size());
  if (!set_->Match(text, &hits, &info) && info.kind != RE2::Set::kNoError) {
    // The set's DFA ran out of memory on this input: fall back to one regex at a time, so a
    // pathological line costs time, never a missed match.
    hits.clear();
    for (size_t i = 0; i < lib_.patterns.size(); ++i)
      if (lib_.patterns[i].re && RE2::PartialMatch(text, *lib_.patterns[i].re)) hits.push_back(static_cast<int>(i));
  }
  std::sort(hits.begin(), hits.end());
}

Captures Matcher::extract(size_t def, std::string_view body) const {
  Captures out;
  const PatternDef& p = lib_.patterns[def];
  if (!p.re) return out;
  size_t n = p.capture_names.size();
  std::vector<re2::StringPiece> groups(n + 1);
  re2::StringPiece text(body.data(), body.size());
  if (!p.re->Match(text, 0, text.size(), RE2::UNANCHORED, groups.data(), static_cast<int>(n + 1))) return out;
  for (size_t i = 0; i < n; ++i) {
    if (p.capture_names[i].empty() || groups[i + 1].data() == nullptr) continue;
    out.emplace_back(p.capture_names[i], std::string(groups[i + 1].data(), groups[i + 1].size()));
  }
  return out;
}

void Matcher::candidate_offsets(std::string_view block, std::vector<size_t>& out) const {
  out.clear();
  prefilter_->scan(block, out);
}

}  // namespace firstfault
