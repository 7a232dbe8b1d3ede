#include "harness.h"

#include <archive.h>
#include <archive_entry.h>
#include <fmt/format.h>
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <optional>
#include <sstream>
#include <nlohmann/json.hpp>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "firstfault/app/pipeline.h"
#include "firstfault/attribution/line_attributor.h"
#include "firstfault/correlator/correlator.h"
#include "firstfault/matcher/matcher.h"
#include "firstfault/matcher/template_scanner.h"
#include "firstfault/reader/archive.h"
#include "firstfault/reader/log_reader.h"
#include "firstfault/render/ci_render.h"
#include "firstfault/render/render.h"
#include "firstfault/render/timeline_render.h"
#include "firstfault/util/redact.h"
#include "firstfault/util/safe_text.h"
#include "firstfault/signatures/loader.h"
#include "firstfault/util/strings.h"

namespace firstfault::fuzz {
namespace {

using sv = std::string_view;

// An in-memory file with a real path, so the reader runs exactly as on disk (open, sniff,
// decompress) without touching the file system.
class MemFile {
 public:
  explicit MemFile(sv bytes) {
    fd_ = ::memfd_create("firstfault-fuzz", MFD_CLOEXEC);
    if (fd_ < 0) return;
    size_t off = 0;
    while (off < bytes.size()) {
      ssize_t w = ::write(fd_, bytes.data() + off, bytes.size() - off);
      if (w <= 0) break;
      off += static_cast<size_t>(w);
    }
  }
  ~MemFile() {
    if (fd_ >= 0) ::close(fd_);
  }
  MemFile(const MemFile&) = delete;
  MemFile& operator=(const MemFile&) = delete;
  bool ok() const { return fd_ >= 0; }
  std::string path() const { return fmt::format("/proc/self/fd/{}", fd_); }

