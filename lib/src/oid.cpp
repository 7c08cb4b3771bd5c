// Object ids (store.hpp): 20 bytes inside, 40 lowercase hex digits outside.
#include <ostream>

#include "gitlocks/hex.hpp"
#include "gitlocks/store.hpp"

namespace gitlocks {

std::optional<Oid> Oid::from_hex(std::string_view hex) {
  Oid o;
  // By table: an object id is public (hex.hpp).
  if (!hex_decode_public(hex, o.bytes_.data(), kBytes, HexCase::lower)) return std::nullopt;
  o.null_ = false;
  return o;
}

std::string Oid::hex() const { return null_ ? std::string() : to_hex(bytes_.data(), kBytes); }

void to_json(json& j, const Oid& id) { j = id.hex(); }

std::ostream& operator<<(std::ostream& os, const Oid& id) { return os << id.hex(); }

}  // namespace gitlocks
