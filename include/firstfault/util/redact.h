#pragma once
// Masking at ingress (--redact). A Diagnosis is masked once, before any renderer sees it, so
// every output format is covered by construction. What is masked is a table of kinds
// (redact_kinds(), listed in docs/reliability.md "Masking"), each with its source and with lines
// it must mask and lines it must leave alone. In short:
//   secrets: secret-like names (NAME=value, "Name": "value", --password X, wandb login KEY),
//     URL credentials, vendor token prefixes, signed-URL signatures, PEM private keys and
//     high-entropy values after credential-like names                 -> [REDACTED]
//   e-mail addresses                                                   -> [email]
//   IPv4/IPv6 addresses (not loopback or 0.0.0.0)                      -> ip-1, ip-2, ...
//   hosts the job revealed (rank prefixes, NCCL "host:pid:tid", host=, URLs, "srun: error: HOST:")
//   and internal-looking domain names                                  -> host-1, host-2, ...
//   user names in home paths (/home/NAME, /home2/NAME, /global/homes/X/NAME, /Users/NAME, ~NAME,
//   home/NAME/ relative) and USER=NAME, and those names as words and under shared filesystem
//   roots (/scratch/NAME) elsewhere (not generic accounts such as runner) -> user-1, user-2, ...
// Pseudonyms are stable within one Redactor (one run), so ranks and nodes stay correlatable.
//
// Levels (--redact=LEVEL): `secrets` masks secrets only; `pii` also e-mail addresses and user
// names (personal data) but keeps host names and IP addresses, which on a cluster name the node
// to drain; `all` masks everything above. CI formats default to `pii` (docs/ci.md).
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "firstfault/correlator/diagnosis.h"

namespace firstfault {

enum class RedactLevel { kNone, kSecrets, kPii, kAll };

// "none", "secrets", "pii", "all" (nullopt for anything else), and back.
std::optional<RedactLevel> parse_redact_level(std::string_view name);
std::string_view redact_level_name(RedactLevel level);
// What the level masks, in words, for the outputs that say so.
std::string_view redact_level_what(RedactLevel level);

// A line of a kind's samples and the part of it that must not survive masking.
struct RedactSample {
  const char* line;
  const char* secret;
};

// One kind of sensitive text (the table in redact.cpp). The unit tests check every sample.
struct RedactKind {
  const char* name;
  const char* category;  // key-value names, URL credentials, token prefixes, ... (docs/reliability.md)
  RedactLevel level;     // the lowest level that masks it
  const char* masks;     // what it masks, in words
  const char* source;    // where the format it recognises is defined
  std::vector<RedactSample> positive;  // masked at `level` and above
  std::vector<const char*> negative;   // left unchanged by the whole redactor, at every level
};
const std::vector<const RedactKind*>& redact_kinds();

namespace redact_detail {
// A part of a text to replace; `family` picks the replacement and the level (see redact.cpp).
struct Span {
  size_t begin, end;
  int family;
  std::string key;
};
// What a run has learned so far: hosts and user names, masked wherever they appear again.
struct Learned {
  std::map<std::string, std::string> hosts;  // lower-case name or alias -> canonical name
  std::vector<std::string> hosts_by_length;  // hosts' keys, longest first (for matching)
  std::set<std::string> users;
};
}  // namespace redact_detail

struct RedactCounts {
  size_t secrets = 0, emails = 0, ips = 0, hosts = 0, users = 0;
  size_t total() const { return secrets + emails + ips + hosts + users; }
};

class Redactor {
 public:
  explicit Redactor(RedactLevel level = RedactLevel::kAll) : level_(level) {}
  RedactLevel level() const { return level_; }
  // A host name the job revealed; it is masked wherever it appears, as a whole word.
  void add_host(std::string_view host);
  // Learns hosts and user names from `text` without changing it.
  void learn(std::string_view text);
  // The masked text (learns from it first, so a standalone call is safe too).
  std::string mask(std::string_view text);
  const RedactCounts& counts() const { return counts_; }

 private:
  friend void redact_texts(const std::vector<std::string>& hosts, const std::vector<std::string*>& texts, Redactor& r);
  std::string mask_learned(std::string_view text);  // mask without learning (already done)
  using Span = redact_detail::Span;
  // Pseudonyms are numbered when first printed (or, for add_host, when added), so the numbers
  // follow the output and have no gaps for names that were learned but never shown.
  struct Pseudonyms {
    std::string prefix;
    std::map<std::string, std::string> names;
    std::string get(const std::string& key) {
      auto [it, inserted] = names.try_emplace(key);
      if (inserted) it->second = prefix + std::to_string(names.size());
      return it->second;
    }
  };
  void register_host(std::string_view host);
  std::string host_pseudonym(const std::string& name);
  void collect(std::string_view text, std::vector<Span>& spans) const;

  void learn_user(std::string_view user);
  std::string replacement(const Span& s);
  redact_detail::Learned learned_;
  Pseudonyms hosts_{"host-", {}}, ips_{"ip-", {}}, users_{"user-", {}};
  RedactCounts counts_;
  RedactLevel level_;
};

// Masks every log-derived string of `d` in place: first learns the hosts the job revealed (in
// rank order, so host-1 is the lowest rank's node) and everything the text reveals, then masks.
RedactCounts redact_diagnosis(Diagnosis& d, Redactor& r);

// redact_diagnosis() in two steps, for a diagnosis taken apart (triage masks a job's texts in job
// order, long after its Diagnosis was dropped): the hosts it reveals, in the order they are
// numbered, then the masking of its texts (for_each_text()'s, in its order) given those hosts.
std::vector<std::string> hosts_revealed(const Diagnosis& d);
void redact_texts(const std::vector<std::string>& hosts, const std::vector<std::string*>& texts, Redactor& r);

}  // namespace firstfault