 private:
  int fd_ = -1;
};

// Splits fuzz input into several "files" at lines that are exactly "---8<---".
std::vector<sv> split_files(sv all) {
  std::vector<sv> out;
  constexpr sv kSep = "\n---8<---\n";
  size_t start = 0;
  for (;;) {
    size_t at = all.find(kSep, start);
    if (at == sv::npos || out.size() >= 7) {
      out.push_back(all.substr(start));
      return out;
    }
    out.push_back(all.substr(start, at + 1 - start));
    start = at + kSep.size();
  }
}

bool within(sv inner, sv outer) {
  if (inner.empty()) return true;
  return inner.data() >= outer.data() && inner.data() + inner.size() <= outer.data() + outer.size();
}

bool valid_utf8(const std::string& s) { return sanitize_utf8(s) == s; }

bool plausible_time(const Timestamp& t) {
  if (!t.valid()) return true;
  // Years 0..9999 (and boot clocks) keep every later computation far from int64 overflow.
  constexpr int64_t kLimit = 400000LL * 86400000LL * 366;
  return t.ms > -kLimit && t.ms < kLimit;
}

struct CheckingSink : BlockSink {
  uint64_t bytes = 0, lines = 0, blocks = 0, long_lines = 0;
  bool unterminated_seen = false;  // a block without a trailing '\n' must be the last one
  std::string problem;
  void on_block(sv block) override {
    if (block.empty()) {
      problem = "empty block";
      return;
    }
    if (unterminated_seen) problem = "a block followed a block without a trailing newline";
    if (block.back() != '\n') unterminated_seen = true;
    bytes += block.size();
    ++blocks;
    for_each_line(block, [&](sv) { ++lines; });
  }
  void on_long_line(sv head, uint64_t full) override {
    if (head.size() != kMaxLineBytes) problem = fmt::format("long line head of {} bytes", head.size());
    if (full <= kMaxLineBytes) problem = fmt::format("long line of only {} bytes", full);
    if (head.find('\n') != sv::npos) problem = "newline inside a long line's head";
    if (unterminated_seen) problem = "a long line followed a block without a trailing newline";
    bytes += full;
    ++lines;
    ++long_lines;
  }
};

}  // namespace

std::string reader_one(const uint8_t* data, size_t size) {
  sv bytes(reinterpret_cast<const char*>(data), size);
  MemFile f(bytes);
  if (!f.ok()) return "";  // memfd unavailable: nothing to test
  CheckingSink sink;
  ReadStats st;
  Status s = read_input({f.path(), false}, sink, st);
  if (!sink.problem.empty()) return sink.problem;
  if (st.document) {  // a Flight Recorder dump: read whole, delivered as its text form or refused
    if (!s.ok() && s.message().empty()) return "a refused dump without a reason";
    if (s.ok() && st.compression.empty() && st.bytes != size) return fmt::format("dump of {} bytes read as {}", size, st.bytes);
    if (st.binary_at) return "a dump was also called binary";
    return "";
  }
  // Every delivered byte is accounted for: lines plus the newlines the splitter consumed after
  // long lines (at most one per long line).
  if (sink.bytes > st.bytes || sink.bytes + sink.long_lines < st.bytes)
    return fmt::format("delivered {} bytes (+{} long lines) but stats say {}", sink.bytes, sink.long_lines, st.bytes);
  if (!s.ok() && s.message().empty()) return "error without a reason";
  if (st.binary_at) {  // binary content: nothing delivered, and the NUL is where it says
    if (sink.bytes || sink.lines || st.bytes) return "binary content was delivered";
    if (st.compression.empty() && (*st.binary_at >= size || bytes[*st.binary_at] != '\0'))
      return fmt::format("binary at offset {}, which is not a NUL byte", *st.binary_at);
    return "";
  }
  if (st.compression.empty()) {
    if (!s.ok()) return "plain input failed: " + s.message();
    if (binary_marker(bytes.substr(0, kBinaryProbeBytes))) return "binary plain input was read as text";
    if (st.bytes != size || st.compressed_bytes != size)
      return fmt::format("plain input of {} bytes read as {}", size, st.bytes);
    uint64_t expect = static_cast<uint64_t>(std::count(bytes.begin(), bytes.end(), '\n'));
    if (size > 0 && bytes.back() != '\n') ++expect;
    if (sink.lines != expect) return fmt::format("{} lines delivered, {} in the input", sink.lines, expect);
  }
  return "";
}

std::string attribution_one(const uint8_t* data, size_t size) {
  sv all(reinterpret_cast<const char*>(data), size);
  sv first = all.substr(0, std::min(all.find('\n'), all.size()));
  FileIdentity id = identity_from_path(first);
  if (id.rank < -1 || id.rank > kMaxRankNumber) return fmt::format("file rank {} out of range", id.rank);
  // A user's --rank-from regex is applied to the same path (capture group 1).
  FileIdentity id2 = identity_from_path(first, "rank[_-]?(\\d+)");
  if (id2.rank < -1 || id2.rank > kMaxRankNumber) return fmt::format("--rank-from rank {} out of range", id2.rank);
  LineAttributor attributor(id);
  // The same lines through a second attributor that replays per-template plans (as LineFeed
  // does for cached lines): it must agree with the full peel on every line.
  LineAttributor planned(id);
  std::unordered_map<std::string, AttributionPlan> plans;
  std::string tmpl;
  std::string scratch;
  std::string problem;
  uint64_t lines = 0;
  for_each_line(all, [&](sv line) {
    if (!problem.empty()) return;
    ++lines;
    if (lines % 7 == 0) {
      attributor.enable_pdsh();
      planned.enable_pdsh();
    }
    if (line.size() > kMaxLineBytes) line = line.substr(0, kMaxLineBytes);
    for_each_segment(line, scratch, [&](sv seg) {
      if (!problem.empty()) return;
      if (seg.find('\r') != sv::npos) problem = "segment contains CR";
      if (seg.find('\0') != sv::npos) problem = "segment contains NUL";
      Attribution a = attributor.attribute(seg);
      tmpl.clear();
      append_digit_template(seg, tmpl);
      if (!same_attribution(a, planned.attribute(seg, &plans[tmpl]))) problem = "a replayed plan disagrees with the full peel";
      if (!within(a.body, seg) || a.body.data() + a.body.size() != seg.data() + seg.size())
        problem = "body is not a suffix of the line";
      if (!within(a.host, seg) && a.host != id.host) problem = "host view outside the line";
      if (a.rank < -1 || a.rank > kMaxRankNumber) problem = fmt::format("rank {} out of range", a.rank);
      if (a.local_rank < -1 || a.local_rank > kMaxRankNumber) problem = fmt::format("local rank {} out of range", a.local_rank);
      if (!plausible_time(a.time)) problem = fmt::format("implausible time {} ms", a.time.ms);
      std::string ts = format_timestamp(a.time);
      if (a.time.valid() == ts.empty()) problem = "timestamp formatting disagrees with validity";
      if (a.time.kind == Timestamp::kNoYear) {
        Timestamp full = with_year(a.time, 2024);
        if (full.kind != Timestamp::kFull || year_of(full) != 2024) problem = "with_year did not move the year";
      }
      // The renderers' helpers on the same untrusted text.
      std::string clean = sanitize_utf8(seg);
      if (!valid_utf8(clean)) problem = "sanitize_utf8 output is not valid UTF-8";
      std::string stripped = strip_control(clean);
      if (stripped.find('\x1b') != std::string::npos) problem = "strip_control left an escape";
      std::string cut = truncate_utf8(clean, 40);
      if (cut.size() > 43 || !valid_utf8(cut)) problem = "truncate_utf8 broke its contract";
    });
  });
  return problem;
}

std::string signatures_one(const uint8_t* data, size_t size) {
  sv all(reinterpret_cast<const char*>(data), size);
  std::vector<SourceFile> sources;
  // The first file plays a built-in one, the rest an extra library (overrides, duplicates).
  size_t i = 0;
  for (sv text : split_files(all)) {
    bool builtin = i == 0;
    sources.push_back({fmt::format("signatures/memory/fuzz-{}.yaml", i), std::string(text), builtin});
    ++i;
  }
  std::vector<LoadProblem> problems;
  Library lib = load_sources(sources, problems);
  for (const auto& p : problems) {
    if (p.message.empty()) return "problem without a message";
    if (p.loc.file.empty()) return "problem without a file: " + p.message;
    if (p.loc.line < 0 || p.loc.col < 0) return "negative line/column: " + p.format();
  }
  if (!problems.empty()) return "";
  for (const Entry& e : lib.entries) {
    if (lib.find_entry(e.id) != &e) return "entry index disagrees for " + e.id;
    for (const PatternRef& r : e.refs)
      if (r.def >= lib.patterns.size()) return "pattern ref out of range in " + e.id;
    for (const CaptureRule& c : e.match.captures)
      if (c.ref >= e.refs.size() || !c.re) return "capture rule out of range in " + e.id;
  }
  Matcher matcher(lib);
  if (!matcher.compile(false).ok()) return "";  // e.g. the set exceeds RE2's memory: reported, not a crash
  std::vector<int> hits;
  for (size_t d = 0; d < lib.patterns.size(); ++d)
    for (const auto& line : lib.patterns[d].positive) {
      matcher.match(line, hits);
      for (int h : hits)
        if (h < 0 || static_cast<size_t>(h) >= lib.patterns.size()) return "matcher hit out of range";
      matcher.extract(d, line);
    }
  return "";
}

// The built-in library and its matcher, loaded once per process as the CLI does once per run.
const Library& builtin_library() {
  static const Library* lib = [] {
    std::vector<LoadProblem> problems;
    LoadOptions lo;
    lo.check_samples = false;
    return new Library(load_library({}, problems, lo));
  }();
  return *lib;
}
const Matcher& builtin_matcher() {
  static const Matcher* matcher = [] {
    auto* m = new Matcher(builtin_library());
    (void)m->compile(true);
    return m;
  }();
  return *matcher;
}

// The fuzz input as one job (split into files at form feeds); nullopt when a file cannot be made.
std::optional<JobResult> diagnose_input(const uint8_t* data, size_t size, size_t& n_inputs) {
  sv all(reinterpret_cast<const char*>(data), size);
  std::vector<std::unique_ptr<MemFile>> files;
  std::vector<InputSource> inputs;
  for (sv text : split_files(all)) {
    files.push_back(std::make_unique<MemFile>(text));
    if (!files.back()->ok()) return std::nullopt;
    inputs.push_back({files.back()->path(), false});
  }
  n_inputs = inputs.size();
  return analyze_job(inputs, builtin_matcher(), {});
}

std::string diagnose_one(const uint8_t* data, size_t size) {
  const Library* lib = &builtin_library();
  size_t n_inputs = 0;
  std::optional<JobResult> result = diagnose_input(data, size, n_inputs);
  if (!result) return "";
  JobResult& r = *result;
  std::vector<InputSource> inputs(n_inputs);  // only its size is compared below
  const Diagnosis& d = r.diagnosis;
  if ((d.verdict == "diagnosed") != (d.entry != nullptr)) return "verdict and entry disagree";
  if (d.verdict != "diagnosed" && d.verdict != "unrecognized" && d.verdict != "incomplete" && d.verdict != "clean" &&
      d.verdict != "error")
    return "unknown verdict " + d.verdict;
  if ((d.verdict == "incomplete") != d.stopped.has_value()) return "verdict incomplete and its stopped run disagree";
  if ((d.verdict == "error") != read_nothing(d.inputs)) return "verdict error but some input yielded a line, or the reverse";
  if (d.inputs.size() != inputs.size()) return "an input went missing from the summary";
  if (d.limits.truncated == d.limits.dropped.empty()) return "truncated flag and dropped list disagree";
  if (d.initiating.rank && (*d.initiating.rank < 0 || *d.initiating.rank > kMaxRankNumber))
    return fmt::format("initiating rank {} out of range", *d.initiating.rank);
  if (d.ranks.size() > kMaxRanks) return "more ranks than kMaxRanks";
  std::string json_text = dump_json(diagnosis_to_json(d, *lib));
  nlohmann::json parsed = nlohmann::json::parse(json_text, nullptr, false);
  if (parsed.is_discarded()) return "the JSON output does not parse";
  if (parsed["truncated"].get<bool>() != d.limits.truncated) return "JSON truncated flag differs";
  for (bool color : {false, true}) {
    TextStyle style;
    style.color = color;
    style.verbose = true;
    std::string text = render_text(d, *lib, style);
    if (!color && text.find('\x1b') != std::string::npos) return "log text drove the terminal (escape in plain output)";
  }
  return "";
}

// Every output of every format, from a log that may hold anything: nothing in it may drive a
// terminal or a CI runner, every output is valid UTF-8, the JSON ones parse, and the HTML page
// holds no markup from the log.
std::string render_one(const uint8_t* data, size_t size) {
  const Library& lib = builtin_library();
  size_t n_inputs = 0;
  std::optional<JobResult> result = diagnose_input(data, size, n_inputs);
  if (!result) return "";
  Diagnosis d = result->diagnosis;
  neutralize_diagnosis(d);  // as diagnose and timeline do before any renderer
  std::vector<std::pair<std::string, std::string>> outputs;  // format -> text
  TextStyle plain;
  plain.verbose = true;
  outputs.push_back({"text", render_text(d, lib, plain)});
  outputs.push_back({"json", dump_json(diagnosis_to_json(d, lib))});
  for (const std::string& f : {"github", "markdown", "sarif", "gitlab", "junit"}) {
    std::ostringstream out;
    CiRenderOptions co;
    (void)render_ci(f, d, lib, co, out);
    outputs.push_back({f, out.str()});
  }
  outputs.push_back({"timeline", render_timeline_text(d)});
  outputs.push_back({"html", render_timeline_html(d, lib)});
  outputs.push_back({"svg", render_timeline_svg(d, lib)});
  for (const auto& [format, text] : outputs) {
    if (!valid_utf8(text)) return format + ": output is not valid UTF-8";
    for (const char* bad : {"\x1b", "\a", "\xc2\x9b", "\xe2\x80\xae", "\xe2\x81\xa6", "##vso["})
      if (text.find(bad) != std::string::npos) return format + ": a control, bidi or CI command from the log survived";
    size_t at = 0;
    for (size_t nl = 0; at < text.size(); at = nl + 1) {
      nl = text.find('\n', at);
      if (nl == std::string::npos) nl = text.size();
      sv line(text.data() + at, nl - at);
      if (line.substr(0, 2) == "::" && !(format == "github" && (line.substr(0, 8) == "::error " || line.substr(0, 10) == "::warning " ||
                                                              line.substr(0, 9) == "::notice " || line.substr(0, 8) == "::group:" ||
                                                              line.substr(0, 11) == "::endgroup:")))
        return format + ": a line starts a workflow command: " + std::string(line.substr(0, 60));
    }
    if ((format == "json" || format == "sarif" || format == "gitlab") && nlohmann::json::parse(text, nullptr, false).is_discarded())
      return format + ": does not parse";
    if ((format == "html" || format == "svg") && (text.find("<script") != std::string::npos || text.find("<img") != std::string::npos))
      return format + ": markup from the log";
  }
  return "";
}

std::string redact_one(const uint8_t* data, size_t size) {
  if (size == 0) return "";
  const RedactKind& kind = *redact_kinds()[data[0] % redact_kinds().size()];
  const RedactSample& sample = kind.positive[(size > 1 ? data[1] : 0) % kind.positive.size()];
  sv text(reinterpret_cast<const char*>(data), size);
  text.remove_prefix(std::min<size_t>(2, size));
  if (text.find(sample.secret) != sv::npos) return "";  // the input shows the secret itself
  // The sample goes in as its own line, at a point the input picks.
  size_t cut = text.empty() ? 0 : static_cast<unsigned char>(text[0]) * text.size() / 256;
  std::string seeded = std::string(text.substr(0, cut)) + "\n" + sample.line + "\n" + std::string(text.substr(cut));
  for (RedactLevel level : {RedactLevel::kSecrets, RedactLevel::kPii, RedactLevel::kAll}) {
    if (level < kind.level) continue;
    Redactor r(level);
    if (r.mask(seeded).find(sample.secret) != std::string::npos)
      return fmt::format("--redact={}: the {} value {} survived", redact_level_name(level), kind.name, sample.secret);
  }
  return "";
}

namespace {

// Writes `members` (a name line, then the content) as an archive in the format and compression
// `selector` picks; returns the regular members written, or nullopt when libarchive refused an
// entry (its writer is then no reference for what a reader must see: a zip's central directory
// came out truncated). A member named "dir/" is a directory, "@link name" a symbolic link to its
// content; one with no name is left out.
std::optional<size_t> write_archive(uint8_t selector, const std::vector<sv>& members, std::string& out) {
  struct archive* w = archive_write_new();
  const int format = selector % 4;
  if (format == 0) archive_write_set_format_ustar(w);
  else if (format == 1) archive_write_set_format_pax_restricted(w);
  else if (format == 2) archive_write_set_format_gnutar(w);
  else archive_write_set_format_zip(w);
  // Compression only where this libarchive writes it itself (an external program is no test).
  if (format != 3 && (selector / 4) % 3 == 1 && archive_write_add_filter_gzip(w) != ARCHIVE_OK) archive_write_add_filter_none(w);
  if (format != 3 && (selector / 4) % 3 == 2 && archive_write_add_filter_xz(w) != ARCHIVE_OK) archive_write_add_filter_none(w);
  archive_write_set_bytes_in_last_block(w, 1);  // no zero padding after a zip's central directory
  auto append = [](struct archive*, void* to, const void* buf, size_t n) -> la_ssize_t {
    static_cast<std::string*>(to)->append(static_cast<const char*>(buf), n);
    return static_cast<la_ssize_t>(n);
  };
  std::optional<size_t> regular = 0;
  if (archive_write_open(w, &out, nullptr, append, nullptr) != ARCHIVE_OK) regular.reset();
  if (regular) {
    for (sv m : members) {
      size_t nl = m.find('\n');
      std::string name(m.substr(0, nl));
      name.resize(std::strlen(name.c_str()));  // libarchive takes C strings: a name ends at a NUL
      if (name.empty() || name == "@link ") continue;
      sv content = nl == sv::npos ? sv() : m.substr(nl + 1);
      struct archive_entry* e = archive_entry_new();
      const bool link = name.rfind("@link ", 0) == 0, dir = !name.empty() && name.back() == '/';
      archive_entry_set_pathname(e, link ? name.substr(6).c_str() : name.c_str());
      archive_entry_set_perm(e, 0644);
      archive_entry_set_mtime(e, 1700000000, 0);
      if (link) {
        archive_entry_set_filetype(e, AE_IFLNK);
        archive_entry_set_symlink(e, std::string(content).c_str());
      } else if (dir) {
        archive_entry_set_filetype(e, AE_IFDIR);
      } else {
        archive_entry_set_filetype(e, AE_IFREG);
        archive_entry_set_size(e, static_cast<la_int64_t>(content.size()));
      }
      const bool written = archive_write_header(w, e) == ARCHIVE_OK;
      archive_entry_free(e);
      if (!written) {
        regular.reset();
        break;
      }
      if (link || dir) continue;
      if (!content.empty()) archive_write_data(w, content.data(), content.size());
      ++*regular;
    }
    archive_write_close(w);
  }
  archive_write_free(w);
  return regular;
}

}  // namespace

std::string archive_one(const uint8_t* data, size_t size) {
  if (size == 0) return "";
  std::string bytes;
  const std::optional<size_t> regular =
      write_archive(data[0], split_files(sv(reinterpret_cast<const char*>(data) + 1, size - 1)), bytes);
  MemFile f(bytes);
  if (!f.ok()) return "";
  const std::string path = f.path();
  std::vector<std::string> listed;
  std::string error;
  const bool archive = list_archive_members(path, listed, error);
  JobResult r = analyze_paths({path}, builtin_matcher(), {});
  const Diagnosis& d = r.diagnosis;
  size_t members_read = 0;
  for (const InputSummary& in : d.inputs) {
    if (in.path.rfind(path + "!", 0) == 0) ++members_read;
    else if (in.path != path) return "an input that is neither the archive nor one of its members: " + in.path;
  }
  if (regular && *regular > 0 && !archive) return "an archive libarchive wrote does not read as one: " + error;
  if (members_read > listed.size()) return fmt::format("{} members read, {} listed", members_read, listed.size());
  if (regular && archive && error.empty() && listed.size() != *regular)
    return fmt::format("{} regular members written, {} listed", *regular, listed.size());
  nlohmann::json parsed = nlohmann::json::parse(dump_json(diagnosis_to_json(d, builtin_library())), nullptr, false);
  if (parsed.is_discarded()) return "the JSON output does not parse";
  TextStyle style;
  style.verbose = true;
  if (render_text(d, builtin_library(), style).find('\x1b') != std::string::npos) return "a member name or line drove the terminal";
  return "";
}

}  // namespace firstfault::fuzz
