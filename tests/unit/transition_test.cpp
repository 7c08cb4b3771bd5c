// The stages every writer goes through (gitlocks/transition.hpp):
// prepare_candidate -> the notary -> complete_candidate, and reopen_prepared
// for a durable operation resumed from its saved packet (guard-time resume).
#include <doctest/doctest.h>

#include <string>

#include "fixture.h"
#include "gitlocks/attest.hpp"
#include "gitlocks/packet.hpp"

using gitlocks::Errc;
using gitlocks::json;
using gitlocks::test::actor_key;
using gitlocks::test::Store;
using gitlocks::test::TestNotary;

namespace {

json claim_body(std::int64_t now, const std::string& path) {
  return json{
      {"created_at", now},
      {"name", "alice"},
      {"ops", json::array({{{"op", "claim"}, {"path", path}, {"mode", "exclusive"}, {"expires_at", now + 30000}}})}};
}

// A store with guard time on (T of the activation: the notary's clock, s.now).
struct Guarded {
  Store s;
  TestNotary n;
  Guarded() {
    n.clock = s.now;
    s.admit = n.fn();
    auto enabled = gitlocks::test::enable_guard_time(s, "owner", n.pins);
    if (!enabled.ok()) throw std::runtime_error(enabled.error().message);
    s.now += 1000;
    n.clock = s.now;
  }
  gitlocks::Result<gitlocks::Prepared> prepare(const std::string& path, const std::string& actor = "alice") {
    return gitlocks::prepare_candidate(s.objects(), s.snapshot(), actor_key(actor), "claim",
                                       gitlocks::sha256_hex("instance:" + path), claim_body(s.now, path), s.now);
  }
};

}  // namespace

TEST_CASE("transition: a reopened packet gives the identical request and commit") {
  Guarded g;
  const auto snap = g.s.snapshot();
  auto p = g.prepare("a");
  REQUIRE(p.ok());
  REQUIRE(p->pins == g.n.pins);
  REQUIRE(p->request_stored);
  CHECK_FALSE(p->packet.contains("claimed_at_ms"));  // T is the notary's
  auto att = g.n.fn()(*p->request_stored);
  REQUIRE(att.ok());
  auto reopened = gitlocks::reopen_prepared(g.s.objects(), snap, actor_key("alice"), p->packet_stored);
  REQUIRE(reopened.ok());
  CHECK(*reopened->request_stored == *p->request_stored);  // Ed25519 signatures are deterministic
  CHECK(reopened->outcome.result_state == p->outcome.result_state);
  CHECK(std::string(gitlocks::action_name(reopened->outcome.action)) == "claim");
  auto first = gitlocks::complete_candidate(g.s.objects(), snap, *p, *att);
  auto again = gitlocks::complete_candidate(g.s.objects(), snap, *reopened, *att);
  REQUIRE(first.ok());
  REQUIRE(again.ok());
  CHECK(first->commit == again->commit);
  CHECK(first->admitted_at_ms == g.n.clock);
  CHECK(first->attestation_stored == *att);
}

TEST_CASE(
    "transition: reopen_prepared refuses another signer and a moved source and a packet that does not re-execute") {
  Guarded g;
  const auto snap = g.s.snapshot();
  auto p = g.prepare("a");
  REQUIRE(p.ok());
  SUBCASE("another key") {
    auto r = gitlocks::reopen_prepared(g.s.objects(), snap, actor_key("bob"), p->packet_stored);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code == Errc::usage);
  }
  SUBCASE("a tampered signature") {
    std::string bad = p->packet_stored;
    const auto at = bad.find("\"sig\":\"") + 7;
    bad[at] = bad[at] == '0' ? '1' : '0';
    auto r = gitlocks::reopen_prepared(g.s.objects(), snap, actor_key("alice"), bad);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code == Errc::store_read);
  }
  SUBCASE("a result the body does not give") {
    json packet = p->packet;
    packet["result"] = snap.state;  // signed by alice, but re-planning gives another state
    auto resigned = gitlocks::seal_packet(packet, actor_key("alice"));
    REQUIRE(resigned.ok());
    auto r = gitlocks::reopen_prepared(g.s.objects(), snap, actor_key("alice"), *resigned);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code == Errc::store_read);
    CHECK(r.error().message.find("does not re-execute") != std::string::npos);
  }
  SUBCASE("the store moved on") {
    REQUIRE(g.s.claim("bob", "b", 30000).ok());
    auto r = gitlocks::reopen_prepared(g.s.objects(), g.s.snapshot(), actor_key("alice"), p->packet_stored);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code == Errc::stale_generation);
    CHECK(r.error().message.find("the source changed") == 0);
  }
}

