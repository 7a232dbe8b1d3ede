#include "finished_rows.h"

#include <fmt/format.h>

#include <cstring>
#include <random>

#include "firstfault/render/render.h"
#include "firstfault/util/safe_text.h"

namespace firstfault {

using json = OutputJson;

namespace {

// Length-prefixed fields, written and read back in the same order.
class ByteFields {
 public:
  void put_number(uint64_t n) { bytes_.append(reinterpret_cast<const char*>(&n), sizeof n); }
  void put(const std::string& s) {
    put_number(s.size());
    bytes_ += s;
  }
  std::string take() { return std::move(bytes_); }

  explicit ByteFields(std::string_view in = {}) : in_(in) {}
  uint64_t get_number() {
    uint64_t n = 0;
    if (in_.size() < sizeof n) {
      ok_ = false;
      return 0;
    }
    std::memcpy(&n, in_.data(), sizeof n);
    in_.remove_prefix(sizeof n);
    return n;
  }
  void get(std::string& s) {
    uint64_t n = get_number();
    if (!ok_ || n > in_.size()) {
      ok_ = false;
      return;
    }
    s.assign(in_.substr(0, n));
    in_.remove_prefix(n);
  }
  bool read_whole() const { return ok_ && in_.empty(); }
  bool ok() const { return ok_; }

 private:
  std::string bytes_;
  std::string_view in_;
  bool ok_ = true;
};

}  // namespace

std::string row_bytes(const JobOutput& o) {
  const JobRecord& r = o.rec;
  ByteFields b;
  for (const std::string* s : {&r.job, &r.verdict, &r.id, &r.title, &r.category, &r.severity, &r.action, &r.host,
                               &r.first_error, &r.error, &r.date, &o.line})
    b.put(*s);
  b.put_number(r.rank ? 1 : 0);
  b.put_number(static_cast<uint64_t>(static_cast<int64_t>(r.rank.value_or(0))));
  b.put_number(r.bytes);
  b.put_number(r.skipped);
  for (const auto* list : {&r.gpus, &o.hosts_to_learn, &o.texts_to_mask}) {
    b.put_number(list->size());
    for (const auto& item : *list) b.put(item);
  }
  return b.take();
}

std::unique_ptr<JobOutput> row_from_bytes(std::string_view bytes) {
  auto o = std::make_unique<JobOutput>();
  JobRecord& r = o->rec;
  ByteFields b(bytes);
  for (std::string* s : {&r.job, &r.verdict, &r.id, &r.title, &r.category, &r.severity, &r.action, &r.host,
                         &r.first_error, &r.error, &r.date, &o->line})
    b.get(*s);
  const bool has_rank = b.get_number() != 0;
  const auto rank = static_cast<int64_t>(b.get_number());
  if (has_rank) r.rank = static_cast<int>(rank);
  r.bytes = b.get_number();
  r.skipped = b.get_number();
  for (auto* list : {&r.gpus, &o->hosts_to_learn, &o->texts_to_mask})
    for (uint64_t n = b.get_number(); n > 0 && b.ok(); --n) b.get(list->emplace_back());
  if (!b.read_whole()) return nullptr;
  return o;
}

WaitingRows::~WaitingRows() {
  if (file_) std::fclose(file_);
}

void WaitingRows::park(RowSlot& slot) {
  JobOutput& o = *slot.out;
  o.counted = sizeof(JobOutput) + o.line.size() + o.rec.job.size() + o.rec.first_error.size() + o.rec.error.size();
  for (const auto& t : o.texts_to_mask) o.counted += sizeof t + t.size();
  if (in_memory_.fetch_add(o.counted) + o.counted <= budget_) return;
  const std::string bytes = row_bytes(o);
  std::lock_guard<std::mutex> lock(mu_);
  if (!file_) file_ = std::tmpfile();
  long at = file_ && std::fseek(file_, 0, SEEK_END) == 0 ? std::ftell(file_) : -1;
  if (at >= 0 && std::fwrite(bytes.data(), 1, bytes.size(), file_) == bytes.size()) {
    in_memory_ -= o.counted;
    slot.parked_at = at;
    slot.parked_size = bytes.size();
    slot.out.reset();
  }
}

void WaitingRows::bring_back(RowSlot& slot, const std::string& job) {
  if (slot.parked_at < 0) {
    in_memory_ -= slot.out->counted;
    return;
  }
  std::string bytes(slot.parked_size, '\0');
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (std::fseek(file_, slot.parked_at, SEEK_SET) == 0 && std::fread(bytes.data(), 1, bytes.size(), file_) == bytes.size())
      slot.out = row_from_bytes(bytes);
  }
  slot.parked_at = -1;
  if (slot.out) return;
  slot.out = std::make_unique<JobOutput>();
  JobRecord& rec = slot.out->rec;
  rec.job = job;
  rec.verdict = "error";
  rec.error = "its row could not be read back from the temporary file";
  slot.out->line = json{{"schema", kTriageJobSchema}, {"type", "job"}, {"job", rec.job}, {"verdict", rec.verdict},
                        {"error", rec.error}}
                       .dump(-1, ' ', false, json::error_handler_t::replace);
}

