// The libgit2 store: hash-only mode gives the ids real writes give.
#include <doctest/doctest.h>

#include <cctype>

#include "fixture.h"
#include "why.h"

using gitlocks::Oid;
using gitlocks::Tree;

TEST_CASE("store: hash-only ids equal written ids for blobs and trees (Git's tree order)") {
  auto a = gitlocks::open_memory_store().value();
  auto b = gitlocks::open_memory_store().value();
  b->set_hash_only(true);
  auto blob_a = a->write_blob("hello\n");
  auto blob_b = b->write_blob("hello\n");
  REQUIRE(blob_a.ok());
  CHECK(blob_a->hex() == "ce013625030ba8dba906f756967f9e9ca394464a");  // git hash-object
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

TEST_CASE("store: object ids are 40 lowercase hex digits - one digit off or one too few or many is refused") {
  auto s = gitlocks::open_memory_store().value();
  auto id = s->write_blob("hello\n");
  REQUIRE(id.ok());
  const std::string hex = "ce013625030ba8dba906f756967f9e9ca394464a";  // git hash-object
  REQUIRE(Oid::from_hex(hex));
  CHECK(*Oid::from_hex(hex) == *id);
  CHECK(id->hex() == hex);
  CHECK(gitlocks::json(*id) == hex);
  CHECK(s->read_blob(*Oid::from_hex(hex)).value() == "hello\n");
  // The 20 bytes, in order: the first and last are 0xce and 0x4a.
  CHECK(id->data()[0] == 0xce);
  CHECK(id->data()[19] == 0x4a);
  // Upper case is not an id: the formats and Git write ids in lower case.
  std::string upper = hex;
  for (auto& ch : upper) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  CHECK_FALSE(Oid::from_hex(upper));
  // The neighbours of each digit range, in every position class.
  for (const char bad : {'/', ':', '@', 'G', '`', 'g', 'A', 'F', ' ', '\0', '\xff'}) {
    for (const std::size_t at : {std::size_t(0), std::size_t(1), std::size_t(39)}) {
      std::string forged = hex;
      forged[at] = bad;
      CHECK_FALSE(Oid::from_hex(forged));
    }
  }
  for (const std::string& wrong : {hex.substr(0, 39), hex + "0", hex.substr(0, 38), std::string()})
    CHECK_FALSE(Oid::from_hex(wrong));
  // The null id names no object: reading it is refused before the store is asked.
  const Oid none;
  CHECK(none.empty());
  CHECK(none.hex().empty());
  CHECK_FALSE(id->empty());
  // The all-zero id is an id (of no object), not the null id: "" and
  // "0000..." are different texts in every document.
  const Oid zero = *Oid::from_hex(std::string(40, '0'));
  CHECK_FALSE(zero.empty());
  CHECK(zero != none);
  CHECK(none < zero);
  CHECK(zero.hex() == std::string(40, '0'));
  CHECK(gitlocks::json(zero) != gitlocks::json(none));
  CHECK(s->read_blob(zero).error().message.rfind("cannot read blob 0000000000000000000000000000000000000000", 0) == 0);
  auto r = s->read_blob(none);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().code == gitlocks::Errc::store_read);
  CHECK(r.error().message == "no object id");
  // A tree naming the null id is refused when hashed, too.
  s->set_hash_only(true);
  CHECK_FALSE(s->write_tree({{"x", false, none}}).ok());
}

TEST_CASE("store: object ids order as their hex does") {
  // Byte order is hex order: every map and set keyed by ids keeps the order
  // it had when ids were hex strings.
  const std::vector<std::string> hexes = {std::string(40, '0').replace(39, 1, "1"),
                                          "09" + std::string(38, 'f'),
                                          "0a" + std::string(38, '0'),
                                          "9f" + std::string(38, '0'),
                                          "a0" + std::string(38, '0'),
                                          std::string(39, 'f') + "e",
                                          std::string(40, 'f')};
  for (std::size_t i = 0; i < hexes.size(); ++i)
    for (std::size_t j = 0; j < hexes.size(); ++j) {
      const Oid a = *Oid::from_hex(hexes[i]), b = *Oid::from_hex(hexes[j]);
      CHECK((a < b) == (hexes[i] < hexes[j]));
      CHECK((a == b) == (i == j));
      CHECK(a.hex() == hexes[i]);
    }
}

#ifndef __EMSCRIPTEN__  // a repository on disk; the WASM binding has no repository stores (StoreOptions)
#include <git2.h>
#include <stdlib.h>  // mkdtemp

#include <filesystem>
#include <fstream>

