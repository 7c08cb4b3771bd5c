// The waiters' queue (docs/FORMAT.md "Tickets"): a ticket holds a waiter's
// place; a claim that overlaps an older live ticket of another holder is
// refused (held-path, reason queued-behind) unless that ticket's holder is
// blocked by one it queued behind; a ticket that closes a cycle is refused
// (deadlock). Expected values come from each case's own steps: a ticket's
// seq is the count of tickets taken, its "behind" the keys of the holders
// the case put in its way.
#include <doctest/doctest.h>

#include <algorithm>

#include "fixture.h"
#include "gitlocks/ops.hpp"
#include "gitlocks/plan.hpp"
#include "gitlocks/query.hpp"
#include "gitlocks/replay.hpp"
#include "gitlocks/state.hpp"
#include "why.h"

using gitlocks::Errc;
using gitlocks::json;
using gitlocks::ops::Mode;
using gitlocks::ops::Target;
using gitlocks::test::actor_hex;
using gitlocks::test::invalid_commits;
using gitlocks::test::Store;

namespace {

constexpr std::int64_t kTicketTtl = 30'000;

gitlocks::Result<gitlocks::Candidate> take_ticket(Store& s, const std::string& who, const json& wants,
                                                  std::int64_t ttl = kTicketTtl) {
  return s.op(who, gitlocks::ops::ticket(wants, s.now + ttl));
}

json queue_tickets(Store& s) {
  auto q = s.record("queue:tickets");
  return q ? (*q)["tickets"] : json::array();
}

std::string ticket_id(Store& s, const std::string& holder) {
  for (const auto& t : queue_tickets(s))
    if (t["holder"] == actor_hex(holder)) return t["id"].get<std::string>();
  return "";
}

std::vector<std::string> sorted_keys(std::vector<std::string> names) {
  std::vector<std::string> out;
  for (const auto& n : names) out.push_back(actor_hex(n));
  std::sort(out.begin(), out.end());
  return out;
}

// The claim's body as it was admitted, replayed on its source state: the
// planner's verdict on a recorded body.
gitlocks::Result<gitlocks::PlanOutcome> replay_on(Store& s, const gitlocks::Oid& source, const std::string& actor,
                                                  const json& body) {
  gitlocks::PlanContext ctx;
  ctx.actor = actor_hex(actor);
  ctx.instance = std::string(64, 'c');
  return gitlocks::plan(s.objects(), source, ctx, body);
}

}  // namespace

