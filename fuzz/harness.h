#pragma once
// One function per fuzz target: run one input through a stage and check the stage's
// invariants. Each returns "" when every invariant held, else what broke. The libFuzzer entry
// points (fuzz_*.cpp) abort on a non-empty result; the unit tests replay fuzz/regressions/
// through the same functions, so a crash found once stays fixed in every build (gcc included).
#include <cstddef>
#include <cstdint>
#include <string>

namespace firstfault::fuzz {

// Reader with decompression: the bytes as one input file (gzip/zstd/xz/bz2 sniffed by magic).
std::string reader_one(const uint8_t* data, size_t size);

// Line attribution: every line through ANSI/CR normalisation, the prefix parsers and the
// timestamp code; the first line is also used as a file path (rank/host from the name).
std::string attribution_one(const uint8_t* data, size_t size);

// Signature loader: the bytes as YAML files (split at lines "---8<---"), strictly validated,
// sample lines checked, and the result compiled into a matcher when it loaded cleanly.
std::string signatures_one(const uint8_t* data, size_t size);

// Whole diagnose pipeline on arbitrary bytes with the built-in library, rendered as text and
// JSON (which must parse back). Inputs are split at lines "---8<---" into several files.
std::string diagnose_one(const uint8_t* data, size_t size);

// Every output format of the diagnosis of a hostile log: nothing from the log drives a terminal
// or a CI runner, the JSON formats parse, the HTML holds no markup from the log.
std::string render_one(const uint8_t* data, size_t size);

// The redactor on arbitrary text with one positive sample of the masking table (redact_kinds(),
// picked by the first two bytes) embedded as a line of it: the sample's secret never survives,
// at any level that masks its kind.
std::string redact_one(const uint8_t* data, size_t size);

// Structure-aware archives: the first byte picks the format (ustar, pax, gnutar, zip) and the
// compression (none, gzip, xz), the rest are members split at lines "---8<---" (a name line,
// then the content; "dir/" a directory, "@link name" a symbolic link) written with libarchive.
// The archive is diagnosed as a job: every member read is named archive!member, the tar and zip
// members listed are the ones written, the JSON parses, no escape reaches the plain text.
std::string archive_one(const uint8_t* data, size_t size);

}  // namespace firstfault::fuzz
