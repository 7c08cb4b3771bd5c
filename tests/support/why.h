// why(r): the message of a failed Result, "" for a success. For doctest's
// *_MESSAGE checks, whose message is evaluated even when the check passes
// (with -s, which reports successes): r.error() of a success would throw.
#pragma once

#include <string>

namespace gitlocks::test {

template <typename R>
std::string why(const R& r) {
  return r.ok() ? std::string() : r.error().message;
}

}  // namespace gitlocks::test
