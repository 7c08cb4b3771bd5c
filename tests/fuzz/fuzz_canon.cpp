// libFuzzer target: the canonical JSON decoder.
// The property is canon_property in properties.h, which the unit suite also
// runs over every seed and regression input
// (tests/unit/fuzz_regressions_test.cpp).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "properties.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string why = gitlocks::fuzz::canon_property(std::string_view(reinterpret_cast<const char*>(data), size));
  if (!why.empty()) {
    std::fprintf(stderr, "fuzz_canon: %s\n", why.c_str());
    std::abort();
  }
  return 0;
}
