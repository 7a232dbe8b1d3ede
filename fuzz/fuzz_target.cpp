// libFuzzer entry point, compiled once per target with FIRSTFAULT_FUZZ_FN naming the harness
// function (fuzz/harness.h). A broken invariant aborts, which libFuzzer reports as a crash and
// saves the input; ASan/UBSan findings and leaks are reported by the sanitizers themselves.
#include <cstdio>
#include <cstdlib>

#include "harness.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string problem = firstfault::fuzz::FIRSTFAULT_FUZZ_FN(data, size);
  if (!problem.empty()) {
    std::fprintf(stderr, "firstfault fuzz: invariant broken: %s\n", problem.c_str());
    std::abort();
  }
  return 0;
}
