#include "firstfault/util/line_template.h"

#include <re2/re2.h>

#include "firstfault/util/strings.h"

namespace firstfault {

std::string line_template(std::string_view raw) {
  // Masks what varies between occurrences of one message: hex, numbers, paths, addresses, hosts.
  static const RE2 kHex(R"(0x[0-9a-fA-F]+)");
  static const RE2 kIp(R"(\b\d{1,3}(?:\.\d{1,3}){3}(?::\d+|<\d+>)?)");
  static const RE2 kPath(R"((?:/[\w.@+-]+){2,}/?)");
  static const RE2 kQuoted(R"('[^']{1,200}'|"[^"]{1,200}")");
  static const RE2 kNum(R"(\b\d+(?:\.\d+)?(?:[eE][-+]?\d+)?\b)");
  static const RE2 kRank(R"(\[(?:rank|default)\d+\]:?)");  // "rank0": no word boundary for kNum
  static const RE2 kSpaces(R"(\s+)");
  std::string s = std::string(trim(raw));
  RE2::GlobalReplace(&s, kRank, "");
  RE2::GlobalReplace(&s, kHex, "<hex>");
  RE2::GlobalReplace(&s, kIp, "<ip>");
  RE2::GlobalReplace(&s, kPath, "<path>");
  RE2::GlobalReplace(&s, kQuoted, "'<*>'");
  RE2::GlobalReplace(&s, kNum, "<*>");
  RE2::GlobalReplace(&s, kSpaces, " ");
  return std::string(trim(s)).substr(0, 200);
}

}  // namespace firstfault
