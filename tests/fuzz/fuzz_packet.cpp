// libFuzzer target: the stored packet and attestation decoders. Nothing the
// fuzzer makes may verify (it has no key), and nothing may crash.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "gitlocks/attest.hpp"
#include "gitlocks/packet.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static bool init = gitlocks::crypto_init();
  (void)init;
  std::string_view in(reinterpret_cast<const char*>(data), size);
  auto p = gitlocks::open_packet(in);
  auto a = gitlocks::open_attestation(in);
  auto r = gitlocks::open_admission_request(in);
  // The seed corpus holds genuinely signed documents; any success must be one
  // of them byte for byte, which the decoders guarantee by re-encoding.
  if (p.ok() && gitlocks::canon_dump(gitlocks::json::parse(in)).value() != in) std::abort();
  (void)a;
  (void)r;
  return 0;
}
