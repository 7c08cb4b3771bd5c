// libFuzzer target: path normalisation. An accepted path must re-display to
// exactly the input, and overlap must be reflexive and symmetric.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "gitlocks/path.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  auto half = in.find('\n');
  std::string_view a = in.substr(0, half);
  std::string_view b = half == std::string_view::npos ? std::string_view() : in.substr(half + 1);
  auto pa = gitlocks::parse_repo_path(a);
  if (pa.ok()) {
    if (pa->display() != a) std::abort();
    if (!gitlocks::paths_overlap(*pa, *pa)) std::abort();
    for (const auto& c : pa->components)
      if (c.empty() || c == "." || c == ".." || c.find('/') != std::string::npos) std::abort();
  }
  auto pb = gitlocks::parse_repo_path(b);
  if (pa.ok() && pb.ok() && gitlocks::paths_overlap(*pa, *pb) != gitlocks::paths_overlap(*pb, *pa)) std::abort();
  return 0;
}
