#pragma once
// Stage 1 (reader): the subset of Python's pickle format that data-only dumps use (PyTorch's
// Flight Recorder writes its trace with c10's pickler): dicts, lists, tuples, strings, bytes,
// ints, floats, bools and None, with the memo. Nothing is executed: a GLOBAL is kept as its
// name, and REDUCE of one on arguments yields the first argument (c10's type-tag wrappers,
// restore_type_tag(obj, "Dict[str, Any]"), carry the value there). A memoised container is
// remembered as it was when complete (when it left the stack), as Python shares it.
#include <string_view>

#include <nlohmann/json.hpp>

#include "firstfault/util/result.h"

namespace firstfault {

// Whether `head` starts like a pickle of protocol 2 or later (PROTO opcode).
bool looks_like_pickle(std::string_view head);

// Decodes one pickle into JSON (bytes as a string, tuples as arrays). Bounded: nesting deeper
// than 256 levels, more than 4 million values, or any opcode outside the data subset is an
// error naming the offset, never a crash.
Result<nlohmann::json> parse_pickle(std::string_view data);

}  // namespace firstfault
