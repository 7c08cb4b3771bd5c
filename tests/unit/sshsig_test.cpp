// Runs tests/vectors/sshsig/cases.json: SSH signatures and signed commits
// made by the real ssh-keygen and Git (gen.sh), and hand-made edits of
// them, natively and in WASM. The test decodes and re-encodes signatures
// with libsodium's base64 codec, not the core's, and takes expected keys
// from ssh-keygen's .pub files by hand.
#include "gitlocks/sshsig.hpp"

#include <doctest/doctest.h>
#include <sodium.h>

#include <random>
#include <string>
#include <vector>

#include "gitlocks/canon.hpp"
#include "gitlocks/crypto.hpp"
#include "gitlocks/store.hpp"
#include "vectors.h"
#include "why.h"

using gitlocks::json;

namespace {

constexpr std::string_view kBegin = "-----BEGIN SSH SIGNATURE-----\n";
constexpr std::string_view kEnd = "-----END SSH SIGNATURE-----\n";

std::string file(const std::string& name) {
  return gitlocks::test::read_bytes(gitlocks::test::vectors_dir() / "sshsig" / name);
}

const json& corpus() {
  static const json doc = [] {
    auto d = gitlocks::canon_parse(file("cases.json"), gitlocks::CanonMode::lenient);
    REQUIRE_MESSAGE(d.ok(), gitlocks::test::why(d));
    REQUIRE((*d)["kind"] == "sshsig");
    return *d;
  }();
  return doc;
}

std::string from_base64(std::string_view b64) {
  std::string out(b64.size(), '\0');
  std::size_t len = 0;
  const char* end = nullptr;
  REQUIRE(sodium_base642bin(reinterpret_cast<unsigned char*>(out.data()), out.size(), b64.data(), b64.size(), " \t\r\n",
                            &len, &end, sodium_base64_VARIANT_ORIGINAL) == 0);
  REQUIRE(end == b64.data() + b64.size());
  out.resize(len);
  return out;
}

std::string to_base64(std::string_view bin) {
  std::string out(sodium_base64_ENCODED_LEN(bin.size(), sodium_base64_VARIANT_ORIGINAL), '\0');
  sodium_bin2base64(out.data(), out.size(), reinterpret_cast<const unsigned char*>(bin.data()), bin.size(),
                    sodium_base64_VARIANT_ORIGINAL);
  out.resize(out.size() - 1);  // the terminating NUL
  return out;
}

std::string from_hex(std::string_view hex) {
  std::string out(hex.size() / 2, '\0');
  std::size_t len = 0;
  REQUIRE(sodium_hex2bin(reinterpret_cast<unsigned char*>(out.data()), out.size(), hex.data(), hex.size(), nullptr,
                         &len, nullptr) == 0);
  REQUIRE(len == out.size());
  return out;
}

// The blob of an armored signature (ssh-keygen's layout: header, lines, footer).
std::string dearmor(const std::string& armored) {
  REQUIRE(armored.rfind(kBegin, 0) == 0);
  const std::size_t end = armored.find(kEnd);
  REQUIRE(end != std::string::npos);
  return from_base64(std::string_view(armored).substr(kBegin.size(), end - kBegin.size()));
}

std::string armor(std::string_view blob, std::size_t width = 70) {
  const std::string b64 = to_base64(blob);
  std::string out(kBegin);
  for (std::size_t i = 0; i < b64.size(); i += width) out += b64.substr(i, width) + "\n";
  return out + std::string(kEnd);
}

// A key of the corpus from ssh-keygen's .pub file: the last 32 bytes of the
// blob "string ssh-ed25519 | string key".
gitlocks::PublicKey key(const std::string& name) {
  const std::string line = file(corpus()["keys"][name]["public"].get<std::string>());
  const std::size_t sp = line.find(' ');
  const std::string blob = from_base64(line.substr(sp + 1, line.find(' ', sp + 1) - sp - 1));
  REQUIRE(blob.size() == 51);
  gitlocks::PublicKey pk{};
  std::copy(blob.end() - 32, blob.end(), pk.begin());
  return pk;
}

gitlocks::KeyPair key_pair(const std::string& name) {
  std::string seed_hex = file(corpus()["keys"][name]["seed"].get<std::string>());
  seed_hex.resize(64);
  std::array<std::uint8_t, gitlocks::kSeedBytes> seed{};
  const std::string seed_bin = from_hex(seed_hex);
  std::copy(seed_bin.begin(), seed_bin.end(), seed.begin());
  return gitlocks::keypair_from_seed(seed);
}

std::string replace(std::string s, const json& from_to, bool all) {
  const std::string from = from_to[0].get<std::string>(), to = from_to[1].get<std::string>();
  std::size_t at = s.find(from);
  REQUIRE_MESSAGE(at != std::string::npos, "'" << from << "' not found");
  while (at != std::string::npos) {
    s.replace(at, from.size(), to);
    at = all ? s.find(from, at + to.size()) : std::string::npos;
  }
  return s;
}

std::size_t offset(const json& v) { return v.get<std::size_t>(); }

void edit_blob(std::string& blob, const json& op) {
  if (op.contains("truncate")) {
    blob.resize(offset(op["truncate"]));
  } else if (op.contains("append_hex")) {
    blob += from_hex(op["append_hex"].get<std::string>());
  } else if (op.contains("insert_hex")) {
    blob.insert(offset(op["insert_hex"][0]), from_hex(op["insert_hex"][1].get<std::string>()));
  } else if (op.contains("delete")) {
    blob.erase(offset(op["delete"][0]), offset(op["delete"][1]));
  } else if (op.contains("set_hex")) {
    const std::string bytes = from_hex(op["set_hex"][1].get<std::string>());
    blob.replace(offset(op["set_hex"][0]), bytes.size(), bytes);
  } else if (op.contains("set_u32")) {
    const auto v = op["set_u32"][1].get<std::uint32_t>();
    const std::size_t at = offset(op["set_u32"][0]);
    for (std::size_t i = 0; i < 4; ++i) blob[at + i] = static_cast<char>(v >> (24 - 8 * i));
  } else if (op.contains("xor")) {
    blob[offset(op["xor"][0])] ^= static_cast<char>(op["xor"][1].get<int>());
  } else if (op.contains("splice_key")) {
    const auto pk = key(op["splice_key"][0].get<std::string>());
    blob.replace(offset(op["splice_key"][1]), pk.size(), std::string(pk.begin(), pk.end()));
  } else {
    FAIL("unknown blob edit " << op.dump());
  }
}

std::string edit_text(std::string text, const json& op) {
  if (op.contains("replace")) return replace(text, op["replace"], false);
  if (op.contains("replace_all")) return replace(text, op["replace_all"], true);
  if (op.contains("append")) return text + op["append"].get<std::string>();
  if (op.contains("set_char")) {
    text.at(offset(op["set_char"][0])) = op["set_char"][1].get<std::string>().at(0);
    return text;
  }
  if (op.contains("set_spare_bit")) {
    // The last base64 digit before the padding carries unused low bits.
    static constexpr std::string_view digits = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    const std::size_t pad = text.find('=');
    REQUIRE(pad != std::string::npos);
    const std::size_t v = digits.find(text[pad - 1]);
    REQUIRE((v & 1) == 0);
    text[pad - 1] = digits[v | 1];
    return text;
  }
  FAIL("unknown text edit " << op.dump());
  return text;
}

std::string key_name(const gitlocks::PublicKey& pk) {
  for (const auto& item : corpus()["keys"].items())
    if (key(item.key()) == pk) return item.key();
  return "unknown key " + gitlocks::to_hex(pk);
}

}  // namespace

