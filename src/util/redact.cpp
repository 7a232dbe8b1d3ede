#include "firstfault/util/redact.h"

#include <arpa/inet.h>
#include <re2/re2.h>

#include <algorithm>
#include <array>
#include <memory>
#include <optional>

#include "firstfault/util/safe_text.h"
#include "firstfault/util/strings.h"

namespace firstfault {

namespace {

// Span kinds, in priority order: when two spans overlap, the lower kind wins (a secret inside
// a URL is masked as a secret, an e-mail's domain is not also masked as a host).
enum Kind { kSecret = 0, kEmail, kHomeUser, kIp, kHost, kUserWord };

// Whether a level masks a kind of span.
bool masks(RedactLevel level, int kind) {
  switch (level) {
    case RedactLevel::kNone: return false;
    case RedactLevel::kSecrets: return kind == kSecret;
    case RedactLevel::kPii: return kind == kSecret || kind == kEmail || kind == kHomeUser || kind == kUserWord;
    case RedactLevel::kAll: return true;
  }
  return true;
}

bool is_alnum(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || is_digit(c); }
bool is_name_char(char c) { return is_alnum(c) || c == '_' || c == '-'; }
bool is_hex(char c) { return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  return out;
}

// Calls f(groups) for every non-overlapping match of `re` in `text`.
template <class F>
void find_all(const RE2& re, std::string_view text, F&& f) {
  int n = re.NumberOfCapturingGroups() + 1;
  std::vector<re2::StringPiece> g(n);
  re2::StringPiece whole(text.data(), text.size());
  size_t pos = 0;
  while (pos <= text.size() && re.Match(whole, pos, text.size(), RE2::UNANCHORED, g.data(), n)) {
    f(g);
    size_t next = static_cast<size_t>(g[0].data() - text.data()) + g[0].size();
    pos = next > pos ? next : pos + 1;
  }
}

size_t offset(std::string_view text, const re2::StringPiece& p) { return static_cast<size_t>(p.data() - text.data()); }

struct Patterns {
  // NAME=value / NAME: value where NAME ends in a secret-ish word. Only the value is masked.
  RE2 key_value{
      R"((?i)(?:^|[^a-z0-9_/.-])((?:[a-z0-9_-]*[_-])?(?:api[_-]?key|apikey|token|secret|secret[_-]?key|access[_-]?key|private[_-]?key|password|passwd))["']?[ \t]*[=:][ \t]*["']?([^\s"',;&}\])]+))"};
  // Token formats recognisable without a name (group 1 is masked).
  std::vector<std::unique_ptr<RE2>> tokens;
  RE2 url_credentials{R"(\b[A-Za-z][A-Za-z0-9+.-]*://([^\s/:@]+(?::[^\s/@]*)?)@)"};
  RE2 email{
      R"(([A-Za-z0-9._%+-]+@[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*\.[A-Za-z]{2,})\b)"};
  RE2 home_user{R"((?:/(?:home|homes|Users|users)/|(?i:[a-z]:\\+users\\+))([A-Za-z0-9._-]+))"};
  RE2 user_var{R"((?:^|[^A-Za-z0-9_])(?:USER|LOGNAME|USERNAME|SLURM_JOB_USER|PBS_O_LOGNAME)=["']?([A-Za-z0-9._-]+))"};
  // Where logs name a host: NCCL "host:pid:tid [dev]", syslog "Mmm dd hh:mm:ss host ident:",
  // host=/hostname:/MASTER_ADDR=, "host X", "srun: error: HOST: task", "Node failure on HOST",
  // "*** JOB n ON HOST CANCELLED", AWS ip-a-b-c-d names.
  RE2 nccl_prefix{R"((?:^|[\s\]:])([A-Za-z][A-Za-z0-9_.-]*):\d+:\d+ \[\d+\])"};
  RE2 host_kv{
      R"((?i)(?:^|[^a-z0-9_])(?:hostname|host|node|nodename|node_name|master_addr|master|coordinator_address)["']?[ \t]*[=:][ \t]*["']?([A-Za-z][A-Za-z0-9-]*(?:\.[A-Za-z0-9-]+)*))"};
  RE2 host_word{R"((?i)\b(?:host|node)\s+([A-Za-z][A-Za-z0-9-]*(?:\.[A-Za-z0-9-]+)*))"};
  RE2 srun_host{R"(\bsrun: error: ([A-Za-z][A-Za-z0-9_.-]*): tasks?)"};
  RE2 node_failure{R"((?i)\bnode failure on ([A-Za-z][A-Za-z0-9_.-]*))"};
  RE2 syslog_host{R"((?:^|\s)[A-Z][a-z]{2} +\d{1,2} \d\d:\d\d:\d\d ([A-Za-z][A-Za-z0-9_.-]*) [A-Za-z][\w./-]*(?:\[\d+\])?:)"};
  RE2 job_on_host{R"(\*\*\* (?:JOB|STEP) [0-9.]+ ON ([A-Za-z][A-Za-z0-9_.-]*) )"};
  RE2 aws_host{R"(\b(ip-\d{1,3}-\d{1,3}-\d{1,3}-\d{1,3}(?:\.[A-Za-z0-9-]+)*)\b)"};
  RE2 fqdn{
      R"((?i)\b([a-z0-9](?:[a-z0-9-]*[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]*[a-z0-9])?)*\.(?:com|net|org|edu|gov|io|ai|cloud|local|localdomain|internal|intranet|intra|lan|corp|cluster|svc))\b)"};

  Patterns() {
    for (const char* re : {
             R"(\b(hf_[A-Za-z0-9]{30,}))",                      // Hugging Face
             R"(\b(api_org_[A-Za-z0-9]{30,}))",                 // Hugging Face org token
             R"(\b(gh[pousr]_[A-Za-z0-9]{30,}))",               // GitHub
             R"(\b(github_pat_[A-Za-z0-9_]{30,}))",             // GitHub fine-grained
             R"(\b((?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AIPA|ANPA|ANVA|APKA|AROA|ASCA)[A-Z0-9]{16})\b)",  // AWS key id
             R"(\b(xox[abposr]-[A-Za-z0-9-]{10,}))",            // Slack
             R"((https://hooks\.slack\.com/services/[A-Za-z0-9_/-]+))",  // Slack webhook
             R"(\b(sk-(?:proj-|ant-)?[A-Za-z0-9_-]{20,}))",     // OpenAI / Anthropic style
             R"(\b(eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}))",  // JWT
             R"((?i)\bbearer\s+([A-Za-z0-9._~+/-]{8,}=*))",     // bearer tokens
             R"((?i)\bauthorization["']?\s*[:=]\s*["']?(?:basic|token|bearer)?\s*([A-Za-z0-9._~+/-]{8,}=*))",
         })
      tokens.push_back(std::make_unique<RE2>(re));
  }
};

const Patterns& patterns() {
  static const Patterns p;
  return p;
}

// Public domains that name no one's infrastructure; masking them would only hide useful text.
bool public_domain(const std::string& host) {
  static const std::array<const char*, 28> kPublic = {
      "github.com",    "githubusercontent.com", "github.io",      "pytorch.org",    "python.org",
      "pypi.org",      "nvidia.com",            "wandb.ai",       "readthedocs.io", "microsoft.com",
      "google.com",    "docker.io",             "docker.com",     "nvcr.io",        "anaconda.org",
      "conda-forge.org", "stackoverflow.com",   "tensorflow.org", "ray.io",         "deepspeed.ai",
      "open-mpi.org",  "schedmd.com",           "kubernetes.io",  "k8s.io",         "gcr.io",
      "ghcr.io",       "quay.io",               "example.com"};
  for (const char* d : kPublic) {
    std::string_view dv(d);
    if (host == dv) return true;
    if (host.size() > dv.size() && host.compare(host.size() - dv.size(), dv.size(), dv) == 0 &&
        host[host.size() - dv.size() - 1] == '.')
      return true;
  }
  return false;
}

bool has_digit_or_dash(std::string_view s) {
  return std::any_of(s.begin(), s.end(), [](char c) { return is_digit(c) || c == '-'; });
}

// Whether a dotted name found by the FQDN pattern is a host rather than code (sklearn.cluster,
// tf.io, threading.local): generic TLDs always count; internal-looking suffixes need three labels
// or a first label that looks like a machine (digit or dash).
bool plausible_fqdn(const std::string& name) {
  if (public_domain(name)) return false;
  size_t dots = std::count(name.begin(), name.end(), '.');
  std::string_view tld = std::string_view(name).substr(name.rfind('.') + 1);
  static const std::array<const char*, 5> kGeneric = {"com", "net", "org", "edu", "gov"};
  bool generic = std::any_of(kGeneric.begin(), kGeneric.end(), [&](const char* t) { return tld == t; });
  if (generic) return true;
  return dots >= 2 || has_digit_or_dash(name.substr(0, name.find('.')));
}

// A plausible host learned from free text (host=..., "host X"): ordinary words such as "None",
// "master" or "failed" are not host names; real ones carry a digit, a dash or a dot.
bool plausible_learned_host(std::string_view h) {
  if (h.size() < 2 || lower(h) == "localhost") return false;
  return std::any_of(h.begin(), h.end(), [](char c) { return is_digit(c) || c == '-' || c == '.'; });
}

bool reserved_ipv4(std::string_view ip) {
  return ip == "0.0.0.0" || ip == "255.255.255.255" || starts_with(ip, "127.");
}

// IPv4 at s[i] (dotted quad, octets <= 255) bounded by non-name characters; returns its length.
size_t ipv4_at(std::string_view s, size_t i) {
  if (i > 0 && (is_alnum(s[i - 1]) || s[i - 1] == '.' || s[i - 1] == '_')) return 0;
  size_t j = i;
  for (int octet = 0; octet < 4; ++octet) {
    if (octet > 0) {
      if (j >= s.size() || s[j] != '.') return 0;
      ++j;
    }
    size_t start = j;
    int v = 0;
    while (j < s.size() && is_digit(s[j]) && j - start < 3) v = v * 10 + (s[j++] - '0');
    if (j == start || v > 255) return 0;
  }
  if (j < s.size() && (is_alnum(s[j]) || s[j] == '_')) return 0;
  if (j + 1 < s.size() && s[j] == '.' && is_digit(s[j + 1])) return 0;  // a longer dotted number
  return j - i;
}

// IPv6 at s[i], validated by inet_pton; returns its length. "::" and "::1" are not masked.
size_t ipv6_at(std::string_view s, size_t i) {
  if (i > 0 && (is_name_char(s[i - 1]) || s[i - 1] == ':' || s[i - 1] == '.')) return 0;
  size_t j = i;
  while (j < s.size() && (is_hex(s[j]) || s[j] == ':' || s[j] == '.')) ++j;
  if (j < s.size() && is_name_char(s[j])) return 0;  // c10d::ProcessGroup, not an address
  std::string_view run = s.substr(i, j - i);
  while (!run.empty() && run.back() == '.') run.remove_suffix(1);
  if (run.size() >= 2 && run.back() == ':' && run[run.size() - 2] != ':') run.remove_suffix(1);
  if (std::count(run.begin(), run.end(), ':') < 2 || run == "::" || run == "::1") return 0;
  std::string z(run);
  unsigned char buf[16];
  if (inet_pton(AF_INET6, z.c_str(), buf) != 1) return 0;
  return run.size();
}

// Whether text[p, p+n) is a whole word (no name character right before or after it).
bool whole_word(std::string_view text, size_t p, size_t n) {
  if (p > 0 && is_name_char(text[p - 1])) return false;
  if (p + n < text.size() && is_name_char(text[p + n])) return false;
  return true;
}

// Service and shared accounts (CI runners, cloud images, containers): masked inside a home
// path like any user, but not as words, where they are far more often ordinary words.
bool generic_account(const std::string& u) {
  static const std::array<const char*, 16> kGeneric = {"runner", "ubuntu", "admin", "user", "root", "dev",
                                                       "data", "work", "test", "guest", "shared", "ec2-user",
                                                       "jovyan", "vscode", "coder", "student"};
  return std::any_of(kGeneric.begin(), kGeneric.end(), [&](const char* g) { return u == g; });
}

bool none_like(std::string_view v) {
  std::string l = lower(v);
  return l.empty() || l == "none" || l == "null" || l == "nil" || l == "true" || l == "false" ||
         l == "undefined" || l == "[redacted]" || v.front() == '<' || v.front() == '[' || v.front() == '$' ||
         v.front() == '*';
}

}  // namespace

