// Uses the installed core end to end: derive an interval, create a store in
// memory and claim a path. Prints the successor tree id.
#include <cstdio>
#include <gitlocks/crypto.hpp>
#include <gitlocks/expr.hpp>
#include <gitlocks/policy.hpp>
#include <gitlocks/state.hpp>
#include <gitlocks/transition.hpp>
#include <gitlocks/trust.hpp>

int main() {
  using namespace gitlocks;
  if (!crypto_init()) return 1;
  auto key = keypair_from_seed({});
  json guards = ttl_guards(Policy{}, json::array());
  auto iv = derive_interval(guards, json{{"expires_at", 100000}});
  if (!iv.ok() || iv->lo != 0 || iv->hi != 99000) return 2;
  auto store = open_memory_store();
  if (!store.ok()) return 3;
  auto init = build_candidate(**store, Snapshot{}, key, "init", std::string(64, '1'),
                              json{{"init", default_policy(std::string(64, 'a'), to_hex(key.public_key))}}, 0);
  if (!init.ok()) return 4;
  (void)memory_store_set_ref(**store, kStateRef, init->commit);
  auto trusted = verified_snapshot(**store, init->commit, TrustOptions{});
  if (!trusted.ok()) return 6;
  auto snap = &trusted->snapshot;
  json body = {{"created_at", 5000},
               {"name", "consumer"},
               {"ops", {{{"op", "claim"}, {"path", "src/"}, {"mode", "exclusive"}, {"expires_at", 65000}}}}};
  auto claim = build_candidate(**store, *snap, key, "claim", std::string(64, '2'), body, 5000);
  if (!claim.ok()) {
    std::fprintf(stderr, "%s\n", claim.error().message.c_str());
    return 5;
  }
  std::printf("%s %s\n", action_name(claim->outcome.action), claim->outcome.result_state.hex().c_str());
  return 0;
}