TEST_CASE("sshsig vectors: public key lines give ssh-keygen's keys or a usage error") {
  REQUIRE(gitlocks::crypto_init());
  std::size_t n = 0;
  for (const auto& c : corpus()["public_keys"]) {
    ++n;
    INFO(c["name"].get<std::string>());
    std::string line = c.contains("file") ? file(c["file"].get<std::string>()) : c["line"].get<std::string>();
    if (c.contains("replace")) line = replace(line, c["replace"], true);
    if (c.contains("blob")) {
      // "TYPE BASE64 COMMENT": the key blob edited, the rest kept.
      const std::size_t from = line.find(' ') + 1, to = line.find(' ', from);
      std::string blob = from_base64(line.substr(from, to - from));
      for (const auto& op : c["blob"]) edit_blob(blob, op);
      line = line.substr(0, from) + to_base64(blob) + line.substr(to);
    }
    line = c.value("prefix", "") + line + c.value("suffix", "");
    auto pk = gitlocks::parse_ssh_public_key(line);
    const json& expect = c["expect"];
    if (expect.contains("key")) {
      CHECK_MESSAGE(pk.ok(), (pk.ok() ? "" : pk.error().message));
      if (pk.ok()) CHECK(*pk == key(expect["key"].get<std::string>()));
      continue;
    }
    CHECK(!pk.ok());
    if (pk.ok()) continue;
    CHECK(gitlocks::errc_name(pk.error().code) == expect["error"].get<std::string>());
    CHECK_MESSAGE(pk.error().message.find(expect["message"].get<std::string>()) != std::string::npos,
                  pk.error().message);
  }
  CHECK(n >= 10);
  // The OpenSSH form of a key is ssh-keygen's .pub line without its comment.
  for (const char* name : {"a", "b"}) {
    const std::string pub = file(corpus()["keys"][name]["public"].get<std::string>());
    const std::string want = pub.substr(0, pub.find(' ', pub.find(' ') + 1));
    CHECK(gitlocks::ssh_public_key_line(key(name)) == want);
    CHECK(*gitlocks::parse_ssh_public_key(gitlocks::ssh_public_key_line(key(name))) == key(name));
  }
}

