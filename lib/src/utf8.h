// Strict UTF-8 validation (RFC 3629): no overlong forms, no surrogates, no
// code points above U+10FFFF.
#pragma once

#include <string_view>

namespace gitlocks::detail {

bool utf8_valid(std::string_view s);

}  // namespace gitlocks::detail
