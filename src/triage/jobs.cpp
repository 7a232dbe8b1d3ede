// Where the jobs are: files, directories of per-rank files, and member groups inside archives.
#include <re2/re2.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>

#include "firstfault/reader/archive.h"
#include "firstfault/reader/path_filter.h"
#include "firstfault/triage/triage.h"
#include "firstfault/util/strings.h"

namespace firstfault {

namespace fs = std::filesystem;

namespace {

JobRecord error_row(const std::string& job, const std::string& reason) {
  JobRecord r;
  r.job = job;
  r.verdict = "error";
  r.error = reason;
  return r;
}

// "a//b/c/" -> {"a", "b", "c"}.
std::vector<std::string> split_path(const std::string& path) {
  std::vector<std::string> parts;
  size_t start = 0;
  for (size_t i = 0; i <= path.size(); ++i)
    if (i == path.size() || path[i] == '/') {
      if (i > start) parts.push_back(path.substr(start, i - start));
      start = i + 1;
    }
  return parts;
}

// The job a relative path (member or file) belongs to, or "" when none.
std::string job_key(const std::string& rel, int depth, const RE2* pattern) {
  std::vector<std::string> parts = split_path(rel);
  if (parts.empty()) return "";
  if (pattern) {
    std::string prefix;
    for (const auto& p : parts) {
      prefix += (prefix.empty() ? "" : "/") + p;
      if (RE2::FullMatch(prefix, *pattern)) return prefix;
    }
    return "";
  }
  std::string key;
  for (int i = 0; i < std::max(1, depth) && i < static_cast<int>(parts.size()); ++i) key += (i ? "/" : "") + parts[static_cast<size_t>(i)];
  return key;
}

// What triage looks for in the paths it is given.
struct Search {
  const TriageOptions& o;
  const RE2* pattern;
  const PathFilter* filter;
  bool wants_member(const std::string& name) const { return !filter || filter->wants_path(name); }
  std::string nothing_found(const char* otherwise) const {
    return filter && filter->active() ? "no file here matches --glob/--exclude"
           : pattern                  ? "no file here matches --job-pattern"
                                      : otherwise;
  }
};

void add_archive_jobs(const std::string& path, const Search& search, std::vector<JobSpec>& jobs,
                      std::vector<JobRecord>& errors) {
  const TriageOptions& o = search.o;
  const RE2* pattern = search.pattern;
  auto index = std::make_shared<ArchiveMembers>();
  std::string error;
  if (!for_each_member_name(path, [&](const char* name) { index->add(name); }, error)) {
    errors.push_back(error_row(path, "not a readable archive: " + error));
    return;
  }
  ArchiveRoot finder;
  for (size_t i = 0; i < index->size(); ++i) finder.add(normalize_member_name(index->name(i)));
  const std::string root = finder.root();
  std::map<std::string, JobSpec> by_key;
  for (size_t i = 0; i < index->size(); ++i) {
    const std::string name = normalize_member_name(index->name(i));
    if (name.size() <= root.size() || !search.wants_member(name)) continue;
    std::string rel = name.substr(root.size());
    // --job-depth 0: the whole archive is one job, as a whole directory is.
    std::string key = o.job_depth == 0 && !pattern ? "" : job_key(rel, o.job_depth, pattern);
    if (key.empty() && (pattern || o.job_depth != 0)) continue;
    auto [it, is_new] = by_key.try_emplace(key);
    JobSpec& j = it->second;
    if (is_new) {
      j.id = key.empty() ? path : path + "!" + key;
      j.archive = path;
      j.archive_members = index;
      j.archive_job = static_cast<uint32_t>(by_key.size() - 1);
    }
    ++j.member_count;
    index->assign(i, j.archive_job);
  }
  const size_t members = index->size();
  index->seal();
  for (auto& [k, j] : by_key) jobs.push_back(std::move(j));
  if (!error.empty())
    errors.push_back(error_row(path, "archive is corrupt or truncated after " + std::to_string(members) + " member(s): " + error));
  else if (by_key.empty())
    errors.push_back(error_row(path, members == 0 ? "the archive holds no file" : search.nothing_found("the archive holds no file")));
}

// A directory: its files grouped into jobs by depth or pattern (sorted, symlink loops skipped).
void add_directory_jobs(const std::string& p, const Search& search, std::vector<JobSpec>& jobs,
                        std::vector<JobRecord>& errors) {
  const TriageOptions& o = search.o;
  const RE2* pattern = search.pattern;
  const PathFilter* filter = search.filter;
  std::map<std::string, JobSpec> by_key;
  std::set<std::string> seen_dirs;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(p, fs::directory_options::skip_permission_denied, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    std::error_code sec;
    // Lexically: fs::relative() resolves symlinks, so a symlinked rank log became "../.." and
    // was skipped as hidden.
    std::string rel = it->path().lexically_relative(p).generic_string();
    if (it->is_directory(sec)) {
      auto canon = fs::canonical(it->path(), sec);
      bool excluded = filter && !filter->wants_dir(rel);
      if (excluded || (!sec && !seen_dirs.insert(canon.string()).second)) it.disable_recursion_pending();
      continue;
    }
    if (!it->is_regular_file(sec) && !it->is_fifo(sec)) continue;
    if (!rel.empty() && (rel[0] == '.' || rel.find("/.") != std::string::npos)) continue;
    std::string file = it->path().string();
    // An archive is a container: only excludes apply to it, includes to its members.
    if (filter && !(looks_like_archive_name(rel) ? filter->wants_archive(rel) : filter->wants_file(rel))) continue;
    std::string key = o.job_depth == 0 && !pattern ? "" : job_key(rel, o.job_depth, pattern);
    if (key.empty() && (pattern || o.job_depth != 0)) continue;
    if (looks_like_archive_name(file) && key == rel) {
      add_archive_jobs(file, search, jobs, errors);
      continue;
    }
    std::string id = key.empty() ? p : (fs::path(p) / key).string();
    JobSpec& j = by_key[id];
    j.id = id;
    j.files.push_back(file);
  }
  if (ec) errors.push_back(error_row(p, "cannot read the directory: " + ec.message()));
  for (auto& [k, j] : by_key) {
    std::sort(j.files.begin(), j.files.end());
    jobs.push_back(std::move(j));
  }
}

}  // namespace

void ArchiveMembers::add(std::string_view name) {
  members_.push_back({static_cast<uint32_t>(names_.size()), static_cast<uint32_t>(name.size()), kNoJob});
  names_.append(name);
}

void ArchiveMembers::assign(size_t i, uint32_t job) {
  members_[i].job = job;
  jobs_ = std::max(jobs_, job + 1);
}

void ArchiveMembers::seal() {
  members_.erase(std::remove_if(members_.begin(), members_.end(), [](const Member& m) { return m.job == kNoJob; }),
                 members_.end());
  std::sort(members_.begin(), members_.end(), [this](const Member& a, const Member& b) { return name(a) < name(b); });
}

std::optional<uint32_t> ArchiveMembers::job_of(std::string_view wanted) const {
  auto it = std::lower_bound(members_.begin(), members_.end(), wanted,
                             [this](const Member& m, std::string_view n) { return name(m) < n; });
  if (it == members_.end() || name(*it) != wanted) return std::nullopt;
  return it->job;
}

void ArchiveRoot::add(std::string_view n) {
  size_t slash = n.find('/');
  if (slash == std::string_view::npos) {
    single_top_ = false;  // a file at the top: no single top folder
    return;
  }
  if (top_.empty() && single_top_) top_ = std::string(n.substr(0, slash));
  else if (n.substr(0, slash) != top_) single_top_ = false;
  has_folder_ = has_folder_ || n.find('/', slash + 1) != std::string_view::npos;
}

std::string archive_root(const std::vector<std::string>& names) {
  ArchiveRoot finder;
  for (const auto& n : names) finder.add(n);
  return finder.root();
}

bool in_shard(const std::string& job, unsigned index, unsigned count) {
  if (count <= 1) return true;
  uint64_t h = 1469598103934665603ull;
  for (unsigned char c : job) h = (h ^ c) * 1099511628211ull;
  return h % count == index - 1;
}

std::vector<JobSpec> discover_jobs(const TriageOptions& o, const PathFilter* filter, std::vector<JobRecord>& errors) {
  std::vector<JobSpec> jobs;
  std::unique_ptr<RE2> pattern;
  if (!o.job_pattern.empty()) pattern = std::make_unique<RE2>(o.job_pattern, RE2::Quiet);
  const Search search{o, pattern.get(), filter};
  for (const auto& p : o.paths) {
    std::error_code ec;
    auto st = fs::status(p, ec);
    if (ec || !fs::exists(st)) {
      errors.push_back(error_row(p, "no such file or directory"));
      continue;
    }
    size_t jobs_before = jobs.size(), errors_before = errors.size();
    if (fs::is_directory(st)) {
      add_directory_jobs(p, search, jobs, errors);
    } else {
      if (looks_like_archive_name(p) || reads_as_archive(p)) {
        add_archive_jobs(p, search, jobs, errors);
      } else {
        jobs.push_back({p, {p}, "", nullptr, 0, 0});
      }
    }
    // A path that yielded no job is an error row, never silence (an archive names its own reason).
    if (jobs.size() == jobs_before && errors.size() == errors_before)
      errors.push_back(error_row(p, search.nothing_found("no file to read in this directory")));
  }
  std::sort(jobs.begin(), jobs.end(), [](const JobSpec& a, const JobSpec& b) { return a.id < b.id; });
  return jobs;
}

}  // namespace firstfault