TEST_CASE("transition: complete_candidate checks the attestation against the pins and the chain") {
  Guarded g;
  const auto snap = g.s.snapshot();
  auto p = g.prepare("a");
  auto other = g.prepare("b");
  REQUIRE(p.ok());
  REQUIRE(other.ok());
  SUBCASE("none under guard time") {
    auto c = gitlocks::complete_candidate(g.s.objects(), snap, *p, std::nullopt);
    REQUIRE_FALSE(c.ok());
    CHECK(c.error().code == Errc::usage);
  }
  SUBCASE("another packet's") {
    auto att = g.n.fn()(*other->request_stored);
    REQUIRE(att.ok());
    auto c = gitlocks::complete_candidate(g.s.objects(), snap, *p, *att);
    REQUIRE_FALSE(c.ok());
    CHECK(c.error().code == Errc::store_write);
  }
  SUBCASE("an unpinned notary's") {
    TestNotary stranger("stranger-notary", g.n.pins.audience);
    stranger.clock = g.n.clock;
    auto att = stranger.fn()(*p->request_stored);
    REQUIRE(att.ok());
    auto c = gitlocks::complete_candidate(g.s.objects(), snap, *p, *att);
    REQUIRE_FALSE(c.ok());
    CHECK(c.error().code == Errc::store_write);
  }
  SUBCASE("T before the chain's last admission") {
    REQUIRE(snap.last_time);
    g.n.check_interval = false;
    g.n.clock = *snap.last_time - 1;
    auto att = g.n.fn()(*p->request_stored);
    REQUIRE(att.ok());
    auto c = gitlocks::complete_candidate(g.s.objects(), snap, *p, *att);
    REQUIRE_FALSE(c.ok());
    CHECK(c.error().code == Errc::store_write);
    CHECK(c.error().message.find("before the store's last admission") != std::string::npos);
  }
  SUBCASE("T equal to the chain's last admission") {
    g.n.check_interval = false;
    g.n.clock = *snap.last_time;
    auto att = g.n.fn()(*p->request_stored);
    REQUIRE(att.ok());
    auto c = gitlocks::complete_candidate(g.s.objects(), snap, *p, *att);
    REQUIRE(c.ok());
    CHECK(c->admitted_at_ms == *snap.last_time);
  }
}

TEST_CASE("transition: a store without guard time takes no attestation") {
  Store s;
  TestNotary n;
  n.clock = s.now;
  auto p = gitlocks::prepare_candidate(s.objects(), s.snapshot(), actor_key("alice"), "claim",
                                       gitlocks::sha256_hex("instance:plain"), claim_body(s.now, "a"), s.now);
  REQUIRE(p.ok());
  CHECK_FALSE(p->pins);
  CHECK_FALSE(p->request_stored);
  CHECK(p->packet["claimed_at_ms"] == s.now);
  auto req = gitlocks::make_admission_request(p->packet, p->packet_stored, actor_key("alice"));
  REQUIRE(req.ok());
  auto att = n.fn()(*req);
  REQUIRE(att.ok());
  auto c = gitlocks::complete_candidate(s.objects(), s.snapshot(), *p, *att);
  REQUIRE_FALSE(c.ok());
  CHECK(c.error().code == Errc::usage);
  auto plain = gitlocks::complete_candidate(s.objects(), s.snapshot(), *p, std::nullopt);
  REQUIRE(plain.ok());
  CHECK(plain->admitted_at_ms == s.now);
}

TEST_CASE("plan: the same pins again is the reason already-enabled and other pins are a plain usage error") {
  Guarded g;
  auto same = gitlocks::test::enable_guard_time(g.s, "owner", g.n.pins);
  REQUIRE_FALSE(same.ok());
  CHECK(same.error().code == Errc::usage);
  CHECK(same.error().reason() == "already-enabled");
  TestNotary other("other-notary", "locks.other");
  auto different = gitlocks::test::enable_guard_time(g.s, "owner", other.pins);
  REQUIRE_FALSE(different.ok());
  CHECK(different.error().code == Errc::usage);
  CHECK(different.error().reason() == "usage");
}
