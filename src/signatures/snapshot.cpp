#include "firstfault/signatures/snapshot.h"

#include <algorithm>
#include <cstring>

#include "firstfault/signatures/embedded.h"

namespace firstfault {

namespace {

constexpr char kMagic[8] = {'F', 'F', 'S', 'N', 'A', 'P', '\r', '\n'};

#if defined(__GLIBCXX__) && defined(__x86_64__)
// A new field in these structs must be written below (and kSnapshotFormat bumped). A tripwire,
// not a proof (a bool can hide in padding); checked only where the sizes are known.
static_assert(sizeof(SourceLoc) == 40, "SourceLoc changed: update the snapshot");
static_assert(sizeof(PatternDef) == 224, "PatternDef changed: update the snapshot");
static_assert(sizeof(PatternRef) == 48, "PatternRef changed: update the snapshot");
static_assert(sizeof(CaptureRule) == 56, "CaptureRule changed: update the snapshot");
static_assert(sizeof(MatchRule) == 184, "MatchRule changed: update the snapshot");
static_assert(sizeof(Example) == 40, "Example changed: update the snapshot");
static_assert(sizeof(Entry) == 640, "Entry changed: update the snapshot");
static_assert(sizeof(Override) == 136, "Override changed: update the snapshot");
static_assert(sizeof(Library) == 168, "Library changed: update the snapshot");
#endif

class Writer {
 public:
  std::string out;

  void u8(uint8_t v) { out.push_back(static_cast<char>(v)); }
  void u32(uint64_t v) {
    auto x = static_cast<uint32_t>(v);
    out.append(reinterpret_cast<const char*>(&x), sizeof x);
  }
  void u64(uint64_t v) { out.append(reinterpret_cast<const char*>(&v), sizeof v); }
  void i32(int v) { u32(static_cast<uint32_t>(v)); }
  void str(const std::string& s) {
    u32(s.size());
    out += s;
  }
  void strs(const std::vector<std::string>& v) {
    u32(v.size());
    for (const auto& s : v) str(s);
  }
  void indices(const std::vector<size_t>& v) {
    u32(v.size());
    for (size_t i : v) u32(i);
  }
  void loc(const SourceLoc& l) {
    str(l.file);
    i32(l.line);
    i32(l.col);
  }
};

// Bounds-checked: after the first short read everything returns empty and ok() is false.
class Reader {
 public:
  explicit Reader(std::string_view in) : p_(in.data()), end_(in.data() + in.size()) {}
  bool ok() const { return ok_; }
  bool done() const { return ok_ && p_ == end_; }

  uint8_t u8() {
    if (!need(1)) return 0;
    return static_cast<uint8_t>(*p_++);
  }
  uint32_t u32() {
    uint32_t v = 0;
    if (need(sizeof v)) {
      std::memcpy(&v, p_, sizeof v);
      p_ += sizeof v;
    }
    return v;
  }
  int i32() { return static_cast<int>(u32()); }
  bool flag() {
    uint8_t v = u8();
    if (v > 1) ok_ = false;
    return v == 1;
  }
  // A count of items taking at least `min_bytes` each: a garbled count cannot make us allocate
  // more than the input could hold.
  size_t count(size_t min_bytes) {
    size_t n = u32();
    if (n > static_cast<size_t>(end_ - p_) / min_bytes) ok_ = false;
    return ok_ ? n : 0;
  }
  std::string str() {
    size_t n = u32();
    if (!need(n)) return {};
    std::string s(p_, n);
    p_ += n;
    return s;
  }
  std::vector<std::string> strs() {
    std::vector<std::string> v(count(4));
    for (auto& s : v) s = str();
    return v;
  }
  // Reads past a str() / strs() without allocating it.
  void skip_str() {
    size_t n = u32();
    if (need(n)) p_ += n;
  }
  void skip_strs() {
    for (size_t n = count(4); n > 0 && ok_; --n) skip_str();
  }
  // Indices below `bound`.
  size_t index(size_t bound) {
    size_t i = u32();
    if (i >= bound) ok_ = false;
    return ok_ ? i : 0;
  }
  std::vector<size_t> indices(size_t bound) {
    std::vector<size_t> v(count(4));
    for (auto& i : v) i = index(bound);
    return v;
  }
  SourceLoc loc() {
    SourceLoc l;
    l.file = str();
    l.line = i32();
    l.col = i32();
    return l;
  }

