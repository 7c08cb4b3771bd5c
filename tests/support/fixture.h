// Test support: an in-memory store with named actors and a clock the test
// sets, publishing candidates by moving the memory ref (no CAS needed here).
#pragma once

#include <array>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "gitlocks/attest.hpp"
#include "gitlocks/crypto.hpp"
#include "gitlocks/plan.hpp"
#include "gitlocks/policy.hpp"
#include "gitlocks/replay.hpp"
#include "gitlocks/state.hpp"
#include "gitlocks/store.hpp"
#include "gitlocks/transition.hpp"
#include "gitlocks/vault.hpp"
#include "snapshot.h"

namespace gitlocks::test {

inline KeyPair actor_key(const std::string& name) {
  std::array<std::uint8_t, kSeedBytes> seed{};
  auto h = sha256("test-actor:" + name);
  std::copy(h.begin(), h.end(), seed.begin());
  return keypair_from_seed(seed);
}

inline std::string actor_hex(const std::string& name) { return to_hex(actor_key(name).public_key); }

class Store {
 public:
  explicit Store(json policy_extra = json::object(), const std::string& owner = "owner",
                 std::optional<json> full_policy = std::nullopt) {
    crypto_init();
    store_ = open_memory_store().value();
    json pol = full_policy ? *full_policy : default_policy(std::string(64, 'a'), actor_hex(owner));
    for (auto& [k, v] : policy_extra.items()) pol[k] = v;
    auto r = submit(owner, "init", json{{"init", pol}});
    if (!r.ok()) throw std::runtime_error("init failed: " + r.error().message);
  }

  ObjectStore& objects() { return *store_; }
  std::optional<Oid> tip() { return store_->read_ref(kStateRef).value(); }
  // The tip's snapshot, with `vault`'s keys on a PRIVATE store (as
  // verified_snapshot gives them).
  Snapshot snapshot() { return read_snapshot().value(); }
  Result<Snapshot> read_snapshot() {
    GITLOCKS_TRY(snap, detail::read_unverified_snapshot(*store_, tip()));
    detail::attach_keys(snap, vault);  // as verified_snapshot does with the verifier's vault
    return snap;
  }
  Oid state() { return snapshot().state; }

  // Builds and publishes one transition as `actor` at local time `now`.
  Result<Candidate> submit(const std::string& actor, const std::string& command, json body) {
    if (body.contains("ops")) {
      if (!body.contains("created_at")) body["created_at"] = now;
      if (!body.contains("name")) body["name"] = actor;
    }
    GITLOCKS_TRY(snap, read_snapshot());
    std::string instance = sha256_hex("instance:" + std::to_string(counter_++));
    auto c = build_candidate(*store_, snap, actor_key(actor), command, instance, body, now, admit, allow_test_clock);
    if (c.ok()) (void)memory_store_set_ref(*store_, kStateRef, c->commit);
    return c;
  }

  Result<Candidate> op(const std::string& actor, json op) {
    std::string cmd = op.value("op", "batch");
    return submit(actor, cmd, json{{"ops", json::array({op})}});
  }

  Result<Candidate> claim(const std::string& actor, const std::string& path, std::int64_t ttl,
                          const std::string& mode = "exclusive") {
    return op(actor, {{"op", "claim"}, {"path", path}, {"mode", mode}, {"expires_at", now + ttl}});
  }

  std::optional<json> record(const std::string& resource) {
    StateReader r(*store_, state());
    std::unique_ptr<RecordCodec> codec;
    if (vault) {
      auto pol = parse_policy(r.policy().value()).value();
      codec = make_private_codec(*vault, pol.store, pol.epoch);
      r.set_codec(codec.get());
    }
    return r.record(resource).value();
  }

  // The single lease of `actor` on a path resource.
  json lease_of(const std::string& actor, const std::string& resource) {
    auto rec = record(resource);
    if (rec)
      for (const auto& l : (*rec)["leases"])
        if (l["holder"] == actor_hex(actor)) return l;
    return nullptr;
  }

  std::int64_t now = 1'700'000'000'000;
  // The notary, when a test enables guard time.
  AdmitFn admit;
  // Whether build_candidate accepts an attestation signed with a notary's
  // test clock (the CLI's --allow-test-clock). On here: the fixture's
  // notaries are in-process doubles; a case about the refusal turns it off.
  bool allow_test_clock = true;
  // The acting member's keys, for PRIVATE stores.
  const Vault* vault = nullptr;

 private:
  std::unique_ptr<ObjectStore> store_;
  int counter_ = 0;
};

// An in-process notary: signs every admission request with its own clock.
// Like the real service it refuses a T outside the request's interval, unless
// check_interval is off (to test what the writer itself checks). `seen` holds
// the requests, to check what the notary learns.
struct TestNotary {
  KeyPair key;
  Pins pins;
  std::int64_t clock = 0;
  bool test_clock = false;
  bool check_interval = true;
  std::vector<std::string> seen;

  explicit TestNotary(const std::string& name = "notary-service", const std::string& audience = "locks.example")
      : key(actor_key(name)), pins{audience, to_hex(key.public_key)} {}

  AdmitFn fn() {
    return [this](const std::string& stored) -> Result<std::string> {
      seen.push_back(stored);
      auto req = open_admission_request(stored);
      if (!req.ok()) return req.error();
      const json& iv = (*req)["interval"];
      if (check_interval && (clock < iv[0].get<std::int64_t>() || clock > iv[1].get<std::int64_t>()))
        return make_error(Errc::guard_window, "T outside the interval");
      return make_attestation(*req, pins, clock, test_clock, key);
    };
  }
};

// `who` enables guard time with `pins`, at `expected` (default: the current
// policy hash).
inline Result<Candidate> enable_guard_time(Store& s, const std::string& who, const Pins& pins,
                                           std::string expected = "") {
  if (expected.empty()) expected = s.snapshot().policy_hash;
  return s.submit(who, "guard-time",
                  json{{"admin",
                        {{"op", "guard-time-enable"},
                         {"audience", pins.audience},
                         {"service_key", pins.service_key},
                         {"disclosure", "GUARD_WINDOW"},
                         {"expected_policy_hash", expected}}}});
}

// The first-parent chain ending at `tip`, root first.
inline std::vector<Oid> chain_of(ObjectStore& store, const Oid& tip) {
  std::vector<Oid> chain;
  for (std::optional<Oid> cur = tip; cur;) {
    chain.insert(chain.begin(), *cur);
    auto c = store.read_commit(*cur).value();
    cur = c.parents.empty() ? std::nullopt : std::optional<Oid>(c.parents.front());
  }
  return chain;
}

// How many commits of the store's history the replay finds invalid.
inline std::size_t invalid_commits(Store& s) {
  std::size_t bad = 0;
  auto sum = replay_chain(s.objects(), *s.tip(), {}, [&](const Verdict& v) {
    if (!v.ok) ++bad;
  });
  if (!sum.ok()) throw std::runtime_error("replay failed: " + sum.error().message);
  return bad;
}

}  // namespace gitlocks::test
