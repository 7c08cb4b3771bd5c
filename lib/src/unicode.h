// Code point level access to the normalizer, for the core and white-box
// tests (NormalizationTest.txt works on code points).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace gitlocks::detail {

std::uint8_t combining_class(char32_t c);
std::u32string nfc(std::u32string_view s);
char32_t simple_fold(char32_t c);
// Valid UTF-8 only (check with utf8_valid first).
std::u32string utf8_decode(std::string_view s);
std::string utf8_encode(std::u32string_view s);

}  // namespace gitlocks::detail
