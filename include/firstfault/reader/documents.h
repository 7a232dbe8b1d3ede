#pragma once
// Stage 1 (reader): inputs that are one structured document rather than a log (a PyTorch Flight
// Recorder dump, an NCCL RAS JSON report). Each is recognised by its first block, read whole
// (bounded) and handed on as the text lines that say what it holds.
#include <string>
#include <string_view>

#include "firstfault/util/result.h"

namespace firstfault {

// Largest document read (a default 2,000-entry Flight Recorder buffer with stacks is a few MiB).
inline constexpr size_t kMaxDocumentBytes = 64 * 1024 * 1024;

// The kind of document the first block of an input starts, or "" for a log.
std::string_view document_kind(std::string_view head);

// The document as text lines, or an error naming the kind and the reason.
Result<std::string> document_to_text(std::string_view kind, std::string_view content);

}  // namespace firstfault
