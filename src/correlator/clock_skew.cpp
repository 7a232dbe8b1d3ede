// Clocks: per-host offsets estimated from the moments every rank reports at once.
//
// A collective timeout fires on every rank that entered the collective within the same second
// or so (each watchdog counts the same timeout from its own enqueue), so the ranks of two hosts
// that report the same SeqNum and op report nearly the same moment: the difference between the
// hosts' earliest reports is their clocks' offset. The median over shared collectives is the
// estimate; under 2 s it is within the logs' one-second resolution and the lag between ranks,
// and is ignored. Events of a host with an offset are ordered on the reference clock.
#include <algorithm>
#include <map>

#include "firstfault/correlator/correlator.h"

namespace firstfault {

namespace {

constexpr int64_t kMinSkewMs = 2000;

bool wall_clock(const Timestamp& t) { return t.kind == Timestamp::kFull || t.kind == Timestamp::kNoYear; }

int64_t median(std::vector<int64_t> v) {
  std::sort(v.begin(), v.end());
  return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

}  // namespace

const std::string& Correlator::host_of(const Event& ev) const {
  if (!ev.host.empty() || ev.rank < 0) return ev.host;
  auto it = ranks_.find(ev.rank);
  return it == ranks_.end() ? ev.host : it->second.host;
}

int64_t Correlator::event_key(const Event& ev) const {
  int64_t key = time_key(ev.time);
  if (host_offset_ms_.empty() || !wall_clock(ev.time)) return key;
  auto it = host_offset_ms_.find(host_of(ev));
  return it == host_offset_ms_.end() ? key : key - it->second;
}

void Correlator::estimate_clock_skew() {
  host_offset_ms_.clear();
  clock_skew_.clear();
  auto def = lib_.find_pattern("nccl_watchdog_timeout");
  if (!def) return;
  // (SeqNum, op) -> host -> its ranks' earliest report.
  std::map<std::pair<std::string, std::string>, std::map<std::string, int64_t>> reports;
  std::map<std::string, size_t> collectives_seen;
  for (const Event& ev : events_by_def_[*def]) {
    const std::string& host = host_of(ev);
    const std::string *seq = ev.capture("seq"), *op = ev.capture("op");
    if (host.empty() || !seq || !op || !wall_clock(ev.time)) continue;
    auto& at = reports[{*seq, *op}];
    int64_t key = time_key(ev.time);
    auto [it, fresh] = at.emplace(host, key);
    if (fresh) ++collectives_seen[host];
    else it->second = std::min(it->second, key);
  }
  if (collectives_seen.size() < 2) return;
  // The reference: the host in most collectives (the first name on a tie).
  std::string reference = collectives_seen.begin()->first;
  for (const auto& [host, n] : collectives_seen)
    if (n > collectives_seen[reference]) reference = host;
  for (const auto& [host, n] : collectives_seen) {
    if (host == reference) continue;
    std::vector<int64_t> offsets;
    for (const auto& [collective, at] : reports)
      if (auto h = at.find(host), r = at.find(reference); h != at.end() && r != at.end())
        offsets.push_back(h->second - r->second);
    if (offsets.empty()) continue;
    int64_t offset = median(offsets);
    if (std::llabs(offset) < kMinSkewMs) continue;
    host_offset_ms_[host] = offset;
    clock_skew_.push_back({host, reference, offset, offsets.size()});
  }
}

}  // namespace firstfault
