// Replays every crash input the fuzzers found (tests/fuzz/regressions/<target>/)
// and hand-made tricky inputs for each target, checking the same properties
// as tests/fuzz/fuzz_<target>.cpp. The batch target's inputs are replayed by
// the CLI suite (tests/cli/test_badinput.py drives `git-locks batch`).
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "gitlocks/attest.hpp"
#include "gitlocks/canon.hpp"
#include "gitlocks/crypto.hpp"
#include "gitlocks/expr.hpp"
#include "gitlocks/packet.hpp"
#include "gitlocks/path.hpp"

namespace {

std::vector<std::string> regressions(const std::string& target, std::vector<std::string> inputs) {
  const std::filesystem::path dir = std::filesystem::path(GITLOCKS_VECTORS_DIR) / ".." / "fuzz" / "regressions" / target;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    if (!entry.is_regular_file() || entry.path().filename().string()[0] == '.') continue;
    std::ifstream f(entry.path(), std::ios::binary);
    std::ostringstream ss;
    ss << f.rdbuf();
    inputs.push_back(ss.str());
  }
  return inputs;
}

const std::string kDeep = std::string(100000, '[') + std::string(100000, ']');

}  // namespace

TEST_CASE("fuzz regressions: canonical JSON") {
  for (const auto& in : regressions("canon", {"", "{", "\"\\ud800\"", "\"\\udc00\\ud800\"", "1e400", "-0", "0.1",
                                              "{\"a\":1,\"a\":2}", std::string("\"\xff\""), std::string("\"a\0b\"", 5),
                                              "9007199254740993", kDeep, "[1,]", "{\"b\":1,\"a\":2}"})) {
    auto strict = gitlocks::canon_parse(in, gitlocks::CanonMode::strict);
    if (strict.ok()) CHECK(gitlocks::canon_dump(*strict).value() == in);
    auto lenient = gitlocks::canon_parse(in, gitlocks::CanonMode::lenient);
    if (lenient.ok()) {
      auto out = gitlocks::canon_dump(*lenient);
      REQUIRE(out.ok());
      auto again = gitlocks::canon_parse(*out, gitlocks::CanonMode::strict);
      REQUIRE(again.ok());
      CHECK(*again == *lenient);
    }
    CHECK_FALSE((strict.ok() && !lenient.ok()));
  }
}

TEST_CASE("fuzz regressions: packets, attestations, admission requests") {
  gitlocks::crypto_init();
  for (const auto& in : regressions("packet", {"", "{}", "{\"packet\":{},\"sig\":\"\"}", "{\"packet\":null}",
                                               "{\"packet\":{\"format\":\"gitlocks-packet-v1\"},\"sig\":\"" +
                                                   std::string(128, '0') + "\"}",
                                               kDeep, std::string("\0", 1)})) {
    auto p = gitlocks::open_packet(in);
    CHECK_FALSE(p.ok());  // none of these is a genuinely signed packet
    (void)gitlocks::open_attestation(in);
    (void)gitlocks::open_admission_request(in);
  }
}

TEST_CASE("fuzz regressions: guard expressions") {
  for (const auto& in : regressions("expr", {"[]", "{}", "{\"guards\":[],\"body\":{}}", "[[\">=\",\"T\",1e300]]",
                                             "[[\"<=\",\"T\",9007199254740992]]", "[[\"+\",[\"+\"]]]",
                                             "{\"guards\":[[\">=\",\"T\",[\"+\",\"T\",9007199254740991]]]}", kDeep})) {
    auto doc = gitlocks::canon_parse(in, gitlocks::CanonMode::lenient);
    if (!doc.ok()) continue;
    gitlocks::json guards = *doc, body = gitlocks::json::object();
    if (doc->is_object() && doc->contains("guards")) {
      guards = (*doc)["guards"];
      if (doc->contains("body")) body = (*doc)["body"];
    }
    (void)gitlocks::action_preflight(*doc);
    auto iv = gitlocks::derive_interval(guards, body);
    if (iv.ok()) {
      CHECK(iv->lo <= iv->hi);
      CHECK(iv->lo >= 0);
      CHECK(iv->hi <= gitlocks::kMaxSafeInteger);
    } else {
      const auto c = iv.error().code;
      CHECK((c == gitlocks::Errc::empty_interval || c == gitlocks::Errc::bad_expression ||
             c == gitlocks::Errc::unsupported_expression || c == gitlocks::Errc::arithmetic_overflow));
    }
  }
}

TEST_CASE("fuzz regressions: repository paths") {
  for (const auto& in : regressions("path", {"", "/", "a//b", "./a", "a/..", "a/./b", "..", "a/", "a\\b",
                                             std::string("a\0b", 3), "\xc3\x28", "\xed\xa0\x80", "a\nb/",
                                             std::string(70000, 'a'), "d/" + std::string(4096, 'x')})) {
    auto half = in.find('\n');
    const std::string a = in.substr(0, half);
    const std::string b = half == std::string::npos ? "" : in.substr(half + 1);
    auto pa = gitlocks::parse_repo_path(a);
    if (pa.ok()) {
      CHECK(pa->display() == a);
      CHECK(gitlocks::paths_overlap(*pa, *pa));
      for (const auto& c : pa->components) CHECK_FALSE((c.empty() || c == "." || c == ".."));
    }
    auto pb = gitlocks::parse_repo_path(b);
    if (pa.ok() && pb.ok()) CHECK(gitlocks::paths_overlap(*pa, *pb) == gitlocks::paths_overlap(*pb, *pa));
  }
}
