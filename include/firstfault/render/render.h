#pragma once
// Stage 6 (renderers): turn a Diagnosis into text for a person or JSON for a program.
#include <functional>
#include <nlohmann/json.hpp>
#include <string>

#include "firstfault/correlator/diagnosis.h"
#include "firstfault/signatures/library.h"

namespace firstfault {

inline constexpr const char* kDiagnosisSchema = "firstfault.diagnosis/v1";
inline constexpr const char* kEntrySchema = "firstfault.entry/v1";  // explain --format json

// Every JSON document firstfault prints keeps its keys in reading order (schema and verdict
// first, then the answer, then the details), so a person reading `--format json` sees the
// answer before the bookkeeping. Parsers are unaffected; see docs/json-schema.md.
using OutputJson = nlohmann::ordered_json;

struct TextStyle {
  bool color = false;
  bool verbose = false;  // every rank's last line, all evidence
};

// Without `rank_rows`, "ranks" is an empty array (write_diagnosis_json() streams the rows).
OutputJson diagnosis_to_json(const Diagnosis& d, const Library& lib, bool rank_rows = true);
OutputJson rank_row_to_json(const RankSummary& r);
// The diagnosis document as dump_json(diagnosis_to_json(d, lib), indent) writes it, byte for
// byte, without holding every rank's row in memory at once.
void write_diagnosis_json(const Diagnosis& d, const Library& lib, std::ostream& out, int indent = 2);
// Writes `doc` with member `key` (already in place, for its position) set to an array of `rows`
// elements made one at a time by `row`.
void write_json_streaming(OutputJson doc, const std::string& key, size_t rows,
                          const std::function<OutputJson(size_t)>& row, int indent, std::ostream& out);
std::string render_text(const Diagnosis& d, const Library& lib, const TextStyle& style);
// Of a diagnosed failure: its title, category, action, initiating rank with its evidence, and
// collateral, without the entry's text (watch's updates about an entry already shown).
std::string render_text_head(const Diagnosis& d, const TextStyle& style);
OutputJson entry_to_json(const Entry& e, const Library& lib);
OutputJson evidence_to_json(const Evidence& e);
OutputJson action_to_json(const Action& a);  // {kind, exclude_hosts, exclude_gpus, reason}

// What every renderer says when no initiating rank is named: "none (job-wide)" when the
// decision is that the cause is job-wide, "unknown" otherwise.
std::string no_rank_phrase(const RankDecision& r);
// "First error line (rank 3)" for an unrecognised failure: with no entry to decide an initiating
// rank, the rank of the first error line is the first place to read.
std::string first_error_label(const Evidence& e);
// "Suspected initiating rank: rank 3 on host h (low confidence, 0.50)" for an unrecognised
// failure's guess from error lines (Diagnosis::suspect); log text in it is made safe.
std::string suspect_label(const RankDecision& s);
// Verdict `incomplete` (Diagnosis::stopped): a one-line title and the lines that say where the
// log's progress ends, which ranks were active last, and what it means; log text made safe,
// file:line written by `where`.
inline constexpr const char* kStoppedTitle = "Training stopped making progress, then the log ends with no error";
std::vector<std::string> stopped_run_lines(const Diagnosis& d, const std::function<std::string(const Evidence&)>& where);
// A verdict that reports a problem no entry names: `unrecognized` or `incomplete`.
inline bool unexplained(const Diagnosis& d) { return d.verdict == "unrecognized" || d.verdict == "incomplete"; }

// "restart excluding node-17 (GPU 0000:bd:00)", or the kind's name ("stop") for the other kinds.
// Hosts and GPUs are made safe, then wrapped by `quote` when given (Markdown puts them in code).
std::string action_phrase(const Action& a, const std::function<std::string(const std::string&)>& quote = {});
// "Action: restart excluding node-17 (GPU 0000:bd:00) — <reason>": the one line every text-like
// format prints under the title.
std::string action_label(const Action& a);
// "Read 12 line(s), 3400 byte(s) from 2 input(s); 3 binary file(s) skipped." (binary files are
// not counted as inputs read).
std::string read_summary(const Diagnosis& d);

// JSON text that stays valid whatever bytes the log held.
std::string dump_json(const OutputJson& j, int indent = 2);

}  // namespace firstfault