void Redactor::register_host(std::string_view host) {
  std::string key = lower(host);
  if (key.empty() || key == "localhost" || known_hosts_.count(key)) return;
  std::string label = key.substr(0, key.find('.'));
  std::string canonical = key;
  if (label != key) {
    // gpu-3.cluster.local and gpu-3 are one machine; a bare word (login.corp.com) is not aliased
    // because masking "login" everywhere would mangle the text.
    if (auto it = known_hosts_.find(label); it != known_hosts_.end()) canonical = it->second;
    else if (has_digit_or_dash(label) && !is_digit(label[0])) known_hosts_[label] = key;
  }
  known_hosts_[key] = canonical;
}

std::string Redactor::host_pseudonym(const std::string& name) {
  std::string key = lower(name);
  auto it = known_hosts_.find(key);
  return hosts_.get(it == known_hosts_.end() ? key : it->second);
}

void Redactor::add_host(std::string_view host) {
  if (host.empty() || lower(host) == "localhost") return;
  std::string h(host);
  if (ipv4_at(h, 0) == h.size() || ipv6_at(h, 0) == h.size()) {
    if (!reserved_ipv4(h)) ips_.get(lower(h));
    return;
  }
  register_host(h);
  host_pseudonym(h);
}

void Redactor::learn(std::string_view text) {
  if (text.empty()) return;
  const Patterns& p = patterns();
  auto learn_host = [&](const re2::StringPiece& g) {
    std::string_view h(g.data(), g.size());
    while (!h.empty() && (h.back() == '.' || h.back() == '-')) h.remove_suffix(1);
    if (plausible_learned_host(h) && !public_domain(lower(h))) register_host(h);
  };
  auto learn_user = [&](const re2::StringPiece& g) {
    std::string u(g.data(), g.size());
    if (u != "." && u != "..") known_users_.insert(u);
  };
  find_all(p.home_user, text, [&](const auto& g) { learn_user(g[1]); });
  find_all(p.user_var, text, [&](const auto& g) { learn_user(g[1]); });
  // NCCL's and syslog's prefixes are unambiguous: any name there is a host.
  for (const RE2* re : {&p.nccl_prefix, &p.syslog_host})
    find_all(*re, text, [&](const auto& g) {
      std::string_view h(g[1].data(), g[1].size());
      if (h.size() >= 2) register_host(h);
    });
  for (const RE2* re : {&p.host_kv, &p.host_word, &p.srun_host, &p.node_failure, &p.job_on_host, &p.aws_host})
    find_all(*re, text, [&](const auto& g) { learn_host(g[1]); });
  find_all(p.fqdn, text, [&](const auto& g) {
    size_t end = offset(text, g[1]) + g[1].size();
    bool call = end < text.size() && text[end] == '(';
    bool longer = end + 1 < text.size() && text[end] == '.' && is_alnum(text[end + 1]);
    if (call || longer) return;  // a call or a longer dotted name (module.attr.more): code, not a host
    size_t begin = offset(text, g[1]);
    if (begin > 0 && text[begin - 1] == '.') return;  // the tail of a longer dotted name
    std::string name = lower(std::string_view(g[1].data(), g[1].size()));
    if (plausible_fqdn(name)) register_host(name);
  });
}

