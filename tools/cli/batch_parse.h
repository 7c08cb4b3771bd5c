// batch_parse.h — the input of `git-locks batch`: JSON Lines of operations
// (schema in cmd_batch.cpp and docs/CLI.md). Separate from the command so the
// fuzz target tests/fuzz/fuzz_batch.cpp can drive it without a repository.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "gitlocks/canon.hpp"
#include "gitlocks/result.hpp"
#include "leases.h"

namespace gitlocks::cli {

struct BatchLine {
  std::size_t number = 0;
  json op;                      // claim / sem-acquire: the core op without expires_at
  std::optional<LeaseRef> ref;  // extend / release / sem-release
  bool extend = false;
  std::int64_t ttl = 0;
};

// One line (1-based `number`). Errors: usage, bad_json (and the canonical
// JSON decoder's codes), each message starting "line N: ".
Result<BatchLine> parse_batch_line(std::size_t number, const std::string& text, std::int64_t default_ttl);

// Every non-blank line of `text` ("\r\n" accepted). Errors: as above, and
// usage for a batch without operations.
Result<std::vector<BatchLine>> parse_batch(const std::string& text, std::int64_t default_ttl);

}  // namespace gitlocks::cli