TEST_CASE("sshsig vectors: sshsig_sign writes ssh-keygen's bytes for the same key and message") {
  REQUIRE(gitlocks::crypto_init());
  auto a = key_pair("a");
  REQUIRE(a.public_key == key("a"));  // the seed gen.sh read from ssh-keygen's private key file
  // The seed is the first half of the private section's secret key in the
  // checked-in openssh-key-v1 file (gen.sh reads it the same way).
  const std::string priv = file(corpus()["keys"]["a"]["openssh_private"].get<std::string>());
  const std::string b64 = priv.substr(priv.find('\n') + 1, priv.find("-----END") - priv.find('\n') - 1);
  const std::string raw = from_base64(b64);
  const std::string pk(a.public_key.begin(), a.public_key.end());
  const std::string seed(a.secret_key.begin(), a.secret_key.begin() + 32);
  CHECK(raw.rfind(std::string("openssh-key-v1\0", 15), 0) == 0);
  CHECK(raw.find(seed + pk) != std::string::npos);

  std::size_t n = 0;
  for (const auto& c : corpus()["sign"]) {
    ++n;
    INFO(c["name"].get<std::string>());
    auto kp = key_pair(c["key"].get<std::string>());
    CHECK(gitlocks::sshsig_sign(file(c["message"].get<std::string>()), c["namespace"].get<std::string>(), kp) ==
          file(c["expect"].get<std::string>()));
  }
  CHECK(n >= 3);
  // Git's own signature of the commit is ssh-keygen's over the payload.
  auto split = gitlocks::split_commit_signature(file("commit.signed"));
  REQUIRE(split.ok());
  CHECK(gitlocks::sshsig_sign(split->payload, "git", a) == split->signature);
}

