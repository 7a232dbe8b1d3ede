#include "firstfault/matcher/template_scanner.h"

#include <algorithm>
#include <cstring>
#include <optional>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#if (defined(__GNUC__) || defined(__clang__)) && defined(__x86_64__)
#include <immintrin.h>
#define FIRSTFAULT_HAVE_AVX2_TARGET 1
#else
#define FIRSTFAULT_HAVE_AVX2_TARGET 0
#endif

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

namespace {

// One line found by a template_next_line_*() variant: its length (to the '\n' or the block's
// end) and, when it is at most `max` bytes (`templated`), the hash of its digit template,
// written to `out`.
struct NextLine {
  size_t length;
  bool templated;
  uint64_t hash;
};

// memchr for the line's end, then its template with the variant digit_template() runs.
NextLine template_next_line_portable(const char* p, const char* end, size_t max, char* out, LineHints* hints) {
  const void* nl = std::memchr(p, '\n', static_cast<size_t>(end - p));
  size_t n = nl ? static_cast<size_t>(static_cast<const char*>(nl) - p) : static_cast<size_t>(end - p);
  if (n > max) return {n, false, 0};
  return {n, true, digit_template(std::string_view(p, n), out, hints)};
}

uint64_t digit_template_swar(std::string_view line, char* out, LineHints* hints) {
  uint64_t h = mix(0x243f6a8885a308d3ull, line.size());
  size_t i = 0;
  for (; i + 8 <= line.size(); i += 8) {
    uint64_t w = mask_digits(load(line.data() + i, 8));
    std::memcpy(out + i, &w, 8);
    h = mix(h, w);
  }
  if (i < line.size()) {
    uint64_t w = mask_digits(load(line.data() + i, line.size() - i));
    std::memcpy(out + i, &w, line.size() - i);
    h = mix(h, w);
  }
  if (hints) *hints = hints_of(line);
  return h;
}

#if defined(__SSE2__)
uint64_t digit_template_sse2(std::string_view line, char* out, LineHints* hints) {
  // 16 bytes at a time: digits become '0' (a byte minus '0' is at most 9, unsigned), the
  // result is stored and folded into two 64-bit lanes (multiply-accumulate, the chunk's
  // position mixed in so that equal chunks in other places differ), and ESC, NUL and CR are
  // noted on the way, so the line is read once for all of it.
  const __m128i zero_char = _mm_set1_epi8('0'), nine = _mm_set1_epi8(9);
  const __m128i esc = _mm_set1_epi8('\x1b'), nul = _mm_setzero_si128(), cr = _mm_set1_epi8('\r');
  __m128i acc = _mm_set_epi64x(static_cast<long long>(line.size()), 0x243f6a8885a308d3ll);
  __m128i key = _mm_set_epi64x(0x13198a2e03707344ll, static_cast<long long>(0xa4093822299f31d0ull));
  const __m128i step = _mm_set_epi64x(static_cast<long long>(0x9e3779b97f4a7c15ull), 0x3c6ef372fe94f82bll);
  __m128i specials = _mm_setzero_si128(), returns = _mm_setzero_si128();
  auto chunk = [&](__m128i v, char* dst, size_t n) {
    __m128i d = _mm_sub_epi8(v, zero_char);
    __m128i is_digit = _mm_cmpeq_epi8(_mm_max_epu8(d, nine), nine);
    __m128i m = _mm_or_si128(_mm_andnot_si128(is_digit, v), _mm_and_si128(is_digit, zero_char));
    specials = _mm_or_si128(specials, _mm_or_si128(_mm_cmpeq_epi8(v, esc), _mm_cmpeq_epi8(v, nul)));
    returns = _mm_or_si128(returns, _mm_cmpeq_epi8(v, cr));
    if (n == 16) _mm_storeu_si128(reinterpret_cast<__m128i*>(dst), m);
    else {
      alignas(16) char tmp[16];
      _mm_store_si128(reinterpret_cast<__m128i*>(tmp), m);
      std::memcpy(dst, tmp, n);
    }
    __m128i k = _mm_xor_si128(m, key);
    key = _mm_add_epi64(key, step);
    acc = _mm_add_epi64(acc, _mm_mul_epu32(k, _mm_shuffle_epi32(k, _MM_SHUFFLE(2, 3, 0, 1))));
    acc = _mm_add_epi64(acc, _mm_shuffle_epi32(m, _MM_SHUFFLE(1, 0, 3, 2)));
  };
  const char* p = line.data();
  size_t n = line.size(), i = 0;
  for (; i + 16 <= n; i += 16) chunk(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + i)), out + i, 16);
  if (i < n && n >= 16) {
    // The tail as the line's last 16 bytes, overlapping the chunk before: bytes hashed twice
    // are still a function of the template, and no copy to a padded buffer is needed.
    chunk(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p + n - 16)), out + n - 16, 16);
  } else if (i < n) {
    // The tail, padded with 0xff (not a digit, ESC, NUL or CR) so the padding marks nothing.
    alignas(16) char tmp[16];
    std::memset(tmp, 0xff, sizeof tmp);
    std::memcpy(tmp, p + i, n - i);
    chunk(_mm_load_si128(reinterpret_cast<const __m128i*>(tmp)), out + i, n - i);
  }
  if (hints) {
    hints->may_have_escapes = _mm_movemask_epi8(specials) != 0;
    hints->may_have_cr = _mm_movemask_epi8(returns) != 0;
  }
  alignas(16) uint64_t lanes[2];
  _mm_store_si128(reinterpret_cast<__m128i*>(lanes), acc);
  return mix(mix(lanes[0], lanes[1]), n);
}
#endif

