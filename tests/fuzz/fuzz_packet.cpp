// libFuzzer target: the stored packet, attestation and admission request
// decoders. The property is packet_property in properties.h, which the unit
// suite also runs over every seed and regression input
// (tests/unit/fuzz_regressions_test.cpp).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

#include "properties.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static bool init = gitlocks::crypto_init();
  (void)init;
  const std::string why = gitlocks::fuzz::packet_property(std::string_view(reinterpret_cast<const char*>(data), size));
  if (!why.empty()) {
    std::fprintf(stderr, "fuzz_packet: %s\n", why.c_str());
    std::abort();
  }
  return 0;
}
