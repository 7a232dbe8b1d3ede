#include "firstfault/action/action.h"

#include <fmt/format.h>
#include <re2/re2.h>

#include <algorithm>

#include "firstfault/util/pci.h"
#include "firstfault/util/strings.h"

namespace firstfault {

namespace {

const std::string* capture(const Evidence& e, const char* name) {
  for (const auto& [k, v] : e.captures)
    if (k == name) return &v;
  return nullptr;
}

// How log lines name a GPU, most specific first. A PCI address names the same GPU whatever the
// process saw; an index is the process's CUDA ordinal, so it comes last.
struct GpuForm {
  LazyRegex re;  // one group: the address or the index
  bool pci;      // the group is a PCI address (else a CUDA index)
};
const std::vector<GpuForm>& gpu_forms() {
  static const std::vector<GpuForm> forms = {
      {LazyRegex(R"((?:PCI:|\bGPU ?)((?:[0-9A-Fa-f]{8}|[0-9A-Fa-f]{4}):[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2})\b)"), true},
      {LazyRegex(R"(\bbusId ([0-9A-Fa-f]{4,})\b)"), true},
      {LazyRegex(R"(\bcudaDev (\d+)\b)"), false},
      {LazyRegex(R"([\w.-]+:\d+:\d+ \[(\d+)\] )"), false},
  };
  return forms;
}

// restart-excluding: the failed host, and for a hardware fault the GPUs named on it. A network
// or node fault names the GPU of the process that saw it, not a faulty GPU, so only the host.
void add_exclusions(const Diagnosis& d, Action& a) {
  const Evidence* first = d.decisive_evidence();
  std::string host = !d.initiating.host.empty() ? d.initiating.host : first ? first->host : "";
  if (plausible_host(host)) a.exclude_hosts.push_back(host);  // it reaches scontrol/kubectl command lines
  if (d.entry->category != "hardware") return;
  std::vector<const Evidence*> lines;
  if (first) lines.push_back(first);
  for (const Evidence& ev : d.evidence) {
    bool same_rank = d.initiating.rank && ev.rank == *d.initiating.rank;
    bool same_host = !host.empty() && ev.host == host;
    if (ev.role == "root" && (same_rank || same_host)) lines.push_back(&ev);
  }
  for (const Evidence* ev : lines) {
    std::string gpu = gpu_named_by(*ev);
    if (!gpu.empty() && std::find(a.exclude_gpus.begin(), a.exclude_gpus.end(), gpu) == a.exclude_gpus.end())
      a.exclude_gpus.push_back(gpu);
  }
}

// Why this kind, in one sentence: what failed (the entry's title), then what a restart would
// meet. The rank and host are beside it in every format, so only investigate repeats the rank.
std::string diagnosed_reason(const Diagnosis& d, ActionKind kind) {
  const std::string& what = d.entry->title;
  switch (kind) {
    case ActionKind::kRestart:
      return what + ": transient, a restart from the last checkpoint should get past it";
    case ActionKind::kRestartExcluding:
      return what + ": the faulty host or GPU would fail the job again";
    case ActionKind::kStop:
      return what + ": a restart would fail the same way until the cause is fixed (see Fix)";
    case ActionKind::kInvestigate:
      break;
  }
  std::string start = d.initiating.rank ? fmt::format("rank {}'s output", *d.initiating.rank) : "the first evidence";
  return fmt::format("{}: the log does not show whether a restart would get past it; start with {}", what, start);
}

std::string undiagnosed_reason(const Diagnosis& d) {
  if (d.verdict == "incomplete")
    return "training stopped making progress long before the log ends, with no error: a hang ended from outside; "
           "take stacks next time it stops, and read the scheduler's record of how it ended";
  if (d.verdict != "unrecognized" && d.outlived_error)
    return "the run went on past every error line it printed (it trained on to the end of the log, or said it "
           "finished): nothing shows that the job failed";
  if (d.verdict != "unrecognized") return "no error line in the input, so nothing shows why the job ended";
  std::string start = "the first error line";
  if (d.suspect && d.suspect->rank) start = fmt::format("rank {}'s output", *d.suspect->rank);
  return "no entry of the failure library matched the error lines; start with " + start;
}

}  // namespace

std::string gpu_named_by(const Evidence& e) {
  if (const std::string* pci = capture(e, "pci"); pci && !pci->empty()) return pci_bus_id(*pci);
  if (const std::string* bus = capture(e, "busid"); bus && !bus->empty()) return pci_bus_id(*bus);
  std::string id;
  for (const GpuForm& form : gpu_forms())
    if (RE2::PartialMatch(e.text, *form.re, &id)) return form.pci ? pci_bus_id(id) : "cuda:" + id;
  return "";
}

Action decide_action(const Diagnosis& d) {
  Action a;
  if (d.verdict != "diagnosed" || !d.entry) {
    a.reason = undiagnosed_reason(d);
    return a;
  }
  a.kind = d.entry->action;
  if (a.kind == ActionKind::kRestartExcluding) add_exclusions(d, a);
  a.reason = diagnosed_reason(d, a.kind);
  return a;
}

}  // namespace firstfault
