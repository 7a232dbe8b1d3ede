#include "firstfault/util/redact.h"

#include <arpa/inet.h>
#include <re2/re2.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <memory>
#include <optional>
#include <stdexcept>

#include "firstfault/util/safe_text.h"
#include "firstfault/util/strings.h"

namespace firstfault {

using redact_detail::Learned;
using redact_detail::Span;

namespace {

// Replacement families, in priority order: when two spans overlap, the lower family wins (a
// secret inside a URL is masked as a secret, an e-mail's domain is not also masked as a host).
enum Family { kSecret = 0, kEmail, kHomeUser, kIp, kHost, kUserWord };

RedactLevel level_of(Family f) {
  if (f == kSecret) return RedactLevel::kSecrets;
  if (f == kEmail || f == kHomeUser || f == kUserWord) return RedactLevel::kPii;
  return RedactLevel::kAll;
}

// Whether a level masks a family of span.
bool masks(RedactLevel level, int family) {
  return level != RedactLevel::kNone && level_of(static_cast<Family>(family)) <= level;
}

bool is_alnum(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || is_digit(c); }
bool is_name_char(char c) { return is_alnum(c) || c == '_' || c == '-'; }
bool is_hex(char c) { return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }
bool is_upper(char c) { return c >= 'A' && c <= 'Z'; }
bool is_lower(char c) { return c >= 'a' && c <= 'z'; }

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    if (is_upper(c)) c = static_cast<char>(c - 'A' + 'a');
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

size_t offset(std::string_view text, std::string_view p) { return static_cast<size_t>(p.data() - text.data()); }

// ---- Predicates on names and values ----

// Public domains that name no one's infrastructure; masking them would only hide useful text.
bool public_domain(const std::string& host) {
  static const std::array<const char*, 32> kPublic = {
      "github.com",    "githubusercontent.com", "github.io",      "pytorch.org",    "python.org",
      "pypi.org",      "nvidia.com",            "wandb.ai",       "readthedocs.io", "microsoft.com",
      "google.com",    "docker.io",             "docker.com",     "nvcr.io",        "anaconda.org",
      "conda-forge.org", "stackoverflow.com",   "tensorflow.org", "ray.io",         "deepspeed.ai",
      "open-mpi.org",  "schedmd.com",           "kubernetes.io",  "k8s.io",         "gcr.io",
      "ghcr.io",       "quay.io",               "example.com",    "slack.com",      "huggingface.co",
      "openai.com",    "anthropic.com"};
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

// Whether a dotted name found by the domain pattern is a host rather than code (sklearn.cluster,
// tf.io, threading.local): generic TLDs and suffixes only networks use (mlflow.internal) always
// count; other internal-looking suffixes need three labels or a machine-like first label.
bool plausible_fqdn(const std::string& name) {
  if (public_domain(name)) return false;
  size_t dots = std::count(name.begin(), name.end(), '.');
  std::string_view tld = std::string_view(name).substr(name.rfind('.') + 1);
  static const std::array<const char*, 9> kAlways = {"com", "net", "org", "edu", "gov",
                                                     "internal", "intranet", "corp", "lan"};
  if (std::any_of(kAlways.begin(), kAlways.end(), [&](const char* t) { return tld == t; })) return true;
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

// Shannon entropy in bits per character.
double entropy(std::string_view s) {
  std::array<int, 256> n{};
  for (unsigned char c : s) ++n[c];
  double h = 0;
  for (int k : n)
    if (k) h -= k / double(s.size()) * std::log2(k / double(s.size()));
  return h;
}

// Upper- and lower-case letters and digits, all three: how generated secrets look.
bool mixes_case_and_digits(std::string_view v) {
  return std::any_of(v.begin(), v.end(), is_upper) && std::any_of(v.begin(), v.end(), is_lower) &&
         std::any_of(v.begin(), v.end(), is_digit);
}

// Whether a value looks generated rather than written: a long hex string, or mixed-case letters
// with digits and high entropy (base64 and friends). Names such as Llama-2-7b-hf rarely qualify.
bool looks_random(std::string_view v) {
  if (v.size() >= 32 && std::all_of(v.begin(), v.end(), is_hex)) return true;
  size_t seps = std::count_if(v.begin(), v.end(), [](char c) { return c == '-' || c == '.' || c == '/'; });
  return mixes_case_and_digits(v) && seps <= 2 && entropy(v) >= 3.5;
}

// ---- IP addresses ----

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

// Whether s[i] follows "IFACE:" as in NCCL's "Using [0]veth0:2a02:6b8::1<0>": a name that starts
// with a letter and is not itself part of a longer colon-separated run.
bool after_interface(std::string_view s, size_t i) {
  if (i < 2 || s[i - 1] != ':') return false;
  size_t b = i - 1;
  while (b > 0 && (is_name_char(s[b - 1]) || s[b - 1] == '.')) --b;
  if (b == i - 1 || !(is_lower(s[b]) || is_upper(s[b]))) return false;
  return b == 0 || (s[b - 1] != ':' && s[b - 1] != '.');
}

bool valid_ipv6(std::string_view run) {
  if (std::count(run.begin(), run.end(), ':') < 2 || run == "::" || run == "::1") return false;
  std::string z(run);
  unsigned char buf[16];
  return inet_pton(AF_INET6, z.c_str(), buf) == 1;
}

// IPv6 at s[i], validated by inet_pton; returns its length. "::" and "::1" are not masked. An
// unbracketed ":PORT" after the address (2001:db8::1:29500) is left out of it.
size_t ipv6_at(std::string_view s, size_t i) {
  if (i > 0 && (is_name_char(s[i - 1]) || s[i - 1] == ':' || s[i - 1] == '.') && !after_interface(s, i)) return 0;
  size_t j = i;
  while (j < s.size() && (is_hex(s[j]) || s[j] == ':' || s[j] == '.')) ++j;
  if (j < s.size() && is_name_char(s[j])) return 0;  // c10d::ProcessGroup, not an address
  std::string_view run = s.substr(i, j - i);
  while (!run.empty() && run.back() == '.') run.remove_suffix(1);
  if (run.size() >= 2 && run.back() == ':' && run[run.size() - 2] != ':') run.remove_suffix(1);
  if (valid_ipv6(run)) return run.size();
  size_t colon = run.rfind(':');
  if (colon == std::string_view::npos || colon + 1 == run.size()) return 0;
  std::string_view port = run.substr(colon + 1);
  if (!std::all_of(port.begin(), port.end(), is_digit)) return 0;
  return valid_ipv6(run.substr(0, colon)) ? colon : 0;
}

// Whether text[p, p+n) is a whole word (no name character right before or after it).
bool whole_word(std::string_view text, size_t p, size_t n) {
  if (p > 0 && is_name_char(text[p - 1])) return false;
  if (p + n < text.size() && is_name_char(text[p + n])) return false;
  return true;
}

// ---- Filters of regex matches (a Kind's `accept`) ----

// A match: `value` is the pattern's last group (what is masked or learned), `name` the group
// before it when there is one (the key that carried the value).
struct Match {
  std::string_view text, name, value;
};

// NAME=value: lower-case "*_token" names are also tokenizer settings (pad_token: <pad>), so
// there only values that look like credentials are masked.
bool accept_secret_name_value(const Match& m) {
  if (none_like(m.value)) return false;
  std::string lname = lower(m.name);
  bool env_style = std::none_of(m.name.begin(), m.name.end(), is_lower);
  bool explicit_secret = lname.find("key") != std::string::npos || lname.find("secret") != std::string::npos ||
                         lname.find("pass") != std::string::npos;
  return env_style || explicit_secret || m.value.size() >= 8;
}

// An option's argument: not another option, and not a number (--max-token 512).
bool accept_flag_value(const Match& m) {
  return !none_like(m.value) && m.value.front() != '-' && !std::all_of(m.value.begin(), m.value.end(), is_digit);
}
bool accept_random_value(const Match& m) { return !none_like(m.value) && looks_random(m.value); }
// A PEM body line: base64 with both cases and digits, denser than hex can be (a hex digest, at most
// 4 bits a character, is left alone).
bool accept_pem_body_line(const Match& m) { return mixes_case_and_digits(m.value) && entropy(m.value) >= 4.3; }
bool accept_path_user(const Match& m) { return m.value != "." && m.value != ".."; }
bool accept_prefix_host(const Match& m) { return m.value.size() >= 2; }

bool accept_named_host(const Match& m) { return plausible_learned_host(m.value) && !public_domain(lower(m.value)); }

// A dotted name that is a host, not code: not a call, not part of a longer dotted name.
bool accept_domain(const Match& m) {
  size_t begin = offset(m.text, m.value), end = begin + m.value.size();
  const std::string_view t = m.text;
  if (end < t.size() && t[end] == '(') return false;
  if (end + 1 < t.size() && t[end] == '.' && is_alnum(t[end + 1])) return false;
  if (begin > 0 && t[begin - 1] == '.') return false;
  return plausible_fqdn(lower(m.value));
}

// ---- Detectors that are not one regex (a Kind's `scan`) ----

void scan_ipv4(std::string_view text, const Learned&, std::vector<Span>& spans) {
  for (size_t i = 0; i < text.size(); ++i) {
    if (!is_digit(text[i])) continue;
    if (size_t n = ipv4_at(text, i)) {
      std::string ip(text.substr(i, n));
      if (!reserved_ipv4(ip)) spans.push_back({i, i + n, kIp, ip});
      i += n - 1;
    }
  }
}

void scan_ipv6(std::string_view text, const Learned&, std::vector<Span>& spans) {
  for (size_t i = 0; i < text.size(); ++i) {
    if (!is_hex(text[i]) && text[i] != ':') continue;
    if (size_t n = ipv6_at(text, i)) {
      spans.push_back({i, i + n, kIp, std::string(text.substr(i, n))});
      i += n - 1;
    }
  }
}

// Known hosts as whole words, case-insensitively; longest names first so that
// gpu-3.cluster.local is one span rather than gpu-3 plus a leftover domain.
void scan_known_hosts(std::string_view text, const Learned& l, std::vector<Span>& spans) {
  if (l.hosts_by_length.empty()) return;
  std::string ltext = lower(text);
  for (const std::string& h : l.hosts_by_length)
    for (size_t pos = ltext.find(h); pos != std::string::npos; pos = ltext.find(h, pos + 1))
      if (whole_word(ltext, pos, h.size())) spans.push_back({pos, pos + h.size(), kHost, h});
}

// Calls f(pos) for each whole-word occurrence of every known, non-generic user name.
template <class F>
void for_each_user_word(std::string_view text, const Learned& l, F&& f) {
  for (const std::string& u : l.users) {
    if (u.size() < 3 || generic_account(u)) continue;
    for (size_t pos = text.find(u); pos != std::string_view::npos; pos = text.find(u, pos + 1))
      if (whole_word(text, pos, u.size())) f(u, pos);
  }
}

// Outside home paths a user name is masked as a word, but not as a path or module component
// (mmengine/runner/runner.py), which scan_users_under_roots handles.
void scan_user_words(std::string_view text, const Learned& l, std::vector<Span>& spans) {
  for_each_user_word(text, l, [&](const std::string& u, size_t pos) {
    size_t end = pos + u.size();
    bool after_sep = pos > 0 && (text[pos - 1] == '/' || text[pos - 1] == '.');
    bool before_sep = end < text.size() &&
                      (text[end] == '/' || (text[end] == '.' && end + 1 < text.size() && is_alnum(text[end + 1])));
    if (!after_sep && !before_sep) spans.push_back({pos, end, kUserWord, u});
  });
}

// Whether the path holding text[pos] is absolute and starts at a shared filesystem root, where
// clusters give each user a directory (/scratch/NAME, /lustre/fs1/NAME, /pscratch/sd/a/NAME).
bool under_shared_root(std::string_view text, size_t pos) {
  size_t b = pos;
  while (b > 0 && text[b - 1] != ' ' && text[b - 1] != '\t' && text[b - 1] != '"' && text[b - 1] != '\'' &&
         text[b - 1] != '=' && text[b - 1] != '(' && text[b - 1] != ',')
    --b;
  if (b >= pos || text[b] != '/') return false;
  std::string_view root = text.substr(b + 1, pos - b - 1);
  root = root.substr(0, root.find('/'));
  while (!root.empty() && is_digit(root.back())) root.remove_suffix(1);
  static const std::array<const char*, 22> kRoots = {
      "scratch", "pscratch", "gscratch", "lscratch", "localscratch", "work", "lustre", "gpfs", "fsx", "efs", "nfs",
      "data", "project", "projects", "proj", "p", "mnt", "tmp", "nobackup", "shared", "global", "vast"};
  return std::any_of(kRoots.begin(), kRoots.end(), [&](const char* r) { return root == r; });
}

void scan_users_under_roots(std::string_view text, const Learned& l, std::vector<Span>& spans) {
  for_each_user_word(text, l, [&](const std::string& u, size_t pos) {
    if (pos > 0 && text[pos - 1] == '/' && under_shared_root(text, pos))
      spans.push_back({pos, pos + u.size(), kHomeUser, u});
  });
}

// ---- The table of kinds ----

// What a match teaches the run: a user or host name is then masked wherever it appears again.
enum class Learns { kNothing, kUser, kHost };
using Accept = bool (*)(const Match&);
using Scan = void (*)(std::string_view, const Learned&, std::vector<Span>&);

struct Kind {
  RedactKind doc;
  Family family;
  std::vector<const char*> patterns;  // RE2: the last group is the value, a group before it the name
  Accept accept;                      // nullptr: every match
  Learns learns;
  bool mask_match;  // false: a match only teaches a name, and the known-host scan masks it
  Scan scan;        // a detector that is not one regex
};

constexpr Learns kNoLearn = Learns::kNothing;

// Secrets: the value is replaced, the name that carried it stays.
std::vector<Kind> secret_kinds() {
  return {
      {{"secret-name-value", "key-value names", {}, "the value of a secret-like name: NAME=value, NAME: value, \"Name\": \"value\" (*_API_KEY, *TOKEN, *_SECRET_*, *PASSWORD*, PGPASSWORD, SecretAccessKey, accessToken, SessionToken)",
        "the variables and files the tools read: HF_TOKEN (huggingface_hub), WANDB_API_KEY, AWS credentials file and STS JSON (SecretAccessKey, SessionToken), PGPASSWORD (libpq docs, Environment Variables); gitleaks generic-api-key rule",
        {{"WANDB_API_KEY=0123456789abcdef0123456789abcdef01234567", "0123456789abcdef0123456789abcdef01234567"},
         {"export PGPASSWORD=pgS3cretValue9", "pgS3cretValue9"},
         {"DB_SECRET_VALUE=Az7QclientSecret99 python train.py", "Az7QclientSecret99"},
         {"{\"SecretAccessKey\": \"wJalrXUtnFEMIK7MDENGbPxRfiCYSECRETKEY2\"}", "wJalrXUtnFEMIK7MDENGbPxRfiCYSECRETKEY2"},
         {"{\"accessToken\": \"ya29AfH6SMBaccessTokenValue\"}", "ya29AfH6SMBaccessTokenValue"},
         {"\"SessionToken\": \"FwoGZXIvYXdzEBYaDSessionTokenValue123\",", "FwoGZXIvYXdzEBYaDSessionTokenValue123"},
         {"AZURE_STORAGE_ACCOUNT_KEY=c2VjcmV0S2V5Rm9yQXp1cmVTdG9yYWdl", "c2VjcmV0S2V5Rm9yQXp1cmVTdG9yYWdl"},
         {"db password: hunter2", "hunter2"}},
        {"pad_token: <pad>, eos_token=</s>, max_tokens=256, num_tokens: 1024", "TOKENIZERS_PARALLELISM=false HF_TOKEN=None",
         "/etc/passwd: No such file or directory", "PWD=/opt/train OLDPWD=/opt", "pad_token_id: 0"}},
       kSecret,
       {R"((?i)(?:^|[^a-z0-9_/.-])([a-z0-9_-]*(?:api[_-]?key|apikey|token|secret[_-]?key|access[_-]?key|account[_-]?key|private[_-]?key|(?:secret|password|passwd)(?:[_-][a-z0-9_-]*)?))["']?[ \t]*[=:][ \t]*["']?([^\s"',;&}\])]+))"},
       accept_secret_name_value, kNoLearn, true, nullptr},
      {{"secret-cli-flag", "key-value names", {}, "the argument of a secret-carrying option: --password X, --pass X, --token X, --api-key X, docker login -p X",
        "the options of psql/mysql/redis-cli (--pass), huggingface-cli login --token, docker login --password/-p (their --help)",
        {{"python train.py --password Hunter2Secret --lr 3e-4", "Hunter2Secret"},
         {"redis-cli -h cache --pass 'r3dis-Pw0rd' ping", "r3dis-Pw0rd"},
         {"docker login -u bob -p dckr_pat_AbCdEf0123456789 registry.example.com", "dckr_pat_AbCdEf0123456789"}},
        {"docker login --password-stdin registry.example.com", "train.py --max-token 512 --token-budget 4096",
         "--password-file /run/secrets/db"}},
       kSecret,
       {R"((?i)(?:^|[\s"'])(--?(?:[a-z0-9]+-)*(?:password|passwd|pass|token|api-key|apikey|secret|access-key|secret-key|auth-token))[ \t]+["']?([^\s"']+))",
        R"(\b(?:docker|podman|nerdctl|skopeo|buildah)\s+login\b[^\n]*?\s(-p)\s+["']?([^\s"']+))"},
       accept_flag_value, kNoLearn, true, nullptr},
      {{"wandb-login", "key-value names", {}, "the API key of `wandb login KEY`",
        "W&B CLI reference: wandb login [OPTIONS] [KEY]",
        {{"wandb login 0123456789abcdef0123456789abcdef0badc0de", "0123456789abcdef0123456789abcdef0badc0de"},
         {"$ wandb login --relogin 9f8e7d6c5b4a39281706f5e4d3c2b1a0aabbccdd", "9f8e7d6c5b4a39281706f5e4d3c2b1a0aabbccdd"}},
        {"wandb login", "wandb: Currently logged in as: ml-team (use `wandb login --relogin` to force relogin)"}},
       kSecret, {R"(\bwandb\s+login\s+(?:--?[a-z-]+(?:=\S+)?\s+)*([A-Za-z0-9_-]{20,}))"}, nullptr, kNoLearn, true, nullptr},
      {{"url-credentials", "URL credentials", {}, "user:password@ and :password@ in a URL",
        "RFC 3986 §3.2.1 (userinfo); redis-py and Celery URLs (redis://:password@host)",
        {{"pull https://bob:pa55w0rd@registry.example.com/v2", "pa55w0rd"},
         {"broker redis://:r3disPassw0rd@cache-01:6379/0", "r3disPassw0rd"},
         {"postgresql://mlflow:Pg-S3cret@db.internal:5432/mlflow", "Pg-S3cret"}},
        {"see https://github.com/pytorch/pytorch/issues/1 and https://pytorch.org/docs", "listening on http://[::1]:8080/metrics"}},
       kSecret, {R"(\b[A-Za-z][A-Za-z0-9+.-]*://([^\s/:@]*:[^\s/@]*|[^\s/:@]+)@)"}, nullptr, kNoLearn, true, nullptr},
  };
}

// A secret found by its own shape (no name before it, nothing learned): a kind of `category`.
auto shaped_secret(const char* category) {
  return [category](const char* name, const char* masks, const char* source, std::vector<RedactSample> pos,
                    std::vector<const char*> neg, std::vector<const char*> patterns) {
    return Kind{{name, category, {}, masks, source, std::move(pos), std::move(neg)},
                kSecret, std::move(patterns), nullptr, kNoLearn, true, nullptr};
  };
}

// Token formats that carry their vendor's prefix, found without a name.
std::vector<Kind> token_kinds() {
  auto token = shaped_secret("token prefixes");
  return {
      token("hugging-face-token", "Hugging Face user access tokens (hf_…) and org tokens (api_org_…)",
            "huggingface.co/docs/hub/security-tokens",
            {{"token hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789 used", "hf_AbCdEfGhIjKlMnOpQrStUvWxYz0123456789"}},
            {"loading hf_hub_download from huggingface_hub"},
            {R"(\b(hf_[A-Za-z0-9]{30,}))", R"(\b(api_org_[A-Za-z0-9]{30,}))"}),
      token("github-token", "GitHub tokens: ghp_, gho_, ghu_, ghs_, ghr_ and fine-grained github_pat_",
            "GitHub Docs, About authentication to GitHub: GitHub's token formats",
            {{"remote: ghp_0123456789abcdefghijABCDEFGHIJ0123456789", "ghp_0123456789abcdefghijABCDEFGHIJ0123456789"},
             {"pat github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz", "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz"}},
            {"ghp_short is not a token"}, {R"(\b(gh[pousr]_[A-Za-z0-9]{30,}))", R"(\b(github_pat_[A-Za-z0-9_]{30,}))"}),
      token("gitlab-token", "GitLab tokens: glpat-, glptt-, gldt-, glrt-, … ", "GitLab Docs, Token overview: token prefixes",
            {{"CI_JOB glpat-AbCdEfGhIjKlMnOpQrSt12", "glpat-AbCdEfGhIjKlMnOpQrSt12"}}, {"gl-pat config"},
            {R"(\b(gl(?:pat|ptt|dt|rt|cbt|oas|ffct|soat|imt|agent)-[A-Za-z0-9_-]{20,}))"}),
      token("slack-token", "Slack tokens: xoxb-, xoxp-, xoxa-, xoxo-, xoxs-, xoxr- and app-level xapp-",
            "Slack API docs, Token types",
            {{"slack xoxb-123456789012-abcdefABCDEF done", "xoxb-123456789012-abcdefABCDEF"},
             {"token xapp-1-A0123456789-1234567890123-abcdef0123456789abcdef", "xapp-1-A0123456789-1234567890123-abcdef0123456789abcdef"}},
            {"xoxo-hugs and xapp-config"}, {R"(\b(xox[abposr]-[A-Za-z0-9-]{10,}))", R"(\b(xapp-\d+-[A-Za-z0-9-]{10,}))"}),
      token("slack-webhook", "Slack incoming-webhook URLs", "Slack API docs, Sending messages using incoming webhooks",
            {{"post https://hooks.slack.com/services/T000/B000/XXXXXXXX", "T000/B000/XXXXXXXX"}},
            {"see https://api.slack.com/messaging/webhooks"}, {R"((https://hooks\.slack\.com/services/[A-Za-z0-9_/-]+))"}),
      token("openai-style-key", "OpenAI and Anthropic style API keys: sk-, sk-proj-, sk-ant-",
            "OpenAI API reference, Authentication; Anthropic API docs (x-api-key)",
            {{"key sk-proj-abcdefghijklmnopqrstuvwxyz012345 set", "sk-proj-abcdefghijklmnopqrstuvwxyz012345"},
             {"using sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWx", "sk-ant-api03-AbCdEfGhIjKlMnOpQrStUvWx"}},
            {"sk-learn 1.4.2 installed"}, {R"(\b(sk-(?:proj-|ant-|svcacct-|admin-)?[A-Za-z0-9_-]{20,}))"}),
      token("aws-access-key-id", "AWS access key ids: AKIA…, ASIA…, and the other IAM id prefixes",
            "AWS IAM User Guide, IAM identifiers: unique identifier prefixes",
            {{"key AKIAIOSFODNN7EXAMPLE in env", "AKIAIOSFODNN7EXAMPLE"},
             {"{\"AccessKeyId\": \"ASIAIOSFODNN7EXAMPL3\"}", "ASIAIOSFODNN7EXAMPL3"}},
            {"AKIA is a prefix; AKIAIOSFODNN7EXAMPLEEXTRA is too long"},
            {R"(\b((?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AIPA|ANPA|ANVA|APKA|AROA|ASCA)[A-Z0-9]{16})\b)"}),
      token("google-api-key", "Google API keys (AIza…)", "Google Cloud docs, Manage API keys",
            {{"key=AIzaSyA1b2C3d4E5f6G7h8I9j0KlMnOpQrStUvW&q=1", "AIzaSyA1b2C3d4E5f6G7h8I9j0KlMnOpQrStUvW"}},
            {"AIza is short"}, {R"(\b(AIza[0-9A-Za-z_-]{35}))"}),
      token("jwt", "JSON Web Tokens (three base64url parts, the first eyJ…)", "RFC 7519 §3 (JWS compact serialization)",
            {{"id eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhbGljZSJ9.c2lnbmF0dXJlLXNpZ25hdHVyZQ ok",
              "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhbGljZSJ9.c2lnbmF0dXJlLXNpZ25hdHVyZQ"}},
            {"eyJ alone"}, {R"(\b(eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}))"}),
      token("bearer-token", "bearer, basic and token credentials of an Authorization header",
            "RFC 6750 §2.1 (Bearer), RFC 7617 (Basic), RFC 9110 §11.6.2 (Authorization)",
            {{"Authorization: Bearer abc.def-ghi_jkl", "abc.def-ghi_jkl"},
             {"curl -H 'Authorization: token gh0123456789abcdef'", "gh0123456789abcdef"}},
            {"Authorization failed for user, the bearer of bad news"},
            {R"((?i)\bbearer\s+([A-Za-z0-9._~+/-]{8,}=*))",
             R"((?i)\bauthorization["']?\s*[:=]\s*["']?(?:basic|token|bearer)?\s*([A-Za-z0-9._~+/-]{8,}=*))"}),
  };
}

// Signatures and credentials in the query of a pre-signed URL.
std::vector<Kind> cloud_kinds() {
  auto signed_url = shaped_secret("cloud signatures");
  return {
      signed_url("aws-signed-url", "X-Amz-Signature=, X-Amz-Credential=, X-Amz-Security-Token= and SigV2 Signature= query values",
                 "Amazon S3 API Reference, Authenticating Requests: Using Query Parameters (SigV4); SigV2 query-string authentication",
                 {{"GET /ckpt?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Signature=4f9c2a7e1b3d5f60718293a4b5c6d7e8 403",
                   "4f9c2a7e1b3d5f60718293a4b5c6d7e8"},
                  {"?X-Amz-Credential=AKIDEXAMPLE%2F20240101%2Fus-east-1%2Fs3%2Faws4_request&X-Amz-Date=20240101T000000Z",
                   "AKIDEXAMPLE%2F20240101"},
                  {"/o?AWSAccessKeyId=AKIDEXAMPLE&Expires=1700000000&Signature=vjbyPxybdZaNmGa%2ByT272YEAiv4%3D", "vjbyPxybdZaNmGa"}},
                 {"?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Expires=3600"},
                 {R"((?i)[?&]X-Amz-(?:Signature|Credential|Security-Token)=([^&\s"'#]+))", R"([?&]Signature=([^&\s"'#]+))"}),
      signed_url("azure-sas", "the sig= of an Azure shared access signature", "Microsoft Learn, Create a service SAS (the signature field, sig)",
                 {{"GET /c/b?sv=2022-11-02&sr=b&sp=r&sig=AbCdEfGhIjKlMn0pQrStUvWxYz%2B1234567890abcdEF%3D 403",
                   "AbCdEfGhIjKlMn0pQrStUvWxYz"}},
                 {"?sv=2022-11-02&se=2024-01-01&sr=b&sp=r 403 after signal=15"}, {R"([?&]sig=([^&\s"'#]+))"}),
      signed_url("gcs-signed-url", "X-Goog-Signature= and X-Goog-Credential= query values",
                 "Google Cloud Storage docs, Signed URLs (V4 signing process)",
                 {{"GET /b/o?X-Goog-Algorithm=GOOG4-RSA-SHA256&X-Goog-Signature=8a7b6c5d4e3f2a1b0c9d8e7f6a5b4c3d",
                   "8a7b6c5d4e3f2a1b0c9d8e7f6a5b4c3d"}},
                 {"?X-Goog-Algorithm=GOOG4-RSA-SHA256&X-Goog-Expires=900"},
                 {R"((?i)[?&]X-Goog-(?:Signature|Credential)=([^&\s"'#]+))"}),
  };
}

std::vector<Kind> key_material_kinds() {
  return {
      {{"pem-private-key", "PEM blocks", {}, "a PEM private key block from BEGIN to END (or to the end of the text), also inside a JSON value with literal \\n escapes",
        "RFC 7468 §10-11 (PKCS #8), OpenSSH PROTOCOL.key, RFC 4880 §6.2 (PGP armor); Google service-account JSON (private_key)",
        {{"{\"type\": \"service_account\", \"private_key\": \"-----BEGIN PRIVATE KEY-----\\nMIIEvQIBADANBgkqhkiG9w0BAQEFAASC\\n-----END PRIVATE KEY-----\\n\"}",
          "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC"},
         {"-----BEGIN OPENSSH PRIVATE KEY----- b3BlbnNzaC1rZXktdjEAAAAABG5vbmU", "b3BlbnNzaC1rZXktdjEAAAAABG5vbmU"}},
        {"-----BEGIN CERTIFICATE----- MIIBszCCAVmgAwIBAgIU -----END CERTIFICATE-----"}},
       kSecret,
       {R"((-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----(?s:.*?)(?:-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|$)))"},
       nullptr, kNoLearn, true, nullptr},
      {{"pem-body-line", "PEM blocks", {},
        "a line of a PEM body on its own, without its BEGIN line in the text (a key printed one line per log record): 64 base64 characters, the width PEM fixes, dense enough not to be a hex digest",
        "RFC 7468 §2 (base64 lines of exactly 64 characters but the last)",
        {{"[rank0]: MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7VJTUt9Us8cKj",
          "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCBKcwggSjAgEAAoIBAQC7VJTUt9Us8cKj"},
         {"k3Lm9QpR2sT8vW1xY4zA6bC0dE5fG7hJ+nP/qU3rS9tV2wX8yZ1aB4cD6eF0gH7i", "k3Lm9QpR2sT8vW1xY4zA6bC0dE5fG7hJ+nP/qU3rS9tV2wX8yZ1aB4cD6eF0gH7i"}},
        {"sha256: e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855",
         "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
         "/scratch/run/checkpoints/global_step1000/mp_rank_00_model_states.pt"}},
       kSecret,
       {R"((?m)(?:^|[\s:>|\]"'])([A-Za-z0-9+/]{64})(?:["']|\\n|[ \t]*$))"},
       accept_pem_body_line, kNoLearn, true, nullptr},
      {{"secret-high-entropy", "high-entropy values after secret-like keys", {},
        "a generated-looking value (32+ hex digits, or mixed case with digits and 3.5+ bits/char) after a credential-like name: *AUTH*, *CREDENTIAL*, *COOKIE*, *SIGNATURE*, *SALT*, *PASSPHRASE*, *PRIVATE*, *LICENSE*, *_KEY",
        "the gitleaks and detect-secrets approach (a keyword, then an entropy threshold on the value)",
        {{"MLFLOW_TRACKING_AUTH=Zx8Qw3Lm9Tp2Vb7Nc4Rd6Sf1", "Zx8Qw3Lm9Tp2Vb7Nc4Rd6Sf1"},
         {"\"client_credential\": \"pQ7rS9tU1vW3xY5zA8bC0dE2\"", "pQ7rS9tU1vW3xY5zA8bC0dE2"},
         {"DD_APP_KEY=9f8e7d6c5b4a39281706f5e4d3c2b1a0", "9f8e7d6c5b4a39281706f5e4d3c2b1a0"}},
        {"auth_method: password", "CACHE_KEY=step_000123_resnet50", "license: Apache-2.0",
         "author: Meta-Llama-3-8B-Instruct"}},
       kSecret,
       {R"((?i)(?:^|[^a-z0-9])([a-z0-9_-]*(?:auth|credentials?|creds?|cookie|signature|salt|passphrase|private|license)[a-z0-9_-]*)["']?[ \t]*[=:][ \t]*["']?([A-Za-z0-9+/=_~.-]{16,}))",
        R"((?:^|[^A-Za-z0-9_])([A-Z0-9_]*_KEY(?:_[A-Z0-9]+)*)=["']?([A-Za-z0-9+/=_~.-]{16,}))"},
       accept_random_value, kNoLearn, true, nullptr},
  };
}

// Personal data: e-mail addresses and user names (a user name found once is masked everywhere).
std::vector<Kind> personal_kinds() {
  return {
      {{"email", "e-mail addresses", {}, "e-mail addresses (-> [email])", "RFC 5322 §3.4.1 addr-spec (the common dot-atom subset)",
        {{"mail alice.smith@example-corp.com now", "alice.smith@example-corp.com"}},
        {"@torch.no_grad() decorated eval_step", "pip install torch==2.3.0+cu121"}},
       kEmail,
       {R"(([A-Za-z0-9._%+-]+@[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*\.[A-Za-z]{2,})\b)"},
       nullptr, kNoLearn, true, nullptr},
      {{"home-path-user", "user paths", {}, "the user of a home directory: /home/NAME, /home2/NAME, /homes/NAME, /global/homes/X/NAME, /Users/NAME, C:\\Users\\NAME",
        "FHS 3.0 §3.8 (/home); NERSC global homes (/global/homes/<initial>/<user>); macOS /Users; Windows C:\\Users",
        {{"File \"/home/alice/project/train.py\", line 3", "alice"},
         {"saving to /home2/bobby/ckpt", "bobby"},
         {"runs in /global/homes/t/carolx/runs", "carolx"},
         {"/Users/frankz/Library and C:\\Users\\carolw\\x", "frankz"}},
        {"reading /homework/data and /usr/share/home.txt"}},
       kHomeUser, {R"((?:/(?:home\d*|homes|Users|users|global/homes/[a-z0-9])/|(?i:[a-z]:\\+users\\+))([A-Za-z0-9._-]+))"},
       accept_path_user, Learns::kUser, true, nullptr},
      {{"relative-home-path", "user paths", {}, "the user of a relative home path: home/NAME/… (archive members, paths printed relative to /)",
        "archive member names (GNU tar strips the leading /: tar manual, Absolute File Names)",
        {{"extracting home/erinq/data/train.bin", "erinq"}}, {"see the home/ page, homework/ and ./homepage/x"}},
       kHomeUser, {R"((?:^|[\s"'=:(\[,])(?:\./)?home\d*/([A-Za-z0-9._-]+)/)"}, accept_path_user, Learns::kUser, true, nullptr},
      {{"tilde-user", "user paths", {}, "~NAME, another user's home directory", "POSIX XCU §2.6.1, Tilde Expansion (~login)",
        {{"see ~davey/notes", "davey"}}, {"cache in ~/.cache/huggingface, took ~1.5 GB, approx ~ 3"}},
       kHomeUser, {R"((?:^|[\s"'=:(\[,])~([A-Za-z_][A-Za-z0-9._-]*)(?:/|$|[\s"',)\]]))"}, nullptr, Learns::kUser, true, nullptr},
      {{"user-variable", "user paths", {}, "USER=, LOGNAME=, USERNAME=, SLURM_JOB_USER=, PBS_O_LOGNAME= values",
        "POSIX XBD §8.3 (LOGNAME, USER); Slurm sbatch (SLURM_JOB_USER); PBS (PBS_O_LOGNAME)",
        {{"launched with USER=gracez", "gracez"}}, {"MY_USER=x USERNAME_FIELD=email"}},
       kHomeUser,
       {R"((?:^|[^A-Za-z0-9_])(?:USER|LOGNAME|USERNAME|SLURM_JOB_USER|PBS_O_LOGNAME)=["']?([A-Za-z0-9._-]+))"},
       accept_path_user, Learns::kUser, true, nullptr},
      {{"user-shared-path", "user paths", {}, "a known user name as a directory of an absolute path under a shared filesystem root: /scratch/NAME, /lustre/fs1/NAME, /pscratch/sd/a/NAME, /tmp/NAME",
        "HPC centre layouts: NERSC $SCRATCH (/pscratch/sd/<i>/<user>), TACC /scratch/<group>/<user>, OLCF /lustre/orion/<proj>/scratch/<user>",
        {{"cd /home/alicez/project && ls /scratch/alicez/data", "alicez"},
         {"/home/henryq/x then /lustre/fs1/henryq/ckpt", "henryq"}},
        {"/scratch/shared/datasets/imagenet"}},
       kHomeUser, {}, nullptr, kNoLearn, true, scan_users_under_roots},
      {{"user-word", "user paths", {}, "a known user name as a word anywhere else (not generic accounts such as runner, ubuntu, root)",
        "the names the kinds above learned",
        {{"/home/ivanz/x owned by ivanz", "ivanz"}}, {"mmengine/runner/runner.py"}},
       kUserWord, {}, nullptr, kNoLearn, true, scan_user_words},
  };
}

// Addresses and host names: kept at --redact=pii (the node to drain), masked at all.
std::vector<Kind> address_kinds() {
  auto learn_host = [](const char* name, const char* masks, const char* source, std::vector<RedactSample> pos,
                       std::vector<const char*> neg, std::vector<const char*> patterns, Accept accept) {
    return Kind{{name, "host names", {}, masks, source, std::move(pos), std::move(neg)},
                kHost, std::move(patterns), accept, Learns::kHost, false, nullptr};
  };
  return {
      {{"ipv4", "addresses", {}, "IPv4 addresses (not 127.*, 0.0.0.0, 255.255.255.255)", "RFC 791 dotted quad; RFC 1122 §3.2.1.3 (loopback)",
        {{"Connect to 10.10.1.21<41227> failed", "10.10.1.21"}, {"Bootstrap : Using eth0:10.10.1.22<0>", "10.10.1.22"}},
        {"listening on localhost:29500 and 127.0.0.1:29500, bound to 0.0.0.0", "NCCL version 2.20.5, cuDNN 8.9.2, build 1.2.3.4.5"}},
       kIp, {}, nullptr, kNoLearn, true, scan_ipv4},
      {{"ipv6", "addresses", {}, "IPv6 addresses, also after an interface name (NCCL's [0]veth0:ADDR<0>), in brackets and before an unbracketed :PORT (not :: or ::1)",
        "RFC 4291 §2.2, RFC 5952 §6 ([ADDR]:PORT); NCCL's \"NET/Socket : Using [0]IFACE:ADDR<PORT>\"",
        {{"NET/Socket : Using [0]veth0:2a02:6b8:c0e:500:1:0:0:1a2<0>", "2a02:6b8:c0e:500:1:0:0:1a2"},
         {"MASTER [2001:db8::1]:29500", "2001:db8::1"},
         {"peer 2001:db8:0:0:1:0:0:2:29500", "2001:db8:0:0:1:0:0:2"},
         {"ib0 fe80::1ff:fe23:4567:890a%eth0", "fe80::1ff:fe23:4567:890a"}},
        {"c10d::ProcessGroupNCCL::allreduce and std::vector<int>::iterator", "[::1]:80 and step 10:02:41.300 at 10:02:41:123"}},
       kIp, {}, nullptr, kNoLearn, true, scan_ipv6},
      learn_host("log-prefix-host", "the host of a line prefix: NCCL's HOST:PID:TID [DEV], syslog's MMM DD HH:MM:SS HOST IDENT:",
                 "NCCL debug output (NCCL_DEBUG=INFO); RFC 3164 §4.1.2 (syslog HEADER)",
                 {{"gpu-a17:21788:21788 [0] NCCL INFO Bootstrap", "gpu-a17"},
                  {"Feb  8 14:21:37 epyc-ws kernel: Xid 79", "epyc-ws"}},
                 {"NCCL INFO cudaDriverVersion 12040"},
                 {R"((?:^|[\s\]:])([A-Za-z][A-Za-z0-9_.-]*):\d+:\d+ \[\d+\])",
                  R"((?:^|\s)[A-Z][a-z]{2} +\d{1,2} \d\d:\d\d:\d\d ([A-Za-z][A-Za-z0-9_.-]*) [A-Za-z][\w./-]*(?:\[\d+\])?:)"},
                 accept_prefix_host),
      learn_host("named-host", "a host the log names: host=, hostname:, MASTER_ADDR=, \"host X\", \"srun: error: HOST:\", \"Node failure on HOST\", \"JOB n ON HOST\", the host of a URL, AWS ip-a-b-c-d (with a digit, dash or dot)",
                 "torchrun/c10d (MASTER_ADDR), Slurm srun and slurmstepd messages, RFC 3986 §3.2.2 (URL host), EC2 private DNS names",
                 {{"MASTER_ADDR=gpu-node-01 torchrun", "gpu-node-01"},
                  {"srun: error: node017: task 3: Killed", "node017"},
                  {"ip-10-0-1-23.ec2.internal joined", "ip-10-0-1-23"},
                  {"broker at http://cache-01:6379/0", "cache-01"}},
                 {"host None; node failed; see https://pytorch.org/docs"},
                 {R"((?i)(?:^|[^a-z0-9_])(?:hostname|host|node|nodename|node_name|master_addr|master|coordinator_address)["']?[ \t]*[=:][ \t]*["']?([A-Za-z][A-Za-z0-9-]*(?:\.[A-Za-z0-9-]+)*))",
                  R"((?i)\b(?:host|node)\s+([A-Za-z][A-Za-z0-9-]*(?:\.[A-Za-z0-9-]+)*))",
                  R"(\bsrun: error: ([A-Za-z][A-Za-z0-9_.-]*): tasks?)", R"((?i)\bnode failure on ([A-Za-z][A-Za-z0-9_.-]*))",
                  R"(\*\*\* (?:JOB|STEP) [0-9.]+ ON ([A-Za-z][A-Za-z0-9_.-]*) )",
                  R"(\b(ip-\d{1,3}-\d{1,3}-\d{1,3}-\d{1,3}(?:\.[A-Za-z0-9-]+)*)\b)",
                  R"(\b[A-Za-z][A-Za-z0-9+.-]*://(?:[^\s/@]*@)?([A-Za-z][A-Za-z0-9-]*(?:\.[A-Za-z0-9-]+)*))"},
                 accept_named_host),
      learn_host("internal-domain", "domain names with a generic or internal suffix (.com, .net, .internal, .corp, .lan, .local, .cluster, .svc, …), bare ones such as mlflow.internal included, but not public project domains or code (sklearn.cluster)",
                 "RFC 6762 (.local), ICANN's reservation of .internal (2024), Kubernetes DNS (.svc, .cluster.local)",
                 {{"tracking at http://mlflow.internal:5000", "mlflow.internal"},
                  {"push to registry.corp.example.net", "registry.corp.example.net"}},
                 {"from sklearn.cluster import KMeans; tf.io.gfile.exists(p); threading.local()",
                  "see https://github.com/pytorch/pytorch/issues/1 and https://pytorch.org/docs"},
                 {R"((?i)\b([a-z0-9](?:[a-z0-9-]*[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]*[a-z0-9])?)*\.(?:com|net|org|edu|gov|io|ai|cloud|local|localdomain|internal|intranet|intra|lan|corp|cluster|svc))\b)"},
                 accept_domain),
      {{"known-host", "host names", {}, "every host learned (above, or from the job's rank attribution) and its short name, as a whole word, case-insensitively",
        "the names the kinds above learned and the hosts of the diagnosis' ranks",
        {{"gpu-node-02:1:1 [0] NCCL WARN x; later GPU-NODE-02 rebooted and gpu-node-02.corp.example.net", "gpu-node-02"}},
        {"gpu-node-021 is another node"}},
       kHost, {}, nullptr, kNoLearn, true, scan_known_hosts},
  };
}

// Every kind, with its level filled in from its family.
const std::vector<Kind>& kinds() {
  static const std::vector<Kind> all = [] {
    std::vector<Kind> k;
    for (auto part : {secret_kinds, token_kinds, cloud_kinds, key_material_kinds, personal_kinds, address_kinds})
      for (Kind& kind : part()) k.push_back(std::move(kind));
    for (Kind& kind : k) kind.doc.level = level_of(kind.family);
    return k;
  }();
  return all;
}

// The kinds' patterns, compiled once; compiled[i][j] is kinds()[i].patterns[j].
const std::vector<std::vector<std::unique_ptr<RE2>>>& compiled() {
  static const auto all = [] {
    // Latin-1: every byte is a character, so an invalid UTF-8 byte neither ends a value early
    // nor stops a PEM block short (the patterns are ASCII, so nothing else changes).
    RE2::Options latin1;
    latin1.set_encoding(RE2::Options::EncodingLatin1);
    std::vector<std::vector<std::unique_ptr<RE2>>> c;
    for (const Kind& k : kinds()) {
      c.emplace_back();
      for (const char* p : k.patterns) {
        c.back().push_back(std::make_unique<RE2>(p, latin1));
        if (!c.back().back()->ok()) throw std::logic_error(std::string("redact pattern of ") + k.doc.name + ": " + p);
      }
    }
    return c;
  }();
  return all;
}

// Calls f(kind, match) for every match of every pattern of the kinds `wanted` picks (learning
// and masking each run only the kinds they need) that passes its kind's filter.
template <class W, class F>
void for_each_match(std::string_view text, W&& wanted, F&& f) {
  const auto& res = compiled();
  for (size_t i = 0; i < kinds().size(); ++i) {
    const Kind& k = kinds()[i];
    if (!wanted(k)) continue;
    for (const auto& re : res[i])
      find_all(*re, text, [&](const auto& g) {
        size_t n = g.size() - 1;
        Match m{text, n >= 2 ? std::string_view(g[1].data(), g[1].size()) : std::string_view(),
                std::string_view(g[n].data(), g[n].size())};
        if (m.value.empty() || (k.accept && !k.accept(m))) return;
        f(k, m);
      });
  }
}

}  // namespace

const std::vector<const RedactKind*>& redact_kinds() {
  static const std::vector<const RedactKind*> docs = [] {
    std::vector<const RedactKind*> d;
    for (const Kind& k : kinds()) d.push_back(&k.doc);
    return d;
  }();
  return docs;
}

void Redactor::register_host(std::string_view host) {
  std::string key = lower(host);
  auto& hosts = learned_.hosts;
  if (key.empty() || key == "localhost" || hosts.count(key)) return;
  std::string label = key.substr(0, key.find('.'));
  std::string canonical = key;
  if (label != key) {
    // gpu-3.cluster.local and gpu-3 are one machine; a bare word (login.corp.com) is not aliased
    // because masking "login" everywhere would mangle the text.
    if (auto it = hosts.find(label); it != hosts.end()) canonical = it->second;
    else if (has_digit_or_dash(label) && !is_digit(label[0])) hosts[label] = key;
  }
  hosts[key] = canonical;
}

std::string Redactor::host_pseudonym(const std::string& name) {
  std::string key = lower(name);
  auto it = learned_.hosts.find(key);
  return hosts_.get(it == learned_.hosts.end() ? key : it->second);
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

void Redactor::learn_user(std::string_view user) {
  if (user != "." && user != "..") learned_.users.insert(std::string(user));
}

void Redactor::learn(std::string_view text) {
  if (text.empty()) return;
  auto teaches = [](const Kind& k) { return k.learns != Learns::kNothing; };
  for_each_match(text, teaches, [&](const Kind& k, const Match& m) {
    if (k.learns == Learns::kUser) learn_user(m.value);
    if (k.learns != Learns::kHost) return;
    std::string_view h = m.value;
    while (!h.empty() && (h.back() == '.' || h.back() == '-')) h.remove_suffix(1);
    if (!h.empty()) register_host(h);
  });
}

void Redactor::collect(std::string_view text, std::vector<Span>& spans) const {
  auto masked = [](const Kind& k) { return k.mask_match; };
  for_each_match(text, masked, [&](const Kind& k, const Match& m) {
    size_t b = offset(text, m.value);
    spans.push_back({b, b + m.value.size(), k.family, std::string(m.value)});
  });
  for (const Kind& k : kinds())
    if (k.scan) k.scan(text, learned_, spans);
}

std::string Redactor::mask(std::string_view text) {
  learn(text);
  return mask_learned(text);
}

// The replacement of one span, counted.
std::string Redactor::replacement(const Span& s) {
  switch (s.family) {
    case kSecret: ++counts_.secrets; return "[REDACTED]";
    case kEmail: ++counts_.emails; return "[email]";
    case kHomeUser:
    case kUserWord: ++counts_.users; return users_.get(s.key);
    case kIp: ++counts_.ips; return ips_.get(lower(s.key));
    default: ++counts_.hosts; return host_pseudonym(s.key);
  }
}

std::string Redactor::mask_learned(std::string_view text) {
  if (text.empty()) return std::string(text);
  auto& by_length = learned_.hosts_by_length;
  if (by_length.size() != learned_.hosts.size()) {
    by_length.clear();
    for (const auto& [h, _] : learned_.hosts) by_length.push_back(h);
    std::stable_sort(by_length.begin(), by_length.end(),
                     [](const std::string& a, const std::string& b) { return a.size() > b.size(); });
  }
  std::vector<Span> spans;
  collect(text, spans);
  // Spans the level keeps still take part in the overlap rule below, so a host inside an e-mail
  // is neither masked as a host nor left to hide the e-mail: they are dropped only when printing.
  if (spans.empty()) return std::string(text);
  // Higher-priority families first; within a family, leftmost and then longest.
  std::stable_sort(spans.begin(), spans.end(), [](const Span& a, const Span& b) {
    if (a.family != b.family) return a.family < b.family;
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
    if (!masks(level_, s->family)) continue;  // kept by this level: copied with the text around it
    out.append(text.substr(pos, s->begin - pos));
    out += replacement(*s);
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

std::vector<std::string> hosts_revealed(const Diagnosis& d) {
  // Every host the attribution stage found (rank prefixes, syslog, NCCL, pdsh, file names).
  std::vector<std::string> hosts;
  for (const auto& rank : d.ranks) hosts.push_back(rank.host);
  auto add_evidence_host = [&](const std::optional<Evidence>& e) {
    if (e) hosts.push_back(e->host);
  };
  auto add_decision_hosts = [&](const RankDecision& dec) {
    hosts.push_back(dec.host);
    add_evidence_host(dec.first_evidence);
  };
  add_decision_hosts(d.initiating);
  for (const auto& e : d.evidence) hosts.push_back(e.host);
  for (const auto& rank : d.ranks) add_evidence_host(rank.first_event);
  add_evidence_host(d.first_error);
  if (d.launcher_first_failure) hosts.push_back(d.launcher_first_failure->line.host);
  if (d.suspect) add_decision_hosts(*d.suspect);
  for (const auto& h : d.action.exclude_hosts) hosts.push_back(h);
  return hosts;
}

void redact_texts(const std::vector<std::string>& hosts, const std::vector<std::string*>& texts, Redactor& r) {
  for (const auto& h : hosts) r.add_host(h);
  for (const std::string* s : texts) r.learn(*s);
  for (std::string* s : texts) *s = r.mask_learned(*s);
}

RedactCounts redact_diagnosis(Diagnosis& d, Redactor& r) {
  std::vector<std::string*> texts;
  for_each_text(d, [&](std::string& s) { texts.push_back(&s); });
  redact_texts(hosts_revealed(d), texts, r);
  return r.counts();
}

}  // namespace firstfault
