// The owner's policy-set transition (docs/FORMAT.md "Changing the policy")
// and the policy fields it brings: require_claim, enforce, admins, bots.
// Every expected policy below is written out by hand from the change the
// case makes, not read back from the planner.
#include <doctest/doctest.h>

#include <algorithm>

#include "fixture.h"
#include "forgery.h"
#include "gitlocks/canon.hpp"
#include "gitlocks/crypto.hpp"
#include "gitlocks/enforce.hpp"
#include "gitlocks/ops.hpp"
#include "gitlocks/path.hpp"
#include "gitlocks/policy.hpp"
#include "gitlocks/replay.hpp"
#include "gitlocks/state.hpp"
#include "gitlocks/vault.hpp"
#include "why.h"

using gitlocks::Errc;
using gitlocks::json;
using gitlocks::Oid;
using gitlocks::test::actor_hex;
using gitlocks::test::invalid_commits;
using gitlocks::test::Store;

namespace {

json current_policy(Store& s) { return gitlocks::StateReader(s.objects(), s.state()).policy().value(); }

gitlocks::Result<gitlocks::Candidate> set_policy(Store& s, const std::string& who, const json& policy,
                                                 std::string expected = "") {
  if (expected.empty()) expected = s.snapshot().policy_hash;
  return s.submit(who, "policy set", gitlocks::ops::admin_policy_set(policy, expected));
}

// The refusal of `r`, with the ref left at `tip`.
void refused(Store& s, const gitlocks::Result<gitlocks::Candidate>& r, Errc code, const std::string& reason,
             const std::optional<Oid>& tip) {
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == code);
  CHECK(r.error().reason() == reason);
  CHECK(s.tip() == tip);
}

}  // namespace

TEST_CASE("policy set: the owner changes the settable fields at the expected hash and every replay accepts it") {
  Store s;
  const json before = current_policy(s);
  json next = before;
  next["max_ttl_ms"] = 120'000;
  next["require_claim"] = {{"paths", {"src/"}}};
  next["enforce"] = {"refs/heads/main", "refs/heads/release/*"};
  next["admins"] = {actor_hex("alice")};
  next["bots"] = {actor_hex("ci")};
  auto r = set_policy(s, "owner", next);
  REQUIRE_MESSAGE(r.ok(), gitlocks::test::why(r));
  CHECK(std::string(gitlocks::action_name(r->outcome.action)) == "policy-set");
  // The stored policy is the new document, byte for byte canonical.
  CHECK(current_policy(s) == next);
  CHECK(s.snapshot().policy_hash == gitlocks::sha256_hex(gitlocks::canon_dump(next).value()));
  CHECK(invalid_commits(s) == 0);
  auto p = gitlocks::parse_policy(next).value();
  CHECK(p.is_admin(actor_hex("alice")));
  CHECK(p.is_admin(actor_hex("owner")));  // the owner always is
  CHECK_FALSE(p.is_admin(actor_hex("bob")));
  CHECK(p.is_bot(actor_hex("ci")));
  CHECK_FALSE(p.is_bot(actor_hex("alice")));
  CHECK(p.requires_claim(gitlocks::parse_repo_path("src/a/b.c").value()));
  CHECK_FALSE(p.requires_claim(gitlocks::parse_repo_path("srcx/b.c").value()));
  CHECK_FALSE(p.requires_claim(gitlocks::parse_repo_path("docs/a.md").value()));
}

