// Store format 1 -> 2 migration. Format 1 (one shard level) is produced here
// by the test-side writer: the creation body names the old state_format and
// the core, which still reads and replays format 1, plans on it. The host
// path (build_candidate) refuses to write format 1 except to migrate it.
#include <doctest/doctest.h>

#include "fixture.h"
#include "gitlocks/replay.hpp"
#include "why.h"

using gitlocks::Errc;
using gitlocks::json;
using gitlocks::Oid;

namespace {

// Publishes (plan + packet + commit + ref) without build_candidate's format
// gate: the writer of format 1 stores, frozen in the tests.
class Format1Writer {
 public:
  Format1Writer() {
    gitlocks::crypto_init();
    store = gitlocks::open_memory_store().value();
    json policy = gitlocks::default_policy(std::string(64, 'a'), gitlocks::test::actor_hex("owner"));
    auto created = publish("owner", json{{"init", policy}, {"state_format", gitlocks::kStateFormatV1}});
    if (!created.ok()) throw std::runtime_error(created.error().message);
  }

  gitlocks::Result<gitlocks::PlanOutcome> publish(const std::string& actor, json body) {
    auto tip = store->read_ref(gitlocks::kStateRef).value();
    Oid source;
    std::string policy_hash;
    if (tip) {
      source = gitlocks::read_transition_commit(*store, *tip).value().state;
      gitlocks::StateReader r(*store, source);
      policy_hash = gitlocks::sha256_hex(r.policy_bytes().value());
      if (body.contains("ops")) {
        body["created_at"] = now;
        body["name"] = actor;
      }
    } else {
      policy_hash = gitlocks::sha256_hex(body["init"].dump());
    }
    std::string instance = gitlocks::sha256_hex("f1:" + std::to_string(n++));
    gitlocks::PlanContext ctx{gitlocks::test::actor_hex(actor), instance};
    auto out = gitlocks::plan(*store, source, ctx, body, now);
    if (!out.ok()) return out;
    gitlocks::PacketHeader h{std::string(64, 'a'), ctx.actor, "test", instance, 0, policy_hash, source};
    json packet = gitlocks::make_packet(h, *out, now);
    auto stored = gitlocks::seal_packet(packet, gitlocks::test::actor_key(actor)).value();
    Oid c = gitlocks::write_transition_commit(*store, tip, out->result_state, stored, "f1\n", now / 1000).value();
    (void)gitlocks::memory_store_set_ref(*store, gitlocks::kStateRef, c);
    return out;
  }

  std::unique_ptr<gitlocks::ObjectStore> store;
  std::int64_t now = 1'700'000'000'000;
  int n = 0;
};

json claim(const std::string& path, std::int64_t expires) {
  return {{"ops", {{{"op", "claim"}, {"path", path}, {"mode", "exclusive"}, {"expires_at", expires}}}}};
}

json migrate_body() { return {{"migrate", {{"from", gitlocks::kStateFormatV1}, {"to", gitlocks::kStateFormat}}}}; }

}  // namespace

