// format1_writer — the frozen writer of store format 1 (gitlocks-state-v1),
// for the CLI suite: the same logic as Format1Writer in
// tests/unit/migrate_test.cpp, writing into a real repository. It writes the
// objects of one transition on top of refs/locks/state and prints the new
// commit id; the test moves the ref with `git update-ref`.
//
//   format1_writer REPO ACTOR NOW_MS init
//   format1_writer REPO ACTOR NOW_MS BODY-JSON     ({"ops":[...]}, as the core plans it)
#include <cstdio>
#include <cstdlib>
#include <string>

#include "fixture.h"
#include "gitlocks/packet.hpp"
#include "gitlocks/plan.hpp"
#include "gitlocks/policy.hpp"
#include "gitlocks/state.hpp"

using namespace gitlocks;

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: format1_writer REPO ACTOR NOW_MS init|BODY-JSON\n");
    return 64;
  }
  crypto_init();
  const std::string actor = argv[2];
  const std::int64_t now = std::atoll(argv[3]);
  auto opened = open_git_store(argv[1]);
  if (!opened.ok()) return std::fprintf(stderr, "%s\n", opened.error().message.c_str()), 2;
  ObjectStore& store = **opened;
  const std::string store_id(64, 'a');
  json body;
  if (std::string(argv[4]) == "init") {
    body = {{"init", default_policy(store_id, test::actor_hex(actor))}, {"state_format", std::string(kStateFormatV1)}};
  } else {
    body = json::parse(argv[4]);
  }
  auto tip = store.read_ref(kStateRef).value();
  Oid source;
  std::string policy_hash;
  if (tip) {
    source = read_transition_commit(store, *tip).value().state;
    StateReader r(store, source);
    policy_hash = sha256_hex(r.policy_bytes().value());
    if (body.contains("ops")) {
      body["created_at"] = now;
      body["name"] = actor;
    }
  } else {
    policy_hash = sha256_hex(body["init"].dump());
  }
  const std::string instance = sha256_hex("f1:" + actor + ":" + std::to_string(now) + ":" + body.dump());
  PlanContext pctx{test::actor_hex(actor), instance};
  auto out = plan(store, source, pctx, body, now);
  if (!out.ok()) return std::fprintf(stderr, "plan: %s\n", out.error().message.c_str()), 1;
  PacketHeader h{store_id, pctx.actor, "test", instance, 0, policy_hash, source};
  json packet = make_packet(h, *out, now);
  auto stored = seal_packet(packet, test::actor_key(actor)).value();
  Oid c = write_transition_commit(store, tip, out->result_state, stored, "f1\n", now / 1000).value();
  std::printf("%s\n", c.c_str());
  return 0;
}
