#pragma once
// Finished triage rows between the workers that finish them and the writer that prints them in
// job order (src/triage/triage.cpp): the row (JobOutput), where it waits (in memory, or past a
// byte budget in a temporary file: WaitingRows, row_bytes), and how it is finished: whole on the
// worker (finish_output), or taken apart there and masked by the writer in job order with
// --redact (MaskInJobOrder). docs/reliability.md, "triage: finished rows waiting for their turn".
#include <atomic>
#include <cstdio>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "firstfault/correlator/diagnosis.h"
#include "firstfault/signatures/library.h"
#include "firstfault/triage/triage.h"
#include "firstfault/util/redact.h"

namespace firstfault {

// One job's outcome, kept until it is written in job order.
struct JobOutput {
  JobRecord rec;
  // What its jsonl line shows (none: only the error). On the heap: a finished row may wait for
  // its turn, and a Diagnosis held inline cost every waiting row about 1 KB after it was dropped.
  std::unique_ptr<Diagnosis> diagnosis;
  std::string line;    // the jsonl line, once finished (with --redact: with stand-ins, MaskInJobOrder)
  std::vector<std::string> hosts_to_learn, texts_to_mask;  // --redact: its diagnosis taken apart
  size_t counted = 0;  // what WaitingRows counts of it while it waits in memory
};

// A job's place in the output: its outcome in memory, or where WaitingRows parked it.
struct RowSlot {
  std::unique_ptr<JobOutput> out;
  long parked_at = -1;  // offset in WaitingRows' file (-1: not there)
  size_t parked_size = 0;
};

// A finished row as bytes (its record's fields, its jsonl line, its texts to mask), exactly as
// they were: length-prefixed, so that no text of a log can change what is read back.
std::string row_bytes(const JobOutput& o);
// The row row_bytes() wrote, or nothing when the bytes are not one.
std::unique_ptr<JobOutput> row_from_bytes(std::string_view bytes);

// Finished rows wait for the writer, which goes in job (name) order. An archive finishes its
// jobs in its own order, so nearly every row of a 100,000-member zip waited in memory (128 MB):
// past a byte budget (TriageOptions::waiting_row_bytes) a finished row waits in an unlinked
// temporary file instead, record and line, and nothing of it stays in memory
// (docs/reliability.md).
class WaitingRows {
 public:
  explicit WaitingRows(size_t budget) : budget_(budget) {}
  WaitingRows(const WaitingRows&) = delete;
  WaitingRows& operator=(const WaitingRows&) = delete;
  ~WaitingRows();

  // A worker's finished row: kept in memory while the waiting rows fit the budget, else parked
  // in the file (kept in memory after all when no file can be written).
  void park(RowSlot& slot);
  // The writer's turn for `slot`: its row back in memory when it was parked in the file (an
  // error row naming `job` when it cannot be read back).
  void bring_back(RowSlot& slot, const std::string& job);

 private:
  const size_t budget_;
  std::mutex mu_;
  std::FILE* file_ = nullptr;
  std::atomic<size_t> in_memory_{0};
};

// The jsonl line of a finished row: the row's own keys first, then its diagnosis (its fields as
// in `diagnose --format json`), with `job` and `error` standing for the row's own.
std::string row_line(const JobOutput& o, const std::string& job, const std::string& error, const Library& lib);

// Without --redact a worker finishes a row whole: its texts neutralised (job names and log lines
// are printed to terminals and CI logs), its jsonl line built, its diagnosis dropped.
void finish_output(JobOutput& o, bool want_json, const Library& lib);

// With --redact one Redactor masks the rows in job order, in the writer, so that the pseudonyms
// of the whole run are numbered the same way whatever -j is. A row waiting for its turn kept its
// whole Diagnosis for that (124 MB for a zip of 100,000 members), so a worker takes it apart
// instead: the hosts it reveals, its texts (for_each_text()'s, in order), and its jsonl line
// built with a stand-in for each text. The writer masks the texts exactly as redact_diagnosis()
// would and puts them in place of their stand-ins. A stand-in carries a random number drawn for
// the run, so no log or library text can be taken for one.
class MaskInJobOrder {
 public:
  MaskInJobOrder();
  // The worker's part.
  void take_apart(JobOutput& o, bool want_json, const Library& lib) const;
  // The writer's part, in job order.
  void mask(JobOutput& o, Redactor& r) const;

 private:
  std::string stand_in(const std::string& key) const { return marker_ + key + "@"; }
  std::string fill_stand_ins(const JobOutput& o) const;
  std::string marker_;
};

}  // namespace firstfault
