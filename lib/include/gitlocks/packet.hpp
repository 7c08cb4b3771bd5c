// gitlocks/packet.hpp — signed transaction packets and the commits that carry
// them (SPEC §4).
//
// A packet is canonical JSON with exactly these fields:
//   format        "gitlocks-packet-v1"
//   store         store id (64 hex)
//   actor         signer's Ed25519 public key (64 hex)
//   command       CLI command that made it (init, claim, batch, ...)
//   action        planner action (init, claim, reclaim, extend, ...)
//   instance      operation id (64 hex, random per operation)
//   epoch         key epoch (0 for stores without encryption)
//   policy_hash   sha256 of policy.json at the source (of the new policy for init)
//   source        parent's state tree id ("" for init)
//   body          the planner's input
//   interval      [lo, hi], the exact admission interval derived from the body
//   result        successor's state tree id
//   claimed_at_ms the publishing client's clock reading T (local-clock mode)
// The stored form is {"packet":PACKET,"sig":HEX128}, the signature being
// Ed25519 over kPacketDomain || canonical(PACKET).
//
// A transition commit's tree is exactly {state/ (tree), txn/packet.json} and,
// when guard time is in force, txn/attestation.json.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "gitlocks/canon.hpp"
#include "gitlocks/crypto.hpp"
#include "gitlocks/expr.hpp"
#include "gitlocks/plan.hpp"
#include "gitlocks/store.hpp"

namespace gitlocks {

inline constexpr std::string_view kPacketFormat = "gitlocks-packet-v1";

struct PacketHeader {
  std::string store;
  std::string actor;
  std::string command;
  std::string instance;
  std::int64_t epoch = 0;
  std::string policy_hash;
  Oid source;
};

// Assembles a packet from its header and a plan outcome.
json make_packet(const PacketHeader& h, const PlanOutcome& outcome, std::optional<std::int64_t> claimed_at_ms);

// Checks field set and types (not the signature). Errors: unknown_format,
// bad_json.
Status check_packet(const json& packet);

// Canonical signed form.
Result<std::string> seal_packet(const json& packet, const KeyPair& key);

// A checked packet's fields other than its body, typed: read once, by
// packet_fields, from a packet check_packet accepts.
struct PacketFields {
  PacketHeader header;  // store, actor, command, instance, epoch, policy_hash, source
  std::string action;
  Oid result;
  std::int64_t interval_lo = 0, interval_hi = 0;
  std::optional<std::int64_t> claimed_at_ms;
};
// Errors: those of check_packet.
Result<PacketFields> packet_fields(const json& packet);

// The client clock reading of a packet that may be unchecked (`log` shows
// unverified commits as they are): claimed_at_ms when it is a non-negative
// integer, else nullopt.
std::optional<std::int64_t> loose_claimed_at_ms(const json& packet);

// A packet whose signature verified: its fields typed (read once, by
// packet_fields) and its body, the planner's input, as the one part that
// stays a document (the planner reads it; a PRIVATE body is sealed). The
// whole packet document is not kept: nothing past open_packet reads a
// packet field by name.
struct OpenedPacket {
  PacketFields fields;       // packet_fields(packet)
  json body;                 // the packet's "body" (an object)
  std::string packet_bytes;  // canonical packet, as signed
  std::string digest;        // sha256 hex of the stored signed form
  // The packet document itself, parsed again from packet_bytes (for hosts
  // that show or resend it).
  json document() const;
};

// Parses the stored form (strictly canonical), checks the packet and verifies
// the signature against the packet's actor. Errors: bad_json, non_canonical,
// unknown_format, bad_signature.
Result<OpenedPacket> open_packet(std::string_view stored);

struct TransitionCommit {
  Oid commit;
  std::vector<Oid> parents;
  Oid state;                                      // state tree id
  std::string packet_stored;                      // txn/packet.json
  std::optional<std::string> attestation_stored;  // txn/attestation.json
  std::vector<std::string> unexpected;            // tree entries outside the layout
  std::int64_t time_seconds = 0;
};

Result<Oid> write_transition_commit(ObjectStore& store, const std::optional<Oid>& parent, const Oid& state,
                                    const std::string& packet_stored, const std::string& message,
                                    std::int64_t time_seconds,
                                    const std::optional<std::string>& attestation_stored = std::nullopt);

// Reads a commit and splits its tree per the layout. Errors: store_read, and
// invalid when the state tree or the packet is missing.
Result<TransitionCommit> read_transition_commit(ObjectStore& store, const Oid& commit);

}  // namespace gitlocks