TEST_CASE("sshsig vectors: ssh-keygen's signatures and edits of them get the recorded verdicts") {
  REQUIRE(gitlocks::crypto_init());
  std::size_t n = 0;
  for (const auto& c : corpus()["verify"]) {
    ++n;
    INFO(c["name"].get<std::string>());
    std::string armored = file(c["signature"].get<std::string>());
    if (c.contains("blob") || c.contains("width")) {
      std::string blob = dearmor(armored);
      for (const auto& op : c.value("blob", json::array())) edit_blob(blob, op);
      armored = armor(blob, c.value("width", std::size_t(70)));
    }
    for (const auto& op : c.value("armor", json::array())) armored = edit_text(armored, op);
    std::string message = file(c["message"].get<std::string>());
    if (c.contains("message_xor"))
      message.at(offset(c["message_xor"][0])) ^= static_cast<char>(c["message_xor"][1].get<int>());
    auto r = gitlocks::sshsig_verify(armored, message, c["namespace"].get<std::string>());
    const json& expect = c["expect"];
    // CHECK, not REQUIRE: every case reports, also after a wrong verdict.
    if (expect.contains("signer")) {
      CHECK_MESSAGE(r.ok(), (r.ok() ? "" : r.error().message));
      if (r.ok()) CHECK(key_name(*r) == expect["signer"].get<std::string>());
      continue;
    }
    CHECK_MESSAGE(!r.ok(), "verified by " << (r.ok() ? key_name(*r) : ""));
    if (r.ok()) continue;
    CHECK(r.error().code == gitlocks::Errc::bad_signature);
    CHECK_MESSAGE(r.error().reason() == expect["reason"].get<std::string>(), r.error().message);
  }
  CHECK(n >= 60);
}

TEST_CASE("sshsig vectors: commits split and verify as git verify-commit does") {
  REQUIRE(gitlocks::crypto_init());
  std::size_t n = 0;
  for (const auto& c : corpus()["commits"]) {
    ++n;
    INFO(c["name"].get<std::string>());
    std::string raw = c.contains("commit") ? file(c["commit"].get<std::string>()) : c["text"].get<std::string>();
    for (const auto& op : c.value("edit", json::array())) raw = edit_text(raw, op);
    auto signer = gitlocks::commit_signer(raw);
    auto split = gitlocks::split_commit_signature(raw);
    const json& expect = c["expect"];
    if (expect.contains("reason")) {
      CHECK(!signer.ok());
      if (signer.ok()) continue;
      CHECK(signer.error().code == gitlocks::Errc::bad_signature);
      CHECK_MESSAGE(signer.error().reason() == expect["reason"].get<std::string>(), signer.error().message);
      continue;
    }
    CHECK_MESSAGE(signer.ok(), (signer.ok() ? "" : signer.error().message));
    CHECK(split.ok());
    if (!signer.ok() || !split.ok()) continue;
    if (expect.contains("payload")) CHECK(split->payload == file(expect["payload"].get<std::string>()));
    if (expect.contains("unsigned")) {
      CHECK(!signer->has_value());
      CHECK(split->signature.empty());
      CHECK(split->payload == raw);
    } else {
      CHECK(signer->has_value());
      if (signer->has_value()) CHECK(key_name(**signer) == expect["signer"].get<std::string>());
      CHECK(split->signature.rfind(kBegin, 0) == 0);
    }
  }
  CHECK(n >= 15);
}

TEST_CASE("sshsig vectors: a pack store hands out the signed commit's exact bytes") {
  REQUIRE(gitlocks::crypto_init());
  const json& b = corpus()["bundle"];
  auto store = gitlocks::open_pack_store(file(b["file"].get<std::string>()));
  REQUIRE_MESSAGE(store.ok(), gitlocks::test::why(store));
  auto tip = (*store)->read_ref(b["ref"].get<std::string>());
  REQUIRE(tip.ok());
  REQUIRE(tip->has_value());
  auto raw = (*store)->read_commit_raw(**tip);
  REQUIRE_MESSAGE(raw.ok(), gitlocks::test::why(raw));
  CHECK(*raw == file(b["commit"].get<std::string>()));
  auto signer = gitlocks::commit_signer(*raw);
  REQUIRE(signer.ok());
  REQUIRE(signer->has_value());
  CHECK(key_name(**signer) == b["signer"].get<std::string>());
  // A tree is not a commit; a missing object is an error too.
  auto commit = (*store)->read_commit(**tip);
  REQUIRE(commit.ok());
  auto tree = (*store)->read_commit_raw(commit->tree);
  REQUIRE(!tree.ok());
  CHECK(tree.error().code == gitlocks::Errc::store_read);
  CHECK((*store)->read_commit_raw(*gitlocks::Oid::from_hex(std::string(40, '1'))).error().code ==
        gitlocks::Errc::store_read);
}

