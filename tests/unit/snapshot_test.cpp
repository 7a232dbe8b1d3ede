// The build-time snapshot of the built-in library (signatures/snapshot.h) must be the library the
// YAML gives, field for field, and must diagnose identically; bad bytes are never a snapshot.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>

#include "firstfault/app/pipeline.h"
#include "firstfault/render/render.h"
#include "firstfault/signatures/snapshot.h"
#include "test_support.h"

using namespace firstfault;
using nlohmann::json;

namespace {

// Canonical dumps covering every field of library.h (the compiled RE2s by their pattern text).
json dump(const SourceLoc& l) { return {l.file, l.line, l.col}; }

json dump(const PatternDef& p) {
  return {{"name", p.name},         {"regex", p.regex},       {"re", p.re.pattern()},
          {"description", p.description},
          {"positive", p.positive}, {"negative", p.negative}, {"loc", dump(p.loc)},
          {"capture_names", p.capture_names}};
}

json dump(const Entry& e) {
  json refs = json::array(), captures = json::array(), examples = json::array();
  for (const PatternRef& r : e.refs) refs.push_back({r.name, r.def, role_name(r.role)});
  for (const CaptureRule& c : e.match.captures) captures.push_back({c.ref, c.capture, c.re.pattern()});
  for (const Example& x : e.examples)
    examples.push_back({x.log, x.initiating_rank ? json(*x.initiating_rank) : json()});
  const MatchRule& m = e.match;
  return {{"id", e.id},
          {"title", e.title},
          {"category", e.category},
          {"severity", e.severity},
          {"systems", e.systems},
          {"refs", refs},
          {"match", {{"require", m.require}, {"any", m.any}, {"boost", m.boost}, {"penalize", m.penalize},
                     {"absent", m.absent}, {"fallback", m.fallback}, {"generic", m.generic}, {"no_progress", m.no_progress}, {"last_resort", m.last_resort},
                     {"captures", captures},
                     {"require_is_default", m.require_is_default}}},
          {"specializes", e.specializes},
          {"job_scope", e.job_scope},
          {"action", action_kind_name(e.action)},
          {"root_cause", e.root_cause},
          {"fix", e.fix},
          {"confirm", e.confirm},
          {"prevention", e.prevention},
          {"references", e.references},
          {"related", e.related},
          {"examples", examples},
          {"loc", dump(e.loc)}};
}

json dump_rest(const Library& lib) {
  json overrides = json::array();
  for (const Override& o : lib.overrides) overrides.push_back({o.kind, o.name, dump(o.loc), o.builtin_file});
  return {{"patterns", lib.patterns.size()}, {"entries", lib.entries.size()}, {"pattern_index", lib.pattern_index},
          {"entry_index", lib.entry_index}, {"overrides", overrides}};
}

void require_same(const Library& a, const Library& b) {
  REQUIRE(dump_rest(a) == dump_rest(b));
  for (size_t i = 0; i < a.patterns.size(); ++i) {
    INFO("pattern " << a.patterns[i].name);
    CHECK(dump(a.patterns[i]) == dump(b.patterns[i]));
  }
  for (size_t i = 0; i < a.entries.size(); ++i) {
    INFO("entry " << a.entries[i].id);
    CHECK(dump(a.entries[i]) == dump(b.entries[i]));
  }
}

Library yaml_library() {
  std::vector<LoadProblem> problems;
  LoadOptions lo;
  lo.check_samples = false;
  Library lib = load_sources(builtin_sources(), problems, lo);
  REQUIRE(problems.empty());
  return lib;
}

// Indices a garbled-but-accepted blob could break: the deserializer must have checked them.
bool consistent(const Library& lib) {
  for (const auto& [name, i] : lib.pattern_index)
    if (i >= lib.patterns.size()) return false;
  for (const auto& [id, i] : lib.entry_index)
    if (i >= lib.entries.size()) return false;
  for (const Entry& e : lib.entries) {
    for (const PatternRef& r : e.refs)
      if (r.def >= lib.patterns.size()) return false;
    const MatchRule& m = e.match;
    for (const auto* v : {&m.require, &m.any, &m.boost, &m.penalize, &m.absent})
      for (size_t k : *v)
        if (k >= e.refs.size()) return false;
    for (const CaptureRule& c : m.captures)
      if (c.ref >= e.refs.size()) return false;
  }
  return true;
}

void reseal(std::string& blob) {  // a valid header again for whatever payload follows it
  uint64_t size = blob.size() - kSnapshotHeaderSize;
  uint64_t hash = snapshot_hash(std::string_view(blob).substr(kSnapshotHeaderSize));
  std::memcpy(blob.data() + 24, &size, 8);
  std::memcpy(blob.data() + 32, &hash, 8);
}

// About `count` positions spread evenly over [from, to): the corruption loops below visit the
// whole snapshot at a cost that does not grow with the library (it is megabytes, and every
// visit deserializes it once; under ASan that was three minutes at a fixed stride).
std::vector<size_t> spread(size_t from, size_t to, size_t count) {
  std::vector<size_t> at;
  const size_t step = std::max<size_t>(1, (to - from) / count);
  for (size_t i = from + step / 3; i < to; i += step) at.push_back(i);  // off the record grid
  return at;
}

}  // namespace