TEST_CASE("migrate: a format-1 history is migrated to format 2 and the whole history verifies") {
  Format1Writer w;
  REQUIRE(w.publish("alice", claim("src/a.c", w.now + 60'000)).ok());
  REQUIRE(w.publish("bob", claim("docs/", w.now + 60'000)).ok());
  auto& store = *w.store;
  auto tip = *store.read_ref(gitlocks::kStateRef).value();
  auto before = gitlocks::read_transition_commit(store, tip).value();
  gitlocks::StateReader old_reader(store, before.state);
  CHECK(old_reader.format_version().value() == 1);
  // Format 1 puts records one shard level down.
  auto loc1 = gitlocks::record_location("path:src/a.c", 1);
  CHECK(loc1.size() == 3);
  CHECK(old_reader.lookup(loc1).value().has_value());
  CHECK_FALSE(old_reader.lookup(gitlocks::record_location("path:src/a.c")).value().has_value());

  // The host refuses to write format 1.
  auto snap = gitlocks::detail::read_unverified_snapshot(store, tip).value();
  auto refused = gitlocks::build_candidate(store, snap, gitlocks::test::actor_key("carol"), "claim",
                                           std::string(64, '1'), claim("x", w.now + 60'000), w.now);
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.error().code == Errc::unknown_format);
  CHECK(refused.error().message.find("migrate") != std::string::npos);

  auto migrated = gitlocks::build_candidate(store, snap, gitlocks::test::actor_key("carol"), "migrate",
                                            std::string(64, '2'), migrate_body(), w.now);
  REQUIRE_MESSAGE(migrated.ok(), gitlocks::test::why(migrated));
  CHECK(std::string(gitlocks::action_name(migrated->outcome.action)) == "migrate");
  (void)gitlocks::memory_store_set_ref(store, gitlocks::kStateRef, migrated->commit);
  gitlocks::StateReader new_reader(store, migrated->outcome.result_state);
  CHECK(new_reader.format_version().value() == 2);
  // Every record carried over byte for byte.
  std::vector<json> a, b;
  REQUIRE(old_reader
              .for_each_record([&](const json& r) {
                a.push_back(r);
                return true;
              })
              .ok());
  REQUIRE(new_reader
              .for_each_record([&](const json& r) {
                b.push_back(r);
                return true;
              })
              .ok());
  auto by_name = [](const json& x, const json& y) {
    return x["kind"].dump() + x["name"].dump() < y["kind"].dump() + y["name"].dump();
  };
  std::sort(a.begin(), a.end(), by_name);
  std::sort(b.begin(), b.end(), by_name);
  CHECK(a.size() == 3);  // src/a.c, the marker record of src, docs
  CHECK(a == b);

  // Writers carry on in format 2; generations continue.
  auto snap2 = gitlocks::detail::read_unverified_snapshot(store, migrated->commit).value();
  w.now += 60'001;
  auto next = gitlocks::build_candidate(
      store, snap2, gitlocks::test::actor_key("carol"), "claim", std::string(64, '3'),
      [&] {
        json b2 = claim("src/a.c", w.now + 60'000);
        b2["created_at"] = w.now;
        b2["name"] = "carol";
        return b2;
      }(),
      w.now);
  REQUIRE_MESSAGE(next.ok(), gitlocks::test::why(next));
  CHECK(std::string(gitlocks::action_name(next->outcome.action)) == "reclaim");
  (void)gitlocks::memory_store_set_ref(store, gitlocks::kStateRef, next->commit);
  gitlocks::StateReader r3(store, next->outcome.result_state);
  CHECK((*r3.record("path:src/a.c").value())["generation"] == 2);

  std::vector<gitlocks::Verdict> verdicts;
  auto sum =
      gitlocks::replay_chain(store, next->commit, {}, [&](const gitlocks::Verdict& v) { verdicts.push_back(v); });
  REQUIRE(sum.ok());
  CHECK(sum->commits == 5);
  for (const auto& v : verdicts) CHECK_MESSAGE(v.ok, v.reason << ": " << v.detail);
  // Resumed from each commit before the migration (the lazy timeline, which
  // reads both states of the migration in full): the same verdicts.
  for (std::size_t from = 0; from + 2 < verdicts.size(); ++from) {
    gitlocks::ReplayOptions options;
    options.from = verdicts[from].commit;
    std::vector<gitlocks::Verdict> resumed;
    auto r =
        gitlocks::replay_chain(store, next->commit, options, [&](const gitlocks::Verdict& v) { resumed.push_back(v); });
    REQUIRE(r.ok());
    REQUIRE(resumed.size() == verdicts.size() - from - 1);
    for (const auto& v : resumed) CHECK_MESSAGE(v.ok, from << ": " << v.reason << ": " << v.detail);
  }
}

TEST_CASE("migrate: refused on format 2 - for unknown versions - and unknown formats are never guessed") {
  gitlocks::test::Store s;
  auto r = s.submit("alice", "migrate", migrate_body());
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == Errc::usage);
  auto v9 =
      s.submit("alice", "migrate", json{{"migrate", {{"from", "gitlocks-state-v9"}, {"to", gitlocks::kStateFormat}}}});
  CHECK(v9.error().code == Errc::unknown_format);
  // A state whose format.json names an unknown version.
  auto& store = s.objects();
  auto blob = store.write_blob(R"({"format":"gitlocks-state-v9"})").value();
  auto tree = store.write_tree({{"format.json", false, blob}}).value();
  gitlocks::StateReader reader(store, tree);
  auto fv = reader.format_version();
  REQUIRE_FALSE(fv.ok());
  CHECK(fv.error().code == Errc::unknown_format);
}