TEST_CASE("sshsig: a memory store's commits read back raw as Git writes them") {
  auto store = gitlocks::open_memory_store();
  REQUIRE(store.ok());
  auto blob = (*store)->write_blob("x\n");
  REQUIRE(blob.ok());
  auto tree = (*store)->write_tree({{"x", false, *blob}});
  REQUIRE(tree.ok());
  auto id = (*store)->write_commit({*tree, {}, "message\n", 1700000000});
  REQUIRE(id.ok());
  auto raw = (*store)->read_commit_raw(*id);
  REQUIRE(raw.ok());
  CHECK(*raw == "tree " + *tree +
                    "\nauthor git-locks <git-locks@invalid> 1700000000 +0000\n"
                    "committer git-locks <git-locks@invalid> 1700000000 +0000\n\nmessage\n");
  auto signer = gitlocks::commit_signer(*raw);
  REQUIRE(signer.ok());
  CHECK(!signer->has_value());
}

TEST_CASE("sshsig: signatures of random keys and messages verify only for their namespace and message") {
  REQUIRE(gitlocks::crypto_init());
  std::mt19937 rng(20240607);
  for (int round = 0; round < 40; ++round) {
    std::array<std::uint8_t, gitlocks::kSeedBytes> seed{};
    for (auto& b : seed) b = static_cast<std::uint8_t>(rng());
    const auto kp = gitlocks::keypair_from_seed(seed);
    std::string message(rng() % 300, '\0');
    for (auto& ch : message) ch = static_cast<char>(rng());
    const std::string ns = round % 2 ? "git" : "file@example.com";
    const std::string sig = gitlocks::sshsig_sign(message, ns, kp);
    auto ok = gitlocks::sshsig_verify(sig, message, ns);
    REQUIRE_MESSAGE(ok.ok(), gitlocks::test::why(ok));
    CHECK(*ok == kp.public_key);
    CHECK(gitlocks::sshsig_verify(sig, message + "x", ns).error().reason() == "signature-mismatch");
    CHECK(gitlocks::sshsig_verify(sig, message, ns + "x").error().reason() == "signature-namespace");
    // ssh-keygen's armor: 70 columns, the last line shorter or full.
    const std::string body = sig.substr(kBegin.size(), sig.size() - kBegin.size() - kEnd.size());
    std::size_t at = 0;
    while (at < body.size()) {
      const std::size_t eol = body.find('\n', at);
      REQUIRE(eol != std::string::npos);
      CHECK(eol - at <= 70);
      if (eol + 1 < body.size()) CHECK(eol - at == 70);
      at = eol + 1;
    }
    CHECK(dearmor(sig) == dearmor(armor(dearmor(sig))));
  }
}

TEST_CASE("sshsig: every truncation and every flipped bit of a signature is refused") {
  REQUIRE(gitlocks::crypto_init());
  const std::string message = file("hello.txt");
  const std::string blob = dearmor(file("hello.git.sha512.sig"));
  REQUIRE(gitlocks::sshsig_verify(armor(blob), message, "git").ok());
  for (std::size_t n = 0; n < blob.size(); ++n) {
    auto r = gitlocks::sshsig_verify(armor(blob.substr(0, n)), message, "git");
    CHECK_MESSAGE(!r.ok(), "truncated to " << n);
    if (!r.ok())
      CHECK_MESSAGE(r.error().reason() == "signature-malformed", "truncated to " << n << ": " << r.error().message);
  }
  for (std::size_t bit = 0; bit < 8 * blob.size(); ++bit) {
    std::string edited = blob;
    edited[bit / 8] ^= static_cast<char>(1 << (bit % 8));
    auto r = gitlocks::sshsig_verify(armor(edited), message, "git");
    CHECK_MESSAGE(!r.ok(), "bit " << bit);
    if (!r.ok()) CHECK(r.error().code == gitlocks::Errc::bad_signature);
  }
}
