// Signed packets: any change of any field breaks the signature.
#include "gitlocks/packet.hpp"

#include <doctest/doctest.h>

#include "fixture.h"

using gitlocks::Errc;
using gitlocks::json;
using gitlocks::test::Store;

TEST_CASE("a published packet opens and verifies") {
  Store s;
  auto c = s.claim("alice", "a/b", 60'000);
  REQUIRE(c.ok());
  auto opened = gitlocks::open_packet(c->packet_stored);
  REQUIRE(opened.ok());
  CHECK(opened->document() == c->packet);
  CHECK(opened->body == c->packet["body"]);
}

TEST_CASE("an opened packet's fields are typed as they were made") {
  Store s;
  const auto before = s.snapshot();
  auto c = s.claim("alice", "a/b", 60'000);
  REQUIRE(c.ok());
  auto opened = gitlocks::open_packet(c->packet_stored);
  REQUIRE(opened.ok());
  const gitlocks::PacketFields& f = opened->fields;
  // What the writer built it from: alice's key, the store and state it
  // was built on, the claim's outcome, the fixture's clock.
  CHECK(f.header.actor == gitlocks::test::actor_hex("alice"));
  CHECK(f.header.store == before.store_id);
  CHECK(f.header.policy_hash == before.policy_hash);
  CHECK(f.header.source == before.state);
  CHECK(f.header.epoch == 0);
  CHECK(f.header.command == "claim");
  CHECK(f.action == gitlocks::action_name(c->outcome.action));
  CHECK(f.result == c->outcome.result_state);
  CHECK(f.interval_lo == c->outcome.interval.lo);
  CHECK(f.interval_hi == c->outcome.interval.hi);
  REQUIRE(f.claimed_at_ms.has_value());
  CHECK(*f.claimed_at_ms == s.now);
  CHECK(f.header.instance.size() == 64);
  // A packet without a clock reading has none.
  json bare = c->packet;
  bare.erase("claimed_at_ms");
  auto typed = gitlocks::packet_fields(bare);
  REQUIRE(typed.ok());
  CHECK_FALSE(typed->claimed_at_ms.has_value());
  bare.erase("result");
  CHECK(gitlocks::packet_fields(bare).error().code == Errc::bad_json);
}

TEST_CASE("tampering with any packet field is detected") {
  Store s;
  auto c = s.claim("alice", "a/b", 60'000);
  REQUIRE(c.ok());
  json doc = json::parse(c->packet_stored);
  std::vector<std::function<void(json&)>> edits = {
      [](json& p) { p["command"] = "release"; },
      [](json& p) { p["action"] = "reclaim"; },
      [](json& p) { p["epoch"] = 1; },
      [](json& p) { p["interval"][0] = p["interval"][0].get<std::int64_t>() - 1; },
      [](json& p) { p["interval"][1] = p["interval"][1].get<std::int64_t>() + 1; },
      [](json& p) { p["claimed_at_ms"] = p["claimed_at_ms"].get<std::int64_t>() + 1; },
      [](json& p) { p["body"]["ops"][0]["expires_at"] = p["body"]["ops"][0]["expires_at"].get<std::int64_t>() + 1; },
      [](json& p) { p["body"]["ops"][0]["path"] = "a/c"; },
      [](json& p) { p["result"] = std::string(40, '0'); },
      [](json& p) { p["source"] = std::string(40, '1'); },
      [](json& p) { p["policy_hash"] = std::string(64, '2'); },
      [](json& p) { p["instance"] = std::string(64, '3'); },
      [](json& p) { p["store"] = std::string(64, 'b'); },
  };
  for (std::size_t i = 0; i < edits.size(); ++i) {
    json d = doc;
    edits[i](d["packet"]);
    auto r = gitlocks::open_packet(d.dump());
    INFO("edit " << i);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code == Errc::bad_signature);
  }
}

TEST_CASE("a packet re-signed by another key names the wrong actor - substituted actor fails") {
  Store s;
  auto c = s.claim("alice", "a", 60'000);
  REQUIRE(c.ok());
  json doc = json::parse(c->packet_stored);
  // Replace the actor with bob's key but keep alice's signature.
  doc["packet"]["actor"] = gitlocks::test::actor_hex("bob");
  CHECK(gitlocks::open_packet(doc.dump()).error().code == Errc::bad_signature);
  // Bob re-signs the packet with his own key: it verifies, but for bob.
  auto resealed = gitlocks::seal_packet(doc["packet"], gitlocks::test::actor_key("bob"));
  REQUIRE(resealed.ok());
  auto opened = gitlocks::open_packet(*resealed);
  REQUIRE(opened.ok());
  CHECK(opened->fields.header.actor == gitlocks::test::actor_hex("bob"));
}

TEST_CASE("signature bytes: flipped - truncated - extended - wrong domain") {
  Store s;
  auto c = s.claim("alice", "a", 60'000);
  REQUIRE(c.ok());
  json doc = json::parse(c->packet_stored);
  std::string sig = doc["sig"];
  for (std::size_t pos : {std::size_t{0}, sig.size() / 2, sig.size() - 1}) {
    json d = doc;
    std::string t = sig;
    t[pos] = t[pos] == '0' ? '1' : '0';
    d["sig"] = t;
    CHECK(gitlocks::open_packet(d.dump()).error().code == Errc::bad_signature);
  }
  json shortened = doc;
  shortened["sig"] = sig.substr(0, sig.size() - 2);
  CHECK(gitlocks::open_packet(shortened.dump()).error().code == Errc::bad_json);
  json longer = doc;
  longer["sig"] = sig + "00";
  CHECK(gitlocks::open_packet(longer.dump()).error().code == Errc::bad_json);
  // A signature over the same bytes under the attestation domain is not a packet signature.
  auto key = gitlocks::test::actor_key("alice");
  auto other = gitlocks::sign_detached(gitlocks::kAttestationDomain, doc["packet"].dump(), key);
  json d = doc;
  d["sig"] = gitlocks::to_hex(other);
  CHECK(gitlocks::open_packet(d.dump()).error().code == Errc::bad_signature);
}

TEST_CASE("stored packets must be canonical - complete and of a known format") {
  Store s;
  auto c = s.claim("alice", "a", 60'000);
  REQUIRE(c.ok());
  json doc = json::parse(c->packet_stored);
  CHECK(gitlocks::open_packet(doc.dump(1)).error().code == Errc::non_canonical);
  CHECK(gitlocks::open_packet(c->packet_stored.substr(0, c->packet_stored.size() - 1)).error().code == Errc::bad_json);
  json unknown = doc;
  unknown["packet"]["format"] = "gitlocks-packet-v99";
  CHECK(gitlocks::open_packet(unknown.dump()).error().code == Errc::unknown_format);
  json extra = doc;
  extra["packet"]["surprise"] = 1;
  CHECK(gitlocks::open_packet(extra.dump()).error().code == Errc::bad_json);
  json missing = doc;
  missing["packet"].erase("result");
  CHECK(gitlocks::open_packet(missing.dump()).error().code == Errc::bad_json);
}
