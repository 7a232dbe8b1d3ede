#include "firstfault/attribution/line_attributor.h"

#include <re2/re2.h>

#include <algorithm>
#include <cctype>
#include <array>
#include <cstring>

#include "firstfault/util/strings.h"

namespace firstfault {
namespace {

using sv = std::string_view;

// ASCII-only and inline (the <cctype> calls consult the locale, on every line).
bool is_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool is_upper(char c) { return c >= 'A' && c <= 'Z'; }
bool is_alnum(char c) { return is_alpha(c) || is_digit(c); }
// The first letters of the glog/c10 severities (I, W, E, F and D or V).
bool is_severity_letter(char c, bool verbose) {
  return c == 'I' || c == 'W' || c == 'E' || c == 'F' || c == (verbose ? 'V' : 'D');
}
// Could `c` start a level name is_level() accepts?
bool is_level_initial(char c) { return c == 'D' || c == 'I' || c == 'W' || c == 'E' || c == 'C' || c == 'F'; }

bool digits_at(sv s, size_t pos, size_t n) {
  if (pos + n > s.size()) return false;
  for (size_t i = 0; i < n; ++i)
    if (!is_digit(s[pos + i])) return false;
  return true;
}
unsigned num(sv s, size_t pos, size_t n) {
  unsigned v = 0;
  for (size_t i = 0; i < n; ++i) v = v * 10 + static_cast<unsigned>(s[pos + i] - '0');
  return v;
}

// The first `needle` at or after `from` when it starts at most `max_offset` bytes after `from`,
// else npos. The parsers below reject a delimiter that lies too far anyway; searching only that
// far keeps a line without one from being scanned to its end by every parser (hot: every line).
inline size_t find_near(sv s, sv needle, size_t from, size_t max_offset) {
  if (needle.empty() || from >= s.size() || s.size() - from < needle.size()) return sv::npos;
  const char* base = s.data();
  const char* end = base + std::min(s.size() - needle.size(), from + max_offset) + 1;  // past the last start
  for (const char* p = base + from; p < end; ++p) {
    p = static_cast<const char*>(std::memchr(p, needle[0], static_cast<size_t>(end - p)));
    if (!p) return sv::npos;
    // The second byte inline: most needles are two bytes ("] ", "]:"), and a call to memcmp for
    // one byte cost more than the search.
    if (needle.size() == 1 ||
        (p[1] == needle[1] && (needle.size() == 2 || std::memcmp(p + 2, needle.data() + 2, needle.size() - 2) == 0)))
      return static_cast<size_t>(p - base);
  }
  return sv::npos;
}

// Set when a parser turned a line down for a digit's value (an hour of 25, a day of 32) rather
// than for its shape. Lines of one digit template have one shape, so only then may another line
// of the template fare differently: such a template's layers are not replayed (AttributionPlan).
thread_local bool t_value_rejected = false;
bool reject_value() {
  t_value_rejected = true;
  return false;
}

// "HH:MM:SS" at pos.
bool hms_at(sv s, size_t pos, unsigned& h, unsigned& m, unsigned& sec) {
  if (!digits_at(s, pos, 2) || pos + 8 > s.size() || s[pos + 2] != ':' || !digits_at(s, pos + 3, 2) ||
      s[pos + 5] != ':' || !digits_at(s, pos + 6, 2))
    return false;
  h = num(s, pos, 2);
  m = num(s, pos + 3, 2);
  sec = num(s, pos + 6, 2);
  return (h < 24 && m < 60 && sec < 61) || reject_value();
}

// Fraction after '.' or ',': returns digits consumed and milliseconds.
size_t frac_at(sv s, size_t pos, unsigned& ms) {
  size_t i = pos;
  while (i < s.size() && is_digit(s[i]) && i - pos < 9) ++i;
  size_t n = i - pos;
  ms = 0;
  for (size_t k = 0; k < 3; ++k) ms = ms * 10 + (k < n ? static_cast<unsigned>(s[pos + k] - '0') : 0);
  return n;
}

// A glog/c10 header's year-less "MMDD hh:mm:ss" time, set only when the month and day are real
// (an impossible date leaves the line's time unknown; it does not turn the header down).
void set_month_day_time(Timestamp& t, unsigned mon, unsigned day, unsigned h, unsigned mi, unsigned sec,
                        unsigned ms) {
  if (mon >= 1 && mon <= 12 && day >= 1 && day <= 31) {
    t.kind = Timestamp::kNoYear;
    t.ms = make_ms(2000, mon, day, h, mi, sec, ms);
  }
}

// ISO-8601 / Python logging: YYYY-MM-DD[T ]HH:MM:SS([.,]f+)?(Z|[+-]hh(:?mm)?)?
// The last minute parse_iso() accepted ("YYYY-MM-DDTHH:MM", 16 bytes, every value checked) and
// its time: consecutive lines mostly share it, so only the seconds are read again (same result).
struct IsoMinute {
  bool valid = false;
  uint64_t key[2] = {0, 0};
  int64_t ms = 0;
};
thread_local IsoMinute t_iso_minute;

size_t parse_iso(sv s, Timestamp& t, bool* had_t = nullptr) {
  if (s.size() < 19) return 0;
  uint64_t key[2];
  std::memcpy(key, s.data(), sizeof key);
  IsoMinute& memo = t_iso_minute;
  int64_t minute_ms;
  unsigned sec, ms = 0;
  if (memo.valid && key[0] == memo.key[0] && key[1] == memo.key[1]) {
    if (s[16] != ':' || !digits_at(s, 17, 2)) return 0;
    sec = num(s, 17, 2);
    if (sec >= 61) return reject_value();
    minute_ms = memo.ms;
  } else {
    if (!digits_at(s, 0, 4) || s[4] != '-' || !digits_at(s, 5, 2) || s[7] != '-' || !digits_at(s, 8, 2) ||
        (s[10] != 'T' && s[10] != ' ' && s[10] != '_'))
      return 0;
    unsigned h, mi;
    if (!hms_at(s, 11, h, mi, sec)) return 0;
    unsigned mon = num(s, 5, 2), day = num(s, 8, 2);
    if (mon < 1 || mon > 12 || day < 1 || day > 31) return reject_value();
    minute_ms = make_ms(num(s, 0, 4), mon, day, h, mi, 0, 0);
    memo.valid = true;
    memo.key[0] = key[0];
    memo.key[1] = key[1];
    memo.ms = minute_ms;
  }
  size_t i = 19;
  if (i < s.size() && (s[i] == '.' || s[i] == ',') && i + 1 < s.size() && is_digit(s[i + 1])) i += 1 + frac_at(s, i + 1, ms);
  int64_t offset_min = 0;
  if (i < s.size() && s[i] == 'Z') {
    ++i;
  } else if (i + 2 < s.size() && (s[i] == '+' || s[i] == '-') && digits_at(s, i + 1, 2) && s[10] == 'T') {
    int sign = s[i] == '+' ? 1 : -1;
    unsigned oh = num(s, i + 1, 2), om = 0;
    size_t j = i + 3;
    if (j < s.size() && s[j] == ':') ++j;
    if (digits_at(s, j, 2)) {
      om = num(s, j, 2);
      j += 2;
    }
    offset_min = sign * static_cast<int64_t>(oh * 60 + om);
    i = j;
  }
  t.kind = Timestamp::kFull;
  t.ms = minute_ms + sec * 1000LL + ms - offset_min * 60000;
  if (had_t) *had_t = s[10] == 'T';
  return i;
}

constexpr std::array<const char*, 12> kMonths = {"Jan", "Feb", "Mar", "Apr", "May", "Jun",
                                                 "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"};
int month_index(sv s) {
  if (s.size() < 3) return 0;
  for (size_t i = 0; i < kMonths.size(); ++i)  // byte compares: no memcmp call per month
    if (s[0] == kMonths[i][0] && s[1] == kMonths[i][1] && s[2] == kMonths[i][2]) return static_cast<int>(i) + 1;
  return 0;
}

// "Mar  3 04:27:08" at pos: returns length (15) or 0.
size_t parse_mon_day_time(sv s, size_t pos, Timestamp& t) {
  if (pos + 15 > s.size() || s[pos + 3] != ' ') return 0;
  int mon = month_index(s.substr(pos, 3));
  if (!mon) return 0;
  size_t d = pos + 4;
  unsigned day;
  if (s[d] == ' ' && is_digit(s[d + 1])) day = num(s, d + 1, 1);
  else if (digits_at(s, d, 2)) day = num(s, d, 2);
  else return 0;
  // Day 0 would underflow days_from_civil (found by fuzz_attribution: "Mar 00 21:39:05").
  if (s[d + 2] != ' ') return 0;
  if (day < 1 || day > 31) return reject_value();
  unsigned h, mi, sec;
  if (!hms_at(s, d + 3, h, mi, sec)) return 0;
  t.kind = Timestamp::kNoYear;
  t.ms = make_ms(2000, static_cast<unsigned>(mon), day, h, mi, sec, 0);
  return 15;
}

// ---- individual prefix parsers: each returns bytes consumed (0 = not this format) ----

// kubectl --timestamps / CRI: "2019-06-21T19:50:53.813339525Z [stdout F ]"
size_t p_cri(sv s, Attribution& a) {
  if (s.size() < 20 || s[10] != 'T') return 0;  // cheap reject before parsing the date
  Timestamp t;
  bool had_t = false;
  size_t n = parse_iso(s, t, &had_t);
  if (!n || !had_t || n >= s.size() || s[n] != ' ') return 0;
  ++n;
  sv rest = s.substr(n);
  if ((starts_with(rest, "stdout ") || starts_with(rest, "stderr ")) && rest.size() >= 9 &&
      (rest[7] == 'F' || rest[7] == 'P') && rest[8] == ' ')
    n += 9;
  a.time = t;
  return n;
}

// kubectl logs --prefix: "[pod/name/container] "
size_t p_kube_prefix(sv s, Attribution& a) {
  if (!starts_with(s, "[pod/")) return 0;
  size_t close = find_near(s, "] ", 0, 300);
  if (close == sv::npos) return 0;
  sv inner = s.substr(5, close - 5);
  size_t slash = inner.find('/');
  a.host = inner.substr(0, slash);
  return close + 2;
}

// syslog: "May 18 19:02:39 [host ]ident[pid]: "
size_t p_syslog(sv s, Attribution& a) {
  Timestamp t;
  if (!parse_mon_day_time(s, 0, t) || s.size() < 17 || s[15] != ' ') return 0;
  size_t i = 16;
  size_t sp = s.find(' ', i);
  if (sp == sv::npos) return 0;
  sv tok1 = s.substr(i, sp - i);
  if (tok1.empty()) return 0;
  if (tok1.back() == ':') {  // no host field
    a.time = t;
    return sp + 1;
  }
  size_t sp2 = s.find(' ', sp + 1);
  if (sp2 == sv::npos) return 0;
  sv tok2 = s.substr(sp + 1, sp2 - sp - 1);
  if (tok2.empty() || tok2.back() != ':') return 0;
  a.time = t;
  a.host = tok1;
  return sp2 + 1;
}

// dmesg: "[12345.678901] ", "[Fri Mar  3 04:27:08 2023] ", "[  +0.000316] "
size_t p_dmesg(sv s, Attribution& a) {
  if (s.size() < 4 || s[0] != '[') return 0;
  size_t i = 1;
  while (i < s.size() && s[i] == ' ') ++i;
  if (i < s.size() && s[i] == '+') ++i;
  size_t dstart = i;
  while (i < s.size() && is_digit(s[i])) ++i;
  if (i > dstart && i < s.size() && s[i] == '.') {
    size_t fstart = ++i;
    while (i < s.size() && is_digit(s[i])) ++i;
    if (i - fstart != 6 || i + 1 >= s.size() || s[i] != ']' || s[i + 1] != ' ') return 0;
    int64_t secs = 0;
    parse_uint(s.substr(dstart), secs);
    // Up to 18 digits parse; beyond 10^12 s of uptime it is not a clock (and *1000 would overflow).
    if (s[dstart - 1] != '+' && secs < 1000000000000LL) {
      a.time.kind = Timestamp::kBoot;
      a.time.ms = secs * 1000 + num(s, fstart, 3);
    }
    return i + 2;
  }
  // dmesg -T: "[Fri Mar  3 04:27:08 2023] "
  if (s.size() >= 27 && s[4] == ' ' && s[25] == ']') {
    Timestamp t;
    if (parse_mon_day_time(s, 5, t) && s[20] == ' ' && digits_at(s, 21, 4)) {
      a.time = with_year(t, static_cast<int>(num(s, 21, 4)));
      return s.size() > 26 && s[26] == ' ' ? 27 : 26;
    }
  }
  return 0;
}

// An ANSI colour code whose ESC byte was lost on the way ("[36m(main_task pid=1) ..."), at the
// start of a line: only "[" digits (";" digits) "m".
size_t p_bare_sgr(sv s, Attribution&) {
  size_t i = 1;
  while (i < s.size() && i < 16 && (is_digit(s[i]) || s[i] == ';')) ++i;
  return i > 1 && i < s.size() && s[i] == 'm' && is_digit(s[1]) ? i + 1 : 0;
}

// The same colour code pasted as the caret notation a terminal shows for ESC ("^[[36m(pid=1) ...").
size_t p_caret_sgr(sv s, Attribution& a) {
  if (s.size() < 5 || s[0] != '^' || s[1] != '[' || s[2] != '[') return 0;  // "^[" stands for ESC
  size_t n = p_bare_sgr(s.substr(2), a);
  return n ? n + 2 : 0;
}

// vLLM V1's multiprocessing workers are named by their place in the engine: "Worker_TP2",
// "Worker_PP1", "Worker_PP1_TP3" (vllm/v1/executor/multiproc_executor.py: PP = rank / tp_size,
// TP = rank % tp_size, each part only when that size is above 1). With one of the two the rank
// is that index; with both it needs the TP size, and a DP or other part names another engine's
// worker: unknown then.
int vllm_worker_rank(sv name) {
  if (name.substr(0, 7) != "Worker_") return -1;
  int64_t tp = -1, pp = -1;
  for (sv rest = name.substr(7); !rest.empty();) {
    sv part = rest.substr(0, rest.find('_'));
    rest.remove_prefix(std::min(rest.size(), part.size() + 1));
    int64_t v = 0;
    if (part.size() < 3 || parse_uint(part.substr(2), v) != part.size() - 2) return -1;
    if (part.substr(0, 2) == "TP" && tp < 0) tp = v;
    else if (part.substr(0, 2) == "PP" && pp < 0) pp = v;
    else return -1;
  }
  if ((tp < 0) == (pp < 0)) return -1;
  return rank_or_none(tp >= 0 ? tp : pp);
}

// Ray: "(RayTrainWorker pid=75123, ip=10.0.0.1) ", "(MegatronPolicyWorker[rank=0] pid=1, ip=..) ", "(pid=45601) "
size_t p_ray(sv s, Attribution& a) {
  if (s.size() < 8 || s[0] != '(') return 0;
  // The tag ends at ") ", or at ")" and a colour reset whose ESC was lost: ")[0m " / ")^[[0m ".
  size_t close = sv::npos, end = 0;
  for (size_t p = find_near(s, ")", 0, 200); p != sv::npos && p < 200; p = find_near(s, ")", p + 1, 200 - p)) {
    size_t q = p + 1;
    if (q < s.size() && s[q] == '[') q += p_bare_sgr(s.substr(q), a);
    else if (q < s.size() && s[q] == '^') q += p_caret_sgr(s.substr(q), a);
    if (q < s.size() && s[q] == ' ') {
      close = p;
      end = q + 1;
      break;
    }
  }
  if (close == sv::npos) return 0;
  sv inner = s.substr(1, close - 1);
  size_t pidpos = inner.find("pid=");
  if (pidpos == sv::npos || (pidpos > 0 && inner[pidpos - 1] != ' ')) return 0;
  int64_t pid = 0;
  if (!parse_uint(inner.substr(pidpos + 4), pid)) return 0;
  a.pid = pid;
  size_t ip = inner.find("ip=");
  if (ip != sv::npos) a.host = inner.substr(ip + 3, inner.find_first_of(",)", ip) == sv::npos ? sv::npos : inner.find_first_of(",)", ip) - ip - 3);
  // "[rank=N]" (Megatron/NeMo-RL policy workers) or " rank=N " (vLLM V1's "(VllmWorker rank=3 pid=225)").
  int64_t rank = 0;
  size_t r = inner.find("[rank=");
  if (r != sv::npos && parse_uint(inner.substr(r + 6), rank)) a.rank = rank_or_none(rank);
  else if ((r = inner.find(" rank=")) != sv::npos && parse_uint(inner.substr(r + 6), rank)) a.rank = rank_or_none(rank);
  else a.rank = vllm_worker_rank(inner.substr(0, inner.find(' ')));
  return end;
}

// Open MPI: "[1,3]<stderr>:", "[1,3][host:pid]<stdout>: ", "[3]<stdout>:", with an optional ctime before it.
size_t p_ompi(sv s, Attribution& a) {
  size_t i = 0;
  if (s.size() > 24 && s[3] == ' ' && s[7] == ' ' && month_index(s.substr(4, 3))) {  // ctime glued on (4.x)
    Timestamp t;
    if (parse_mon_day_time(s, 4, t) && s[19] == ' ' && digits_at(s, 20, 4)) {
      i = 24;
      if (i < s.size() && s[i] == ']') ++i;
      a.time = with_year(t, static_cast<int>(num(s, 20, 4)));
    }
  }
  if (i >= s.size() || s[i] != '[') return 0;
  size_t j = i + 1;
  int64_t first = 0, second = -1;
  size_t n = parse_uint(s.substr(j), first);
  if (!n) return 0;
  j += n;
  sv host;
  if (j < s.size() && s[j] == ',') {
    ++j;
    // SageMaker's training toolkit rewrites the tag as "[1,mpirank:10,algo-2]<stdout>:"
    // (sagemaker-training-toolkit, process.py): the rank is named, and the host follows it.
    bool sagemaker = starts_with(s.substr(j), "mpirank:");
    if (sagemaker) j += 8;
    n = parse_uint(s.substr(j), second);
    if (!n) return 0;
    j += n;
    if (sagemaker && j < s.size() && s[j] == ',') {
      size_t close = s.find(']', j);
      if (close == sv::npos || close == j + 1) return 0;
      host = s.substr(j + 1, close - j - 1);
      j = close;
    }
  }
  if (j >= s.size() || s[j] != ']') return 0;
  ++j;
  if (!host.empty()) a.host = host;
  if (j < s.size() && s[j] == '[') {  // tag-detailed [host:pid]
    size_t close = s.find(']', j);
    if (close == sv::npos) return 0;
    sv hp = s.substr(j + 1, close - j - 1);
    a.host = hp.substr(0, hp.find(':'));
    j = close + 1;
  }
  sv rest = s.substr(j);
  size_t tag = 0;
  for (sv t : {sv("<stdout>:"), sv("<stderr>:"), sv("<stddiag>:")})
    if (starts_with(rest, t)) tag = t.size();
  if (!tag) return 0;
  j += tag;
  if (j < s.size() && s[j] == ' ') ++j;
  a.rank = rank_or_none(second >= 0 ? second : first);
  return j;
}

// A stream tag glued to the text: "[stderr]    File ..." (Azure ML and other job runners that
// merge a process's two streams), or after the name of the process or node that printed it:
// "bench.node-1 [stderr] [rank14]: ..." (milabench, job runners that fan out over nodes). The
// text after it keeps its indentation (traceback lines).
size_t p_stream_tag(sv s, Attribution&) {
  if (starts_with(s, "[stderr]") || starts_with(s, "[stdout]")) return 8;
  size_t name = 0;
  while (name < s.size() && name < 256 &&
         (std::isalnum(static_cast<unsigned char>(s[name])) || s[name] == '.' || s[name] == '-' || s[name] == '_'))
    ++name;
  if (name == 0 || name + 9 > s.size() || s[name] != ' ') return 0;
  sv tag = s.substr(name + 1, 8);
  if (tag != "[stderr]" && tag != "[stdout]") return 0;
  size_t j = name + 9;
  if (j < s.size() && s[j] == ' ') ++j;  // the runner's separator; deeper indentation is kept
  return j;
}

// "[rank3]:" and "[3]:" name the global rank; any other role ("[default3]:", torchrun's tee) a local one.
void set_bracket_rank(Attribution& a, sv role, int64_t v) {
  if (role == "rank" || role.empty()) a.rank = rank_or_none(v);
  else a.local_rank = rank_or_none(v);
}

// "[rank3]:" (c10, no space) / "[rank3]: " (excepthook) / "[default3]:" (torchrun tee, local rank) / "[3]:"
size_t p_bracket_rank(sv s, Attribution& a) {
  if (s.size() < 4 || s[0] != '[') return 0;
  size_t close = find_near(s, "]:", 0, 40);
  if (close == sv::npos) return 0;
  sv inner = s.substr(1, close - 1);
  size_t d = inner.size();
  while (d > 0 && is_digit(inner[d - 1])) --d;
  if (d == inner.size()) return 0;
  sv role = inner.substr(0, d);
  for (char c : role)
    if (!(is_alpha(c) || c == '_' || c == '-')) return 0;
  // torchrun's failure summary numbers its entries "[0]:" on a line of their own: an index,
  // not a rank.
  if (role.empty() && close + 2 == s.size()) return 0;
  int64_t v = 0;
  parse_uint(inner.substr(d), v);
  set_bracket_rank(a, role, v);
  size_t n = close + 2;
  if (n < s.size() && s[n] == ' ') ++n;
  return n;
}

// c10 header: "[E1003 18:37:01.832146912 ProcessGroupNCCL.cpp:607] " or "[E ProcessGroupNCCL.cpp:737] "
size_t p_c10_header(sv s, Attribution& a) {
  if (s.size() < 8 || s[0] != '[' || !is_severity_letter(s[1], true)) return 0;
  size_t i = 2;
  if (s[i] != ' ') {
    size_t ds = i;
    while (i < s.size() && is_digit(s[i])) ++i;
    size_t nd = i - ds;
    if ((nd != 3 && nd != 4) || i >= s.size() || s[i] != ' ') return 0;
    unsigned md = num(s, ds, nd);
    unsigned h, mi, sec;
    if (!hms_at(s, i + 1, h, mi, sec)) return 0;
    i += 9;
    unsigned ms = 0;
    if (i < s.size() && s[i] == '.') i += 1 + frac_at(s, i + 1, ms);
    set_month_day_time(a.time, md / 100, md % 100, h, mi, sec, 0);  // the fraction is CLOCK_MONOTONIC, not wall clock
  }
  if (i >= s.size() || s[i] != ' ') return 0;
  size_t close = find_near(s, "] ", i, 120);
  if (close == sv::npos) return 0;
  sv file = s.substr(i + 1, close - i - 1);
  if (file.find(':') == sv::npos || file.find(' ') != sv::npos) return 0;
  a.fatal = a.fatal || s[1] == 'F';
  a.severity = s[1];
  return close + 2;
}

// The date of a glog header after its severity letter: "MMDD", or "YYYYMMDD" since glog 0.7
// (log_year_in_prefix, default on: "E20260613 09:46:52.048179 15282 file.cc:12] ", Mooncake's
// client among others). Its length (4 or 8), 0 if neither.
size_t glog_date_len(sv s) {
  if (digits_at(s, 1, 8) && s.size() > 9 && s[9] == ' ') return 8;
  if (digits_at(s, 1, 4) && s.size() > 5 && s[5] == ' ') return 4;
  return 0;
}

void set_glog_time(Timestamp& t, sv s, size_t date_len, unsigned h, unsigned mi, unsigned sec, unsigned ms) {
  if (date_len == 4) return set_month_day_time(t, num(s, 1, 2), num(s, 3, 2), h, mi, sec, ms);
  unsigned year = num(s, 1, 4), mon = num(s, 5, 2), day = num(s, 7, 2);
  if (year >= 1970 && mon >= 1 && mon <= 12 && day >= 1 && day <= 31) {
    t.kind = Timestamp::kFull;
    t.ms = make_ms(year, mon, day, h, mi, sec, ms);
  }
}

// The clock after a glog date: "HH:MM:SS[.frac]", or abseil's "00:00:<seconds since 1970>.<us>"
// on a line logged before absl::InitializeLog() ran ("E0000 00:00:1725834192.702937  625990
// collective_ops_utils.h:310] ...", XLA, JAX, TensorFlow). Where the clock ends, 0 when there is
// none; the time goes to `t`.
size_t glog_clock(sv s, size_t date_len, Timestamp& t) {
  const size_t at = date_len + 2;
  unsigned ms = 0;
  // Which clock a line has depends on its digits' values (zeros), not only on its shape: lines
  // of one digit template may part here, so such a template is not replayed.
  if (date_len == 4 && digits_at(s, at + 6, 9)) reject_value();
  if (date_len == 4 && s.compare(1, 4, "0000") == 0 && s.compare(at, 6, "00:00:") == 0) {
    int64_t epoch = 0;
    size_t n = parse_uint(s.substr(at + 6), epoch);
    if (n < 9 || n > 11) return 0;
    size_t i = at + 6 + n;
    if (i < s.size() && s[i] == '.') i += 1 + frac_at(s, i + 1, ms);
    t.kind = Timestamp::kFull;
    t.ms = epoch * 1000 + ms;
    return i;
  }
  unsigned h, mi, sec;
  if (!hms_at(s, at, h, mi, sec)) return 0;
  size_t i = date_len + 10;
  if (i < s.size() && s[i] == '.') i += 1 + frac_at(s, i + 1, ms);
  set_glog_time(t, s, date_len, h, mi, sec, ms);
  return i;
}

// glog / torch python glog-style: "W0801 13:23:17.366000 32974 path.py:900] "
size_t p_glog(sv s, Attribution& a) {
  size_t date_len = s.size() < 25 || !is_severity_letter(s[0], false) ? 0 : glog_date_len(s);
  if (!date_len) return 0;
  Timestamp time;
  size_t i = glog_clock(s, date_len, time);
  if (!i || i >= s.size() || s[i] != ' ') return 0;
  // glog right-aligns the thread id in a field of width 5 ("E0611 10:22:31.123456   482 file.cc:12] ").
  for (size_t pad = 0; i < s.size() && s[i] == ' ' && pad < 8; ++pad) ++i;
  int64_t pid = 0;
  size_t n = parse_uint(s.substr(i), pid);
  if (!n) return 0;
  i += n;
  size_t close = find_near(s, "] ", i, 200);
  if (close == sv::npos) return 0;
  a.time = time;
  a.pid = pid;
  a.fatal = a.fatal || s[0] == 'F';
  a.severity = s[0];
  return close + 2;
}

bool is_level(sv s) {
  for (sv l : {sv("DEBUG"), sv("INFO"), sv("WARNING"), sv("WARN"), sv("ERROR"), sv("CRITICAL"), sv("FATAL")})
    if (s == l) return true;
  return false;
}

// A peeled logging level of ERROR or worse is kept as severity 'E', like a glog/c10 'E' header:
// the level goes with the prefix, and the line would otherwise read as plain text.
void note_level(Attribution& a, sv level) {
  if (level == "ERROR" || level == "CRITICAL" || level == "FATAL") a.severity = 'E';
}

// SGLang's worker tags after the time, "[2025-12-04 07:44:24 TP2] " or "[... DP1 PP0 TP3 EP3] ",
// starting at the space at `pos`: returns their length (0 when this is not such a list, and
// then `a` is untouched). The TP rank is the global rank only when no data-parallel replica
// (DP) and no later pipeline stage (PP > 0, ranks numbered stage-major) are in play.
size_t sglang_tags(sv s, size_t pos, Attribution& a) {
  size_t j = pos;
  int tp = -1, pp = 0;
  bool dp = false;
  while (j + 3 < s.size() && s[j] == ' ') {
    sv tag = s.substr(j + 1, 2);
    size_t d = j + 3, e = d;
    while (e < s.size() && is_digit(s[e])) ++e;
    if (e == d || e - d > 6 || (tag != "TP" && tag != "PP" && tag != "DP" && tag != "EP")) return 0;
    int v = static_cast<int>(num(s, d, e - d));
    if (tag == "TP") tp = v;
    else if (tag == "PP") pp = v;
    else if (tag == "DP") dp = true;
    j = e;
  }
  if (tp < 0 || j >= s.size() || s[j] != ']') return 0;
  if (!dp && pp == 0) a.rank = tp;
  return j - pos;
}

// "[2023-04-14 13:11:27,879] [INFO] [launch.py:428:sigkill_handler] ", "[2024-05-08 08:47:31,877] name: [ERROR] ",
// " [2024-05-08 08:47:31] " (Megatron), "[2025-05-01 12:00:00] " (NCCL >= 2.26), "[2026-09-14T17:14:38.784] " (slurmstepd)
size_t p_bracket_time(sv s, Attribution& a) {
  size_t i = 0;
  while (i < s.size() && i < 2 && s[i] == ' ') ++i;
  if (i >= s.size() || s[i] != '[') return 0;
  Timestamp t;
  size_t n = parse_iso(s.substr(i + 1), t);
  if (!n || i + 1 + n >= s.size()) return 0;
  size_t tags = s[i + 1 + n] == ' ' ? sglang_tags(s, i + 1 + n, a) : 0;
  if (s[i + 1 + n + tags] != ']') return 0;
  a.time = t;
  size_t j = i + 1 + n + tags + 1;
  if (j < s.size() && s[j] == ' ') ++j;
  // DeepSpeed: "[LEVEL] [file:line:func] "
  if (j < s.size() && s[j] == '[') {
    size_t close = find_near(s, "] ", j, 9);  // a level name is at most 8 letters
    if (close != sv::npos && is_level(s.substr(j + 1, close - j - 1))) {
      note_level(a, s.substr(j + 1, close - j - 1));
      j = close + 2;
      if (j < s.size() && s[j] == '[') {
        size_t c2 = find_near(s, "] ", j, 119);
        if (c2 != sv::npos && s.substr(j, c2 - j).find(':') != sv::npos) j = c2 + 2;
      }
    }
  } else {
    // torchelastic 2.1-2.3: "logger.name: [LEVEL] "
    size_t colon = find_near(s, ": [", j, 79);
    if (colon != sv::npos && s.substr(j, colon - j).find(' ') == sv::npos) {
      size_t close = find_near(s, "] ", colon + 3, 8);
      if (close != sv::npos && is_level(s.substr(colon + 3, close - colon - 3))) {
        note_level(a, s.substr(colon + 3, close - colon - 3));
        j = close + 2;
      }
    }
  }
  return j;
}

// TensorFlow/XLA/JAX (tsl and absl logging, tsl/platform/default/logging.cc):
// "%s.%06d: %c%s %s:%d] " = "2024-01-11 05:43:11.726254: E external/xla/.../nccl_utils.cc:211] ",
// the thread id (" %7u") between the level and the file only with TF_CPP_LOG_THREAD_ID. The
// position just after the ISO time is `n`; returns where the message starts, or 0.
size_t tsl_header_at(sv s, size_t n, Attribution& a) {
  if (n + 4 >= s.size() || s[n] != ':' || s[n + 1] != ' ' || s[n + 3] != ' ') return 0;
  char level = s[n + 2];
  if (level != 'I' && level != 'W' && level != 'E' && level != 'F') return 0;
  size_t close = find_near(s, "] ", n + 4, 240);
  if (close == sv::npos) return 0;
  sv location = s.substr(n + 4, close - n - 4);
  size_t colon = location.rfind(':');
  if (colon == sv::npos || colon + 1 >= location.size() || !digits_at(location, colon + 1, location.size() - colon - 1))
    return 0;
  a.severity = level;
  a.fatal = a.fatal || level == 'F';
  return close + 2;
}

// Python logging / plain: "2021-08-04 11:52:22,414 - mmdet - INFO - " or "2024-11-20 14:37:16 ",
// and the tsl header above.
size_t p_iso_plain(sv s, Attribution& a) {
  Timestamp t;
  size_t n = parse_iso(s, t);
  if (n && n < s.size() && s[n] == ':') {
    size_t body = tsl_header_at(s, n, a);
    if (body) a.time = t;
    return body;
  }
  if (!n || n >= s.size() || (s[n] != ' ' && s[n] != '\t' && s[n] != ']' && s[n] != '|')) return 0;
  a.time = t;
  size_t j = n;
  while (j < s.size() && (s[j] == ' ' || s[j] == '\t' || s[j] == '|')) ++j;
  // " - name - LEVEL - "
  if (starts_with(s.substr(n), " - ")) {
    size_t k = n + 3;
    for (int fields = 0; fields < 3; ++fields) {
      size_t sep = find_near(s, " - ", k, 60);
      if (sep == sv::npos) break;
      sv f = s.substr(k, sep - k);
      k = sep + 3;
      if (is_level(f)) {
        note_level(a, f);
        j = k;
        break;
      }
    }
    if (j == n + 1) j = n + 3;
  }
  return j;
}

// RFC 3339 syslog (rsyslog's file format, `journalctl -o short-iso`):
// "2026-11-05T10:00:00.123456+00:00 host kernel: " or "... host ident[pid]: ". The ident must
// be "kernel:" or carry its pid, so that a timestamped program line ("... step 5: loss") is not
// taken for a host.
size_t p_iso_syslog(sv s, Attribution& a) {
  Timestamp t;
  size_t n = parse_iso(s, t);
  if (!n || n + 1 >= s.size() || s[n] != ' ') return 0;
  size_t host_end = s.find(' ', n + 1);
  if (host_end == sv::npos) return 0;
  sv host = s.substr(n + 1, host_end - n - 1);
  bool letter = false, valid = !host.empty() && host[0] != '-' && !is_level(host);
  for (char c : host) {
    letter = letter || std::isalpha(static_cast<unsigned char>(c));
    valid = valid && (std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-');
  }
  size_t ident_end = s.find(' ', host_end + 1);
  if (!valid || !letter || ident_end == sv::npos) return 0;
  sv ident = s.substr(host_end + 1, ident_end - host_end - 1);
  bool with_pid = ident.size() > 4 && ident.substr(ident.size() - 2) == "]:" && ident.find('[') != sv::npos &&
                  ident.find('[') > 0;
  if (with_pid) {
    sv pid = ident.substr(ident.find('[') + 1, ident.size() - ident.find('[') - 3);
    with_pid = !pid.empty() && std::all_of(pid.begin(), pid.end(), [](char c) { return is_digit(c); });
  }
  if (ident != "kernel:" && !with_pid) return 0;
  a.time = t;
  a.host = host;
  return ident_end + 1;
}

// vLLM: "INFO 05-16 09:49:32 [parallel_state.py:1004] " (also without the bracket in older versions)
size_t p_vllm(sv s, Attribution& a) {
  if (s.empty() || !is_level_initial(s[0])) return 0;
  size_t sp = s.substr(0, 9).find(' ');
  if (sp == sv::npos || sp > 8 || !is_level(s.substr(0, sp))) return 0;
  size_t i = sp + 1;
  if (!digits_at(s, i, 2) || i + 14 > s.size() || s[i + 2] != '-' || !digits_at(s, i + 3, 2) || s[i + 5] != ' ')
    return 0;
  unsigned h, mi, sec;
  if (!hms_at(s, i + 6, h, mi, sec)) return 0;
  unsigned mon = num(s, i, 2), day = num(s, i + 3, 2);
  if (mon < 1 || mon > 12 || day < 1 || day > 31) return reject_value();
  note_level(a, s.substr(0, sp));
  a.time.kind = Timestamp::kNoYear;
  a.time.ms = make_ms(2000, mon, day, h, mi, sec, 0);
  size_t j = i + 14;
  if (j < s.size() && s[j] == ' ') ++j;
  // "[file.py:N] " (vLLM >= 0.8) or, before that, "file.py:N] " without the opening bracket.
  bool bracket = j < s.size() && s[j] == '[';
  size_t close = find_near(s, "] ", j, 119);
  if (close != sv::npos) {
    sv where = s.substr(j, close - j);
    if (bracket || (where.find(' ') == sv::npos && where.find(':') != sv::npos)) j = close + 2;
  }
  return j;
}

// Python logging default: "WARNING:torch.distributed.elastic.multiprocessing.api:"
// Also with the time in the logger's place, format "%(levelname)s:%(asctime)s:%(message)s"
// ("ERROR:2025-10-23 06:22:11,371:[MCPBaseTool] Execution failed: ...", verl's tools).
size_t p_pylog_default(sv s, Attribution& a) {
  if (s.empty() || !is_level_initial(s[0])) return 0;
  size_t c = s.substr(0, 9).find(':');
  if (c == sv::npos || c > 8 || !is_level(s.substr(0, c))) return 0;
  Timestamp t;
  if (size_t n = c + 1 < s.size() && is_digit(s[c + 1]) ? parse_iso(s.substr(c + 1), t) : 0;
      n && c + 1 + n < s.size() && s[c + 1 + n] == ':') {
    note_level(a, s.substr(0, c));
    a.time = t;
    return c + 2 + n;
  }
  size_t c2 = find_near(s, ":", c + 1, 99);
  if (c2 == sv::npos) return 0;
  sv logger = s.substr(c + 1, c2 - c - 1);
  if (logger.empty() || logger.find(' ') != sv::npos) return 0;
  note_level(a, s.substr(0, c));
  return c2 + 1;
}

// Slurm srun --label: "  3: " or "P1 3: "
size_t p_slurm_label(sv s, Attribution& a) {
  size_t i = 0;
  if (s.size() > 3 && s[0] == 'P' && is_digit(s[1])) {
    i = 1;
    while (i < s.size() && is_digit(s[i])) ++i;
    if (i >= s.size() || s[i] != ' ') return 0;
  }
  while (i < s.size() && s[i] == ' ' && i < 8) ++i;
  int64_t v = 0;
  size_t n = parse_uint(s.substr(i), v);
  if (!n || n > 6) return 0;
  i += n;
  if (i + 1 >= s.size() || s[i] != ':' || s[i + 1] != ' ') return 0;
  a.rank = rank_or_none(v);
  return i + 2;
}

bool is_ipv4(sv s) {
  int dots = 0, digits = 0;
  for (char c : s) {
    if (c == '.') {
      if (!digits) return false;
      ++dots;
      digits = 0;
    } else if (is_digit(c)) {
      if (++digits > 3) return false;
    } else {
      return false;
    }
  }
  return dots == 3 && digits > 0;
}

// torch_xla's xla_dist on TPU pods logs every worker's output as
// "%(asctime)-12s %(clientip)s [%(ordinal)s] %(message)s" (torch_xla/distributed/xla_dist.py):
// "2021-04-23 18:14:43 10.164.0.29 [3]   File ...". After the time: the worker VM's address and
// its ordinal; the message keeps its indentation (traceback lines).
size_t p_client_ordinal(sv s, Attribution& a) {
  size_t sp = s.substr(0, 16).find(' ');
  if (sp == sv::npos || !is_ipv4(s.substr(0, sp)) || sp + 1 >= s.size() || s[sp + 1] != '[') return 0;
  int64_t v = 0;
  size_t n = parse_uint(s.substr(sp + 2), v);
  size_t close = sp + 2 + n;
  if (!n || n > 6 || close >= s.size() || s[close] != ']' || (close + 1 < s.size() && s[close + 1] != ' ')) return 0;
  a.host = s.substr(0, sp);
  a.rank = rank_or_none(v);
  return std::min(close + 2, s.size());
}

size_t p_nccl(sv s, Attribution& a);

// Whether `s` opens with NCCL's own "host:pid:tid [dev] " header, which no plain "word: text"
// line carries after its word.
bool opens_nccl_header(sv s) {
  Attribution probe;
  return p_nccl(s, probe) > 0;
}

// pdsh: "host: " (IPv4 always; a name once the job shows it uses pdsh, or when NCCL's own header
// follows: a paste that lost DeepSpeed's `cmd = pdsh ...` line, clush, a per-host log joined)
size_t p_pdsh(sv s, Attribution& a, bool pdsh) {
  size_t c = find_near(s, ": ", 0, 64);
  if (c == sv::npos || c == 0) return 0;
  sv host = s.substr(0, c);
  bool ip = is_ipv4(host);
  if (!ip) {
    for (char ch : host)
      if (!(is_alnum(ch) || ch == '-' || ch == '.' || ch == '_')) return 0;
    if (!pdsh && !opens_nccl_header(s.substr(c + 2))) return 0;
  }
  a.host = host;
  return c + 2;
}

// docker compose (`docker compose logs`, `up` in the foreground): "service-1  | " (v2) or
// "service_1  | " (v1), the name padded to the longest service's. The container stands where a
// host would: the service's replicas are the job's nodes. A name starts with a lower-case letter
// (compose lower-cases container names) and holds no space, so table rows ("| a | b |", "0 |
// model | ...") and a level column ("ERROR    | train:main:42", loguru) are not taken for it.
size_t p_compose(sv s, Attribution& a) {
  size_t i = 0;
  while (i < s.size() && i < 64 && (is_alnum(s[i]) || s[i] == '-' || s[i] == '_' || s[i] == '.')) ++i;
  if (i == 0 || i >= s.size() || !(s[0] >= 'a' && s[0] <= 'z') || s[i] != ' ') return 0;
  size_t bar = i;
  while (bar < s.size() && s[bar] == ' ') ++bar;
  if (bar + 1 >= s.size() || s[bar] != '|' || s[bar + 1] != ' ') return 0;
  a.host = s.substr(0, i);
  return bar + 2;
}

// Docker BuildKit's plain progress (`docker build --progress=plain`, CI logs): the output of a
// build step as "#<step> <seconds since the step began> <line>", "#42 15.84       Traceback ...".
// The seconds have a fraction, so gdb's "#0  0x00007f..." frames are not taken for it; the line
// after the single separating space keeps its own indentation.
size_t p_buildkit(sv s) {
  size_t i = 1;
  while (i < s.size() && i < 8 && is_digit(s[i])) ++i;
  if (i == 1 || i >= s.size() || s[i] != ' ') return 0;
  size_t j = i + 1, int_start = j;
  while (j < s.size() && j - int_start < 7 && is_digit(s[j])) ++j;
  if (j == int_start || j >= s.size() || s[j] != '.') return 0;
  size_t frac_start = ++j;
  while (j < s.size() && j - frac_start < 4 && is_digit(s[j])) ++j;
  if (j == frac_start || j - frac_start > 3 || j >= s.size() || s[j] != ' ') return 0;
  return j + 1 < s.size() ? j + 1 : 0;
}

// A Markdown block quote, as logs pasted into GitHub issues and forums often are ("> [rank2]:
// torch.distributed.DistBackendError: ..."): "> " (nested: "> > ", ">> ") is a layer of its
// own, so the prefixes and messages inside read as they would unquoted. One space belongs to each
// '>'; the quoted text keeps its own indentation (a traceback's frames).
size_t p_quote(sv s) {
  size_t n = 0;
  while (n < s.size() && n < 8 && s[n] == '>') {
    ++n;
    if (n < s.size() && s[n] == ' ') ++n;
  }
  return n >= 2 && s[n - 1] == ' ' && n < s.size() ? n : 0;
}

// pytest's failure report: the lines of the error it caught start with "E" and the source's
// indentation ("E       AssertionError: ...", "E         File \"x.py\", line 3, in f"). The "E"
// and its padding are a layer of their own, so the exception and frames inside it read as
// they would unreported. At least two spaces: "E " alone starts ordinary text.
size_t p_pytest_error(sv s) {
  if (s.size() < 4 || s[0] != 'E' || s[1] != ' ' || s[2] != ' ') return 0;
  size_t n = 1;
  while (n < s.size() && s[n] == ' ') ++n;
  return n < s.size() ? n : 0;
}

// NCCL: "host:pid:tid [dev] " (dev is the local CUDA device, not a rank)
size_t p_nccl(sv s, Attribution& a) {
  // The host runs up to the first ':' and holds no ' ' or '[': stop at whichever comes first
  // (not a search of the whole line for a ':').
  size_t c1 = 0;
  while (c1 < s.size() && c1 <= 100 && s[c1] != ':' && s[c1] != ' ' && s[c1] != '[') ++c1;
  if (c1 == 0 || c1 >= s.size() || c1 > 100 || s[c1] != ':') return 0;
  int64_t pid = 0, tid = 0;
  size_t n1 = parse_uint(s.substr(c1 + 1), pid);
  if (!n1 || c1 + 1 + n1 >= s.size() || s[c1 + 1 + n1] != ':') return 0;
  size_t t0 = c1 + 2 + n1;
  size_t n2 = parse_uint(s.substr(t0), tid);
  if (!n2) return 0;
  size_t i = t0 + n2;
  if (i + 3 >= s.size() || s[i] != ' ') return 0;
  ++i;
  if (s[i] == '[') {
    size_t close = find_near(s, "] ", i, 6);
    if (close == sv::npos) return 0;
    i = close + 2;
  } else if (!starts_with(s.substr(i), "NCCL ")) {
    return 0;
  }
  a.host = s.substr(0, c1);
  a.pid = pid;
  return i;
}

// PyTorch message tags: "[Rank 3]" (torch <= 2.2, DeepSpeed log_dist) or the default PG's
// "[PG 0 Rank 3]" / "[PG ID 0 PG GUID 0(default_pg) Rank 3]". Other PGs carry a PG-local rank.
int rank_from_message(sv body) {
  size_t pos = 0;
  while ((pos = body.find("Rank ", pos)) != sv::npos) {
    size_t lo = pos >= 59 ? pos - 59 : 0;  // a tag opens at most 59 bytes before "Rank "
    size_t start = body.substr(lo, pos - lo).rfind('[');
    if (start != sv::npos) start += lo;
    int64_t v = 0;
    size_t n = parse_uint(body.substr(pos + 5), v);
    if (n && pos + 5 + n < body.size() && body[pos + 5 + n] == ']' && start != sv::npos && pos - start < 60) {
      sv tag = body.substr(start + 1, pos - start - 1);
      if (tag.empty()) return rank_or_none(v);
      if (starts_with(tag, "PG 0 ") || starts_with(tag, "PG ID 0 ") || tag.find("(default_pg)") != sv::npos)
        return rank_or_none(v);
    }
    pos += 5;
  }
  // "[RANK 1] " (TensorRT-LLM's Python logger, training wrappers): an upper-case tag of its own.
  if ((pos = body.find("[RANK ")) != sv::npos) {
    int64_t v = 0;
    size_t n = parse_uint(body.substr(pos + 6), v);
    if (n && pos + 6 + n < body.size() && body[pos + 6 + n] == ']') return rank_or_none(v);
  }
  // A failure reported for the rank it happened on: "Failed to initialize executor on rank 1: ..."
  // (TensorRT-LLM), "Exception on rank 3: ...". Only after a failure word, so that a peer being
  // waited on ("timed out waiting on rank 2") is not taken for the line's own rank.
  if ((pos = body.find(" on rank ")) != sv::npos) {
    int64_t v = 0;
    size_t n = parse_uint(body.substr(pos + 9), v);
    sv before = body.substr(0, pos);
    bool failure = before.find("ailed") != sv::npos || before.find("rror") != sv::npos || before.find("xception") != sv::npos;
    if (n && failure && pos + 9 + n < body.size() && body[pos + 9 + n] == ':' && before.find("waiting") == sv::npos)
      return rank_or_none(v);
  }
  return -1;
}

// Whether `body` holds nothing but bracketed tags ("[PG ID 0 PG GUID 0(default_pg) Rank 1]").
bool only_tags(sv body) {
  size_t i = 0;
  while (i < body.size()) {
    if (body[i] == ' ' || body[i] == '\t') {
      ++i;
      continue;
    }
    if (body[i] != '[') return false;
    size_t close = body.find(']', i);
    if (close == sv::npos) return false;
    i = close + 1;
  }
  return true;
}

// "[rank3]:" glued somewhere inside the line (after a tqdm bar or a caret line).
int rank_from_glued_prefix(sv line) {
  size_t pos = 0;
  while ((pos = line.find("[rank", pos)) != sv::npos) {
    int64_t v = 0;
    size_t n = parse_uint(line.substr(pos + 5), v);
    if (n && pos + 5 + n + 1 < line.size() && line[pos + 5 + n] == ']' && line[pos + 6 + n] == ':')
      return rank_or_none(v);
    pos += 5;
  }
  return -1;
}

// torchrun's ChildFailedError summary lists each failed process as a block of "  key : value"
// rows; its "rank : N (local_rank: M)" row names the rank of the rows after it (exitcode,
// error_file, traceback), whose text has no prefix of its own. Returns N for a rank row, -1
// for another row of a block, -2 for any other line.
int summary_row(sv body) {
  if (body.size() < 12 || body[0] != ' ' || body[1] != ' ') return -2;
  sv key = body.substr(2);
  auto field = [&](sv name) {
    if (key.substr(0, name.size()) != name) return false;
    size_t i = name.size();
    while (i < key.size() && key[i] == ' ') ++i;
    return i < key.size() && key[i] == ':';
  };
  if (field("rank")) {
    size_t i = key.find(':') + 1;
    while (i < key.size() && key[i] == ' ') ++i;
    int64_t v = 0;
    size_t n = parse_uint(key.substr(i), v);
    return n && key.substr(i + n, 14) == " (local_rank: " ? static_cast<int>(v) : -2;
  }
  return field("exitcode") || field("error_file") || field("traceback") ? -1 : -2;
}

// torch.multiprocessing.spawn re-raises a child's exception in the parent as
// "-- Process N terminated with the following error:" followed by the child's traceback, whose
// lines have no prefix of their own; N is the spawn index, the local rank. Returns N or -1.
int spawn_header(sv body) {
  static constexpr sv kHead = "-- Process ";
  static constexpr sv kTail = " terminated with the following error:";
  if (body.empty() || body[0] != '-' || !starts_with(body, kHead)) return -1;
  int64_t v = 0;
  size_t n = parse_uint(body.substr(kHead.size()), v);
  if (!n || v > kMaxRankNumber || !starts_with(body.substr(kHead.size() + n), kTail)) return -1;
  return static_cast<int>(v);
}

// Lines that continue the previous record of the same process (C++ frames, what(), indented
// traceback lines) inherit its rank.
bool is_continuation(sv body) {
  if (body.empty()) return false;
  if (body[0] == ' ' || body[0] == '\t') return true;
  return starts_with(body, "frame #") || starts_with(body, "what():") || starts_with(body, "Exception raised from") ||
         starts_with(body, "Last error:") || (body[0] == '#' && body.size() > 1 && is_digit(body[1]));
}

constexpr sv kTracebackHeader = "Traceback (most recent call last):";

// The line that closes a Python traceback: the exception's (dotted) class name, alone or
// followed by ": message" ("torch.OutOfMemoryError: CUDA out of memory.", "KeyboardInterrupt").
bool is_exception_line(sv body) {
  auto name_char = [&](size_t i) { return is_alpha(body[i]) || body[i] == '_' || body[i] == '.' || (i > 0 && is_digit(body[i])); };
  size_t i = 0;
  while (i < body.size() && name_char(i)) ++i;
  if (i == 0 || body[0] == '.' || body[i - 1] == '.') return false;
  return i == body.size() || body[i] == ':';
}

// The head of another writer's record: a bracket or parenthesis (a rank prefix, "[E ...]", a
// Ray "(pid=...)" prefix), a timestamp or the next bar's percentage, or a glog header ("W0105 ").
// The shell's own "Killed" notice after a bar is not one: host-oom-kill reads it glued to the
// bar, as the shell wrote it.
bool starts_record(sv s) {
  if (s[0] == '[' || s[0] == '(' || is_digit(s[0])) return true;
  return s.size() > 5 && std::strchr("IWEF", s[0]) && is_digit(s[1]) && is_digit(s[2]) && is_digit(s[3]) &&
         is_digit(s[4]) && s[5] == ' ';
}

}  // namespace

size_t progress_bar_glued_end(sv seg) {
  // tqdm's default layout: "{desc}{pct}%|{bar}| {n}/{total} [{elapsed}<{remaining}, {rate}{postfix}]".
  size_t pct = seg.find("%|");
  if (pct == sv::npos || pct == 0 || !is_digit(seg[pct - 1])) return sv::npos;
  size_t bar_close = seg.find('|', pct + 2);
  if (bar_close == sv::npos || bar_close + 1 >= seg.size() || seg[bar_close + 1] != ' ') return sv::npos;
  size_t i = bar_close + 2;
  const size_t counts = i;
  while (i < seg.size() && seg[i] != ' ' && seg[i] != '[') ++i;  // "3/50", "1.2k/4.0k", "3/?"
  if (seg.substr(counts, i - counts).find('/') == sv::npos) return sv::npos;
  if (i + 1 >= seg.size() || seg[i] != ' ' || seg[i + 1] != '[') return sv::npos;
  size_t close = seg.find(']', i + 2);
  if (close == sv::npos) return sv::npos;
  size_t rest = close + 1;
  while (rest < seg.size() && seg[rest] == ' ') ++rest;
  return rest < seg.size() && starts_record(seg.substr(rest)) ? close + 1 : sv::npos;
}

std::string_view strip_ansi(std::string_view line, std::string& scratch) {
  if (line.find('\x1b') == sv::npos && line.find('\0') == sv::npos) return line;
  scratch.clear();
  for (size_t i = 0; i < line.size(); ++i) {
    char c = line[i];
    if (c == '\0') continue;
    if (c != '\x1b') {
      scratch.push_back(c);
      continue;
    }
    if (i + 1 < line.size() && line[i + 1] == '[') {  // CSI
      i += 2;
      while (i < line.size() && !(line[i] >= '@' && line[i] <= '~')) ++i;
    } else if (i + 1 < line.size() && line[i + 1] == ']') {  // OSC
      i += 2;
      while (i < line.size() && line[i] != '\a' && !(line[i] == '\x1b' && i + 1 < line.size() && line[i + 1] == '\\'))
        ++i;
      if (i < line.size() && line[i] == '\x1b') ++i;
    } else {
      ++i;  // two-byte escape
    }
  }
  return scratch;
}

namespace {

// Every prefix parser, by the id an AttributionPlan records.
enum Parser : uint8_t {
  kStreamTag, kBareSgr, kBracketRank, kC10Header, kBracketTime, kOmpi, kKubePrefix, kDmesg, kRay, kCri, kIsoPlain,
  kSlurmLabel, kPdsh, kNccl, kGlog, kSyslog, kVllm, kPylogDefault, kCaretSgr, kCompose, kIsoSyslog, kIndent, kPytestError,
  kClientOrdinal, kBuildkit, kQuote, kParserCount
};

size_t p_indent(sv s);

size_t run_parser(Parser p, sv s, Attribution& a, bool pdsh) {
  switch (p) {
    case kIndent: return p_indent(s);
    case kPytestError: return p_pytest_error(s);
    case kStreamTag: return p_stream_tag(s, a);
    case kBareSgr: return p_bare_sgr(s, a);
    case kBracketRank: return p_bracket_rank(s, a);
    case kC10Header: return p_c10_header(s, a);
    case kBracketTime: return p_bracket_time(s, a);
    case kOmpi: return p_ompi(s, a);
    case kKubePrefix: return p_kube_prefix(s, a);
    case kDmesg: return p_dmesg(s, a);
    case kRay: return p_ray(s, a);
    case kCri: return p_cri(s, a);
    case kIsoPlain: return p_iso_plain(s, a);
    case kSlurmLabel: return p_slurm_label(s, a);
    case kPdsh: return p_pdsh(s, a, pdsh);
    case kClientOrdinal: return p_client_ordinal(s, a);
    case kBuildkit: return p_buildkit(s);
    case kQuote: return p_quote(s);
    case kCompose: return p_compose(s, a);
    case kNccl: return p_nccl(s, a);
    case kGlog: return p_glog(s, a);
    case kSyslog: return p_syslog(s, a);
    case kIsoSyslog: return p_iso_syslog(s, a);
    case kVllm: return p_vllm(s, a);
    case kPylogDefault: return p_pylog_default(s, a);
    case kCaretSgr: return p_caret_sgr(s, a);
    case kParserCount: break;
  }
  return 0;
}

// A paste indented as a block (a commit message, a Markdown list item, a quoted e-mail):
// " [rank3]: ValueError: ...". The spaces are a layer of their own only when a bracketed rank or
// c10 header follows them, so the indented lines of a traceback itself ("  [Previous line
// repeated 996 more times]") keep the indentation that makes them continuation lines.
size_t p_indent(sv s) {
  size_t n = 0;
  while (n < s.size() && n < 8 && s[n] == ' ') ++n;
  if (n == 0 || n >= s.size() || s[n] != '[') return 0;
  Attribution scratch;
  return p_bracket_rank(s.substr(n), scratch) || p_c10_header(s.substr(n), scratch) ? n : 0;
}

// A recorded layer again, on a line of the same digit template (the bytes that are not digits are
// the recorded line's, and digits sit where they sat), so every decision a parser made from
// those bytes holds again: where a field ends, which delimiter follows, a level name, a file.
// Only the digits are read: the fields they carry and the values a parser turns down (an hour
// of 25), with the parser's own checks. The parsers most lines go through take this path and
// return `recorded` (or 0 when a value is turned down); the others run in full, and replay()
// checks they take the recorded bytes again.
size_t replay_parser(Parser p, sv s, Attribution& a, bool pdsh, size_t recorded) {
  if (recorded > s.size()) return 0;
  switch (p) {
    case kBracketRank: {  // "[rank3]:", "[default3]: "; the digits end where "]:" begins
      size_t close = s[recorded - 1] == ' ' ? recorded - 3 : recorded - 2;
      size_t d = close;
      while (d > 1 && is_digit(s[d - 1])) --d;
      int64_t v = 0;
      parse_uint(s.substr(d, close - d), v);
      set_bracket_rank(a, s.substr(1, d - 1), v);
      return recorded;
    }
    case kBracketTime: {  // "[<ISO time>] ..." with up to two spaces before it; SGLang tags run in full
      size_t i = s[0] == '[' ? 0 : s[1] == '[' ? 1 : 2;
      Timestamp t;
      size_t n = parse_iso(s.substr(i + 1), t);
      if (!n || i + 1 + n >= s.size() || s[i + 1 + n] != ']') return n ? run_parser(p, s, a, pdsh) : 0;
      a.time = t;
      return recorded;
    }
    case kIsoPlain: {
      Timestamp t;
      size_t n = parse_iso(s, t);
      if (!n) return 0;
      if (n < s.size() && s[n] == ':') return run_parser(p, s, a, pdsh);  // a tsl header: its level and file too
      a.time = t;
      return recorded;
    }
    case kC10Header: {  // "[E1003 18:37:01.832146912 File.cpp:607] " or "[E File.cpp:737] "
      if (s[2] != ' ') {
        size_t i = 2;
        while (is_digit(s[i])) ++i;
        unsigned md = num(s, 2, i - 2), h, mi, sec;
        if (!hms_at(s, i + 1, h, mi, sec)) return 0;
        set_month_day_time(a.time, md / 100, md % 100, h, mi, sec, 0);
      }
      a.fatal = a.fatal || s[1] == 'F';
      a.severity = s[1];
      return recorded;
    }
    case kGlog: {  // "W0801 13:23:17.366000 32974 path.py:900] " (or "W20250801 ...")
      const size_t date_len = glog_date_len(s);
      Timestamp time;
      size_t i = date_len ? glog_clock(s, date_len, time) : 0;
      if (!i) return 0;
      int64_t pid = 0;
      size_t p = i + 1;
      while (p < s.size() && s[p] == ' ') ++p;  // the thread id's padding: the same on every line of the template
      parse_uint(s.substr(p), pid);
      a.time = time;
      a.pid = pid;
      a.fatal = a.fatal || s[0] == 'F';
      a.severity = s[0];
      return recorded;
    }
    case kNccl: {  // "host:pid:tid [dev] NCCL ..."; the host ends at the first ':'
      size_t c1 = 0;
      while (s[c1] != ':') ++c1;
      int64_t pid = 0;
      parse_uint(s.substr(c1 + 1), pid);
      a.host = s.substr(0, c1);
      a.pid = pid;
      return recorded;
    }
    default:
      return run_parser(p, s, a, pdsh);
  }
}

// The parsers tried, in order, on text starting with `c`: the first that accepts wins.
// pdsh's "host: " is a launcher layer: only a transport envelope may sit outside it, so it is
// tried only while nothing (rank, local rank, host) is known yet (`outermost`).
size_t candidates(char c, bool outermost, Parser* out) {
  size_t n = 0;
  if (c == '[') {
    for (Parser p : {kStreamTag, kBareSgr, kBracketRank, kC10Header, kBracketTime, kOmpi, kKubePrefix, kDmesg}) out[n++] = p;
  } else if (c == '(') {
    out[n++] = kRay;
  } else if (c == '^') {
    out[n++] = kCaretSgr;
  } else if (is_digit(c)) {
    for (Parser p : {kIsoSyslog, kCri, kIsoPlain, kSlurmLabel}) out[n++] = p;
    if (outermost) out[n++] = kStreamTag;
    if (outermost) out[n++] = kClientOrdinal;
    if (outermost) out[n++] = kPdsh;
    out[n++] = kNccl;
  } else if (c == ' ') {
    out[n++] = kSlurmLabel;
    out[n++] = kBracketTime;
    if (outermost) out[n++] = kIndent;
  } else {
    if (outermost) out[n++] = kStreamTag;  // "node-1 [stderr] ...": a runner's envelope
    if (outermost) out[n++] = kCompose;    // "vllm-1  | ...": docker compose's envelope
    if (outermost && c == 'E') out[n++] = kPytestError;  // "E       AssertionError: ..."
    if (outermost && c == '#') out[n++] = kBuildkit;     // "#42 15.84 ...": a docker build step
    if (outermost && c == '>') out[n++] = kQuote;        // "> [rank2]: ...": a quoted paste
    if (is_severity_letter(c, false)) out[n++] = kGlog;
    if (is_upper(c))
      for (Parser p : {kSyslog, kVllm, kOmpi, kPylogDefault}) out[n++] = p;
    if (c == 'P') out[n++] = kSlurmLabel;
    out[n++] = kNccl;
    if (outermost) out[n++] = kPdsh;
  }
  return n;
}

bool is_outermost(const Attribution& a) { return a.rank < 0 && a.local_rank < 0 && a.host.empty(); }

}  // namespace

size_t LineAttributor::peel(sv line, Attribution& a, AttributionPlan* record) const {
  // Peel layers from the outside in; layers may come in any order, so restart after each.
  // With `record`, the layers taken are written down for replay(), unless a parser turned the
  // line down for a digit's value (then lines of the same template could take other layers).
  if (record) {
    *record = AttributionPlan{};
    t_value_rejected = false;
  }
  bool replayable = true;
  sv s = line;
  int round = 0;
  for (; round < AttributionPlan::kMaxLayers && !s.empty(); ++round) {
    bool outermost = is_outermost(a);
    Parser tried[kParserCount];
    size_t count = candidates(s[0], outermost, tried), n = 0;
    for (size_t k = 0; k < count && !n; ++k) {
      Attribution before = a;
      n = run_parser(tried[k], s, a, pdsh_);
      if (n) {
        if (record) {
          record->parsers[round] = tried[k];
          record->lengths[round] = static_cast<uint16_t>(std::min<size_t>(n, UINT16_MAX));
          replayable = replayable && n <= UINT16_MAX;
        }
      } else {
        // A parser that turned the layer down keeps nothing it read (a c10 header whose
        // fraction is garbage left its time behind): a replay, which never runs it, must agree.
        a = before;
      }
    }
    if (record && outermost) record->outermost |= static_cast<uint16_t>(1u << round);
    if (!n) break;
    s.remove_prefix(n);
  }
  if (record) {
    record->layers = static_cast<uint8_t>(round);
    record->pdsh = pdsh_;
    record->severity = a.severity;
    record->state = replayable && !t_value_rejected ? AttributionPlan::kReplay : AttributionPlan::kNever;
  }
  return line.size() - s.size();
}

bool LineAttributor::replay(sv line, const AttributionPlan& plan, Attribution& a, size_t& consumed) const {
  // The recorded parsers only, each checked to take the same bytes as on the recorded line; the
  // ones that turned that line down would turn this one down too (same shape, same state).
  if (plan.pdsh != pdsh_) return false;
  sv s = line;
  for (int round = 0; round < plan.layers; ++round) {
    if (is_outermost(a) != ((plan.outermost >> round & 1u) != 0)) return false;
    if (replay_parser(static_cast<Parser>(plan.parsers[round]), s, a, pdsh_, plan.lengths[round]) != plan.lengths[round])
      return false;
    s.remove_prefix(plan.lengths[round]);
  }
  // The round that ended the recorded peel found no parser; whether pdsh was among those tried
  // depends on what this line's layers said.
  if (plan.layers < AttributionPlan::kMaxLayers && !s.empty() &&
      is_outermost(a) != ((plan.outermost >> plan.layers & 1u) != 0))
    return false;
  // Layers replayed by length skip the level words inside them (DeepSpeed's "[ERROR]"); those are
  // letters, the same on every line of the template.
  if (plan.severity) a.severity = plan.severity;
  consumed = line.size() - s.size();
  return true;
}

Attribution LineAttributor::attribute(std::string_view line, AttributionPlan* plan) {
  Attribution a;
  // An empty line neither opens nor ends a record: paste repair leaves one in place of each
  // wrapped row it joined (line numbers stay true), and those sit inside the record they came from.
  if (line.empty()) {
    a.body = line;
    return a;
  }
  // `head`/`tail` of several files (tail -n 50 log/workerlog.*) heads each file's lines so.
  if (starts_with(line, "==> ") && ends_with(line, " <==") && line.size() > 8) enter_section(line.substr(4, line.size() - 8));
  size_t consumed = 0;
  if (!plan || plan->state == AttributionPlan::kNever) {
    consumed = peel(line, a, nullptr);
  } else if (plan->state == AttributionPlan::kUnknown) {
    consumed = peel(line, a, plan);  // records the plan
  } else if (!replay(line, *plan, a, consumed)) {
    a = Attribution{};
    consumed = peel(line, a, nullptr);
    plan->state = AttributionPlan::kNever;  // this template's lines differ: peel them in full
  }
  bool any_prefix = consumed > 0;
  sv s = line.substr(consumed);
  a.body = s;

  if (a.rank < 0) a.rank = rank_from_glued_prefix(line);
  // srun --label puts the task number of the stream that carried a line before it. A step-level
  // message of slurmstepd ("0: slurmstepd: error: Detected 1 oom_kill event in StepId=...",
  // "*** STEP ... CANCELLED ***") comes through task 0's stream whichever task it is about, so
  // that number is not its rank; a task's own (pyxis's task_init of task 412) keeps it.
  if (a.rank >= 0 && any_prefix && starts_with(s, "slurmstepd") &&
      (s.find("StepId=") != sv::npos || s.find("*** STEP ") != sv::npos || s.find("*** JOB ") != sv::npos))
    a.rank = -1;
  if (a.rank < 0) a.rank = rank_from_message(s);
  if (int row = summary_row(s); row >= 0) summary_rank_ = row;
  else if (row == -1 && a.rank < 0 && summary_rank_ >= 0) {
    a.rank = summary_rank_;
    a.about_rank = true;
  }
  else if (row == -2 && summary_rank_ >= 0 && !is_continuation(s)) summary_rank_ = -1;
  if (int p = spawn_header(s); p >= 0) {
    spawn_local_rank_ = p;
    if (a.rank < 0 && a.local_rank < 0) a.local_rank = p;
  } else if (spawn_local_rank_ >= 0) {
    // The child's traceback: "Traceback ...", indented frames, then the exception line, which ends it.
    bool frame = starts_with(s, "Traceback (most recent call last):") || is_continuation(s);
    if (a.rank < 0 && a.local_rank < 0 && !any_prefix) a.local_rank = spawn_local_rank_;
    if (!frame || any_prefix) spawn_local_rank_ = -1;
  }
  if (a.rank < 0 && a.local_rank >= 0 && a.host.empty() && file_.rank < 0) {
    // torchrun's [defaultN]: is a local rank; with no host in sight this is a one-node job,
    // where it equals the global rank.
    a.rank = a.local_rank;
  }
  if (a.rank < 0 && file_.rank >= 0) {
    a.rank = file_.rank;
    a.rank_from_name = true;
  }
  if (a.host.empty() && !file_.host.empty()) a.host = file_.host;
  bool closes_traceback = traceback_open_ && is_exception_line(s);
  // A header that stood alone on its line (a paste wrapped after "[rank1]:[E810 ...] [PG ID 0
  // ... Rank 1]"): the next line without a prefix of its own is its message.
  if (a.rank < 0 && !any_prefix && header_rank_ >= 0) {
    a.rank = header_rank_;
    a.inherited = true;
  }
  header_rank_ = a.rank >= 0 && !a.inherited && any_prefix && only_tags(s) ? a.rank : -1;
  if (a.rank < 0 && !any_prefix && last_rank_ >= 0 && (is_continuation(s) || closes_traceback)) {
    a.rank = last_rank_;
    a.inherited = true;
  }
  // A traceback the record itself opened ("[TP1] Scheduler hit an exception: Traceback (most
  // recent call last):", then indented frames) ends with the exception line, which is not
  // indented: it belongs to the record too, and nothing after it does.
  if (!a.inherited) traceback_open_ = a.rank >= 0 && ends_with(s, kTracebackHeader);
  else if (closes_traceback) traceback_open_ = false;
  // Only an unbroken run of continuation lines inherits; any other line ends the record.
  if (!a.inherited) last_rank_ = a.rank;
  return a;
}

void LineAttributor::enter_section(std::string_view path) {
  FileIdentity id = identity_from_path(path);
  file_ = id.rank >= 0 || !id.host.empty() ? id : whole_file_;
  // A record does not run on across files.
  last_rank_ = -1;
  traceback_open_ = false;
  spawn_local_rank_ = -1;
  summary_rank_ = -1;
}

bool names_pytorchjob_master(std::string_view path) {
  static const RE2 kMaster(R"((?i)(?:^|[-_./])master-0(?:[-_./]|$))");
  return RE2::PartialMatch(re2::StringPiece(path.data(), path.size()), kMaster);
}

namespace {
// The value of a "Key:   value" line among the first lines of `head`, or "".
std::string describe_field(std::string_view head, std::string_view key) {
  size_t pos = 0;
  for (int n = 0; n < 40 && pos < head.size(); ++n) {
    size_t end = head.find('\n', pos);
    sv line = head.substr(pos, end == sv::npos ? sv::npos : end - pos);
    if (starts_with(line, key) && line.size() > key.size() && line[key.size()] == ':') {
      sv value = line.substr(key.size() + 1);
      while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
      while (!value.empty() && (value.back() == ' ' || value.back() == '\r')) value.remove_suffix(1);
      return std::string(value);
    }
    if (end == sv::npos) break;
    pos = end + 1;
  }
  return "";
}
}  // namespace

FileIdentity identity_from_head(std::string_view head, FileIdentity id, const std::string& rank_from, bool pytorchjob_pods) {
  if (!starts_with(head, "Name:")) return id;
  std::string pod = describe_field(head, "Name");
  if (pod.empty() || pod.find(' ') != std::string::npos || describe_field(head, "Namespace").empty()) return id;
  if (id.rank < 0) id.rank = identity_from_path(pod, rank_from, pytorchjob_pods).rank;
  std::string node = describe_field(head, "Node");
  node = node.substr(0, node.find('/'));
  if (id.host.empty() && !node.empty() && node != "<none>") id.host = node;
  return id;
}

namespace {
// A path's last component and the name of the directory holding it.
std::pair<std::string, std::string> name_and_dirname(const std::string& p) {
  size_t slash = p.rfind('/');
  std::string name = slash == std::string::npos ? p : p.substr(slash + 1);
  std::string dir = slash == std::string::npos ? "" : p.substr(0, slash);
  return {name, dir.substr(dir.rfind('/') == std::string::npos ? 0 : dir.rfind('/') + 1)};
}

// The host a file's name gives its lines: a node's own output (node-07.out, gpu017.log) or a
// kernel log saved per node, as admins name them (node-109.dmesg, node-109.kern.log,
// dmesg-node-109.txt, node-109/kern.log, node-109/dmesg.log). A host token has a digit
// (cluster nodes are numbered), so "logs/kern.log" or "kern.log.1" name no host.
std::string host_from_path(const std::string& name, const std::string& dirname) {
  static const RE2 kNode(R"((?i)^((?:node|host|gpu|nid)[\w\-]*?\d+)\.(?:out|err|log|txt)$)");
  static const RE2 kKernelLogThenHost(
      R"((?i)^(?:dmesg|kern|kernel|syslog|messages|journal|journalctl)[_\-.]+([a-z][a-z0-9\-]*\d[a-z0-9\-]*)(?:\.(?:log|txt|out))?$)");
  static const RE2 kHostThenKernelLog(
      R"((?i)^([a-z][a-z0-9\-]*\d[a-z0-9\-]*)[_\-.]+(?:dmesg|kern|kernel|syslog|messages|journal|journalctl)(?:\.(?:log|txt|out))?$)");
  static const RE2 kKernelLogName(R"((?i)^(?:dmesg|kern|kernel|syslog|messages|journal|journalctl)(?:[_\-.]\w+)?(?:\.(?:log|txt|out))?$)");
  static const RE2 kHostDir(R"((?i)^([a-z][a-z0-9\-]*\d[a-z0-9\-]*)$)");
  std::string host;
  if (RE2::FullMatch(name, kNode, &host) || RE2::FullMatch(name, kKernelLogThenHost, &host) ||
      RE2::FullMatch(name, kHostThenKernelLog, &host))
    return host;
  if (RE2::FullMatch(name, kKernelLogName) && RE2::FullMatch(dirname, kHostDir, &host)) return host;
  return "";
}

// The first capture of `regex` (--rank-from, --host-from) in `path`, or "".
std::string first_capture(const std::string& path, const std::string& regex) {
  RE2 re(regex, RE2::Quiet);
  std::string v;
  if (re.ok() && re.NumberOfCapturingGroups() >= 1 && RE2::PartialMatch(path, re, &v)) return v;
  return "";
}

// The rank a path names: `rank_from`'s capture when given, else the built-in rules; -1 for none.
int rank_from_path(const std::string& p, const std::string& rank_from, bool pytorchjob_pods) {
  if (!rank_from.empty()) {
    auto r = to_int(first_capture(p, rank_from));
    return r ? rank_or_none(*r) : -1;
  }
  // Each rule names where the rank sits in the path; the last path component wins over the
  // directory (rank_3/stdout.log). Patterns are tried on the file name, then on its directory.
  static const RE2 kRankRules(
      R"((?i)(?:^|[^a-z])(?:rank|proc|process|task|stdout|stderr|worker|workerlog)[_\-.]?(\d{1,6})(?:[^0-9]|$))");
  // A directory names a rank only when that is all its name says (rank_3/, worker-2/): a
  // directory named after a case or run ("oom-on-rank0/", "run-rank0-tokenize/") holds the whole job.
  static const RE2 kDirRankRules(R"((?i)^(?:rank|proc|process|task|worker)[_\-.]?(\d{1,6})$)");
  static const RE2 kSlurmArray(R"(slurm-\d+_(\d{1,6})\.(?:out|err|log))");
  if (pytorchjob_pods) {
    // The training operator sets RANK=0 on master-0 and RANK=N+1 on worker-N.
    static const RE2 kPod(R"((?i)(?:^|[-_./])(master|worker)-(\d{1,6})(?:[-_./]|$))");
    std::string role, n;
    if (RE2::PartialMatch(p, kPod, &role, &n))
      if (auto r = to_int(n)) return rank_or_none(role[0] == 'm' || role[0] == 'M' ? *r : *r + 1);  // master : worker
  }
  auto [name, dirname] = name_and_dirname(p);
  // torchrun --log-dir (--redirects/--tee): <log_dir>/<run_id>/attempt_K/<local rank>/stderr.log.
  static const RE2 kTorchrunLogDir(R"((?:^|/)attempt_\d+/(\d{1,6})/(?:stdout|stderr|error)\.(?:log|json)$)");
  std::string v;
  if (RE2::PartialMatch(p, kTorchrunLogDir, &v) || RE2::PartialMatch(name, kSlurmArray, &v) ||
      RE2::PartialMatch(name, kRankRules, &v) || RE2::PartialMatch(dirname, kDirRankRules, &v)) {
    if (auto r = to_int(v)) return rank_or_none(*r);
  }
  return -1;
}

}  // namespace

FileIdentity identity_from_path(std::string_view path, const std::string& rank_from, bool pytorchjob_pods,
                                const std::string& host_from) {
  std::string p(path);
  FileIdentity id;
  id.rank = rank_from_path(p, rank_from, pytorchjob_pods);
  auto [name, dirname] = name_and_dirname(p);
  id.host = host_from.empty() ? host_from_path(name, dirname) : first_capture(p, host_from);
  return id;
}

}  // namespace firstfault