std::string row_line(const JobOutput& o, const std::string& job, const std::string& error, const Library& lib) {
  json j = json::object();
  j["schema"] = kTriageJobSchema;
  j["type"] = "job";
  j["job"] = job;
  j["date"] = o.rec.date.empty() ? json(nullptr) : json(o.rec.date);
  if (!o.diagnosis || !o.rec.error.empty()) j["error"] = error;
  if (o.diagnosis) {
    json d = diagnosis_to_json(*o.diagnosis, lib);
    for (auto& [key, value] : d.items())
      if (key != "schema") j[key] = std::move(value);
  }
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

void finish_output(JobOutput& o, bool want_json, const Library& lib) {
  if (o.diagnosis) neutralize_diagnosis(*o.diagnosis);
  for (std::string* s : {&o.rec.job, &o.rec.error, &o.rec.first_error, &o.rec.host}) *s = safe_line(*s);
  if (want_json) o.line = row_line(o, o.rec.job, o.rec.error, lib);
  o.diagnosis.reset();
}

MaskInJobOrder::MaskInJobOrder() {
  std::random_device rd;
  marker_ = fmt::format("@ff{:08x}{:08x}:", rd(), rd());
}

void MaskInJobOrder::take_apart(JobOutput& o, bool want_json, const Library& lib) const {
  if (o.diagnosis) {
    o.hosts_to_learn = hosts_revealed(*o.diagnosis);
    for_each_text(*o.diagnosis, [&](std::string& s) {
      if (s.empty()) return;  // masks and neutralises to itself; a stand-in would fill a null
      o.texts_to_mask.push_back(std::move(s));
      s = stand_in(std::to_string(o.texts_to_mask.size() - 1));
    });
  }
  if (want_json) o.line = row_line(o, stand_in("job"), stand_in("error"), lib);
  o.diagnosis.reset();
}

void MaskInJobOrder::mask(JobOutput& o, Redactor& r) const {
  std::vector<std::string*> texts;
  for (auto& t : o.texts_to_mask) texts.push_back(&t);
  redact_texts(o.hosts_to_learn, texts, r);  // first: it knows the job's hosts
  for (std::string* s : {&o.rec.job, &o.rec.error, &o.rec.first_error, &o.rec.host}) *s = safe_line(r.mask(*s));
  for (auto& t : o.texts_to_mask) t = safe_line(t);
  if (!o.line.empty()) o.line = fill_stand_ins(o);
  o.hosts_to_learn.clear();
  o.texts_to_mask.clear();
}

std::string MaskInJobOrder::fill_stand_ins(const JobOutput& o) const {
  std::string out;
  size_t at = 0;
  for (size_t m; (m = o.line.find(marker_, at)) != std::string::npos;) {
    size_t key_at = m + marker_.size(), end = o.line.find('@', key_at);
    if (end == std::string::npos) break;
    const std::string key = o.line.substr(key_at, end - key_at);
    const std::string* value = key == "job" ? &o.rec.job : key == "error" ? &o.rec.error : nullptr;
    if (!value && !key.empty() && key.size() < 10 && key.find_first_not_of("0123456789") == std::string::npos &&
        std::stoul(key) < o.texts_to_mask.size())
      value = &o.texts_to_mask[std::stoul(key)];
    if (!value) break;  // cannot happen: every stand-in was written by take_apart
    // Inside a JSON string: the value escaped as nlohmann escapes it, without its quotes.
    const std::string quoted = json(*value).dump(-1, ' ', false, json::error_handler_t::replace);
    out.append(o.line, at, m - at).append(quoted, 1, quoted.size() - 2);
    at = end + 1;
  }
  return out.append(o.line, at, std::string::npos);
}

}  // namespace firstfault
