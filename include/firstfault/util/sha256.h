#pragma once
// SHA-256 (FIPS 180-4), for stable report fingerprints (GitLab Code Quality, SARIF). Not used
// for anything security-relevant; it is here so fingerprints do not depend on a crypto library.
#include <string>
#include <string_view>

namespace firstfault {

// Lower-case hex digest of `data`.
std::string sha256_hex(std::string_view data);

}  // namespace firstfault
