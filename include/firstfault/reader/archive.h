#pragma once
// Stage 1 (reader): tar and zip archives (plain or compressed), whose regular members are read
// as inputs of their own, in one pass over the archive: a compressed tar cannot seek to a member.
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "firstfault/reader/input.h"
#include "firstfault/util/result.h"

struct archive;

namespace firstfault {

class PathFilter;  // reader/path_filter.h

// Whether the name says tar or zip archive (.tar, .tar.gz, .tgz, .tar.zst, .tar.xz, .tar.bz2, .zip).
bool looks_like_archive_name(const std::string& path);

// Lists an archive's regular members in archive order; false when the file is not a (readable)
// archive. `error` says what broke: it could not be opened or read, or broke after some members.
bool list_archive_members(const std::string& path, std::vector<std::string>& members, std::string& error);
// The same, one name at a time: an archive of 100,000 members is not a vector of 100,000 strings.
bool for_each_member_name(const std::string& path, const std::function<void(const char* name)>& member, std::string& error);

// Whether a regular file whose name does not say archive reads as one: more than one member, or
// one inside a folder (a single top-level member is more likely a file libarchive took for one).
bool reads_as_archive(const std::string& path);

// An archive member's name as `tar` and `zip` may store it, made relative: "./job-a/rank0.log"
// (`tar -C top -czf x.tgz .`) and "/job-a/rank0.log" both become "job-a/rank0.log".
std::string normalize_member_name(std::string_view name);

// How a zip is read: through its central directory (any zip, but libarchive holds an index of
// ~150 bytes per member for the whole pass: 14 MB for 100,000 members), or front to back by its
// members' own headers (no index; a zip that does not start with a member, such as a
// self-extracting one, falls back to its directory). Other formats are read front to back anyway.
enum class ZipReading { kCentralDirectory, kFrontToBack };

// One pass over an archive's regular members, in archive order: `visit(name, a)` may read the
// member libarchive is positioned at (read_archive_member()), or leave it to be skipped. Returns
// the archive's own error: it cannot be opened, or it breaks after the members visited so far.
Status for_each_archive_member(const std::string& path,
                               const std::function<void(const std::string& name, struct archive* a)>& visit,
                               ZipReading zip = ZipReading::kCentralDirectory);

// Replaces every archive among `inputs` (one whose name says so, or a named file that reads as
// one) by its regular members, in archive order: "ARCHIVE!MEMBER" inputs with `archive` and
// `member` set; `filter` (--glob, --exclude) chooses members by their path in the archive. A file
// named like an archive that does not read as one stays as it is (a misnamed gzip log is read).
std::vector<InputSource> expand_archives(std::vector<InputSource> inputs, const PathFilter* filter = nullptr);

}  // namespace firstfault
