#pragma once
// The built-in library as a compact binary snapshot. The build validates the embedded YAML
// (tools/snapshot.cpp: a bad signature fails the build) and compiles the snapshot in, so start-up
// reads it instead of parsing ~850 KB of YAML. Regexes are stored as text (compiled lazily).
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "firstfault/signatures/library.h"

namespace firstfault {

// Layout: "FFSNAP\r\n", u32 kSnapshotFormat, u32 0, u64 source key, u64 payload size,
// u64 snapshot_hash(payload), payload. Native byte order (the build host's).
inline constexpr uint32_t kSnapshotFormat = 9;
inline constexpr size_t kSnapshotHeaderSize = 40;

// The snapshot compiled into the binary (generated at build time; empty in the tool that makes it).
std::string_view builtin_snapshot();

// Identifies the embedded YAML files (paths and contents, from their build-time digest): a
// snapshot of other files is not used.
uint64_t builtin_source_key();

uint64_t snapshot_hash(std::string_view bytes, uint64_t seed = 0);

std::string serialize_library(const Library& lib, uint64_t source_key);

// Nullopt for anything but a well-formed snapshot of this format and source key (so the caller
// falls back to the YAML); never reads out of bounds, whatever the bytes. Without `samples`,
// patterns come without their description and sample lines (LoadOptions::keep_samples).
std::optional<Library> deserialize_library(std::string_view blob, uint64_t source_key, bool samples = true);

}  // namespace firstfault