TEST_CASE("snapshot: the built-in snapshot is the library the embedded YAML gives, field for field") {
  REQUIRE_FALSE(builtin_snapshot().empty());  // else every start-up silently parses the YAML
  auto snap = deserialize_library(builtin_snapshot(), builtin_source_key());
  REQUIRE(snap);
  require_same(*snap, yaml_library());
  // What the commands load with no --signatures is that snapshot too.
  require_same(*snap, test::repo_library());
  // Every regex still compiles on first use, with the capture groups the snapshot names.
  for (const PatternDef& p : snap->patterns) {
    INFO(p.name);
    REQUIRE(p.re);
    CHECK(static_cast<size_t>(p.re->NumberOfCapturingGroups()) == p.capture_names.size());
  }
  for (const Entry& e : snap->entries)
    for (const CaptureRule& c : e.match.captures) CHECK(c.re);
}

TEST_CASE("snapshot: diagnoses of every example log are identical to the YAML library's") {
  auto snap = deserialize_library(builtin_snapshot(), builtin_source_key());
  REQUIRE(snap);
  Library yaml = yaml_library();
  Matcher ms(*snap), my(yaml);
  REQUIRE(ms.compile(true).ok());
  REQUIRE(my.compile(true).ok());
  size_t logs = 0;
  for (const Entry& e : yaml.entries)
    for (const Example& x : e.examples) {
      std::string path = test::source_dir() + "/testdata/" + x.log;
      INFO(path);
      JobResult a = analyze_paths({path}, ms, {}), b = analyze_paths({path}, my, {});
      CHECK(dump_json(diagnosis_to_json(a.diagnosis, *snap)) == dump_json(diagnosis_to_json(b.diagnosis, yaml)));
      CHECK(render_text(a.diagnosis, *snap, {}) == render_text(b.diagnosis, yaml, {}));
      ++logs;
    }
  CHECK(logs >= yaml.entries.size());
}

// The run commands (diagnose, timeline, watch, triage) load the library without what only
// `check`, `catalog` and `explain` read (issue 27: ~2 MB of a 64 MiB bound); nothing else differs.
void drop_samples(Library& lib) {
  for (PatternDef& p : lib.patterns) {
    p.description.clear();
    p.positive.clear();
    p.negative.clear();
  }
}

TEST_CASE("snapshot: without samples the library lacks only descriptions and sample lines") {
  auto full = deserialize_library(builtin_snapshot(), builtin_source_key());
  auto lean = deserialize_library(builtin_snapshot(), builtin_source_key(), false);
  REQUIRE(full);
  REQUIRE(lean);
  size_t samples = 0;
  for (const PatternDef& p : full->patterns) samples += p.positive.size() + p.negative.size();
  CHECK(samples > 1000);
  for (const PatternDef& p : lean->patterns) {
    INFO(p.name);
    CHECK(p.description.empty());
    CHECK(p.positive.empty());
    CHECK(p.negative.empty());
  }
  drop_samples(*full);
  require_same(*lean, *full);
  // The same from the YAML (a --signatures directory), and from load_library() for the snapshot.
  std::vector<LoadProblem> problems;
  LoadOptions lo;
  lo.keep_samples = false;
  Library yaml = load_library({test::source_dir() + "/signatures"}, problems, lo);  // samples checked, then dropped
  REQUIRE(problems.empty());
  CHECK(yaml.patterns.size() == lean->patterns.size());
  for (const PatternDef& p : yaml.patterns) CHECK((p.description.empty() && p.positive.empty() && p.negative.empty()));
  lo.check_samples = false;
  Library builtin = load_library({}, problems, lo);
  require_same(builtin, *lean);
}

