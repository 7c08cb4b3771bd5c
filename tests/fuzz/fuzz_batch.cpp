// libFuzzer target: the input of `git-locks batch` (tools/cli/batch_parse).
// Any input is either rejected with a usage-class error naming its line, or
// parsed into ops that are well-formed for the planner: claim and
// sem-acquire carry a string target, extend/release/sem-release a reference,
// TTLs are non-negative. Parsing twice gives the same result.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "batch_parse.h"

using gitlocks::Errc;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string in(reinterpret_cast<const char*>(data), size);
  auto r = gitlocks::cli::parse_batch(in, 600'000);
  auto again = gitlocks::cli::parse_batch(in, 600'000);
  if (r.ok() != again.ok()) std::abort();
  if (!r.ok()) {
    const Errc c = r.error().code;
    if (c == Errc::store_read || c == Errc::store_write) std::abort();
    if (r.error().message != again.error().message) std::abort();
    if (c != Errc::usage && r.error().message.rfind("line ", 0) != 0) std::abort();
    return 0;
  }
  if (r->empty()) std::abort();
  std::size_t last = 0;
  for (const auto& l : *r) {
    if (l.number <= last) std::abort();
    last = l.number;
    if (l.ttl < 0) std::abort();
    if (l.ref) {
      if (!l.op.is_null()) std::abort();
    } else {
      if (!l.op.is_object() || !l.op.contains("op")) std::abort();
      const std::string kind = l.op["op"].get<std::string>();
      if (kind == "claim" && !l.op["path"].is_string()) std::abort();
      if (kind == "sem-acquire" && !l.op["limit"].is_number_integer()) std::abort();
      if (kind != "claim" && kind != "sem-acquire") std::abort();
    }
  }
  return 0;
}
