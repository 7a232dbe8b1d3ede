#include "firstfault/matcher/template_scanner.h"

#include <cstring>
#include <optional>

namespace firstfault {

namespace {

constexpr uint64_t kOnes = 0x0101010101010101ull;
constexpr uint64_t kHigh = 0x8080808080808080ull;

uint64_t load(const char* p, size_t n) {
  uint64_t w = 0;
  std::memcpy(&w, p, n);
  return w;
}

// The 8 bytes with every ASCII digit replaced by '0' (SWAR: no carry crosses a byte).
inline uint64_t mask_digits(uint64_t w) {
  uint64_t x = w ^ (0x30 * kOnes);                         // digits become 0..9
  uint64_t ge10 = ((x & ~kHigh) + 0x76 * kOnes) & kHigh;   // low 7 bits >= 10
  uint64_t digit = ~(ge10 | x) & kHigh;                    // < 0x80 and < 10
  uint64_t m = (digit >> 7) * 0xff;
  return (w & ~m) | (0x30 * kOnes & m);
}

inline uint64_t mix(uint64_t h, uint64_t v) {
  h ^= v;
  h *= 0x9e3779b97f4a7c15ull;
  return h ^ (h >> 29);
}

}  // namespace

void append_digit_template(std::string_view line, std::string& out) {
  size_t at = out.size();
  out.resize(at + line.size());
  char* dst = out.data() + at;
  size_t i = 0;
  for (; i + 8 <= line.size(); i += 8) {
    uint64_t w = mask_digits(load(line.data() + i, 8));
    std::memcpy(dst + i, &w, 8);
  }
  for (; i < line.size(); ++i) dst[i] = line[i] >= '0' && line[i] <= '9' ? '0' : line[i];
}

uint64_t digit_template(std::string_view line, char* out) {
  // Four independent lanes, so the multiplies overlap instead of forming one chain.
  uint64_t h0 = 0x243f6a8885a308d3ull ^ line.size(), h1 = 0x13198a2e03707344ull, h2 = 0xa4093822299f31d0ull,
           h3 = 0x082efa98ec4e6c89ull;
  const char* p = line.data();
  size_t n = line.size(), i = 0;
  auto step = [&](uint64_t& h, size_t at) {
    uint64_t w = mask_digits(load(p + at, 8));
    std::memcpy(out + at, &w, 8);
    h = mix(h, w);
  };
  for (; i + 32 <= n; i += 32) {
    step(h0, i);
    step(h1, i + 8);
    step(h2, i + 16);
    step(h3, i + 24);
  }
  for (; i + 8 <= n; i += 8) step(h0, i);
  if (i < n) {
    uint64_t w = mask_digits(load(p + i, n - i));
    std::memcpy(out + i, &w, n - i);
    h1 = mix(h1, w);
  }
  return mix(mix(h0, h1), h2 ^ (h3 << 1));
}

int64_t TemplateScanner::find(uint64_t hash, std::string_view tmpl) const {
  if (table_.empty()) return -1;
  size_t mask = table_.size() - 1;
  for (size_t i = hash & mask; table_[i] != 0; i = (i + 1) & mask) {
    const Template& t = templates_[table_[i] - 1];
    if (t.hash == hash && t.length == tmpl.size() && std::memcmp(arena_.data() + t.offset, tmpl.data(), tmpl.size()) == 0)
      return static_cast<int64_t>(table_[i] - 1);
  }
  return -1;
}

int64_t TemplateScanner::insert(uint64_t hash, std::string_view tmpl) {
  if (templates_.size() >= kMaxTemplates || arena_.size() + tmpl.size() > kMaxArenaBytes) return -1;
  if (2 * (templates_.size() + 1) > table_.size()) grow();
  size_t mask = table_.size() - 1;
  size_t i = hash & mask;
  while (table_[i] != 0) i = (i + 1) & mask;
  Template t;
  t.hash = hash;
  t.offset = static_cast<uint32_t>(arena_.size());
  t.length = static_cast<uint32_t>(tmpl.size());
  t.first = kPending;
  templates_.push_back(t);
  table_[i] = static_cast<uint32_t>(templates_.size());
  arena_.append(tmpl);
  return static_cast<int64_t>(templates_.size() - 1);
}

void TemplateScanner::grow() {
  table_.assign(std::max<size_t>(64, 2 * table_.size()), 0);
  size_t mask = table_.size() - 1;
  for (size_t k = 0; k < templates_.size(); ++k) {
    size_t i = templates_[k].hash & mask;
    while (table_[i] != 0) i = (i + 1) & mask;
    table_[i] = static_cast<uint32_t>(k + 1);
  }
}

void TemplateScanner::reset() {
  templates_.clear();
  std::fill(table_.begin(), table_.end(), 0);
  arena_.clear();
  patterns_.clear();
  starts_.clear();
  memos_.clear();
  ++stats_.resets;
}

void TemplateScanner::locate(const Prefilter& prefilter, Template& t) {
  if (t.located || t.first == kPending) return;
  t.located = true;
  std::string_view tmpl(arena_.data() + t.offset, t.length);
  uint32_t kept = 0;
  for (uint32_t k = 0; k < t.count; ++k) {
    int pattern = patterns_[t.first + k];
    if (std::optional<size_t> at = prefilter.leftmost(pattern, tmpl)) {
      patterns_[t.first + kept] = pattern;
      starts_[t.first + kept] = static_cast<uint32_t>(*at);
      ++kept;
    }
  }
  t.count = kept;
}

const std::vector<TemplateScanner::Line>& TemplateScanner::scan(const Prefilter& prefilter, std::string_view block) {
  // Limits are checked between blocks, so no line of this block points at a dropped slot.
  if (arena_.size() >= kMaxArenaBytes / 2 || templates_.size() >= kMaxTemplates / 2) reset();
  lines_.clear();
  refs_.clear();
  misses_text_.clear();
  miss_starts_.clear();
  miss_slots_.clear();
  // 1. Look every line up; a template not seen before (or too long to keep) is queued once.
  const char* base = block.data();
  size_t start = 0;
  while (start < block.size()) {
    const void* nl = std::memchr(base + start, '\n', block.size() - start);
    size_t end = nl ? static_cast<size_t>(static_cast<const char*>(nl) - base) : block.size();
    std::string_view line(base + start, end - start);
    lines_.push_back({line, nullptr, nullptr, nullptr, 0});
    int64_t slot = -1;
    bool queue = true;
    if (line.size() <= kMaxTemplateBytes) {
      std::string_view tmpl(tmpl_, line.size());
      uint64_t h = digit_template(line, tmpl_);
      slot = find(h, tmpl);
      queue = slot < 0;
      if (!queue) locate(prefilter, templates_[static_cast<size_t>(slot)]);
      if (queue) {
        slot = insert(h, tmpl);
        miss_starts_.push_back(misses_text_.size());
        misses_text_.append(tmpl);
      }
    } else {
      miss_starts_.push_back(misses_text_.size());
      append_digit_template(line, misses_text_);
    }
    if (queue) {
      miss_slots_.push_back(slot);
      misses_text_ += '\n';
    }
    refs_.push_back({slot, queue ? static_cast<uint32_t>(miss_starts_.size() - 1) : UINT32_MAX});
    if (!nl) break;
    start = end + 1;
  }
  stats_.lines += lines_.size();
  stats_.scanned += miss_starts_.size();
  // 2. One prefilter scan over the new templates; the answers go into the cache. A template
  //    seen again is located first (locate()): most lines of a small log are seen once, and
  //    checking their candidates with RE2 twice would cost more than it saves.
  miss_answer_.assign(miss_starts_.size(), {0, 0});
  miss_patterns_.clear();
  miss_offsets_.clear();
  if (!miss_starts_.empty()) {
    miss_candidates_.clear();
    prefilter.scan(misses_text_, miss_candidates_);
    size_t m = 0;
    for (const Prefilter::Candidate& c : miss_candidates_.lines) {
      while (m < miss_starts_.size() && miss_starts_[m] < c.line_start) ++m;
      if (m >= miss_starts_.size() || miss_starts_[m] != c.line_start) continue;
      size_t end = m + 1 < miss_starts_.size() ? miss_starts_[m + 1] - 1 : misses_text_.size() - 1;
      miss_answer_[m] = {static_cast<uint32_t>(miss_patterns_.size()), c.count};
      miss_patterns_.insert(miss_patterns_.end(), miss_candidates_.patterns.begin() + c.first,
                            miss_candidates_.patterns.begin() + c.first + c.count);
      miss_offsets_.resize(miss_patterns_.size(), 0);
    }
    for (size_t k = 0; k < miss_slots_.size(); ++k) {
      if (miss_slots_[k] < 0) continue;
      Template& s = templates_[static_cast<size_t>(miss_slots_[k])];
      auto [first, count] = miss_answer_[k];
      s.first = static_cast<uint32_t>(patterns_.size());
      s.count = count;
      patterns_.insert(patterns_.end(), miss_patterns_.begin() + first, miss_patterns_.begin() + first + count);
      starts_.insert(starts_.end(), miss_offsets_.begin() + first, miss_offsets_.begin() + first + count);
      memos_.resize(patterns_.size());
    }
  }
  // 3. Each line's candidates (patterns_ no longer grows in this block: the pointers hold).
  for (size_t i = 0; i < lines_.size(); ++i) {
    const LineRef& r = refs_[i];
    if (r.slot >= 0) {
      const Template& s = templates_[static_cast<size_t>(r.slot)];
      lines_[i].patterns = patterns_.data() + s.first;
      lines_[i].starts = starts_.data() + s.first;
      lines_[i].memos = memos_.data() + s.first;
      lines_[i].count = s.count;
    } else {
      auto [first, count] = miss_answer_[r.miss];
      lines_[i].patterns = miss_patterns_.data() + first;
      lines_[i].starts = miss_offsets_.data() + first;  // zeros: not located
      lines_[i].count = count;
    }
  }
  return lines_;
}

}  // namespace firstfault