TEST_CASE("policy set: the new TTL bound binds later claims and the earlier ones keep the rules they were made under") {
  Store s;
  REQUIRE(s.claim("alice", "a", 3'000'000).ok());  // under the default max (3,600,000)
  json next = current_policy(s);
  next["max_ttl_ms"] = 60'000;
  REQUIRE(set_policy(s, "owner", next).ok());
  const auto tip = s.tip();
  auto over = s.claim("bob", "b", 60'001);
  REQUIRE_FALSE(over.ok());
  CHECK(over.error().code == Errc::guard_window);
  CHECK(over.error().fields.at("max_ttl_ms") == 60000);
  CHECK(s.tip() == tip);
  REQUIRE(s.claim("bob", "b", 60'000).ok());
  CHECK(invalid_commits(s) == 0);  // alice's claim replays under the bound it was made under
}

TEST_CASE("policy set: refused from a non-owner even an admin - at a stale hash - and for an identical policy") {
  Store s;
  json with_admin = current_policy(s);
  with_admin["admins"] = {actor_hex("alice")};
  const std::string first_hash = s.snapshot().policy_hash;
  REQUIRE(set_policy(s, "owner", with_admin).ok());
  const auto tip = s.tip();
  json next = with_admin;
  next["max_ttl_ms"] = 60'000;
  refused(s, set_policy(s, "bob", next), Errc::not_holder, "not-owner", tip);
  refused(s, set_policy(s, "alice", next), Errc::not_holder, "not-owner", tip);  // admins release, owners govern
  refused(s, set_policy(s, "owner", next, first_hash), Errc::stale_generation, "policy-changed", tip);
  refused(s, set_policy(s, "owner", with_admin), Errc::usage, "usage", tip);
  REQUIRE(set_policy(s, "owner", next).ok());
}

TEST_CASE("policy set: an unknown field - a fixed field - and malformed new fields are refused") {
  Store s;
  const auto tip = s.tip();
  const json base = current_policy(s);
  json unknown = base;
  unknown["approvers"] = json::array();
  auto r = set_policy(s, "owner", unknown);
  refused(s, r, Errc::bad_json, "bad-json", tip);
  CHECK(r.error().message.find("unknown field 'approvers'") != std::string::npos);
  // Each fixed member, changed alone in a document valid in every other
  // respect, is refused and named.
  auto names = [](const gitlocks::Result<gitlocks::Candidate>& res, const std::string& field) {
    return !res.ok() && res.error().message.rfind("policy set cannot change '" + field + "': ", 0) == 0;
  };
  for (const char* fixed : {"owner", "store"}) {
    json changed = base;
    changed[fixed] = std::string(64, 'b');
    auto res = set_policy(s, "owner", changed);
    refused(s, res, Errc::usage, "usage", tip);
    CHECK_MESSAGE(names(res, fixed), res.error().message);
  }
  // Guard time, written as the policy writes pins.
  gitlocks::Policy with_guard = gitlocks::parse_policy(base).value();
  with_guard.guard_time = gitlocks::Pins{"ci", std::string(64, 'c')};
  const json pinned = gitlocks::policy_document(with_guard);
  REQUIRE(pinned.contains("guard_time"));
  auto with_pins = set_policy(s, "owner", pinned);
  refused(s, with_pins, Errc::usage, "usage", tip);
  CHECK_MESSAGE(names(with_pins, "guard_time"), with_pins.error().message);
  // case_insensitive stated, true or false: both are another document.
  REQUIRE_FALSE(base.contains("case_insensitive"));
  for (bool value : {true, false}) {
    json ci = base;
    ci["case_insensitive"] = value;
    auto stated = set_policy(s, "owner", ci);
    refused(s, stated, Errc::usage, "usage", tip);
    CHECK_MESSAGE(names(stated, "case_insensitive"), stated.error().message);
  }
  struct Bad {
    const char* field;
    json value;
    Errc code;
  };
  const Bad bad[] = {
      {"admins", {"AB" + std::string(62, 'a')}, Errc::bad_json},               // uppercase hex
      {"admins", {std::string(63, 'a')}, Errc::bad_json},                      // 63 digits
      {"bots", {std::string(64, 'b'), std::string(64, 'a')}, Errc::bad_json},  // not sorted
      {"bots", {std::string(64, 'a'), std::string(64, 'a')}, Errc::bad_json},  // duplicate
      {"enforce", {"heads/main"}, Errc::usage},                                // not under refs/
      {"enforce", {"refs/heads/ma*"}, Errc::usage},                            // * not a whole component
      {"enforce", {"refs/*"}, Errc::usage},                                    // would name the store
      {"enforce", {"refs/locks/state"}, Errc::usage},                          // the store itself
      {"enforce", {"refs/remotes/origin/*"}, Errc::usage},                     // checked by their server
      {"require_claim", {{"paths", {"../x"}}}, Errc::bad_path},                // not a repository path
      {"require_claim", {{"families", {"nope"}}}, Errc::usage},                // no such family
      {"require_claim", {{"owners", json::array()}}, Errc::bad_json},          // unknown key
      {"checkpoint", {{"every", 0}}, Errc::bad_json},                          // below 1
      {"checkpoint", {{"every", 1000000001}}, Errc::bad_json},                 // above 10^9
      {"checkpoint", {{"every", -1}}, Errc::bad_json},                         // negative
      {"checkpoint", {{"every", 2.5}}, Errc::bad_json},                        // not whole
      {"checkpoint", {{"every", "100"}}, Errc::bad_json},                      // a string
      {"checkpoint", {{"signers", {std::string(64, 'b'), std::string(64, 'a')}}}, Errc::bad_json},  // unsorted
      {"checkpoint", {{"signers", {std::string(63, 'a')}}}, Errc::bad_json},                        // 63 digits
      {"checkpoint", {{"cut", 1}}, Errc::bad_json},                                                 // not a boolean
      {"checkpoint", {{"size", 10}}, Errc::bad_json},                                               // unknown key
      {"checkpoint", json::array(), Errc::bad_json},                                                // not an object
  };
  for (const auto& b : bad) {
    json doc = base;
    doc[b.field] = b.value;
    CAPTURE(doc.dump());
    auto res = set_policy(s, "owner", doc);
    REQUIRE_FALSE(res.ok());
    CHECK(res.error().code == b.code);
    CHECK(s.tip() == tip);
  }
  // The boundary cases that are accepted: 64 lowercase digits, sorted, a trailing /*.
  json ok = base;
  ok["admins"] = {std::string(64, 'a'), std::string(64, 'b')};
  ok["enforce"] = {"refs/heads/*"};
  REQUIRE(set_policy(s, "owner", ok).ok());
  for (std::int64_t every : {std::int64_t{1}, std::int64_t{1000000000}}) {
    json c = current_policy(s);
    c["checkpoint"] = {{"every", every}, {"signers", {std::string(64, 'a')}}, {"cut", every == 1}};
    REQUIRE(set_policy(s, "owner", c).ok());
  }
}

TEST_CASE("checkpoint signers: a key the policy names checkpoints - others do not and it changes no policy") {
  Store s;
  json c = current_policy(s);
  c["checkpoint"] = {{"signers", {actor_hex("ci")}}};
  REQUIRE(set_policy(s, "owner", c).ok());
  const auto tip = s.tip();
  // alice is not named: not-owner, nothing published.
  auto by_alice =
      s.submit("alice", "checkpoint", gitlocks::ops::admin_checkpoint(tip->hex(), s.snapshot().policy_hash));
  refused(s, by_alice, Errc::not_holder, "not-owner", tip);
  // ci is named: its checkpoint publishes, and every replay accepts it.
  auto by_ci = s.submit("ci", "checkpoint", gitlocks::ops::admin_checkpoint(tip->hex(), s.snapshot().policy_hash));
  REQUIRE_MESSAGE(by_ci.ok(), gitlocks::test::why(by_ci));
  CHECK(invalid_commits(s) == 0);
  // Named signers checkpoint; they change no policy.
  json more = current_policy(s);
  more["max_ttl_ms"] = 7'200'000;
  refused(s, set_policy(s, "ci", more), Errc::not_holder, "not-owner", s.tip());
}

TEST_CASE("policy set: a family that would put held leases in conflict is refused - expired ones count too") {
  Store s;
  REQUIRE(s.claim("alice", "a.png", 5'000).ok());
  REQUIRE(s.claim("bob", "b.png", 60'000).ok());
  s.now += 10'000;  // alice's lease has expired but is still recorded
  const auto tip = s.tip();
  json next = current_policy(s);
  next["families"] = {{{"name", "art"}, {"policy", "exclusive"}, {"members", {"a.png", "b.png"}}}};
  auto r = set_policy(s, "owner", next);
  refused(s, r, Errc::family_policy, "family-policy", tip);
  CHECK(r.error().fields.at("family") == "art");
  // Once the expired lease is swept the family can be declared.
  const json gone = s.lease_of("alice", "path:a.png");
  json sweep = {{"op", "sweep"},
                {"leases",
                 {{{"path", "a.png"},
                   {"lease", gone["id"]},
                   {"generation", gone["generation"]},
                   {"expires_at", gone["expires_at"]}}}}};
  auto swept = s.op("bob", sweep);
  REQUIRE_MESSAGE(swept.ok(), gitlocks::test::why(swept));
  REQUIRE(set_policy(s, "owner", next).ok());
  // A shared family refuses a held exclusive lease (bob's).
  json shared = current_policy(s);
  shared["families"].push_back({{"name", "pics"}, {"policy", "shared"}, {"members", {"b.png"}}});
  refused(s, set_policy(s, "owner", shared), Errc::family_policy, "family-policy", s.tip());
  CHECK(invalid_commits(s) == 0);
}

TEST_CASE("require_claim: a change there needs a live claim of the signer - a bot needs none") {
  Store s;
  json next = current_policy(s);
  next["require_claim"] = {{"paths", {"src/"}}};
  next["bots"] = {actor_hex("ci")};
  REQUIRE(set_policy(s, "owner", next).ok());
  REQUIRE(s.claim("alice", "src/mine/", 60'000, "shared").ok());
  auto snap = s.snapshot();
  gitlocks::EnforcementView view;
  view.snap = &snap;
  view.now = s.now;
  auto ask = [&](const std::optional<std::string>& signer, const std::string& path) {
    auto r = gitlocks::path_refusals(s.objects(), view, signer, {path});
    REQUIRE(r.ok());
    return r->front();
  };
  // Unsigned, or signed by a key holding nothing there: claim-required.
  for (const auto& signer : {std::optional<std::string>{}, std::optional<std::string>{actor_hex("bob")}}) {
    auto e = ask(signer, "src/free.c");
    REQUIRE(e);
    CHECK(e->code == Errc::not_holder);
    CHECK(e->reason() == "claim-required");
  }
  CHECK_FALSE(ask(std::nullopt, "docs/free.md"));        // outside require_claim
  CHECK_FALSE(ask(actor_hex("alice"), "src/mine/x.c"));  // under her shared claim
  CHECK(ask(actor_hex("alice"), "src/other.c"));         // her claim does not cover it
  CHECK_FALSE(ask(actor_hex("ci"), "src/free.c"));       // a bot
  // Bob's shared claim of src/mine/x.c itself is not in alice's way (both
  // shared); once alice's lease expires, her change needs a claim again.
  view.now = s.now + 60'001;
  CHECK(ask(actor_hex("alice"), "src/mine/x.c"));
  view.now = s.now + 60'000;  // live through its expiry instant
  CHECK_FALSE(ask(actor_hex("alice"), "src/mine/x.c"));
}

TEST_CASE("require_claim: a family member needs a claim - and a bot is still refused by another's exclusive claim") {
  Store s(json{{"families", {{{"name", "art"}, {"policy", "exclusive"}, {"members", {"assets/"}}}}}});
  json next = current_policy(s);
  next["require_claim"] = {{"families", {"art"}}};
  next["bots"] = {actor_hex("ci")};
  REQUIRE(set_policy(s, "owner", next).ok());
  REQUIRE(s.claim("alice", "assets/a.png", 60'000).ok());
  auto snap = s.snapshot();
  gitlocks::EnforcementView view;
  view.snap = &snap;
  view.now = s.now;
  auto r = gitlocks::path_refusals(s.objects(), view, std::nullopt, {"assets/b.png", "code/x.c"});
  REQUIRE(r.ok());
  REQUIRE((*r)[0]);
  // The exclusive family puts alice in the way: that refusal comes first.
  CHECK((*r)[0]->code == Errc::family_policy);
  CHECK_FALSE((*r)[1]);
  auto bot = gitlocks::path_refusals(s.objects(), view, actor_hex("ci"), {"assets/a.png"});
  REQUIRE(bot.ok());
  REQUIRE(bot->front());
  CHECK(bot->front()->code == Errc::held_path);
}

namespace {

// Each document written out by hand; policy_document of its parse must give
// it back byte for byte (the expected value is the input, not the writer's
// output).
void round_trips(const json& doc) {
  auto parsed = gitlocks::parse_policy(doc);
  REQUIRE_MESSAGE(parsed.ok(), gitlocks::test::why(parsed) << " in " << doc.dump());
  const auto written = gitlocks::canon_dump(gitlocks::policy_document(*parsed));
  REQUIRE(written.ok());
  CHECK_MESSAGE(*written == gitlocks::canon_dump(doc).value(), "read " << doc.dump());
}

gitlocks::EpochKey epoch_key(std::uint8_t fill) {
  gitlocks::EpochKey k{};
  k.fill(fill);
  return k;
}

}  // namespace

TEST_CASE("policy: a parsed policy writes back the document it was read from - every optional member stated or not") {
  const std::string store(64, 'a');
  const std::string owner = actor_hex("owner");
  const std::string alice = actor_hex("alice");
  const std::string bob = actor_hex("bob");
  const json base = {
      {"format", "gitlocks-policy-v1"}, {"store", store},           {"owner", owner}, {"min_ttl_ms", 1000},
      {"max_ttl_ms", 3600000},          {"families", json::array()}};
  round_trips(base);

  json stated_defaults = base;  // every optional member stating its default or nothing
  stated_defaults["case_insensitive"] = false;
  stated_defaults["require_claim"] = json::object();
  stated_defaults["enforce"] = json::array();
  stated_defaults["admins"] = json::array();
  stated_defaults["bots"] = json::array();
  round_trips(stated_defaults);

  std::vector<std::string> keys{alice, bob};
  std::sort(keys.begin(), keys.end());
  json full = base;
  full["min_ttl_ms"] = 5;
  full["max_ttl_ms"] = 9007199254740991;
  full["families"] =
      json::array({{{"name", "db"}, {"policy", "exclusive"}, {"members", {"db/schema.sql", "db/migrations/"}}},
                   {{"name", "docs"}, {"policy", "shared"}, {"members", {"docs/", "README.md"}}}});
  full["guard_time"] = {{"audience", "notary.example"},
                        {"service_key", std::string(64, 'c')},
                        {"disclosure", "GUARD_WINDOW"},
                        {"profiles", {"signed-private-guard-time-v1", "time-add-guard-window-v1"}},
                        {"scope", "ALL_COMMITS"}};
  full["require_claim"] = {{"paths", {"src/", "Makefile"}}, {"families", {"db"}}};
  full["enforce"] = {"refs/heads/main", "refs/heads/release/*"};
  full["admins"] = keys;
  full["bots"] = {keys.front()};
  full["checkpoint"] = {{"every", 1000}, {"signers", keys}, {"cut", true}};
  round_trips(full);
  for (const char* part : {"every", "signers", "cut"}) {
    json only = full;
    only["checkpoint"].erase(part);
    round_trips(only);
  }
  json empty_rule = base;
  empty_rule["checkpoint"] = json::object();
  round_trips(empty_rule);

  for (const char* part : {"paths", "families"}) {
    json only = full;
    only["require_claim"].erase(part);
    round_trips(only);
  }
  json folded = base;
  folded["case_insensitive"] = true;
  folded["families"] = json::array({{{"name", "İ"}, {"policy", "shared"}, {"members", {"café/", "ñ.txt"}}}});
  round_trips(folded);

  // PRIVATE: epochs 9 and 10 (keys sort as text, "10" before "9"), a
  // pending epoch 11, and the families as sealed.
  const gitlocks::SeedSource seeds = [n = std::uint8_t{0}]() mutable {
    std::array<std::uint8_t, 32> s{};
    s.fill(++n);
    return s;
  };
  json priv = base;
  priv.erase("families");
  priv["format"] = "gitlocks-policy-v3";
  priv["visibility"] = "PRIVATE";
  priv["epoch"] = 10;
  priv["members"] = {owner, alice};
  priv["keyring"] = json::object();
  priv["keyring"].update(gitlocks::seal_keyring(epoch_key(9), 9, {owner}, seeds).value());
  priv["keyring"].update(gitlocks::seal_keyring(epoch_key(10), 10, {owner, alice}, seeds).value());
  round_trips(priv);
  priv["families"] = json::parse(
      gitlocks::seal_document(json::array({{{"name", "db"}, {"policy", "exclusive"}, {"members", {"db/"}}}}),
                              epoch_key(10), 10, store, "policy.json#families")
          .value());
  priv["require_claim"] = {{"families", {"db"}}};
  round_trips(priv);
  priv["pending"] = {{"epoch", 11},
                     {"members", {alice, owner, bob}},
                     {"keyring", gitlocks::seal_keyring(epoch_key(11), 11, {alice, owner, bob}, seeds).value()}};
  round_trips(priv);
  // A PRIVATE policy names no checkpoint signers (its checkpoints are its owner's).
  json priv_rule = priv;
  priv_rule["checkpoint"] = {{"every", 10}};
  auto refused_rule = gitlocks::parse_policy(priv_rule);
  REQUIRE_FALSE(refused_rule.ok());
  CHECK(refused_rule.error().message.find("'checkpoint' applies to public stores") != std::string::npos);

  // Every field of the full public and PRIVATE documents dropped or
  // retyped: each forgery the parser accepts writes back as it was read.
  std::size_t accepted = 0;
  for (const json& doc : {full, priv})
    gitlocks::test::for_each_forgery(doc, [&](const std::string& how, const json& forged) {
      CAPTURE(how);
      if (!gitlocks::parse_policy(forged).ok()) return;
      ++accepted;
      round_trips(forged);
    });
  MESSAGE(accepted << " forged documents accepted and written back");
  CHECK(accepted >= 10);
}