#if FIRSTFAULT_HAVE_AVX2_TARGET
// The template pass on 32-byte chunks, compiled for AVX2 and chosen at run time (the binary
// itself targets baseline x86-64). Lines average 100-200 bytes, so the wider chunk halves the
// loop; its hash is its own (cheaper than the SSE2 one). The state is its own type so that the
// fused line splitter below (template_next_line_avx2) runs the very same chunks and gives the
// very same hash.
struct Avx2Template {
  __m256i zero_char, nine, last_control, sum, sum_of_sums, controls;

  __attribute__((target("avx2"))) Avx2Template() {
    zero_char = _mm256_set1_epi8('0');
    nine = _mm256_set1_epi8(9);
    last_control = _mm256_set1_epi8(0x1f);
    sum = _mm256_set_epi64x(0x452821e638d01377ll, static_cast<long long>(0xbe5466cf34e90c6cull), 0x13198a2e03707344ll,
                            0x243f6a8885a308d3ll);
    sum_of_sums = controls = _mm256_setzero_si256();
  }

  // Per chunk as few operations as the work allows: the digits masked, any byte below 0x20
  // noted (ESC, NUL and CR are among them; finish() tells which, in the rare line that has one),
  // and the masked bytes folded into a Fletcher-style pair of 64-bit lane sums, where the second
  // sum makes a chunk's position count. The hash only spreads the template table: find()
  // compares the template's bytes, so a collision costs time, never a wrong answer.
  __attribute__((target("avx2"))) void chunk(__m256i v, char* dst, size_t n) {
    __m256i d = _mm256_sub_epi8(v, zero_char);
    __m256i is_digit = _mm256_cmpeq_epi8(_mm256_max_epu8(d, nine), nine);
    __m256i m = _mm256_blendv_epi8(v, zero_char, is_digit);
    controls = _mm256_or_si256(controls, _mm256_cmpeq_epi8(_mm256_min_epu8(v, last_control), v));
    if (n == 32) _mm256_storeu_si256(reinterpret_cast<__m256i*>(dst), m);
    else {
      alignas(32) char tmp[32];
      _mm256_store_si256(reinterpret_cast<__m256i*>(tmp), m);
      std::memcpy(dst, tmp, n);
    }
    sum = _mm256_add_epi64(sum, m);
    sum_of_sums = _mm256_add_epi64(sum_of_sums, sum);
  }

  // The line's tail from byte `i` of `n` (i < n): its last 32 bytes, overlapping the chunk
  // before (bytes hashed twice are still a function of the template, and no padded copy is
  // needed), or, for a line under 32 bytes, a copy padded with 0xff (not a digit nor a control).
  __attribute__((target("avx2"))) void tail(const char* p, size_t i, size_t n, char* out) {
    if (n >= 32) {
      chunk(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + n - 32)), out + n - 32, 32);
    } else {
      alignas(32) char tmp[32];
      std::memset(tmp, 0xff, sizeof tmp);
      std::memcpy(tmp, p + i, n - i);
      chunk(_mm256_load_si256(reinterpret_cast<const __m256i*>(tmp)), out + i, n - i);
    }
  }

  __attribute__((target("avx2"))) uint64_t finish(const char* p, size_t n, LineHints* hints) {
    if (hints) {
      // A tab is a control byte too; only a line with one pays for the exact look.
      if (_mm256_movemask_epi8(controls) != 0) *hints = hints_of(std::string_view(p, n));
      else hints->may_have_escapes = hints->may_have_cr = false;
    }
    __m256i folded = _mm256_xor_si256(sum_of_sums, _mm256_slli_epi64(sum, 7));
    alignas(32) uint64_t lanes[4];
    _mm256_store_si256(reinterpret_cast<__m256i*>(lanes), folded);
    return mix(mix(lanes[0] ^ (lanes[1] << 21 | lanes[1] >> 43), lanes[2] ^ (lanes[3] << 42 | lanes[3] >> 22)), n);
  }
};