 private:
  bool need(size_t n) {
    if (ok_ && static_cast<size_t>(end_ - p_) >= n) return true;
    ok_ = false;
    return false;
  }
  const char* p_;
  const char* end_;
  bool ok_ = true;
};

void write_payload(Writer& w, const Library& lib) {
  w.u32(lib.patterns.size());
  for (const PatternDef& p : lib.patterns) {
    w.str(p.name);
    w.str(p.regex);
    w.str(p.description);
    w.strs(p.positive);
    w.strs(p.negative);
    w.loc(p.loc);
    w.strs(p.capture_names);
  }
  w.u32(lib.entries.size());
  for (const Entry& e : lib.entries) {
    w.str(e.id);
    w.str(e.title);
    w.str(e.category);
    w.str(e.severity);
    w.strs(e.systems);
    w.u32(e.refs.size());
    for (const PatternRef& r : e.refs) {
      w.str(r.name);
      w.u32(r.def);
      w.u8(static_cast<uint8_t>(r.role));
    }
    const MatchRule& m = e.match;
    for (const auto* v : {&m.require, &m.any, &m.boost, &m.penalize, &m.absent, &m.same_traceback}) w.indices(*v);
    w.u8(m.fallback);
    w.u8(m.generic);
    w.u8(m.no_progress);
    w.u8(m.survivable);
    w.u8(static_cast<uint8_t>(m.last_resort));
    w.u32(m.captures.size());
    for (const CaptureRule& c : m.captures) {
      w.u32(c.ref);
      w.str(c.capture);
      w.str(c.re.pattern());
    }
    w.u8(m.require_is_default);
    w.strs(e.specializes);
    w.strs(e.explains);
    w.u8(e.job_scope);
    w.u8(e.ends_job_from_outside);
    w.u8(static_cast<uint8_t>(e.action));
    w.str(e.root_cause);
    w.str(e.fix);
    for (const auto* v : {&e.confirm, &e.prevention, &e.references, &e.related}) w.strs(*v);
    w.u32(e.examples.size());
    for (const Example& x : e.examples) {
      w.str(x.log);
      w.u8(x.initiating_rank.has_value());
      w.i32(x.initiating_rank.value_or(0));
    }
    w.loc(e.loc);
  }
  for (const auto* index : {&lib.pattern_index, &lib.entry_index}) {
    w.u32(index->size());
    for (const auto& [name, i] : *index) {
      w.str(name);
      w.u32(i);
    }
  }
  w.u32(lib.overrides.size());
  for (const Override& o : lib.overrides) {
    w.str(o.kind);
    w.str(o.name);
    w.loc(o.loc);
    w.str(o.builtin_file);
  }
}

// A pattern's description and sample lines, or nothing without `samples` (see LoadOptions).
void read_samples(Reader& r, PatternDef& p, bool samples) {
  if (!samples) {
    r.skip_str();
    r.skip_strs();
    r.skip_strs();
    return;
  }
  p.description = r.str();
  p.positive = r.strs();
  p.negative = r.strs();
}

bool read_payload(Reader& r, Library& lib, bool samples) {
  lib.patterns.resize(r.count(16));
  for (PatternDef& p : lib.patterns) {
    p.name = r.str();
    p.regex = r.str();
    if (!p.regex.empty()) p.re = LazyRegex(p.regex);
    read_samples(r, p, samples);
    p.loc = r.loc();
    p.capture_names = r.strs();
    if (!r.ok()) return false;
  }
  lib.entries.resize(r.count(16));
  for (Entry& e : lib.entries) {
    e.id = r.str();
    e.title = r.str();
    e.category = r.str();
    e.severity = r.str();
    e.systems = r.strs();
    e.refs.resize(r.count(9));
    for (PatternRef& ref : e.refs) {
      ref.name = r.str();
      ref.def = r.index(lib.patterns.size());
      uint8_t role = r.u8();
      if (role > static_cast<uint8_t>(Role::kContext)) return false;
      ref.role = static_cast<Role>(role);
    }
    MatchRule& m = e.match;
    for (auto* v : {&m.require, &m.any, &m.boost, &m.penalize, &m.absent, &m.same_traceback}) *v = r.indices(e.refs.size());
    m.fallback = r.flag();
    m.generic = r.flag();
    m.no_progress = r.flag();
    m.survivable = r.flag();
    m.last_resort = r.u8();
    if (m.last_resort > 9) return false;
    m.captures.resize(r.count(12));
    for (CaptureRule& c : m.captures) {
      c.ref = r.index(e.refs.size());
      c.capture = r.str();
      std::string regex = r.str();
      if (!regex.empty()) c.re = LazyRegex(std::move(regex));
    }
    m.require_is_default = r.flag();
    e.specializes = r.strs();
    e.explains = r.strs();
    e.job_scope = r.flag();
    e.ends_job_from_outside = r.flag();
    uint8_t action = r.u8();
    if (action > static_cast<uint8_t>(ActionKind::kInvestigate)) return false;
    e.action = static_cast<ActionKind>(action);
    e.root_cause = r.str();
    e.fix = r.str();
    for (auto* v : {&e.confirm, &e.prevention, &e.references, &e.related}) *v = r.strs();
    e.examples.resize(r.count(9));
    for (Example& x : e.examples) {
      x.log = r.str();
      bool has_rank = r.flag();
      int rank = r.i32();
      if (has_rank) x.initiating_rank = rank;
    }
    e.loc = r.loc();
    if (!r.ok()) return false;
  }
  auto read_index = [&](std::map<std::string, size_t>& index, size_t bound) {
    for (size_t n = r.count(8); n > 0 && r.ok(); --n) {
      std::string name = r.str();
      size_t i = r.index(bound);
      index.emplace_hint(index.end(), std::move(name), i);  // written in order
    }
  };
  read_index(lib.pattern_index, lib.patterns.size());
  read_index(lib.entry_index, lib.entries.size());
  lib.overrides.resize(r.count(20));
  for (Override& o : lib.overrides) {
    o.kind = r.str();
    o.name = r.str();
    o.loc = r.loc();
    o.builtin_file = r.str();
  }
  return r.done();
}

}  // namespace

uint64_t snapshot_hash(std::string_view bytes, uint64_t seed) {
  // Multiply-xorshift, four independent lanes of 8-byte words (for speed), folded in order. Each
  // step is a bijection of its lane, so a change confined to one word always changes the result.
  constexpr uint64_t kMul = 0x9e3779b97f4a7c15ull;
  auto mix = [](uint64_t h, uint64_t w) {
    h = (h ^ w) * kMul;
    return h ^ (h >> 29);
  };
  uint64_t lane[4] = {seed, seed + 1, seed + 2, seed + 3};
  size_t i = 0;
  for (; i + 32 <= bytes.size(); i += 32)
    for (int k = 0; k < 4; ++k) {
      uint64_t w;
      std::memcpy(&w, bytes.data() + i + 8 * k, 8);
      lane[k] = mix(lane[k], w);
    }
  uint64_t h = mix(seed, bytes.size());
  for (uint64_t l : lane) h = mix(h, l);
  for (; i < bytes.size(); i += 8) {
    uint64_t w = 0;
    std::memcpy(&w, bytes.data() + i, std::min<size_t>(8, bytes.size() - i));
    h = mix(h, w);
  }
  return mix(h, 0);
}

uint64_t builtin_source_key() { return snapshot_hash(embedded_signatures_digest(), kSnapshotFormat); }

std::string serialize_library(const Library& lib, uint64_t source_key) {
  Writer payload;
  write_payload(payload, lib);
  Writer w;
  w.out.append(kMagic, sizeof kMagic);
  w.u32(kSnapshotFormat);
  w.u32(0);
  w.u64(source_key);
  w.u64(payload.out.size());
  w.u64(snapshot_hash(payload.out));
  return w.out + payload.out;
}

std::optional<Library> deserialize_library(std::string_view blob, uint64_t source_key, bool samples) {
  if (blob.size() < kSnapshotHeaderSize || std::memcmp(blob.data(), kMagic, sizeof kMagic) != 0) return std::nullopt;
  uint32_t format, reserved;
  uint64_t key, size, hash;
  std::memcpy(&format, blob.data() + 8, 4);
  std::memcpy(&reserved, blob.data() + 12, 4);
  std::memcpy(&key, blob.data() + 16, 8);
  std::memcpy(&size, blob.data() + 24, 8);
  std::memcpy(&hash, blob.data() + 32, 8);
  std::string_view payload = blob.substr(kSnapshotHeaderSize);
  if (format != kSnapshotFormat || reserved != 0 || key != source_key || size != payload.size() ||
      hash != snapshot_hash(payload))
    return std::nullopt;
  Library lib;
  Reader r(payload);
  if (!read_payload(r, lib, samples)) return std::nullopt;
  return lib;
}

}  // namespace firstfault
