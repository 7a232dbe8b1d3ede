#pragma once
// Batch triage: many archived jobs -> one diagnosis each, grouped by failure. Jobs run in
// parallel with bounded memory, bad jobs become error rows, output order never depends on -j,
// and shard outputs merge into the same summary as one run.
#include <cstdint>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include "firstfault/util/redact.h"
#include "firstfault/app/commands.h"

namespace firstfault {

// `triage -f jsonl`: one job row per job (a diagnosis with the row's keys first), then one summary.
inline constexpr const char* kTriageJobSchema = "firstfault.triage-job/v1";
inline constexpr const char* kTriageSummarySchema = "firstfault.triage-summary/v1";

struct TriageOptions {
  CommonOptions common;
  std::vector<std::string> paths;
  std::string format = "table";  // table | jsonl | csv | markdown
  unsigned jobs = 0;             // -j (0: all cores)
  int job_depth = 1;             // directories: a job is a path this many levels below PATH
  std::string job_pattern;       // or: relative paths matching this regex are jobs
  std::string shard;             // "I/N"
  bool unknown_only = false;
  std::vector<std::string> merge;  // --merge: combine jsonl outputs instead of reading logs
  std::string rank_from;
  std::string host_from;
  FileChoice files;              // --glob, --exclude: which files of the directories and archives
  bool progress = true;          // progress bar on stderr when it is a terminal
  // --redact / --no-redact; unset: on for markdown (made to be shared), off otherwise. One
  // Redactor per run masks the jobs in output order, so pseudonyms do not depend on -j.
  std::optional<RedactLevel> redact;
  // --since / --until (YYYY-MM-DD, inclusive): only jobs dated in the window (JobRecord::date);
  // undated jobs are left out and counted, unreadable ones are always kept.
  std::string since, until;
  // Finished rows waiting for their turn (an archive finishes jobs in its own order) beyond this
  // many bytes wait in a temporary file. Not a command-line option: tests lower it.
  size_t waiting_row_bytes = size_t{2} << 20;
};

// One job's outcome: all the summary needs (and what a jsonl line carries back for --merge).
struct JobRecord {
  std::string job;
  std::string verdict;  // diagnosed | unrecognized | incomplete | clean | error
  std::string id, title, category, severity;
  std::string action;  // the action's kind (investigate when nothing was recognised; "" for errors)
  std::optional<int> rank;
  std::string host;         // the initiating rank's host, when the log names it (the fleet view)
  std::vector<std::string> gpus;  // the GPUs the action excludes on that host (a bad GPU, not only a bad node)
  std::string first_error;  // first error-looking line, for clustering unrecognised jobs
  std::string error;        // set when the job could not be read
  uint64_t bytes = 0;
  uint64_t skipped = 0;     // binary files not read
  // "YYYY-MM-DD": when the job failed (its decisive line's time), else when its log last
  // printed, else a date in its path (archive/2026-11-03/...); "" when nothing dates it.
  std::string date;
};

// The date of a job (JobRecord::date) from its diagnosis, else from its path.
std::string job_date(const Diagnosis& d, const std::string& job_path);

// The members of one archive, listed once at discovery and shared by its jobs: each name (as
// the archive spells it) with the number of the job it belongs to, the names back to back in one
// buffer. Kept as a string in each job, 100,000 members cost 22 MB; here a member costs its
// name's length and 12 bytes.
class ArchiveMembers {
 public:
  static constexpr uint32_t kNoJob = UINT32_MAX;
  void add(std::string_view name);  // in archive order, of no job until assign()
  size_t size() const { return members_.size(); }
  std::string_view name(size_t i) const { return name(members_[i]); }  // archive order, before seal()
  void assign(size_t i, uint32_t job);
  void seal();  // drops the members of no job and sorts the rest by name, for job_of()
  std::optional<uint32_t> job_of(std::string_view name) const;
  uint32_t jobs() const { return jobs_; }

 private:
  struct Member {
    uint32_t offset, size, job;
  };
  std::string_view name(const Member& m) const { return std::string_view(names_).substr(m.offset, m.size); }
  std::string names_;
  std::vector<Member> members_;
  uint32_t jobs_ = 0;
};

// A job: a file, a directory of per-rank files, or a group of members of an archive.
struct JobSpec {
  std::string id;                  // path, or "archive!member-prefix"
  std::vector<std::string> files;  // plain files
  std::string archive;             // when the job lives inside an archive:
  std::shared_ptr<const ArchiveMembers> archive_members;  // its members and its siblings'
  uint32_t archive_job = 0;        // its number in archive_members
  uint32_t member_count = 0;
};

// `filter` (null: every file) chooses the files of directories and the members of archives.
std::vector<JobSpec> discover_jobs(const TriageOptions& o, const PathFilter* filter, std::vector<JobRecord>& errors);
// The folder an archive's jobs are found in ("top/", or "" for the archive's own root), from its
// member names made relative (normalize_member_name(), reader/archive.h): when every member lies
// in one top folder that holds folders, the archive was made as `tar czf x.tgz top/` and that
// folder plays the directory triage is given. A top folder of files only is one job's folder
// (`tar czf job-17.tgz job-17/`) and stays a job.
std::string archive_root(const std::vector<std::string>& names);
// The same, fed one name at a time.
class ArchiveRoot {
 public:
  void add(std::string_view normalized_name);
  std::string root() const { return single_top_ && has_folder_ ? top_ + "/" : ""; }

 private:
  std::string top_;
  bool single_top_ = true, has_folder_ = false;
};
// Deterministic shard membership of a job id for "I/N" (1-based I).
bool in_shard(const std::string& job, unsigned index, unsigned count);

int run_triage(const TriageOptions& o, std::ostream& out);

}  // namespace firstfault