void Redactor::collect(std::string_view text, std::vector<Span>& spans) const {
  const Patterns& p = patterns();
  auto add = [&](const re2::StringPiece& g, int kind) {
    size_t b = offset(text, g);
    spans.push_back({b, b + g.size(), kind, std::string(g.data(), g.size())});
  };
  find_all(p.key_value, text, [&](const auto& g) {
    std::string_view name(g[1].data(), g[1].size()), value(g[2].data(), g[2].size());
    if (none_like(value)) return;
    std::string lname = lower(name);
    bool env_style = std::none_of(name.begin(), name.end(), [](char c) { return c >= 'a' && c <= 'z'; });
    bool explicit_secret = lname.find("key") != std::string::npos || lname.find("secret") != std::string::npos ||
                           lname.find("pass") != std::string::npos;
    // Lower-case "*_token" names are also tokenizer settings (pad_token: <pad>); only values that
    // look like credentials are masked there.
    if (!env_style && !explicit_secret && value.size() < 8) return;
    add(g[2], kSecret);
  });
  for (const auto& re : p.tokens) find_all(*re, text, [&](const auto& g) { add(g[1], kSecret); });
  find_all(p.url_credentials, text, [&](const auto& g) { add(g[1], kSecret); });
  find_all(p.email, text, [&](const auto& g) { add(g[1], kEmail); });
  find_all(p.home_user, text, [&](const auto& g) {
    std::string_view u(g[1].data(), g[1].size());
    if (u != "." && u != "..") add(g[1], kHomeUser);
  });
  for (size_t i = 0; i < text.size(); ++i) {
    if (is_digit(text[i])) {
      if (size_t n = ipv4_at(text, i)) {
        std::string ip(text.substr(i, n));
        if (!reserved_ipv4(ip)) spans.push_back({i, i + n, kIp, ip});
        i += n - 1;
        continue;
      }
    }
    if (is_hex(text[i]) || text[i] == ':') {
      if (size_t n = ipv6_at(text, i)) {
        spans.push_back({i, i + n, kIp, std::string(text.substr(i, n))});
        i += n - 1;
      }
    }
  }
  // Known hosts and users, as whole words, case-insensitively; longest names first so that
  // gpu-3.cluster.local is one span rather than gpu-3 plus a leftover domain.
  std::string ltext = lower(text);
  for (const std::string& h : hosts_by_length_) {
    for (size_t pos = ltext.find(h); pos != std::string::npos; pos = ltext.find(h, pos + 1))
      if (whole_word(ltext, pos, h.size())) spans.push_back({pos, pos + h.size(), kHost, h});
  }
  // Outside home paths a user name is masked as a word, but not as a path or module component
  // (mmengine/runner/runner.py) and not when it is a generic account that names no one.
  for (const std::string& u : known_users_) {
    if (u.size() < 3 || generic_account(u)) continue;
    for (size_t pos = text.find(u); pos != std::string_view::npos; pos = text.find(u, pos + 1)) {
      if (!whole_word(text, pos, u.size())) continue;
      size_t end = pos + u.size();
      bool after_sep = pos > 0 && (text[pos - 1] == '/' || text[pos - 1] == '.');
      bool before_sep = end < text.size() &&
                        (text[end] == '/' || (text[end] == '.' && end + 1 < text.size() && is_alnum(text[end + 1])));
      if (!after_sep && !before_sep) spans.push_back({pos, end, kUserWord, u});
    }
  }
}