TEST_CASE("store: a repository store re-opens its object database every N reads and keeps its object dirs") {
  namespace fs = std::filesystem;
  char tmpl[] = "/tmp/gitlocks-reopen-XXXXXX";
  REQUIRE(mkdtemp(tmpl) != nullptr);
  const fs::path root(tmpl);
  git_libgit2_init();
  for (const char* name : {"a", "b", "c", "d"}) {
    git_repository* r = nullptr;
    REQUIRE(git_repository_init(&r, (root / name).c_str(), 1) == 0);
    git_repository_free(r);
  }
  git_libgit2_shutdown();
  auto blob_in = [&](const char* repo, const std::string& data) {
    auto s = gitlocks::open_git_store((root / repo).string()).value();
    return s->write_blob(data).value();
  };
  const auto in_b = blob_in("b", "from b\n");
  const auto in_c = blob_in("c", "from c\n");
  auto reads_after_new_alternate = [&](const char* repo, std::size_t every) {
    gitlocks::StoreOptions options;
    options.reopen_after_reads = every;
    // c's objects come in as an extra directory (as a push's quarantine does).
    auto s = gitlocks::open_git_store((root / repo).string(), {(root / "c" / "objects").string()}, options).value();
    const auto own = s->write_blob("own\n").value();
    CHECK_FALSE(s->has_object(in_b));
    // An alternate added after the store opened is seen only by a new database.
    std::ofstream(root / repo / "objects" / "info" / "alternates") << (root / "b" / "objects").string() << "\n";
    for (int i = 0; i < 10; ++i) {
      CHECK(s->read_blob(in_c).value() == "from c\n");
      CHECK(s->read_blob(own).value() == "own\n");
    }
    const bool sees_b = s->read_blob(in_b).ok();
    auto late = s->write_blob("late\n");  // writes go on into the re-opened database
    REQUIRE(late.ok());
    CHECK(s->read_blob(*late).value() == "late\n");
    return sees_b;
  };
  CHECK(reads_after_new_alternate("a", 3));
  CHECK_FALSE(reads_after_new_alternate("d", 0));  // never re-opened: the control
  std::error_code ec;
  fs::remove_all(root, ec);
}

TEST_CASE("store: repository_common_dir finds the repository around a path as open_git_store does") {
  namespace fs = std::filesystem;
  char tmpl[] = "/tmp/gitlocks-common-XXXXXX";
  REQUIRE(mkdtemp(tmpl) != nullptr);
  const fs::path root(tmpl);
  git_libgit2_init();
  git_repository* r = nullptr;
  REQUIRE(git_repository_init(&r, (root / "work").c_str(), 0) == 0);
  git_repository_free(r);
  git_libgit2_shutdown();
  fs::create_directories(root / "work" / "src" / "deep");
  for (const fs::path& at : {root / "work", root / "work" / "src" / "deep"}) {
    auto dir = gitlocks::repository_common_dir(at.string());
    REQUIRE_MESSAGE(dir.ok(), gitlocks::test::why(dir));
    CHECK(fs::equivalent(*dir, root / "work" / ".git"));
  }
  auto none = gitlocks::repository_common_dir((root / "missing").string());
  REQUIRE_FALSE(none.ok());
  CHECK(none.error().code == gitlocks::Errc::store_read);
  std::error_code ec;
  fs::remove_all(root, ec);
}

TEST_CASE("store: a pack store indexes its pack inside its own temp_dir and removes it when dropped") {
  namespace fs = std::filesystem;
  char tmpl[] = "/tmp/gitlocks-tempdir-XXXXXX";
  REQUIRE(mkdtemp(tmpl) != nullptr);
  const fs::path root(tmpl);
  auto source = gitlocks::open_memory_store().value();
  const auto blob = source->write_blob("packed\n").value();
  // A memory store packs its commits and what they reach.
  const auto tree = source->write_tree({{"packed.txt", false, blob}}).value();
  REQUIRE(source->write_commit({tree, {}, "packed\n", 0}).ok());
  const auto pack = gitlocks::memory_store_pack(*source).value();
  gitlocks::StoreOptions options;
  options.temp_dir = root.string();
  auto opened = gitlocks::open_pack_store(pack, options);
  REQUIRE_MESSAGE(opened.ok(), gitlocks::test::why(opened));
  auto store = std::move(opened).value();
  CHECK(store->read_blob(blob).value() == "packed\n");
  std::vector<std::string> made;
  for (const auto& e : fs::directory_iterator(root)) made.push_back(e.path().filename().string());
  REQUIRE(made.size() == 1);
  CHECK(made[0].rfind("gitlocks-pack-", 0) == 0);
  // The option belongs to that store: one opened without it indexes elsewhere.
  auto other = gitlocks::open_pack_store(pack);
  REQUIRE(other.ok());
  CHECK(std::distance(fs::directory_iterator(root), fs::directory_iterator{}) == 1);
  store.reset();
  CHECK(fs::is_empty(root));
  std::error_code ec;
  fs::remove_all(root, ec);
}
#endif
