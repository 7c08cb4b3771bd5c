// Pack stores: a Git bundle or a bare packfile, indexed into a read-only
// object database (what the browser and Node get handed), and write_state.
#include <doctest/doctest.h>

#include <algorithm>

#include "fixture.h"
#include "gitlocks/replay.hpp"
#include "why.h"

using gitlocks::json;
using gitlocks::Oid;
using gitlocks::test::Store;

namespace {

Store small_history() {
  Store s;
  REQUIRE(s.claim("alice", "src/a.c", 5000).ok());
  REQUIRE(s.claim("bob", "docs/", 60'000, "shared").ok());
  s.now += 5001;
  REQUIRE(s.claim("bob", "src/", 60'000).ok());  // reclaims alice's expired lease
  REQUIRE(s.op("carol", {{"op", "sem-acquire"}, {"sem", "ci"}, {"limit", 2}, {"expires_at", s.now + 10'000}}).ok());
  return s;
}

std::string bundle(const std::string& header_lines, const std::string& pack) { return header_lines + "\n" + pack; }

std::vector<std::string> verdict_lines(gitlocks::ObjectStore& store, const Oid& tip) {
  std::vector<std::string> out;
  auto r = gitlocks::replay_chain(store, tip, {}, [&](const gitlocks::Verdict& v) {
    out.push_back(gitlocks::canon_dump(gitlocks::verdict_json(v)).value());
  });
  REQUIRE_MESSAGE(r.ok(), gitlocks::test::why(r));
  return out;
}

}  // namespace

TEST_CASE("pack store: a v2 bundle replays to the same verdicts as the store it was made from") {
  Store s = small_history();
  Oid tip = *s.tip();
  auto pack = gitlocks::memory_store_pack(s.objects());
  REQUIRE(pack.ok());
  auto ps = gitlocks::open_pack_store(bundle("# v2 git bundle\n" + tip + " refs/locks/state\n", *pack));
  REQUIRE_MESSAGE(ps.ok(), gitlocks::test::why(ps));
  auto ref = (*ps)->read_ref("refs/locks/state");
  REQUIRE(ref.ok());
  REQUIRE(ref->has_value());
  CHECK(**ref == tip);
  CHECK_FALSE((*ps)->read_ref("refs/heads/main")->has_value());
  auto want = verdict_lines(s.objects(), tip);
  CHECK(want.size() == 5);
  CHECK(verdict_lines(**ps, tip) == want);
  // Writes land in the in-memory overlay and read back.
  auto blob = (*ps)->write_blob("overlay\n");
  REQUIRE(blob.ok());
  CHECK((*ps)->read_blob(*blob).value() == "overlay\n");
}

TEST_CASE("pack store: v3 bundles with sha1 - and bare packfiles without refs") {
  Store s = small_history();
  Oid tip = *s.tip();
  std::string pack = gitlocks::memory_store_pack(s.objects()).value();
  auto v3 =
      gitlocks::open_pack_store(bundle("# v3 git bundle\n@object-format=sha1\n" + tip + " refs/locks/state\n", pack));
  REQUIRE_MESSAGE(v3.ok(), gitlocks::test::why(v3));
  CHECK((*v3)->read_ref("refs/locks/state").value() == std::optional<Oid>(tip));

  auto bare = gitlocks::open_pack_store(pack);
  REQUIRE_MESSAGE(bare.ok(), gitlocks::test::why(bare));
  CHECK_FALSE((*bare)->read_ref("refs/locks/state").value().has_value());
  CHECK((*bare)->read_commit(tip).ok());
  CHECK(verdict_lines(**bare, tip) == verdict_lines(s.objects(), tip));
}

TEST_CASE("pack store: unknown formats and damaged input are refused with named errors") {
  Store s = small_history();
  Oid tip = *s.tip();
  std::string pack = gitlocks::memory_store_pack(s.objects()).value();
  auto code = [](std::string_view bytes) {
    auto r = gitlocks::open_pack_store(bytes);
    return r.ok() ? std::string("ok") : std::string(gitlocks::errc_name(r.error().code));
  };
  CHECK(code("") == "unknown-format");
  CHECK(code("hello world") == "unknown-format");
  CHECK(code(bundle("# v4 git bundle\n" + tip + " refs/locks/state\n", pack)) == "unknown-format");
  CHECK(code(bundle("# v3 git bundle\n@object-format=sha256\n" + tip + " refs/locks/state\n", pack)) ==
        "unknown-format");
  CHECK(code(bundle("# v3 git bundle\n@filter=blob:none\n" + tip + " refs/locks/state\n", pack)) == "unknown-format");
  CHECK(code(bundle("# v2 git bundle\n-" + tip + " base\n" + tip + " refs/locks/state\n", pack)) == "store-read");
  CHECK(code(bundle("# v2 git bundle\nnot-an-oid refs/locks/state\n", pack)) == "store-read");
  CHECK(code("# v2 git bundle\n" + tip + " refs/locks/state\n") == "store-read");  // no empty line
  CHECK(code(bundle("# v2 git bundle\n" + tip + " refs/locks/state\n", "")) == "store-read");
  CHECK(code(pack.substr(0, pack.size() / 2)) == "store-read");
  std::string flipped = pack;
  flipped[flipped.size() - 1] = static_cast<char>(flipped[flipped.size() - 1] ^ 1);  // trailer checksum
  CHECK(code(flipped) == "store-read");
}

TEST_CASE("write_state: policy and records rebuild the planner's tree byte for byte") {
  Store s = small_history();
  Oid state = s.state();
  gitlocks::StateReader reader(s.objects(), state);
  json policy = reader.policy().value();
  std::vector<json> records;
  REQUIRE(reader
              .for_each_record([&](const json& r) {
                records.push_back(r);
                return true;
              })
              .ok());
  REQUIRE(records.size() >= 4);
  std::reverse(records.begin(), records.end());  // order does not matter
  auto fresh = gitlocks::open_memory_store().value();
  auto rebuilt = gitlocks::write_state(*fresh, policy, records);
  REQUIRE_MESSAGE(rebuilt.ok(), gitlocks::test::why(rebuilt));
  CHECK(*rebuilt == state);

  auto dup = records;
  dup.push_back(records.front());
  CHECK(gitlocks::write_state(*fresh, policy, dup).error().code == gitlocks::Errc::bad_json);
  auto empty = records;
  empty.push_back(json{
      {"kind", "path"}, {"name", "nothing"}, {"generation", 0}, {"leases", json::array()}, {"below", json::object()}});
  CHECK(gitlocks::write_state(*fresh, policy, empty).error().code == gitlocks::Errc::bad_json);
  auto bad = records;
  bad.push_back(json{{"kind", "path"}});
  CHECK(gitlocks::write_state(*fresh, policy, bad).error().code == gitlocks::Errc::bad_json);
  CHECK_FALSE(gitlocks::write_state(*fresh, json{{"format", "nope"}}, records).ok());
}

TEST_CASE("pack store builder: a bundle given in pieces split anywhere opens as the whole bundle") {
  Store s = small_history();
  Oid tip = *s.tip();
  std::string pack = gitlocks::memory_store_pack(s.objects()).value();
  const std::string whole = bundle("# v2 git bundle\n" + tip + " refs/locks/state\n", pack);
  const auto want = verdict_lines(s.objects(), tip);
  // One byte at a time, then pieces of 7, 4096 and 1 MiB + 1 bytes.
  for (std::size_t piece : {std::size_t(1), std::size_t(7), std::size_t(4096), (std::size_t(1) << 20) + 1}) {
    CAPTURE(piece);
    gitlocks::PackStoreBuilder b;
    for (std::size_t at = 0; at < whole.size(); at += piece) {
      auto st = b.append(std::string_view(whole).substr(at, piece));
      REQUIRE_MESSAGE(st.ok(), gitlocks::test::why(st));
    }
    CHECK(b.pack_bytes() == pack.size());
    auto ps = b.finish();
    REQUIRE_MESSAGE(ps.ok(), gitlocks::test::why(ps));
    CHECK((*ps)->read_ref("refs/locks/state").value() == std::optional<Oid>(tip));
    CHECK(verdict_lines(**ps, tip) == want);
    // The builder is spent.
    auto again = b.append("x");
    REQUIRE_FALSE(again.ok());
    CHECK(again.error().code == gitlocks::Errc::store_read);
  }
  // A bare packfile in two pieces split inside its "PACK" signature.
  gitlocks::PackStoreBuilder bare;
  REQUIRE(bare.append(std::string_view(pack).substr(0, 2)).ok());
  REQUIRE(bare.append(std::string_view(pack).substr(2)).ok());
  auto ps = bare.finish();
  REQUIRE_MESSAGE(ps.ok(), gitlocks::test::why(ps));
  CHECK(verdict_lines(**ps, tip) == want);
}

TEST_CASE("pack store builder: errors as soon as the bytes show them and the same codes as the whole input") {
  Store s = small_history();
  Oid tip = *s.tip();
  std::string pack = gitlocks::memory_store_pack(s.objects()).value();
  // A wrong signature is refused at the 16th byte, not at the end.
  {
    gitlocks::PackStoreBuilder b;
    CHECK(b.append("# v4 git bundle").ok());  // 15 bytes: not yet decidable
    auto st = b.append("\n");
    REQUIRE_FALSE(st.ok());
    CHECK(st.error().code == gitlocks::Errc::unknown_format);
    auto r = b.finish();
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code == gitlocks::Errc::store_read);
  }
  // A header with prerequisites is refused when its empty line arrives.
  {
    gitlocks::PackStoreBuilder b;
    auto st = b.append("# v2 git bundle\n-" + tip + " base\n" + tip + " refs/locks/state\n\nPACK");
    REQUIRE_FALSE(st.ok());
    CHECK(st.error().code == gitlocks::Errc::store_read);
  }
  // A damaged object is refused when it is appended (an object header of
  // type 0 right after the pack header), before the rest of the pack.
  {
    std::string bad = pack.substr(0, 12) + std::string(64, '\0');
    gitlocks::PackStoreBuilder b;
    REQUIRE(b.append("# v2 git bundle\n" + tip + " refs/locks/state\n\n").ok());
    auto st = b.append(bad);
    REQUIRE_FALSE(st.ok());
    CHECK(st.error().code == gitlocks::Errc::store_read);
  }
  // Nothing but a header: finish names what is missing.
  {
    gitlocks::PackStoreBuilder b;
    REQUIRE(b.append("# v2 git bundle\n" + tip + " refs/locks/state\n").ok());
    auto r = b.finish();
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code == gitlocks::Errc::store_read);
    CHECK(r.error().message == "truncated bundle header");
  }
  // A truncated pack: finish fails, store-read.
  {
    gitlocks::PackStoreBuilder b;
    REQUIRE(b.append(pack.substr(0, pack.size() / 2)).ok());
    auto r = b.finish();
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code == gitlocks::Errc::store_read);
  }
}