std::string Redactor::mask(std::string_view text) {
  learn(text);
  return mask_learned(text);
}

std::string Redactor::mask_learned(std::string_view text) {
  if (text.empty()) return std::string(text);
  if (hosts_by_length_.size() != known_hosts_.size()) {
    hosts_by_length_.clear();
    for (const auto& [h, _] : known_hosts_) hosts_by_length_.push_back(h);
    std::stable_sort(hosts_by_length_.begin(), hosts_by_length_.end(),
                     [](const std::string& a, const std::string& b) { return a.size() > b.size(); });
  }
  std::vector<Span> spans;
  collect(text, spans);
  // Spans the level keeps still take part in the overlap rule below, so a host inside an e-mail
  // is neither masked as a host nor left to hide the e-mail: they are dropped only when printing.
  if (spans.empty()) return std::string(text);
  // Higher-priority kinds first; within a kind, leftmost and then longest.
  std::stable_sort(spans.begin(), spans.end(), [](const Span& a, const Span& b) {
    if (a.kind != b.kind) return a.kind < b.kind;
    if (a.begin != b.begin) return a.begin < b.begin;
    return a.end > b.end;
  });
  std::vector<const Span*> taken;
  for (const Span& s : spans) {
    bool overlaps = std::any_of(taken.begin(), taken.end(),
                                [&](const Span* t) { return s.begin < t->end && t->begin < s.end; });
    if (!overlaps) taken.push_back(&s);
  }
  std::sort(taken.begin(), taken.end(), [](const Span* a, const Span* b) { return a->begin < b->begin; });
  std::string out;
  out.reserve(text.size());
  size_t pos = 0;
  for (const Span* s : taken) {
    if (!masks(level_, s->kind)) continue;  // kept by this level: copied with the text around it
    out.append(text.substr(pos, s->begin - pos));
    switch (s->kind) {
      case kSecret:
        out += "[REDACTED]";
        ++counts_.secrets;
        break;
      case kEmail:
        out += "[email]";
        ++counts_.emails;
        break;
      case kHomeUser:
      case kUserWord:
        out += users_.get(s->key);
        ++counts_.users;
        break;
      case kIp:
        out += ips_.get(lower(s->key));
        ++counts_.ips;
        break;
      default:
        out += host_pseudonym(s->key);
        ++counts_.hosts;
        break;
    }
    pos = s->end;
  }
  out.append(text.substr(pos));
  return out;
}