TEST_CASE("ticket: a waiter's place in the queue names the holders in its way") {
  Store s;
  REQUIRE(s.claim("alice", "src/x.c", 600'000).ok());
  const auto source = s.snapshot().state;
  auto t = take_ticket(s, "bob", json::array({gitlocks::ops::want_path("src/x.c", Mode::exclusive)}));
  REQUIRE_MESSAGE(t.ok(), gitlocks::test::why(t));
  CHECK(std::string(gitlocks::action_name(t->outcome.action)) == "ticket");
  const json tickets = queue_tickets(s);
  REQUIRE(tickets.size() == 1);
  CHECK(tickets[0]["seq"] == 1);
  CHECK(tickets[0]["holder"] == actor_hex("bob"));
  CHECK(tickets[0]["expires_at"] == s.now + kTicketTtl);
  CHECK(tickets[0]["behind"] == json(sorted_keys({"alice"})));
  // The signed op says the same: the planner filled in "behind".
  CHECK(t->outcome.body["ops"][0]["behind"] == json(sorted_keys({"alice"})));
  // Replayed, "behind" must be exactly the holders in the ticket's way.
  REQUIRE(replay_on(s, source, "bob", t->outcome.body).ok());
  for (const json& forged : {json::array(), json(sorted_keys({"alice", "carol"})), json(sorted_keys({"carol"}))}) {
    json body = t->outcome.body;
    body["ops"][0]["behind"] = forged;
    auto r = replay_on(s, source, "bob", body);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code == Errc::stale_generation);
    CHECK(r.error().sub == "behind-mismatch");
  }
  // A second ticket comes after it.
  REQUIRE(take_ticket(s, "carol", json::array({gitlocks::ops::want_path("src/", Mode::shared)})).ok());
  CHECK(queue_tickets(s)[1]["seq"] == 2);
  CHECK(queue_tickets(s)[1]["behind"] == json(sorted_keys({"alice"})));
  CHECK(invalid_commits(s) == 0);
}

TEST_CASE("ticket: a claim behind an older live ticket of another holder is refused queued-behind") {
  Store s;
  REQUIRE(s.claim("alice", "src/x.c", 600'000).ok());
  REQUIRE(take_ticket(s, "bob", json::array({gitlocks::ops::want_path("src/x.c", Mode::exclusive)})).ok());
  const std::string bobs = ticket_id(s, "bob");
  const std::string alice_lease = s.lease_of("alice", "path:src/x.c")["id"].get<std::string>();
  REQUIRE(s.op("alice", gitlocks::ops::release(Target::path("src/x.c"), alice_lease)).ok());
  const auto tip = s.tip();
  // The path is free, but bob waits for it: carol (and alice again) queue behind.
  for (const std::string who : {"carol", "alice"}) {
    CAPTURE(who);
    auto c = s.claim(who, "src/x.c", 600'000);
    REQUIRE_FALSE(c.ok());
    CHECK(c.error().code == Errc::held_path);
    CHECK(c.error().sub == "queued-behind");
    CHECK(c.error().fields.at("ticket") == bobs);
    CHECK(c.error().fields.at("ticket_seq") == 1);
    CHECK(c.error().fields.at("holder") == actor_hex("bob"));
    CHECK(c.error().fields.at("expires_at_ms") == s.now + kTicketTtl);
  }
  // A directory above it overlaps too; a path beside it does not.
  auto dir = s.claim("carol", "src/", 600'000);
  REQUIRE_FALSE(dir.ok());
  CHECK(dir.error().sub == "queued-behind");
  CHECK(s.tip() == tip);
  REQUIRE(s.claim("carol", "src/y.c", 600'000).ok());
  // Bob is admitted and drops his ticket in the same transition: a claim.
  auto bob = s.submit("bob", "claim",
                      json{{"ops", json::array({gitlocks::ops::claim("src/x.c", Mode::exclusive, s.now + 600'000),
                                                gitlocks::ops::ticket_drop(bobs)})}});
  REQUIRE_MESSAGE(bob.ok(), gitlocks::test::why(bob));
  CHECK(std::string(gitlocks::action_name(bob->outcome.action)) == "claim");
  CHECK(queue_tickets(s).empty());
  CHECK(invalid_commits(s) == 0);
  // The timeline: bob's ticket from the commit that took it (2: init,
  // alice's claim, then it) to his admission (5: after alice's release and
  // carol's claim of src/y.c).
  auto t = gitlocks::lease_timeline(s.objects(), *s.tip(), {});
  REQUIRE(t.ok());
  REQUIRE(t->tickets.size() == 1);
  CHECK(t->tickets[0].id == bobs);
  CHECK(t->tickets[0].seq == 1);
  CHECK(t->tickets[0].name == "bob");
  CHECK(t->tickets[0].start_commit == 2);
  CHECK(t->tickets[0].end_commit == std::optional<std::size_t>(5));
  CHECK(t->tickets[0].end_kind == std::optional<std::string>("admitted"));
  CHECK(t->tickets[0].wants == json::array({{{"path", "src/x.c"}, {"mode", "exclusive"}}}));
}

TEST_CASE("ticket: a younger ticket of another holder does not hold back the older one") {
  Store s;
  REQUIRE(s.claim("alice", "x.c", 600'000).ok());
  REQUIRE(take_ticket(s, "bob", json::array({gitlocks::ops::want_path("x.c", Mode::exclusive)})).ok());
  REQUIRE(take_ticket(s, "carol", json::array({gitlocks::ops::want_path("x.c", Mode::exclusive)})).ok());
  const std::string alice_lease = s.lease_of("alice", "path:x.c")["id"].get<std::string>();
  REQUIRE(s.op("alice", gitlocks::ops::release(Target::path("x.c"), alice_lease)).ok());
  // Carol (ticket #2) queues behind bob (#1); bob is admitted past carol's.
  auto carol = s.claim("carol", "x.c", 600'000);
  REQUIRE_FALSE(carol.ok());
  CHECK(carol.error().fields.at("ticket_seq") == 1);
  auto bob = s.claim("bob", "x.c", 600'000);
  REQUIRE_MESSAGE(bob.ok(), gitlocks::test::why(bob));
  CHECK(invalid_commits(s) == 0);
}

TEST_CASE("ticket: a lapsed ticket no longer counts - at its expiry it still does") {
  Store s;
  REQUIRE(take_ticket(s, "bob", json::array({gitlocks::ops::want_path("a.c", Mode::exclusive)})).ok());
  const std::int64_t lapses = s.now + kTicketTtl;
  s.now = lapses;  // still live at its expiry
  auto at = s.claim("carol", "a.c", 600'000);
  REQUIRE_FALSE(at.ok());
  CHECK(at.error().sub == "queued-behind");
  s.now = lapses + 1;
  auto after = s.claim("carol", "a.c", 600'000);
  REQUIRE_MESSAGE(after.ok(), gitlocks::test::why(after));
  // Admitted after the ticket lapsed: the body declares it, with a guard.
  CHECK(after->outcome.body["ops"][0]["after"] == lapses);
  CHECK(after->outcome.interval.lo > lapses);
  CHECK(invalid_commits(s) == 0);
}

TEST_CASE("ticket: a holder blocked by one it queued behind lets others pass - until that one lets go") {
  Store s;
  REQUIRE(s.claim("alice", "y.c", 600'000).ok());
  const std::int64_t alice_until = s.now + 600'000;
  // Bob waits for x.c and y.c together; alice's y.c is in his way.
  REQUIRE(take_ticket(s, "bob",
                      json::array({gitlocks::ops::want_path("x.c", Mode::exclusive),
                                   gitlocks::ops::want_path("y.c", Mode::exclusive)}))
              .ok());
  const std::string bobs = ticket_id(s, "bob");
  const auto before_carol = *s.tip();
  const auto source = s.snapshot().state;
  // Carol takes x.c: bob could not be admitted either way while alice holds y.c.
  // (Her TTL outlasts alice's lease: the pass, not the TTL, bounds T.)
  auto carol = s.claim("carol", "x.c", 900'000);
  REQUIRE_MESSAGE(carol.ok(), gitlocks::test::why(carol));
  const json& op = carol->outcome.body["ops"][0];
  REQUIRE(op.contains("passes"));
  CHECK(op["passes"] == json::array({{{"ticket", bobs}, {"until", alice_until}}}));
  CHECK(carol->outcome.interval.hi == alice_until);
  CHECK(invalid_commits(s) == 0);
  (void)before_carol;

  // The recorded claim replays; without its pass, or with another bound, it does not.
  json body = carol->outcome.body;
  REQUIRE(replay_on(s, source, "carol", body).ok());
  json no_pass = body;
  no_pass["ops"][0].erase("passes");
  auto r1 = replay_on(s, source, "carol", no_pass);
  REQUIRE_FALSE(r1.ok());
  CHECK(r1.error().code == Errc::held_path);
  CHECK(r1.error().sub == "queued-behind");
  json moved = body;
  moved["ops"][0]["passes"][0]["until"] = alice_until + 1;
  auto r2 = replay_on(s, source, "carol", moved);
  REQUIRE_FALSE(r2.ok());
  CHECK(r2.error().code == Errc::stale_generation);
  CHECK(r2.error().sub == "passes-mismatch");
  json other = body;
  other["ops"][0]["passes"][0]["ticket"] = std::string(bobs.size(), 'e');
  auto r3 = replay_on(s, source, "carol", other);
  REQUIRE_FALSE(r3.ok());
  CHECK(r3.error().sub == "passes-mismatch");

  // Alice lets go of y.c: bob is now blocked only by carol, admitted after
  // his ticket: dave may not take y.c before him.
  const std::string alice_lease = s.lease_of("alice", "path:y.c")["id"].get<std::string>();
  REQUIRE(s.op("alice", gitlocks::ops::release(Target::path("y.c"), alice_lease)).ok());
  auto dave = s.claim("dave", "y.c", 60'000);
  REQUIRE_FALSE(dave.ok());
  CHECK(dave.error().sub == "queued-behind");
  CHECK(dave.error().fields.at("ticket") == bobs);
  // Nor alice again.
  auto again = s.claim("alice", "y.c", 60'000);
  REQUIRE_FALSE(again.ok());
  CHECK(again.error().sub == "queued-behind");
}

TEST_CASE("ticket: a pass is bounded by the blocking lease - after it lapses the claim queues") {
  Store s;
  REQUIRE(s.claim("alice", "y.c", 60'000).ok());
  const std::int64_t alice_until = s.now + 60'000;
  REQUIRE(take_ticket(s, "bob",
                      json::array({gitlocks::ops::want_path("x.c", Mode::exclusive),
                                   gitlocks::ops::want_path("y.c", Mode::exclusive)}),
                      120'000)
              .ok());
  s.now = alice_until;  // alice's lease is live at its expiry: carol passes
  REQUIRE(s.claim("carol", "x.c", 60'000).ok());
  const std::string carols = s.lease_of("carol", "path:x.c")["id"].get<std::string>();
  REQUIRE(s.op("carol", gitlocks::ops::release(Target::path("x.c"), carols)).ok());
  s.now = alice_until + 1;  // lapsed: bob could be admitted, carol queues
  auto late = s.claim("carol", "x.c", 60'000);
  REQUIRE_FALSE(late.ok());
  CHECK(late.error().sub == "queued-behind");
}

TEST_CASE("ticket: a ticket that would close a cycle is refused deadlock naming both holders") {
  Store s;
  REQUIRE(s.claim("alice", "a.c", 600'000).ok());
  REQUIRE(s.claim("bob", "b.c", 600'000).ok());
  // Alice waits for b.c (bob holds it).
  REQUIRE(take_ticket(s, "alice", json::array({gitlocks::ops::want_path("b.c", Mode::exclusive)})).ok());
  const auto tip = s.tip();
  // Bob waiting for a.c would wait for alice, who waits for him.
  auto r = take_ticket(s, "bob", json::array({gitlocks::ops::want_path("a.c", Mode::exclusive)}));
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == Errc::deadlock);
  CHECK(r.error().fields.at("cycle") == actor_hex("bob") + "," + actor_hex("alice"));
  CHECK(r.error().fields.at("cycle_length") == 2);
  CHECK(r.error().message.find("bob (" + actor_hex("bob").substr(0, 12) + ") waits for alice (" +
                               actor_hex("alice").substr(0, 12) + ")") != std::string::npos);
  CHECK(s.tip() == tip);
  // Carol waiting for a.c closes no cycle.
  REQUIRE(take_ticket(s, "carol", json::array({gitlocks::ops::want_path("a.c", Mode::exclusive)})).ok());
  // A longer one: carol holds c.c; bob waiting for c.c is fine (carol waits
  // for alice, alice for bob ... and bob for carol closes it).
  REQUIRE(s.claim("carol", "c.c", 600'000).ok());
  auto three = take_ticket(s, "bob", json::array({gitlocks::ops::want_path("c.c", Mode::exclusive)}));
  REQUIRE_FALSE(three.ok());
  CHECK(three.error().code == Errc::deadlock);
  CHECK(three.error().fields.at("cycle_length") == 3);
}

TEST_CASE("ticket: renew and drop are the holder's - a lapsed ticket anyone may drop") {
  Store s;
  REQUIRE(take_ticket(s, "bob", json::array({gitlocks::ops::want_sem("ci")})).ok());
  const std::string bobs = ticket_id(s, "bob");
  auto renew = s.op("bob", gitlocks::ops::ticket_renew(bobs, s.now + 60'000));
  REQUIRE_MESSAGE(renew.ok(), gitlocks::test::why(renew));
  CHECK(std::string(gitlocks::action_name(renew->outcome.action)) == "ticket-renew");
  CHECK(queue_tickets(s)[0]["expires_at"] == s.now + 60'000);
  auto theirs = s.op("carol", gitlocks::ops::ticket_renew(bobs, s.now + 90'000));
  REQUIRE_FALSE(theirs.ok());
  CHECK(theirs.error().code == Errc::not_holder);
  auto live = s.op("carol", gitlocks::ops::ticket_drop(bobs));
  REQUIRE_FALSE(live.ok());
  CHECK(live.error().code == Errc::held_path);
  CHECK(live.error().sub == "not-expired");
  s.now += 60'001;
  auto lapsed_renew = s.op("bob", gitlocks::ops::ticket_renew(bobs, s.now + 60'000));
  REQUIRE_FALSE(lapsed_renew.ok());
  CHECK(lapsed_renew.error().code == Errc::guard_window);
  auto swept = s.op("carol", gitlocks::ops::ticket_drop(bobs));
  REQUIRE_MESSAGE(swept.ok(), gitlocks::test::why(swept));
  CHECK(swept->outcome.body["ops"][0]["expires_at"] == s.now - 1);
  CHECK(swept->outcome.interval.lo == s.now);  // guarded: T > its expiry
  CHECK(queue_tickets(s).empty());
  auto t = gitlocks::lease_timeline(s.objects(), *s.tip(), {});
  REQUIRE(t.ok());
  REQUIRE(t->tickets.size() == 1);
  CHECK(t->tickets[0].end_kind == std::optional<std::string>("lapsed"));
  CHECK(t->tickets[0].expires_at == s.now - 1);  // the renewal moved it
  auto gone = s.op("bob", gitlocks::ops::ticket_drop(bobs));
  REQUIRE_FALSE(gone.ok());
  CHECK(gone.error().code == Errc::not_holder);
  CHECK(gone.error().sub == "no-ticket");
  CHECK(invalid_commits(s) == 0);
}

TEST_CASE("ticket: a semaphore's free slots go to the tickets queued first") {
  Store s;
  REQUIRE(s.op("alice", gitlocks::ops::sem_acquire("ci", 2, s.now + 600'000)).ok());
  REQUIRE(take_ticket(s, "bob", json::array({gitlocks::ops::want_sem("ci")})).ok());
  const std::string bobs = ticket_id(s, "bob");
  // One slot free, one waiter before carol.
  auto carol = s.op("carol", gitlocks::ops::sem_acquire("ci", 2, s.now + 600'000));
  REQUIRE_FALSE(carol.ok());
  CHECK(carol.error().code == Errc::full_semaphore);
  CHECK(carol.error().sub == "queued-behind");
  CHECK(carol.error().fields.at("ticket") == bobs);
  auto bob = s.submit("bob", "sem-acquire",
                      json{{"ops", json::array({gitlocks::ops::sem_acquire("ci", 2, s.now + 600'000),
                                                gitlocks::ops::ticket_drop(bobs)})}});
  REQUIRE_MESSAGE(bob.ok(), gitlocks::test::why(bob));
  CHECK(std::string(gitlocks::action_name(bob->outcome.action)) == "sem-acquire");
  CHECK(invalid_commits(s) == 0);
}

TEST_CASE("ticket: an intent never waits and a hand-off passes the queue") {
  Store s;
  REQUIRE(s.claim("alice", "x.c", 600'000).ok());
  REQUIRE(take_ticket(s, "bob", json::array({gitlocks::ops::want_path("x.c", Mode::exclusive)})).ok());
  REQUIRE(s.claim("carol", "x.c", 600'000, "intent").ok());
  auto intent_ticket = take_ticket(s, "dave", json::array({{{"path", "x.c"}, {"mode", "intent"}}}));
  REQUIRE_FALSE(intent_ticket.ok());
  CHECK(intent_ticket.error().code == Errc::usage);
  const std::string alice_lease = s.lease_of("alice", "path:x.c")["id"].get<std::string>();
  auto h = s.op("alice",
                gitlocks::ops::handoff(Target::path("x.c"), alice_lease, actor_hex("dave"), "dave", s.now + 300'000));
  REQUIRE_MESSAGE(h.ok(), gitlocks::test::why(h));
  CHECK(invalid_commits(s) == 0);
}

TEST_CASE("ticket: the claims rule's check-only plans ask who holds - not who waits") {
  Store s;
  REQUIRE(s.claim("alice", "x.c", 600'000).ok());
  REQUIRE(take_ticket(s, "bob", json::array({gitlocks::ops::want_path("x.c", Mode::exclusive)})).ok());
  const std::string alice_lease = s.lease_of("alice", "path:x.c")["id"].get<std::string>();
  REQUIRE(s.op("alice", gitlocks::ops::release(Target::path("x.c"), alice_lease)).ok());
  gitlocks::PlanContext ctx;
  ctx.actor = actor_hex("carol");
  ctx.instance = std::string(64, 'c');
  const json body = {{"created_at", s.now},
                     {"name", "carol"},
                     {"ops", json::array({gitlocks::ops::claim("x.c", Mode::shared, s.now + 1'000)})}};
  // x.c is free; bob only waits for it: a commit changing it holds nobody's path.
  ctx.check_only = true;
  auto check = gitlocks::plan(s.objects(), s.snapshot().state, ctx, body, s.now);
  CHECK_MESSAGE(check.ok(), (check.ok() ? "" : check.error().message));
  // A claim of it, though, queues behind bob.
  ctx.check_only = false;
  auto claim = gitlocks::plan(s.objects(), s.snapshot().state, ctx, body, s.now);
  REQUIRE_FALSE(claim.ok());
  CHECK(claim.error().sub == "queued-behind");
}

TEST_CASE("ticket: a shared waiter keeps its place before a younger exclusive one") {
  Store s;
  REQUIRE(s.claim("bob", "f", 600'000).ok());
  REQUIRE(take_ticket(s, "alice", json::array({gitlocks::ops::want_path("f", Mode::shared)})).ok());
  REQUIRE(take_ticket(s, "carol", json::array({gitlocks::ops::want_path("f", Mode::exclusive)})).ok());
  const std::string bob_lease = s.lease_of("bob", "path:f")["id"].get<std::string>();
  REQUIRE(s.op("bob", gitlocks::ops::release(Target::path("f"), bob_lease)).ok());
  auto carol = s.claim("carol", "f", 600'000);
  REQUIRE_FALSE(carol.ok());
  CHECK(carol.error().sub == "queued-behind");
  CHECK(carol.error().fields.at("ticket_seq") == 1);
  // Alice's shared claim is not held back by carol's younger exclusive ticket.
  auto alice = s.claim("alice", "f", 600'000, "shared");
  REQUIRE_MESSAGE(alice.ok(), gitlocks::test::why(alice));
  CHECK(invalid_commits(s) == 0);
}

TEST_CASE("ticket: an intent declares no passes") {
  Store s;
  json op = gitlocks::ops::claim("x.c", Mode::intent, s.now + 600'000);
  op["passes"] = json::array({{{"ticket", std::string(24, 'a')}, {"until", s.now}}});
  const auto tip = s.tip();
  auto r = s.op("alice", op);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == Errc::bad_json);
  CHECK(s.tip() == tip);
}