TEST_CASE("snapshot: a library with overrides and null ranks round-trips") {
  test::TempDir dir;
  std::ifstream in(test::source_dir() + "/signatures/memory/cuda-oom.yaml");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  text.replace(text.find("title: "), 7, "title: Site-specific ");
  dir.write("memory/cuda-oom.yaml", text);
  std::vector<LoadProblem> problems;
  LoadOptions lo;
  lo.check_samples = false;
  Library lib = load_library({dir.path()}, problems, lo);
  REQUIRE(problems.empty());
  REQUIRE(lib.overrides.size() == 1);
  std::string blob = serialize_library(lib, 42);
  auto back = deserialize_library(blob, 42);
  REQUIRE(back);
  require_same(*back, lib);
  CHECK(serialize_library(*back, 42) == blob);
  bool null_rank = false;
  for (const Entry& e : back->entries)
    for (const Example& x : e.examples) null_rank |= !x.initiating_rank;
  CHECK(null_rank);
}

TEST_CASE("snapshot: truncated, garbled or foreign bytes are no snapshot (the loader then reads the YAML)") {
  const std::string good(builtin_snapshot());
  const uint64_t key = builtin_source_key();
  REQUIRE(deserialize_library(good, key));
  CHECK_FALSE(deserialize_library("", key));
  CHECK_FALSE(deserialize_library(good, key + 1));  // made from other YAML files
  for (size_t n : {size_t{1}, size_t{8}, kSnapshotHeaderSize - 1, kSnapshotHeaderSize, kSnapshotHeaderSize + 3,
                   good.size() / 2, good.size() - 1}) {
    INFO("truncated to " << n);
    CHECK_FALSE(deserialize_library(good.substr(0, n), key));
  }
  for (size_t at : {size_t{0}, size_t{7}, size_t{8}, size_t{12}, size_t{16}, size_t{24}, size_t{32}}) {
    INFO("header byte " << at);  // magic, format version, reserved, source key, size, hash
    std::string bad = good;
    bad[at] ^= 0x01;
    CHECK_FALSE(deserialize_library(bad, key));
  }
  for (size_t at : spread(kSnapshotHeaderSize, good.size(), 150)) {
    INFO("payload byte " << at);
    std::string bad = good;
    bad[at] ^= 0x20;
    CHECK_FALSE(deserialize_library(bad, key));  // the payload hash catches any one-word change
    CHECK_FALSE(deserialize_library(bad + "x", key));
  }
  // With the hash made to agree, garbage still never reads out of bounds, and whatever is
  // accepted has every index in range.
  for (size_t at : spread(kSnapshotHeaderSize, good.size(), 100))
    for (unsigned char x : {0x01, 0x80, 0xff}) {
      INFO("resealed payload byte " << at << " ^ " << int(x));
      std::string bad = good;
      bad[at] = static_cast<char>(bad[at] ^ x);
      reseal(bad);
      if (auto lib = deserialize_library(bad, key)) CHECK(consistent(*lib));
    }
  for (size_t n : spread(kSnapshotHeaderSize, good.size(), 100)) {
    INFO("resealed truncation to " << n);
    std::string bad = good.substr(0, n);
    reseal(bad);
    CHECK_FALSE(deserialize_library(bad, key));
  }
  std::string junk(4096, '\0');
  for (size_t i = 0; i < junk.size(); ++i) junk[i] = static_cast<char>((i * 2654435761u) >> 13);
  CHECK_FALSE(deserialize_library(junk, key));
}
