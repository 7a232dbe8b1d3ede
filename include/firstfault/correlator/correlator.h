#pragma once
// Stage 5 (correlator): keeps a per-rank timeline of events and decides which entries the
// evidence supports, the initiating rank and why, and who is collateral.
// See docs/initiating-rank.md for the evidence ladder.
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "firstfault/attribution/line_attributor.h"
#include "firstfault/correlator/diagnosis.h"
#include "firstfault/signatures/library.h"

namespace firstfault {

// Bounds (docs/reliability.md). Counts stay exact beyond them; only stored detail is dropped.
inline constexpr size_t kMaxEventsPerPattern = 4096;
inline constexpr size_t kMaxRanks = 1 << 17;
inline constexpr size_t kMaxEventText = 2048;

struct Event {
  size_t def = 0;
  int rank = -1;
  int local_rank = -1;
  std::string host;
  int64_t pid = -1;
  Timestamp time;
  uint32_t input = 0;
  uint64_t line = 0;
  uint64_t order = 0;  // arrival order across the whole job
  std::string text;
  Captures captures;

  const std::string* capture(std::string_view name) const {
    for (const auto& [k, v] : captures)
      if (k == name) return &v;
    return nullptr;
  }
};

class Correlator {
 public:
  explicit Correlator(const Library& lib);

  // Called for every line (after attribution) to keep the per-rank timeline.
  void observe_line(const Attribution& a, std::string_view line, uint32_t input, uint64_t line_no);
  void add_event(Event ev);
  void set_inputs(std::vector<InputSummary> inputs) { inputs_ = std::move(inputs); }

  Diagnosis finish();

 private:
  struct RankState {
    std::string host;
    uint64_t lines = 0;
    Timestamp last_time;
    std::string last_line;
    uint32_t last_input = 0;
    uint64_t last_line_no = 0;
    uint64_t last_order = 0;
    int64_t last_step = -1;
    std::string last_progress;
  };

  struct Hits;  // per-entry evaluation (defined in the .cpp)

  RankState* rank_state(int rank);
  void resolve_times_and_ranks();
  int64_t time_key(const Timestamp& t) const;
  bool earlier(const Event& a, const Event& b) const;
  Evidence to_evidence(const Event& ev, const std::string& pattern, Role role) const;

  const Library& lib_;
  std::vector<std::vector<Event>> events_by_def_;
  std::vector<uint64_t> count_by_def_;
  std::vector<bool> referenced_;  // pattern used by at least one entry
  std::map<int, RankState> ranks_;
  std::vector<InputSummary> inputs_;
  uint64_t order_ = 0;
  int ref_year_ = 0;
  Limits limits_;
  bool ranks_truncated_ = false;
};

}  // namespace firstfault
