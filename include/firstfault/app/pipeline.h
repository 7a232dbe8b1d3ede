#pragma once
// Wires the stages together for one job: reader -> line attribution -> matcher -> correlator.
#include <atomic>
#include <string>
#include <vector>

#include "firstfault/correlator/correlator.h"
#include "firstfault/util/interrupt.h"
#include "firstfault/correlator/diagnosis.h"
#include "firstfault/matcher/matcher.h"
#include "firstfault/reader/input.h"
#include "firstfault/reader/path_filter.h"
#include "firstfault/signatures/library.h"
#include "firstfault/util/result.h"

struct archive;

namespace firstfault {

struct AnalyzeOptions {
  std::string rank_from;  // --rank-from REGEX: rank from the file path
  std::string host_from;  // --host-from REGEX: host from the file path
  unsigned threads = 0;   // threads for one large plain file (0: all cores)
  // The matcher's library's tables, to share across many jobs (null: each job builds them).
  std::shared_ptr<const CorrelatorTables> tables;
  // --glob, --exclude: the files a directory walk or an archive gives (null: every file).
  std::shared_ptr<const PathFilter> filter;
  // The inputs are a Kubeflow PyTorchJob's pod logs (a `master-0` pod among them): `master-0` is
  // rank 0 and `worker-N` is rank N+1. analyze_job sets it from the input names.
  bool pytorchjob_pods = false;
};

// An input not read on purpose: binary content (InputSummary::skipped). Not an error.
struct SkippedInput {
  std::string path;
  std::string reason;
  bool named = false;  // given itself: the CLI says so on stderr, as ripgrep does; found ones with -v
};

// A path given for one job that is shaped like many: sibling folders that each hold their own
// rank-0 log, the shape `triage` finds jobs in (its --job-depth 1). Worth a hint, not an error.
struct ManyJobs {
  std::string path;
  size_t jobs = 0;  // folders that hold a rank-0 log
};

struct JobResult {
  Diagnosis diagnosis;
  std::vector<InputProblem> problems;  // unreadable/missing/truncated inputs (the rest was still analysed)
  std::vector<SkippedInput> skipped;   // binary inputs, in input order
  std::vector<ManyJobs> many_jobs;     // set by analyze_paths()
  bool interrupted = false;
};

// g_interrupted (util/interrupt.h): set by the CLI's SIGINT handler; the pipeline stops at the
// next block and diagnoses what was read.

// The verdict is "error" when no input yielded a line (none at all, every one unreadable or binary):
// there is nothing to diagnose, and the inputs and problems say why.
JobResult analyze_job(const std::vector<InputSource>& inputs, const Matcher& matcher, const AnalyzeOptions& options);

// Expands, then analyses. With nothing to diagnose, every path in `paths` that yielded nothing
// has a problem naming it and the reason (a directory with no file to read, too). A directory or
// an archive shaped like many jobs is named in `many_jobs`.
JobResult analyze_paths(const std::vector<std::string>& paths, const Matcher& matcher, const AnalyzeOptions& options);

// Reads the archive member libarchive is positioned at into `corr` as input `index` of a job;
// `name` is its path inside the archive, which gives its rank as a file's path does.
Status read_member(struct archive* a, const std::string& name, uint32_t index, const Matcher& matcher,
                   const AnalyzeOptions& options, Correlator& corr, InputSummary& summary);

// "only binary files here (3 skipped)": why a job, a directory or an archive gave nothing.
std::string only_binary_files(uint64_t skipped);

// Whether no input yielded a single line (every one failed before its first line or was skipped
// as binary; true for none). A truncated input still has a partial diagnosis worth reporting;
// this does not.
bool read_nothing(const std::vector<InputSummary>& inputs);

}  // namespace firstfault
