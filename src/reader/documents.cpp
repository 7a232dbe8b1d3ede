#include "firstfault/reader/documents.h"

#include "firstfault/reader/flight_recorder.h"
#include "firstfault/reader/nccl_ras.h"

namespace firstfault {

namespace {
constexpr std::string_view kFlightRecorder = "Flight Recorder dump";
constexpr std::string_view kNcclRas = "NCCL RAS report";
}  // namespace

std::string_view document_kind(std::string_view head) {
  if (looks_like_flight_recorder_dump(head)) return kFlightRecorder;
  if (looks_like_nccl_ras_json(head)) return kNcclRas;
  return {};
}

Result<std::string> document_to_text(std::string_view kind, std::string_view content) {
  if (kind == kFlightRecorder) return flight_recorder_to_text(content);
  if (kind == kNcclRas) return nccl_ras_json_to_text(content);
  return Error{std::string(kind) + ": not a document kind this reader knows"};
}

}  // namespace firstfault
