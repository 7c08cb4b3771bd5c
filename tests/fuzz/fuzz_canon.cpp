// libFuzzer target: the canonical JSON decoder. Strict parses must re-encode
// to exactly the input; lenient parses must re-encode to a strict fixpoint.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "gitlocks/canon.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  auto strict = gitlocks::canon_parse(in, gitlocks::CanonMode::strict);
  if (strict.ok()) {
    auto out = gitlocks::canon_dump(*strict);
    if (!out.ok() || *out != in) std::abort();
  }
  auto lenient = gitlocks::canon_parse(in, gitlocks::CanonMode::lenient);
  if (lenient.ok()) {
    auto out = gitlocks::canon_dump(*lenient);
    if (!out.ok()) std::abort();
    auto again = gitlocks::canon_parse(*out, gitlocks::CanonMode::strict);
    if (!again.ok() || *again != *lenient) std::abort();
  }
  if (strict.ok() && !lenient.ok()) std::abort();
  return 0;
}