__attribute__((target("avx2"))) uint64_t digit_template_avx2(std::string_view line, char* out, LineHints* hints) {
  Avx2Template t;
  const char* p = line.data();
  size_t n = line.size(), i = 0;
  for (; i + 32 <= n; i += 32) t.chunk(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + i)), out + i, 32);
  if (i < n) t.tail(p, i, n, out);
  return t.finish(p, n, hints);
}

// Finds the end of the line at `p` and templates it in the same loads: a chunk without '\n'
// is a whole chunk of the line; the chunk with it gives the length and then the tail, exactly as
// digit_template_avx2() runs them. Near the block's end or past `max` bytes it hands over to
// the memchr-then-template path.
__attribute__((target("avx2"))) NextLine template_next_line_avx2(const char* p, const char* end, size_t max,
                                                                  char* out, LineHints* hints) {
  Avx2Template t;
  const __m256i newline = _mm256_set1_epi8('\n');
  size_t avail = static_cast<size_t>(end - p), i = 0;
  for (; i + 32 <= avail && i + 32 <= max; i += 32) {
    __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p + i));
    uint32_t nl = static_cast<uint32_t>(_mm256_movemask_epi8(_mm256_cmpeq_epi8(v, newline)));
    if (nl) {
      size_t n = i + static_cast<size_t>(__builtin_ctz(nl));
      if (i < n) t.tail(p, i, n, out);
      return {n, true, t.finish(p, n, hints)};
    }
    t.chunk(v, out + i, 32);
  }
  // Rare (a block's last bytes, a line past `max`): digit_template() is this AVX2 variant here,
  // so the hash is the one the loop above would give.
  return template_next_line_portable(p, end, max, out, hints);
}
#endif

using DigitTemplateFn = uint64_t (*)(std::string_view, char*, LineHints*);

// The widest variant this CPU runs, chosen once: a run uses one variant throughout, since their
// hashes differ (the scanner only compares hashes it made itself).
DigitTemplateFn best_digit_template() {
#if FIRSTFAULT_HAVE_AVX2_TARGET
  if (__builtin_cpu_supports("avx2")) return digit_template_avx2;
#endif
#if defined(__SSE2__)
  return digit_template_sse2;
#else
  return digit_template_swar;
#endif
}

}  // namespace

uint64_t digit_template(std::string_view line, char* out, LineHints* hints) {
  static const DigitTemplateFn best = best_digit_template();
  return best(line, out, hints);
}

std::vector<DigitTemplateVariant> digit_template_variants() {
  std::vector<DigitTemplateVariant> v{{"swar", digit_template_swar}};
#if defined(__SSE2__)
  v.push_back({"sse2", digit_template_sse2});
#endif
#if FIRSTFAULT_HAVE_AVX2_TARGET
  if (__builtin_cpu_supports("avx2")) v.push_back({"avx2", digit_template_avx2});
#endif
  return v;
}

namespace {

bool equal_bytes(const char* a, const char* b, size_t n) { return std::memcmp(a, b, n) == 0; }

#if FIRSTFAULT_HAVE_AVX2_TARGET
// equal_bytes() inlined into the AVX2 line loop: a template is compared on every line seen
// before, and the call into libc's memcmp cost more than the compare of a 150-byte line itself.
__attribute__((target("avx2"))) inline bool equal_bytes_avx2(const char* a, const char* b, size_t n) {
  if (n < 32) return std::memcmp(a, b, n) == 0;
  auto same = [](const char* x, const char* y) __attribute__((target("avx2"))) {
    __m256i u = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(x));
    __m256i v = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(y));
    return _mm256_movemask_epi8(_mm256_cmpeq_epi8(u, v)) == -1;
  };
  for (size_t i = 0; i + 32 <= n; i += 32)
    if (!same(a + i, b + i)) return false;
  return same(a + n - 32, b + n - 32);  // the last bytes, overlapping the chunk before
}
#endif

}  // namespace