std::optional<RedactLevel> parse_redact_level(std::string_view name) {
  if (name == "none") return RedactLevel::kNone;
  if (name == "secrets") return RedactLevel::kSecrets;
  if (name == "pii") return RedactLevel::kPii;
  if (name == "all") return RedactLevel::kAll;
  return std::nullopt;
}

std::string_view redact_level_name(RedactLevel level) {
  switch (level) {
    case RedactLevel::kNone: return "none";
    case RedactLevel::kSecrets: return "secrets";
    case RedactLevel::kPii: return "pii";
    case RedactLevel::kAll: return "all";
  }
  return "all";
}

std::string_view redact_level_what(RedactLevel level) {
  switch (level) {
    case RedactLevel::kNone: return "";
    case RedactLevel::kSecrets: return "secrets are masked";
    case RedactLevel::kPii: return "secrets, e-mail addresses and user names are masked; host names and IP addresses are kept";
    case RedactLevel::kAll: return "hosts, IP addresses, e-mail addresses, user names and secrets are masked";
  }
  return "";
}

RedactCounts redact_diagnosis(Diagnosis& d, Redactor& r) {
  // Every host the attribution stage found (rank prefixes, syslog, NCCL, pdsh, file names).
  for (const auto& rank : d.ranks) r.add_host(rank.host);
  auto add_evidence_host = [&](const std::optional<Evidence>& e) {
    if (e) r.add_host(e->host);
  };
  auto add_decision_hosts = [&](const RankDecision& dec) {
    r.add_host(dec.host);
    add_evidence_host(dec.first_evidence);
  };
  add_decision_hosts(d.initiating);
  for (const auto& e : d.evidence) r.add_host(e.host);
  for (const auto& rank : d.ranks) add_evidence_host(rank.first_event);
  add_evidence_host(d.first_error);
  if (d.launcher_first_failure) r.add_host(d.launcher_first_failure->line.host);
  if (d.suspect) add_decision_hosts(*d.suspect);
  for (const auto& h : d.action.exclude_hosts) r.add_host(h);
  for_each_text(d, [&](std::string& s) { r.learn(s); });
  for_each_text(d, [&](std::string& s) { s = r.mask_learned(s); });
  return r.counts();
}

}  // namespace firstfault
