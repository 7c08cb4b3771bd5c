// The libgit2 store: hash-only mode gives the ids real writes give.
#include <doctest/doctest.h>

#include <cctype>

#include "fixture.h"

using gitlocks::Tree;

TEST_CASE("store: hash-only ids equal written ids for blobs and trees (Git's tree order)") {
  auto a = std::move(gitlocks::open_memory_store().value());
  auto b = std::move(gitlocks::open_memory_store().value());
  b->set_hash_only(true);
  auto blob_a = a->write_blob("hello\n");
  auto blob_b = b->write_blob("hello\n");
  REQUIRE(blob_a.ok());
  CHECK(*blob_a == "ce013625030ba8dba906f756967f9e9ca394464a");  // git hash-object
  CHECK(*blob_b == *blob_a);
  auto sub = a->write_tree({{"x", false, *blob_a}});
  REQUIRE(sub.ok());
  // "a.b" sorts before "a/" (the tree "a" compares as "a/"), but after "a" as a blob name would.
  Tree t = {{"a", true, *sub}, {"a.b", false, *blob_a}, {"a-", false, *blob_a}, {"Z", false, *blob_a}};
  auto ta = a->write_tree(t);
  auto tb = b->write_tree(t);
  REQUIRE(ta.ok());
  REQUIRE(tb.ok());
  CHECK(*ta == *tb);
  CHECK(b->objects_written() == 0);
  CHECK_FALSE(b->read_blob(*blob_b).ok());  // nothing was stored
}

TEST_CASE("store: a whole planned transition has the same result in hash-only mode") {
  gitlocks::test::Store s;
  REQUIRE(s.claim("alice", "src/deep/a.c", 60'000).ok());
  auto src = s.state();
  auto c = s.claim("bob", "src/other/b.c", 60'000);
  REQUIRE(c.ok());
  s.objects().set_hash_only(true);
  gitlocks::PlanContext ctx{gitlocks::test::actor_hex("bob"), c->packet["instance"].get<std::string>()};
  auto again = gitlocks::plan(s.objects(), src, ctx, c->packet["body"]);
  s.objects().set_hash_only(false);
  REQUIRE(again.ok());
  CHECK(again->result_state == c->outcome.result_state);
}

TEST_CASE("store: object ids are 40 hex digits of either case - one digit off or one too few or many is refused") {
  auto s = std::move(gitlocks::open_memory_store().value());
  auto id = s->write_blob("hello\n");
  REQUIRE(id.ok());
  std::string upper = *id;
  for (auto& ch : upper) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  auto read = s->read_blob(upper);  // git_oid_fromstrn takes upper case too
  REQUIRE(read.ok());
  CHECK(*read == "hello\n");
  // The neighbours of each digit range, in every position class.
  for (const char bad : {'/', ':', '@', 'G', '`', 'g', ' ', '\0', '\xff'}) {
    for (const std::size_t at : {std::size_t(0), std::size_t(1), std::size_t(39)}) {
      std::string forged = *id;
      forged[at] = bad;
      auto r = s->read_blob(forged);
      REQUIRE_FALSE(r.ok());
      CHECK(r.error().code == gitlocks::Errc::store_read);
      CHECK(r.error().message.rfind("invalid object id", 0) == 0);
    }
  }
  for (const std::string& wrong : {id->substr(0, 39), *id + "0", std::string()}) {
    auto r = s->read_blob(wrong);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().message.rfind("invalid object id", 0) == 0);
  }
  // A tree naming a malformed id is refused when hashed, too.
  s->set_hash_only(true);
  CHECK_FALSE(s->write_tree({{"x", false, id->substr(0, 39) + "g"}}).ok());
  CHECK(s->write_tree({{"x", false, upper}}).value() == s->write_tree({{"x", false, *id}}).value());
}