template <typename EqualFn>
int64_t TemplateScanner::find(uint64_t hash, std::string_view tmpl, EqualFn equal) const {
  if (table_.empty()) return -1;
  size_t mask = table_.size() - 1;
  for (size_t i = hash & mask; table_[i] != 0; i = (i + 1) & mask) {
    const Template& t = templates_[table_[i] - 1];
    if (t.hash == hash && t.length == tmpl.size() && equal(arena_.data() + t.offset, tmpl.data(), tmpl.size()))
      return static_cast<int64_t>(table_[i] - 1);
  }
  return -1;
}

int64_t TemplateScanner::insert(uint64_t hash, std::string_view tmpl) {
  if (templates_.size() >= max_templates_ || arena_.size() + tmpl.size() > max_arena_bytes_) return -1;
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

void TemplateScanner::share_bounds(size_t parts) {
  parts = std::max<size_t>(parts, 1);
  max_arena_bytes_ = kMaxArenaBytes / parts;
  max_templates_ = kMaxTemplates / parts;
  max_pattern_refs_ = kMaxPatternRefs / parts;
}

void TemplateScanner::reset() {
  templates_.clear();
  std::fill(table_.begin(), table_.end(), 0);
  arena_.clear();
  patterns_.clear();
  starts_.clear();
  memos_.clear();
  reset_before_next_block_ = false;
  ++stats_.resets;
}

void TemplateScanner::locate(const Prefilter& prefilter, Template& t) {
  if (t.located || t.first >= kOverflow) return;
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
  // Memos follow their pattern: the kept ones moved down, so none of the old ones applies.
  for (uint32_t k = 0; k < t.count; ++k) memos_[t.first + k] = MatchMemo{};
  t.count = kept;
}

const std::vector<TemplateScanner::Line>& TemplateScanner::scan_directly(const Prefilter& prefilter,
                                                                        std::string_view block) {
  // The raw block through the digit-blind database (a superset for raw lines too), as before
  // there was a cache; ESC, NUL and CR found with cursors over the block (BlockHints).
  lines_.clear();
  miss_candidates_.clear();
  prefilter.scan(block, miss_candidates_);
  ++stats_.bypassed_blocks;
  const char* base = block.data();
  BlockHints hints(block);
  size_t start = 0, cand = 0;
  const auto& cands = miss_candidates_.lines;
  while (start < block.size()) {
    const void* nl = std::memchr(base + start, '\n', block.size() - start);
    size_t end = nl ? static_cast<size_t>(static_cast<const char*>(nl) - base) : block.size();
    Line line{std::string_view(base + start, end - start), nullptr, nullptr, nullptr, 0, hints.at(start, end), -1};
    while (cand < cands.size() && cands[cand].line_start < start) ++cand;
    if (cand < cands.size() && cands[cand].line_start == start) {
      line.patterns = miss_candidates_.patterns.data() + cands[cand].first;
      line.count = cands[cand].count;
    }
    lines_.push_back(line);
    ++stats_.lines;
    if (!nl) break;
    start = end + 1;
  }
  return lines_;
}

// Step 1 of scan() with the line splitter `next_line` and the template compare `equal` inlined:
// the line loop is compiled once per variant (the AVX2 one with its constants kept in
// registers across lines). False when the block queued more new templates than kMaxMissBytes.
template <typename NextLineFn, typename EqualFn>
inline bool TemplateScanner::look_up_lines(const Prefilter& prefilter, std::string_view block, NextLineFn next_line,
                                           EqualFn equal) {
  const char* base = block.data();
  size_t start = 0;
  while (start < block.size()) {
    LineHints hints;
    // The hardware prefetcher stops at 4 KiB page ends; asking for the bytes a page ahead keeps
    // the next page's first lines in cache when the loop gets there (a hint: it never faults).
    __builtin_prefetch(base + start + 4096);
    NextLine next = next_line(base + start, base + block.size(), kMaxTemplateBytes, tmpl_, &hints);
    size_t end = start + next.length;
    bool nl = end < block.size();
    std::string_view line(base + start, next.length);
    lines_.push_back({line, nullptr, nullptr, nullptr, 0, hints, -1});
    int64_t slot = -1;
    bool queue = true;
    if (next.templated) {
      std::string_view tmpl(tmpl_, line.size());
      uint64_t h = next.hash;
      slot = find(h, tmpl, equal);
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
      lines_.back().hints = hints_of(line);
    }
    if (queue) {
      miss_slots_.push_back(slot);
      misses_text_ += '\n';
    }
    refs_.push_back({slot, queue ? static_cast<uint32_t>(miss_starts_.size() - 1) : UINT32_MAX});
    if (misses_text_.size() > kMaxMissBytes) return false;
    if (!nl) break;
    start = end + 1;
  }
  return true;
}

#if FIRSTFAULT_HAVE_AVX2_TARGET
__attribute__((target("avx2"), flatten)) bool TemplateScanner::look_up_lines_avx2(const Prefilter& prefilter,
                                                                                std::string_view block) {
  return look_up_lines(prefilter, block, template_next_line_avx2, equal_bytes_avx2);
}
#endif

bool TemplateScanner::look_up_lines(const Prefilter& prefilter, std::string_view block) {
#if FIRSTFAULT_HAVE_AVX2_TARGET
  static const bool avx2 = best_digit_template() == digit_template_avx2;
  if (avx2) return look_up_lines_avx2(prefilter, block);
#endif
  return look_up_lines(prefilter, block, template_next_line_portable, equal_bytes);
}

const std::vector<TemplateScanner::Line>& TemplateScanner::scan(const Prefilter& prefilter, std::string_view block) {
  if (bypass_ > 0) {
    --bypass_;
    return scan_directly(prefilter, block);
  }
  // Limits are checked between blocks, so no line of this block points at a dropped slot.
  if (reset_before_next_block_ || arena_.size() >= max_arena_bytes_ / 2 || templates_.size() >= max_templates_ / 2 ||
      patterns_.size() >= max_pattern_refs_ / 2)
    reset();
  lines_.clear();
  refs_.clear();
  misses_text_.clear();
  miss_starts_.clear();
  miss_slots_.clear();
  // 1. Look every line up; a template not seen before (or too long to keep) is queued once.
  if (!look_up_lines(prefilter, block)) {  // mostly new lines: not worth caching, nor the memory
    reset();
    bypass_ = kBypassBlocks;
    return scan_directly(prefilter, block);
  }
  stats_.lines += lines_.size();
  stats_.scanned += miss_starts_.size();
  if (lines_.size() >= 256 && 2 * miss_starts_.size() > lines_.size()) bypass_ = kBypassBlocks;
  // 2. One prefilter scan over the new templates; the answers go into the cache. A template
  //    seen again is located first (locate()): most lines of a small log are seen once, and
  //    checking their candidates with RE2 twice would cost more than it saves.
  miss_answer_.assign(miss_starts_.size(), {0, 0});
  miss_candidates_.clear();
  if (!miss_starts_.empty()) {
    prefilter.scan(misses_text_, miss_candidates_);
    size_t m = 0;
    for (const Prefilter::Candidate& c : miss_candidates_.lines) {
      while (m < miss_starts_.size() && miss_starts_[m] < c.line_start) ++m;
      if (m < miss_starts_.size() && miss_starts_[m] == c.line_start) miss_answer_[m] = {c.first, c.count};
    }
    for (size_t k = 0; k < miss_slots_.size(); ++k) {
      if (miss_slots_[k] < 0) continue;
      Template& s = templates_[static_cast<size_t>(miss_slots_[k])];
      auto [first, count] = miss_answer_[k];
      if (patterns_.size() + count > max_pattern_refs_) {
        s.first = kOverflow;
        s.miss = static_cast<uint32_t>(k);
        reset_before_next_block_ = true;
        continue;
      }
      const int* p = miss_candidates_.patterns.data() + first;
      s.first = static_cast<uint32_t>(patterns_.size());
      s.count = count;
      patterns_.insert(patterns_.end(), p, p + count);
      starts_.resize(patterns_.size(), 0);  // not located yet: a match may start anywhere
      memos_.resize(patterns_.size());
    }
  }
  // 3. Each line's candidates (patterns_ no longer grows in this block: the pointers hold).
  for (size_t i = 0; i < lines_.size(); ++i) {
    const LineRef& r = refs_[i];
    const Template* s = r.slot >= 0 ? &templates_[static_cast<size_t>(r.slot)] : nullptr;
    if (s && s->first != kOverflow) {
      lines_[i].patterns = patterns_.data() + s->first;
      lines_[i].starts = starts_.data() + s->first;
      lines_[i].memos = memos_.data() + s->first;
      lines_[i].count = s->count;
      lines_[i].template_id = static_cast<int32_t>(r.slot);
      continue;
    }
    auto [first, count] = miss_answer_[s ? s->miss : r.miss];
    lines_[i].patterns = miss_candidates_.patterns.data() + first;  // starts stay null: not located
    lines_[i].count = count;
  }
  return lines_;
}

}  // namespace firstfault
