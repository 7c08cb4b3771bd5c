// Trusted admission time in the core: activation, attested transitions and
// their verification, with an in-process notary whose clock the test sets.
#include "gitlocks/attest.hpp"

#include <doctest/doctest.h>

#include <functional>
#include <iterator>
#include <string>
#include <vector>

#include "fixture.h"
#include "forgery.h"
#include "gitlocks/packet.hpp"
#include "gitlocks/replay.hpp"
#include "why.h"

using gitlocks::Errc;
using gitlocks::json;
using gitlocks::Oid;
using gitlocks::test::Store;

namespace {

using Notary = gitlocks::test::TestNotary;

gitlocks::Result<gitlocks::Candidate> enable(Store& s, const std::string& who, const gitlocks::Pins& pins,
                                             std::string expected = "") {
  return gitlocks::test::enable_guard_time(s, who, pins, std::move(expected));
}

std::vector<gitlocks::Verdict> verify(Store& s, const Oid& tip, gitlocks::ReplayOptions opt = {}) {
  std::vector<gitlocks::Verdict> out;
  auto r = gitlocks::replay_chain(s.objects(), tip, opt, [&](const gitlocks::Verdict& v) { out.push_back(v); });
  REQUIRE_MESSAGE(r.ok(), gitlocks::test::why(r));
  return out;
}

const gitlocks::Verdict* first_bad(const std::vector<gitlocks::Verdict>& vs) {
  for (const auto& v : vs)
    if (!v.ok) return &v;
  return nullptr;
}

}  // namespace

