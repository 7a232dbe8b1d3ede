#include "firstfault/reader/archive.h"

#include "firstfault/reader/path_filter.h"

#include <archive.h>
#include <archive_entry.h>

#include <cstring>
#include <filesystem>
#include <memory>

namespace firstfault {

namespace {

// libarchive's reader for every archive format triage and diagnose accept, with any compression.
struct ArchiveHandle {
  struct archive* a = archive_read_new();
  explicit ArchiveHandle(ZipReading zip = ZipReading::kCentralDirectory) {
    archive_read_support_filter_all(a);
    archive_read_support_format_tar(a);
    archive_read_support_format_gnutar(a);
    if (zip == ZipReading::kFrontToBack) archive_read_support_format_zip_streamable(a);
    else archive_read_support_format_zip(a);
    archive_read_support_format_cpio(a);
  }
  ~ArchiveHandle() { archive_read_free(a); }
  ArchiveHandle(const ArchiveHandle&) = delete;
  ArchiveHandle& operator=(const ArchiveHandle&) = delete;
  std::string error(const char* fallback) const { return archive_error_string(a) ? archive_error_string(a) : fallback; }
};

}  // namespace

bool looks_like_archive_name(const std::string& p) {
  for (const char* ext : {".tar", ".tar.gz", ".tgz", ".tar.zst", ".tar.xz", ".tar.bz2", ".zip"})
    if (p.size() > std::strlen(ext) && p.compare(p.size() - std::strlen(ext), std::string::npos, ext) == 0) return true;
  return false;
}

bool for_each_member_name(const std::string& path, const std::function<void(const char* name)>& member, std::string& error) {
  ArchiveHandle h;
  if (archive_read_open_filename(h.a, path.c_str(), 1 << 16) != ARCHIVE_OK) {
    error = h.error("cannot open the archive");
    return false;
  }
  struct archive_entry* e = nullptr;
  int r;
  bool any = false;
  while ((r = archive_read_next_header(h.a, &e)) == ARCHIVE_OK || r == ARCHIVE_WARN) {
    any = true;
    if (archive_entry_filetype(e) == AE_IFREG) member(archive_entry_pathname(e));
    archive_read_data_skip(h.a);
  }
  if (r == ARCHIVE_FATAL) error = h.error("corrupt archive");
  return any || r == ARCHIVE_EOF;  // an archive with no entry at all is still an archive
}

bool list_archive_members(const std::string& path, std::vector<std::string>& members, std::string& error) {
  return for_each_member_name(path, [&](const char* name) { members.emplace_back(name); }, error);
}

bool reads_as_archive(const std::string& path) {
  // Only a regular file: probing a FIFO or a device would consume what the real read needs.
  std::error_code ec;
  if (!std::filesystem::is_regular_file(path, ec)) return false;
  std::vector<std::string> members;
  std::string error;
  return list_archive_members(path, members, error) && !members.empty() &&
         (members.size() > 1 || members[0].find('/') != std::string::npos);
}

std::string normalize_member_name(std::string_view name) {
  std::string out;
  size_t start = 0;
  for (size_t i = 0; i <= name.size(); ++i) {
    if (i < name.size() && name[i] != '/') continue;
    std::string_view part(name.data() + start, i - start);
    if (!part.empty() && part != ".") out.append(out.empty() ? "" : "/").append(part);
    start = i + 1;
  }
  return out;
}

Status for_each_archive_member(const std::string& path,
                               const std::function<void(const std::string& name, struct archive* a)>& visit,
                               ZipReading zip) {
  // A zip read front to back must start with a member (a self-extracting zip does not): then
  // only its central directory finds them.
  auto by_directory = [&] { return for_each_archive_member(path, visit, ZipReading::kCentralDirectory); };
  ArchiveHandle h(zip);
  if (archive_read_open_filename(h.a, path.c_str(), 1 << 16) != ARCHIVE_OK)
    return zip == ZipReading::kFrontToBack ? by_directory() : Error{h.error("cannot open archive")};
  struct archive_entry* e = nullptr;
  int r;
  bool any = false;
  while ((r = archive_read_next_header(h.a, &e)) == ARCHIVE_OK || r == ARCHIVE_WARN) {
    any = true;
    // No stop on a damaged member: a zip's other members stay readable; a broken stream
    // (tar.gz, truncated tar) fails at the next header and ends the loop.
    if (archive_entry_filetype(e) == AE_IFREG) visit(archive_entry_pathname(e), h.a);
    archive_read_data_skip(h.a);
  }
  if (r == ARCHIVE_FATAL && !any && zip == ZipReading::kFrontToBack) return by_directory();
  if (r == ARCHIVE_FATAL) return Error{h.error("corrupt archive")};
  return Status::Ok();
}

std::vector<InputSource> expand_archives(std::vector<InputSource> inputs, const PathFilter* filter) {
  std::vector<InputSource> out;
  for (auto& in : inputs) {
    bool archive = !in.is_stdin && in.archive.empty() &&
                   (looks_like_archive_name(in.path) || (in.named && reads_as_archive(in.path)));
    std::vector<std::string> members;
    std::string error;
    if (!archive || !list_archive_members(in.path, members, error)) {
      out.push_back(std::move(in));
      continue;
    }
    for (const auto& m : members) {
      if (filter && !filter->wants_path(normalize_member_name(m))) continue;
      InputSource member = in;
      member.path = in.path + "!" + normalize_member_name(m);
      member.named = false;
      member.archive = in.path;
      member.member = m;
      out.push_back(std::move(member));
    }
  }
  return out;
}

}  // namespace firstfault
