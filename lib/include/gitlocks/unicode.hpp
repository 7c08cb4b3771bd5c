// gitlocks/unicode.hpp — Unicode normalization for path identity (SPEC §3).
//
// A path names one resource however a host's filesystem spelled it: macOS
// hands out NFD, Linux keeps what was typed. The core compares paths in
// Unicode Normalization Form C, and in a case-insensitive store in their
// simple case folding (CaseFolding.txt status C and S) followed by NFC.
// The tables are generated from the Unicode Character Database named by
// unicode_version() (tools/gen-unicode-tables.py); no ICU, one behaviour
// natively and in WASM.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "gitlocks/result.hpp"

namespace gitlocks {

// The version of the Unicode Character Database the tables come from.
std::string_view unicode_version();

// NFC of UTF-8 text: canonical decomposition, canonical ordering, canonical
// composition (composition exclusions honoured, Hangul algorithmic).
// Unbounded in the length of combining sequences (time O(n log n)).
// Errors: usage when `utf8` is not valid UTF-8 (RFC 3629: no overlong forms,
// no surrogates, nothing above U+10FFFF).
Result<std::string> to_nfc(std::string_view utf8);

// NFC(simple case folding(NFC(text))): the caseless identity of `utf8`.
// Errors: usage as to_nfc.
Result<std::string> case_fold_nfc(std::string_view utf8);

// The longest run of consecutive non-starters (canonical combining class
// != 0) in the canonical decomposition of valid UTF-8 `utf8`.
std::size_t longest_nonstarter_run(std::string_view utf8);

}  // namespace gitlocks