TEST_CASE("guard time: activation by the owner - then every commit is attested and verifies") {
  Store s;
  Notary n;
  REQUIRE(s.claim("alice", "before", 60'000).ok());  // a local-clock commit
  s.admit = n.fn();
  n.clock = s.now + 5;
  auto en = enable(s, "owner", n.pins);
  REQUIRE_MESSAGE(en.ok(), gitlocks::test::why(en));
  CHECK(en->attestation_stored);
  CHECK_FALSE(en->packet.contains("claimed_at_ms"));
  CHECK(en->admitted_at_ms == s.now + 5);
  CHECK(s.snapshot().guard_time() == n.pins);
  n.clock = s.now + 10;
  auto c = s.claim("bob", "after", 60'000);
  REQUIRE(c.ok());
  CHECK(c->admitted_at_ms == s.now + 10);  // the notary's T, not the client's clock
  json l = s.lease_of("bob", "path:after");
  n.clock = s.now + 20;
  REQUIRE(s.op("bob", {{"op", "release"}, {"path", "after"}, {"lease", l["id"]}}).ok());  // time-free, attested too
  auto vs = verify(s, *s.tip());
  for (const auto& v : vs) CHECK_MESSAGE(v.ok, v.reason << ": " << v.detail);
  CHECK(vs.size() == 5);
  CHECK(vs[3].time == s.now + 10);
  // The notary saw bindings, digest and interval: never the body.
  for (const auto& r : n.seen) {
    CHECK(r.find("expires_at") == std::string::npos);
    CHECK(r.find("after") == std::string::npos);
  }
}

TEST_CASE("guard time: activation preconditions") {
  Store s;
  Notary n;
  s.admit = n.fn();
  n.clock = s.now;
  CHECK(enable(s, "alice", n.pins).error().code == Errc::not_holder);                              // not the owner
  CHECK(enable(s, "owner", n.pins, std::string(64, '0')).error().code == Errc::stale_generation);  // CAS
  json bad = {{"admin",
               {{"op", "guard-time-enable"},
                {"audience", "a"},
                {"service_key", n.pins.service_key},
                {"disclosure", "NONE"},
                {"expected_policy_hash", s.snapshot().policy_hash}}}};
  CHECK(s.submit("owner", "guard-time", bad).error().code == Errc::usage);  // no consent
  REQUIRE(enable(s, "owner", n.pins).ok());
  auto again = enable(s, "owner", n.pins);
  CHECK(again.error().code == Errc::usage);
  CHECK(again.error().has_reason(gitlocks::reason::already_enabled));
  Notary other;
  other.key = gitlocks::test::actor_key("other-notary");
  other.pins = {"locks.example", gitlocks::to_hex(other.key.public_key)};
  CHECK(enable(s, "owner", other.pins).error().message.find("guard-time migrate") != std::string::npos);
}

TEST_CASE("guard time: no client clock fallback - the notary's T must lie in the interval") {
  Store s;
  Notary n;
  s.admit = n.fn();
  n.clock = s.now;
  REQUIRE(enable(s, "owner", n.pins).ok());
  s.admit = nullptr;
  CHECK(s.claim("alice", "x", 60'000).error().code == Errc::usage);
  s.admit = n.fn();
  // TTL 60 s: interval [e - 3600000, e - 1000]. T = e - 1000 inclusive is admitted; e - 999 is not.
  const std::int64_t e = s.now + 60'000;
  n.clock = e - 999;
  CHECK(s.claim("alice", "x", 60'000).error().code == Errc::guard_window);
  n.clock = e - 1000;
  CHECK(s.claim("alice", "x", 60'000).ok());
}

TEST_CASE("guard time: a notary that signs a substituted or out-of-window attestation is rejected by the client") {
  Store s;
  Notary n;
  s.admit = n.fn();
  n.clock = s.now;
  REQUIRE(enable(s, "owner", n.pins).ok());
  // A liar: signs T outside the interval.
  s.admit = [&](const std::string& stored) -> gitlocks::Result<std::string> {
    auto req = gitlocks::open_admission_request(stored);
    return gitlocks::make_attestation(*req, n.pins, 1, false, n.key);
  };
  CHECK(s.claim("alice", "x", 60'000).error().code == Errc::store_write);
  // Another key than the pinned one.
  Notary rogue;
  rogue.key = gitlocks::test::actor_key("rogue");
  rogue.pins = {n.pins.audience, gitlocks::to_hex(rogue.key.public_key)};
  rogue.clock = s.now;
  s.admit = rogue.fn();
  CHECK(s.claim("alice", "x", 60'000).error().code == Errc::store_write);
  // Another audience.
  Notary wrong_aud = n;
  wrong_aud.pins.audience = "elsewhere";
  s.admit = wrong_aud.fn();
  CHECK(s.claim("alice", "x", 60'000).error().code == Errc::store_write);
}

TEST_CASE("guard time: replay flags attestations from another commit - a test clock - decreasing T") {
  Store s;
  Notary n;
  s.admit = n.fn();
  n.clock = s.now;
  REQUIRE(enable(s, "owner", n.pins).ok());
  n.clock = s.now + 10;
  auto c1 = s.claim("alice", "a", 60'000);
  REQUIRE(c1.ok());
  n.clock = s.now + 20;
  auto c2 = s.claim("bob", "b", 60'000);
  REQUIRE(c2.ok());
  auto& store = s.objects();
  // Substitute c1's attestation into c2's commit.
  auto tc2 = gitlocks::read_transition_commit(store, c2->commit).value();
  Oid forged = gitlocks::write_transition_commit(store, tc2.parents[0], tc2.state, tc2.packet_stored, "x\n", 0,
                                                 c1->attestation_stored)
                   .value();
  auto v1 = verify(s, forged);
  REQUIRE(first_bad(v1));
  CHECK(first_bad(v1)->commit == forged);
  CHECK(first_bad(v1)->reason == "attestation-mismatch");
  CHECK(first_bad(v1)->detail.find("binding:") != std::string::npos);
  // Drop the attestation altogether.
  Oid bare = gitlocks::write_transition_commit(store, tc2.parents[0], tc2.state, tc2.packet_stored, "x\n", 0).value();
  CHECK(first_bad(verify(s, bare))->reason == "missing-attestation");
  // Pins other than the expected ones.
  gitlocks::ReplayOptions expect_other;
  expect_other.expected_pins = gitlocks::Pins{"someone-else", n.pins.service_key};
  CHECK(first_bad(verify(s, *s.tip(), expect_other))->reason == "pins-mismatch");
  // A test clock is refused unless allowed.
  Store t;
  Notary tn;
  tn.test_clock = true;
  t.admit = tn.fn();
  tn.clock = t.now;
  REQUIRE(enable(t, "owner", tn.pins).ok());
  CHECK(first_bad(verify(t, *t.tip()))->reason == "attestation-mismatch");
  gitlocks::ReplayOptions allow;
  allow.allow_test_clock = true;
  CHECK_FALSE(first_bad(verify(t, *t.tip(), allow)));
}

TEST_CASE("guard time: a store requiring an unknown profile is refused - never ignored") {
  Store s;
  Notary n;
  s.admit = n.fn();
  n.clock = s.now;
  REQUIRE(enable(s, "owner", n.pins).ok());
  gitlocks::StateReader reader(s.objects(), s.state());
  json pol = reader.policy().value();
  pol["guard_time"]["profiles"].push_back("time-mul-guard-window-v9");
  auto parsed = gitlocks::parse_policy(pol);
  REQUIRE_FALSE(parsed.ok());
  CHECK(parsed.error().code == Errc::unknown_format);
}

namespace {

// A guard-time history (init, activation, alice's claim) and bob's genuine
// next claim, built but not published: the tests below replace bob's commit
// by a forgery on the same parent, so the commits before it stay valid.
struct AttestedHistory {
  Store s;
  Notary n;
  Oid parent;                // alice's commit: the tip the forgeries build on
  std::int64_t alice_t = 0;  // its attested T
  gitlocks::Candidate bob;   // bob's genuine next commit
  gitlocks::TransitionCommit bob_tc;

  AttestedHistory() {
    s.admit = n.fn();
    n.clock = s.now;
    REQUIRE(enable(s, "owner", n.pins).ok());
    n.clock = alice_t = s.now + 10;
    REQUIRE(s.claim("alice", "a", 60'000).ok());
    parent = *s.tip();
    n.clock = s.now + 20;
    auto c = s.claim("bob", "b", 60'000);
    REQUIRE(c.ok());
    bob = *c;
    bob_tc = gitlocks::read_transition_commit(s.objects(), bob.commit).value();
  }

  // The opened admission request of a stored packet, as the notary sees it.
  json request_for(const json& packet, const std::string& stored, const std::string& actor) {
    auto req = gitlocks::make_admission_request(packet, stored, gitlocks::test::actor_key(actor));
    REQUIRE(req.ok());
    return gitlocks::open_admission_request(*req).value();
  }

  // An attestation document signed with `key` (the pinned notary's unless
  // told), whatever it says.
  std::string sign_attestation(const json& att, const gitlocks::KeyPair* key = nullptr) {
    const gitlocks::KeyPair& k = key ? *key : n.key;
    auto bytes = gitlocks::canon_dump(att).value();
    auto sig = gitlocks::sign_detached(gitlocks::kAttestationDomain, bytes, k);
    return gitlocks::canon_dump(json{{"attestation", att}, {"sig", gitlocks::to_hex(sig)}}).value();
  }

  // The notary's genuine attestation of bob's packet at `t`, as a document.
  json attestation_at(std::int64_t t) {
    auto stored =
        gitlocks::make_attestation(request_for(bob.packet, bob.packet_stored, "bob"), n.pins, t, false, n.key);
    REQUIRE(stored.ok());
    return gitlocks::open_attestation(*stored).value().document;
  }

  // Bob's state on alice's commit, with the given packet and attestation.
  Oid commit(const std::string& packet_stored, const std::string& attestation_stored) {
    return gitlocks::write_transition_commit(s.objects(), parent, bob_tc.state, packet_stored, "forged\n", 0,
                                             attestation_stored)
        .value();
  }
};

// Checks that the chain ending at `tip` (init, activation, alice, tip) has
// exactly one invalid commit, the tip, for `reason`; returns its detail.
std::string only_tip_invalid(Store& s, const Oid& tip, const std::string& reason) {
  auto vs = verify(s, tip);
  REQUIRE(vs.size() == 4);
  for (std::size_t i = 0; i < 3; ++i) CHECK_MESSAGE(vs[i].ok, i << ": " << vs[i].reason << ": " << vs[i].detail);
  CHECK(vs[3].commit == tip);
  CHECK_FALSE(vs[3].ok);
  CHECK(vs[3].reason == reason);
  return vs[3].detail;
}

}  // namespace

TEST_CASE("guard time: the genuine history the forgeries below start from verifies") {
  AttestedHistory h;
  auto vs = verify(h.s, h.bob.commit);
  REQUIRE(vs.size() == 4);
  for (const auto& v : vs) CHECK_MESSAGE(v.ok, v.reason << ": " << v.detail);
  CHECK(vs[2].time == h.alice_t);
  CHECK(vs[3].time == h.s.now + 20);
  // The same packet attested at alice's T exactly: T may stay equal.
  Oid equal = h.commit(h.bob.packet_stored, h.sign_attestation(h.attestation_at(h.alice_t)));
  for (const auto& v : verify(h.s, equal)) CHECK_MESSAGE(v.ok, v.reason << ": " << v.detail);
}

TEST_CASE("guard time: replay flags an attested T before the previous attested T as time-decreased") {
  AttestedHistory h;
  // A correctly signed attestation of bob's packet, inside its interval, 1 ms
  // before alice's T: the client would refuse it, the verifier must too.
  const std::int64_t t = h.alice_t - 1;
  json att = h.attestation_at(t);
  REQUIRE(att["interval"][0].get<std::int64_t>() <= t);
  Oid tip = h.commit(h.bob.packet_stored, h.sign_attestation(att));
  CHECK(only_tip_invalid(h.s, tip, "time-decreased") ==
        "attested T = " + std::to_string(t) + " is before the previous " + std::to_string(h.alice_t));
}

TEST_CASE("guard time: replay flags a client clock reading in an attested packet as time-source-mismatch") {
  AttestedHistory h;
  // Bob signs his packet with a claimed_at_ms and the notary attests that
  // very packet: every binding and the digest agree, only the time source is wrong.
  json packet = h.bob.packet;
  packet["claimed_at_ms"] = h.bob.admitted_at_ms;
  std::string stored = gitlocks::seal_packet(packet, gitlocks::test::actor_key("bob")).value();
  auto att =
      gitlocks::make_attestation(h.request_for(packet, stored, "bob"), h.n.pins, h.bob.admitted_at_ms, false, h.n.key);
  REQUIRE(att.ok());
  Oid tip = h.commit(stored, *att);
  CHECK(only_tip_invalid(h.s, tip, "time-source-mismatch") == "a client clock reading under guard time");
}

TEST_CASE("guard time: replay flags an attestation bound to another packet digest") {
  AttestedHistory h;
  // Every binding of bob's packet, but the digest of another packet (his
  // packet with another body name, signed by him too).
  json other = h.bob.packet;
  other["body"]["name"] = "not-bob";
  std::string other_stored = gitlocks::seal_packet(other, gitlocks::test::actor_key("bob")).value();
  json att = h.attestation_at(h.bob.admitted_at_ms);
  att["packet_digest"] = gitlocks::sha256_hex(other_stored);
  REQUIRE(att["packet_digest"] != gitlocks::sha256_hex(h.bob.packet_stored));
  Oid tip = h.commit(h.bob.packet_stored, h.sign_attestation(att));
  CHECK(only_tip_invalid(h.s, tip, "attestation-mismatch") == "packet-digest: attestation is for another packet");
}

TEST_CASE("guard time: replay flags a signed packet whose interval is not the derived one") {
  AttestedHistory h;
  // Bob's claim: TTL 60 s from now, so the seed's guards (T + 1000 <= e,
  // T + 3600000 >= e) give [e - 3600000, e - 1000]. A packet narrowing it by
  // 1 ms at the top, signed by bob and attested by the notary at a T inside.
  const std::int64_t e = h.s.now + 60'000;
  REQUIRE(h.bob.packet["interval"] == json::array({e - 3'600'000, e - 1000}));
  json packet = h.bob.packet;
  packet["interval"][1] = e - 1001;
  std::string stored = gitlocks::seal_packet(packet, gitlocks::test::actor_key("bob")).value();
  auto att =
      gitlocks::make_attestation(h.request_for(packet, stored, "bob"), h.n.pins, h.bob.admitted_at_ms, false, h.n.key);
  REQUIRE(att.ok());
  Oid tip = h.commit(stored, *att);
  CHECK(only_tip_invalid(h.s, tip, "interval-mismatch") == "derived interval [" + std::to_string(e - 3'600'000) + ", " +
                                                               std::to_string(e - 1000) +
                                                               "] differs from the packet's");
}

TEST_CASE("guard time: replay checks every field of a pinned notary's signed attestation") {
  AttestedHistory h;
  const std::int64_t e = h.s.now + 60'000;
  const gitlocks::KeyPair rogue = gitlocks::test::actor_key("rogue-notary");
  struct Forgery {
    const char* what;
    std::function<void(json&)> edit;
    bool rogue_signs;
    const char* reason;
    std::string detail_prefix;
  };
  const std::vector<Forgery> forgeries = {
      {"T 1 ms above the signed interval", [&](json& a) { a["admitted_at_ms"] = e - 999; }, false,
       "attestation-mismatch", "time-outside-interval: T = " + std::to_string(e - 999)},
      {"signed interval other than the packet's", [&](json& a) { a["interval"][1] = e - 1001; }, false,
       "attestation-mismatch", "interval: signed interval differs from the packet's"},
      {"another audience", [&](json& a) { a["audience"] = "elsewhere"; }, false, "attestation-mismatch",
       "audience: attested by audience \"elsewhere\""},
      {"an unknown profile", [&](json& a) { a["profile"] = "time-add-guard-window-v1"; }, false, "attestation-mismatch",
       "profile: unknown attestation profile"},
      {"another source", [&](json& a) { a["source"] = std::string(40, '0'); }, false, "attestation-mismatch",
       "binding:source: attestation binds \"" + std::string(40, '0') + "\""},
      {"a test clock", [&](json& a) { a["clock"] = "test"; }, false, "attestation-mismatch",
       "test-clock: admitted by a notary running a \"test\" clock"},
      {"a key other than the pinned one", [&](json& a) { a["service_key"] = gitlocks::to_hex(rogue.public_key); }, true,
       "attestation-mismatch", "service-key: attested by key " + gitlocks::to_hex(rogue.public_key)},
      {"a signature by another key than the embedded one", [&](json&) {}, true, "bad-attestation-signature",
       "attestation signature does not verify"},
      {"a missing admitted_at_ms", [&](json& a) { a.erase("admitted_at_ms"); }, false, "bad-attestation",
       "attestation is missing audience, admitted_at_ms, clock or profile"},
      // A format of another type is another format (once an uncaught
      // exception: the verifier stopped instead of flagging the commit).
      {"a format that is a number", [&](json& a) { a["format"] = 5; }, false, "bad-attestation",
       "unknown attestation format"},
      {"a format that is an object", [&](json& a) { a["format"] = json::object(); }, false, "bad-attestation",
       "unknown attestation format"},
      {"no format", [&](json& a) { a.erase("format"); }, false, "bad-attestation", "unknown attestation format"},
  };
  // Every binding the attestation shares with the packet, each alone set to
  // a well-formed value that is not the packet's, signed by the pinned key.
  const std::vector<std::pair<const char*, json>> bindings = {
      {"store", std::string(64, 'b')},
      {"actor", gitlocks::test::actor_hex("alice")},
      {"command", "release"},
      {"action", "release"},
      {"instance", std::string(64, 'c')},
      {"epoch", 1},
      {"policy_hash", std::string(64, 'd')},
      {"source", std::string(40, '0')},
      {"result", std::string(40, 'e')},
  };
  REQUIRE(bindings.size() == std::size(gitlocks::kBindingFields));
  for (std::size_t i = 0; i < bindings.size(); ++i) {
    const std::string field = bindings[i].first;
    const json& value = bindings[i].second;
    CAPTURE(field);
    REQUIRE(field == gitlocks::kBindingFields[i]);
    REQUIRE(h.bob.packet.at(field) != value);
    json att = h.attestation_at(h.bob.admitted_at_ms);
    att[field] = value;
    Oid tip = h.commit(h.bob.packet_stored, h.sign_attestation(att));
    const std::string detail = only_tip_invalid(h.s, tip, "attestation-mismatch");
    CHECK_MESSAGE(detail.rfind("binding:" + field + ": attestation binds " + value.dump(), 0) == 0, detail);
  }
  // T one below the signed interval (the low bound), signed by the pinned key.
  {
    json att = h.attestation_at(h.bob.admitted_at_ms);
    const std::int64_t lo = att["interval"][0].get<std::int64_t>();
    att["admitted_at_ms"] = lo - 1;
    Oid tip = h.commit(h.bob.packet_stored, h.sign_attestation(att));
    const std::string detail = only_tip_invalid(h.s, tip, "attestation-mismatch");
    CHECK_MESSAGE(detail.rfind("time-outside-interval: T = " + std::to_string(lo - 1), 0) == 0, detail);
  }
  for (const auto& f : forgeries) {
    CAPTURE(f.what);
    json att = h.attestation_at(h.bob.admitted_at_ms);
    f.edit(att);
    Oid tip = h.commit(h.bob.packet_stored, h.sign_attestation(att, f.rogue_signs ? &rogue : nullptr));
    const std::string detail = only_tip_invalid(h.s, tip, f.reason);
    CHECK_MESSAGE(detail.rfind(f.detail_prefix, 0) == 0, detail);
  }
}

TEST_CASE("guard time: open_attestation types every field it checked") {
  AttestedHistory h;
  const std::int64_t t = h.bob.admitted_at_ms + 1;
  auto stored =
      gitlocks::make_attestation(h.request_for(h.bob.packet, h.bob.packet_stored, "bob"), h.n.pins, t, true, h.n.key);
  REQUIRE(stored.ok());
  auto att = gitlocks::open_attestation(*stored);
  REQUIRE(att.ok());
  // What the notary was given: its pins, T, a test clock, and bob's packet.
  CHECK(att->profile == std::string(gitlocks::kProfileGuardTime));
  CHECK(att->audience == h.n.pins.audience);
  CHECK(att->service_key == h.n.pins.service_key);
  CHECK(att->admitted_at_ms == t);
  CHECK(att->clock == "test");
  CHECK(att->packet_digest == gitlocks::sha256_hex(h.bob.packet_stored));
  const json& p = h.bob.packet;
  CHECK(att->store == p["store"].get<std::string>());
  CHECK(att->actor == gitlocks::test::actor_hex("bob"));
  CHECK(att->command == p["command"].get<std::string>());
  CHECK(att->action == "claim");
  CHECK(att->instance == p["instance"].get<std::string>());
  CHECK(att->epoch == p["epoch"].get<std::int64_t>());
  CHECK(att->policy_hash == p["policy_hash"].get<std::string>());
  CHECK(att->source.hex() == p["source"].get<std::string>());
  CHECK(att->result.hex() == p["result"].get<std::string>());
  CHECK(att->interval_lo == p["interval"][0].get<std::int64_t>());
  CHECK(att->interval_hi == p["interval"][1].get<std::int64_t>());
  CHECK(att->interval_lo <= att->interval_hi);
  CHECK(gitlocks::canon_dump(json{{"attestation", att->document}, {"sig", json::parse(*stored)["sig"]}}).value() ==
        *stored);
}

TEST_CASE("guard time: the first attested T may not go below the last local-clock T") {
  // SPEC §6: T never decreases along the chain, across the activation too
  // (the client refuses such an attestation: build_candidate's last_time).
  Store s;
  Notary n;
  REQUIRE(s.claim("alice", "before", 60'000).ok());  // local T = s.now
  const Oid parent = *s.tip();
  s.admit = n.fn();
  n.clock = s.now - 1;
  auto refused = enable(s, "owner", n.pins);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().code == Errc::store_write);
  n.clock = s.now;
  auto en = enable(s, "owner", n.pins);
  REQUIRE(en.ok());
  for (const auto& v : verify(s, en->commit)) CHECK_MESSAGE(v.ok, v.reason << ": " << v.detail);
  // The same activation packet, attested 1 ms before alice's local T.
  auto req = gitlocks::make_admission_request(en->packet, en->packet_stored, gitlocks::test::actor_key("owner"));
  REQUIRE(req.ok());
  auto att =
      gitlocks::make_attestation(gitlocks::open_admission_request(*req).value(), n.pins, s.now - 1, false, n.key);
  REQUIRE(att.ok());
  auto tc = gitlocks::read_transition_commit(s.objects(), en->commit).value();
  Oid forged =
      gitlocks::write_transition_commit(s.objects(), parent, tc.state, en->packet_stored, "forged\n", 0, *att).value();
  auto vs = verify(s, forged);
  REQUIRE(vs.size() == 3);
  CHECK(vs[0].ok);
  CHECK(vs[1].ok);
  CHECK_FALSE(vs[2].ok);
  CHECK(vs[2].reason == "time-decreased");
  CHECK(vs[2].detail ==
        "attested T = " + std::to_string(s.now - 1) + " is before the previous " + std::to_string(s.now));
}

// recorded_admission_time, the one reading of a commit's T outside replay's
// checks: the notary's T when attested (its signature checked), the packet's
// clock otherwise, nothing when neither says.
TEST_CASE("guard time: recorded_admission_time reads the notary's T and refuses a forged attestation") {
  AttestedHistory h;
  auto t = gitlocks::recorded_admission_time(h.bob_tc.attestation_stored, std::nullopt);
  REQUIRE_MESSAGE(t.ok(), gitlocks::test::why(t));
  REQUIRE(t->has_value());
  CHECK((*t)->ms == h.s.now + 20);  // the notary's clock when bob was admitted (set above)
  CHECK((*t)->attested);
  // The same attestation signed by another key than the one it names: refused, never read.
  const gitlocks::KeyPair other = gitlocks::test::actor_key("mallory");
  auto forged =
      gitlocks::recorded_admission_time(h.sign_attestation(h.attestation_at(h.s.now + 20), &other), std::nullopt);
  REQUIRE_FALSE(forged.ok());
  CHECK(forged.error().code == Errc::bad_signature);
  // Without an attestation: the packet's own clock, or nothing.
  auto local = gitlocks::recorded_admission_time(std::nullopt, 1234);
  REQUIRE(local.ok());
  REQUIRE(local->has_value());
  CHECK((*local)->ms == 1234);
  CHECK_FALSE((*local)->attested);
  auto none = gitlocks::recorded_admission_time(std::nullopt, std::nullopt);
  REQUIRE(none.ok());
  CHECK_FALSE(none->has_value());
}

// What `log` reads of an unverified commit's packet: a client clock reading
// only when it is one (an integer in [0, 2^53-1]), never a guess.
TEST_CASE("an unchecked packet's claimed_at_ms is read only when it is a time in the safe domain") {
  using gitlocks::loose_claimed_at_ms;
  CHECK(loose_claimed_at_ms(json{{"claimed_at_ms", 1234}}) == std::optional<std::int64_t>(1234));
  CHECK(loose_claimed_at_ms(json{{"claimed_at_ms", 0}}) == std::optional<std::int64_t>(0));
  CHECK(loose_claimed_at_ms(json{{"claimed_at_ms", 9007199254740991LL}}) ==
        std::optional<std::int64_t>(9007199254740991LL));
  CHECK_FALSE(loose_claimed_at_ms(json{{"claimed_at_ms", 9007199254740992LL}}));
  CHECK_FALSE(loose_claimed_at_ms(json{{"claimed_at_ms", -1}}));
  CHECK_FALSE(loose_claimed_at_ms(json{{"claimed_at_ms", 1.5}}));
  CHECK_FALSE(loose_claimed_at_ms(json{{"claimed_at_ms", "1234"}}));
  CHECK_FALSE(loose_claimed_at_ms(json{{"body", json::object()}}));
  CHECK_FALSE(loose_claimed_at_ms(json::array({1234})));
}

// The notary opens requests signed by any actor: a format that is not a
// string is an unknown format like any other (a 400 from the notary), never
// an exception (once a 500 from the HTTP server's handler).
TEST_CASE("guard time: an admission request whose format is not a string is an unknown format") {
  AttestedHistory h;
  const gitlocks::KeyPair mallory = gitlocks::test::actor_key("mallory");
  json genuine = h.request_for(h.bob.packet, h.bob.packet_stored, "bob");
  for (const json& format :
       {json(5), json(nullptr), json::array({"gitlocks-admission-v1"}), json::object(), json(true)}) {
    CAPTURE(format.dump());
    json req = genuine;
    req["format"] = format;
    req["actor"] = gitlocks::to_hex(mallory.public_key);  // signed by its own actor: the signature verifies
    auto bytes = gitlocks::canon_dump(req).value();
    auto sig = gitlocks::sign_detached(gitlocks::kAdmissionDomain, bytes, mallory);
    const std::string stored = gitlocks::canon_dump(json{{"request", req}, {"sig", gitlocks::to_hex(sig)}}).value();
    gitlocks::Result<json> r = gitlocks::make_error(Errc::invalid, "not run");
    REQUIRE_NOTHROW(r = gitlocks::open_admission_request(stored));
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code == Errc::unknown_format);
    CHECK(r.error().message == "unknown admission request format");
  }
}

// Every field of an attested commit's attestation (signed again by the
// pinned notary) and of its packet (signed again by its actor), at any
// depth, dropped or given another type: the commit is invalid, every
// commit before it stays valid, and the verifier never throws. Each field
// of both is bound or checked: none may change unnoticed.
TEST_CASE("guard time: every field of an attested commit dropped or retyped makes it invalid - never a throw") {
  AttestedHistory h;
  std::size_t forgeries = 0;
  auto check = [&](const std::string& what, const Oid& tip) {
    CAPTURE(what);
    ++forgeries;
    std::vector<gitlocks::Verdict> vs;
    REQUIRE_NOTHROW(vs = verify(h.s, tip));
    REQUIRE(vs.size() == 4);
    for (std::size_t i = 0; i < 3; ++i) CHECK(vs[i].ok);
    CHECK_FALSE(vs[3].ok);
    CHECK_FALSE(vs[3].reason.empty());
  };
  const json attestation = h.attestation_at(h.bob.admitted_at_ms);
  gitlocks::test::for_each_forgery(attestation, [&](const std::string& how, const json& forged) {
    check("attestation: " + how, h.commit(h.bob.packet_stored, h.sign_attestation(forged)));
  });
  const std::size_t attestation_forgeries = forgeries;
  const std::string attestation_stored = *h.bob_tc.attestation_stored;
  gitlocks::test::for_each_forgery(h.bob.packet, [&](const std::string& how, const json& forged) {
    auto stored = gitlocks::seal_packet(forged, gitlocks::test::actor_key("bob"));
    if (!stored.ok()) {  // the writer's own check refuses to sign it: signed by hand below
      auto bytes = gitlocks::canon_dump(forged);
      if (!bytes.ok()) return;  // not even JSON the core can encode: no commit can carry it
      auto sig = gitlocks::sign_detached(gitlocks::kPacketDomain, *bytes, gitlocks::test::actor_key("bob"));
      stored = gitlocks::canon_dump(json{{"packet", forged}, {"sig", gitlocks::to_hex(sig)}});
    }
    check("packet: " + how, h.commit(*stored, attestation_stored));
  });
  MESSAGE(attestation_forgeries << " forged attestations, " << forgeries - attestation_forgeries << " forged packets");
  CHECK(attestation_forgeries > 100);
  CHECK(forgeries - attestation_forgeries > 150);
}
