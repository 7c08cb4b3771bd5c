// Repository paths (SPEC §3): validation is exact at every boundary, bad
// paths are rejected (never rewritten), overlap is component-wise.
#include "gitlocks/path.hpp"

#include <doctest/doctest.h>

#include <string>
#include <vector>

using gitlocks::Errc;
using gitlocks::parse_repo_path;
using gitlocks::paths_overlap;
using gitlocks::RepoPath;

namespace {

std::string show(std::string_view s) {
  static constexpr char hex[] = "0123456789abcdef";
  std::string out;
  for (unsigned char c : s) {
    if (c >= 0x20 && c < 0x7f && c != '\\') {
      out += static_cast<char>(c);
    } else {
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 15];
    }
  }
  if (out.size() > 120) out = out.substr(0, 60) + "..." + out.substr(out.size() - 60);
  return out;
}

RepoPath must(std::string_view text) {
  auto r = parse_repo_path(text);
  INFO("path: ", show(text));
  REQUIRE(r.ok());
  return *r;
}

bool rejected(std::string_view text) {
  auto r = parse_repo_path(text);
  return !r.ok() && r.error().code == Errc::bad_path;
}

// A path of exactly n bytes with components of at most 255 bytes, none empty.
// With `directory` the last byte is '/'.
std::string path_of(std::size_t n, bool directory = false) {
  std::size_t body = directory ? n - 1 : n;
  std::string s;
  while (s.size() < body) s += s.size() % 256 == 255 ? '/' : 'a';
  // Never end the body on a separator (that would be a directory or '//').
  if (s.back() == '/') {
    s[s.size() - 2] = '/';
    s.back() = 'b';
  }
  if (directory) s += '/';
  return s;
}

bool overlap(std::string_view a, std::string_view b) { return paths_overlap(must(a), must(b)); }

}  // namespace

TEST_CASE("path: normal paths parse into components") {
  auto p = must("src/lib/main.cpp");
  CHECK(p.components == std::vector<std::string>{"src", "lib", "main.cpp"});
  CHECK_FALSE(p.directory);
  CHECK(p.key() == "src/lib/main.cpp");
  CHECK(p.display() == "src/lib/main.cpp");

  auto one = must("README");
  CHECK(one.components == std::vector<std::string>{"README"});
  CHECK(one.key() == "README");

  // Dots that are not "." or ".." components are ordinary names.
  for (const char* ok : {"...", "..a", "a..", ".hidden", "a/.b/c", "a/b.", "..../x", "-", "a b", "a:b", "#", "~",
                         "a/b/c/d/e/f/g/h/i/j"}) {
    auto r = parse_repo_path(ok);
    INFO("path: ", ok);
    REQUIRE(r.ok());
    CHECK(r->key() == ok);
    CHECK_FALSE(r->directory);
  }
}

TEST_CASE("path: unicode names in NFC are kept byte for byte") {
  const std::string jp = "\xE5\x90\x8D\xE5\x89\x8D/\xE3\x83\x95\xE3\x82\xA1\xE3\x82\xA4\xE3\x83\xAB.txt";
  auto p = must(jp);
  REQUIRE(p.components.size() == 2);
  CHECK(p.components[0] == "\xE5\x90\x8D\xE5\x89\x8D");
  CHECK(p.key() == jp);
  // One spelling per file: the NFC form is the path, the decomposed one
  // (as macOS lists it) is refused, never a second resource (issue 17).
  CHECK(must("caf\xC3\xA9").key() == "caf\xC3\xA9");
  auto nfd = parse_repo_path("cafe\xCC\x81");
  REQUIRE_FALSE(nfd.ok());
  CHECK(nfd.error().code == Errc::bad_path);
  CHECK(must("\xF0\x9F\x98\x80/\xF4\x8F\xBF\xBF").components.size() == 2);
  // DEL is rejected but U+0080 upward is data.
  CHECK(must("a\xC2\xA0"
             "b")
            .key() ==
        "a\xC2\xA0"
        "b");
}

TEST_CASE("path: a trailing '/' marks a directory - display keeps it - key drops it") {
  auto d = must("a/b/");
  CHECK(d.directory);
  CHECK(d.components == std::vector<std::string>{"a", "b"});
  CHECK(d.key() == "a/b");
  CHECK(d.display() == "a/b/");
  auto f = must("a/b");
  CHECK_FALSE(f.directory);
  CHECK(f.key() == d.key());
  CHECK(f.display() != d.display());
  auto top = must("dir/");
  CHECK(top.directory);
  CHECK(top.components == std::vector<std::string>{"dir"});
  CHECK(top.display() == "dir/");
  CHECK(top.key() == "dir");
}

TEST_CASE("path: components of 255 bytes are accepted - 256 rejected") {
  std::string c255(255, 'x');
  std::string c256(256, 'x');
  CHECK(must(c255).components[0].size() == 255);
  CHECK(must("a/" + c255 + "/b").components[1] == c255);
  CHECK(must(c255 + "/").directory);
  CHECK(must(std::string(254, 'x')).key().size() == 254);
  CHECK(rejected(c256));
  CHECK(rejected("a/" + c256));
  CHECK(rejected(c256 + "/b"));
  CHECK(rejected(c256 + "/"));
  CHECK(rejected("a/" + c256 + "/"));
  // Bytes, not characters: 127 x U+00E9 = 254 bytes (+1 ASCII = 255).
  std::string e127;
  for (int i = 0; i < 127; ++i) e127 += "\xC3\xA9";
  CHECK(must(e127 + "a").components[0].size() == 255);
  CHECK(rejected(e127 + "\xC3\xA9"));  // 128 chars, 256 bytes
  CHECK(rejected(e127 + "ab"));        // 256 bytes
}

TEST_CASE("path: paths of 4096 bytes are accepted - 4097 rejected") {
  for (std::size_t n : {1u, 255u, 256u, 257u, 511u, 512u, 4095u, 4096u}) {
    for (bool dir : {false, true}) {
      if (dir && n < 2) continue;
      std::string s = path_of(n, dir);
      INFO("n: ", n, " dir: ", dir);
      REQUIRE(s.size() == n);
      auto r = parse_repo_path(s);
      REQUIRE(r.ok());
      CHECK(r->display() == s);
      CHECK(r->directory == dir);
      for (const auto& c : r->components) CHECK(c.size() <= 255);
    }
  }
  for (std::size_t n : {4097u, 4098u, 8192u, 100000u}) {
    for (bool dir : {false, true}) {
      std::string s = path_of(n, dir);
      INFO("n: ", n, " dir: ", dir);
      REQUIRE(s.size() == n);
      CHECK(rejected(s));
    }
  }
  // A long path of short components, exactly at the limit.
  std::string shorts;
  while (shorts.size() + 2 <= 4096) shorts += shorts.empty() ? "a" : "/a";
  if (shorts.size() < 4096) shorts += "b";
  REQUIRE(shorts.size() == 4096);
  CHECK(must(shorts).components.size() == 2048);
  CHECK(rejected(shorts + "c"));
  CHECK(rejected(shorts + "/"));
}

TEST_CASE("path: malformed paths are rejected") {
  const std::vector<std::string> bad = {
      "",
      "/",
      "//",
      "/abs",
      "/a/b",
      "a//b",
      "a/b//",
      "a//",
      "./a",
      ".",
      "./",
      "a/./b",
      "a/.",
      "a/./",
      "a/..",
      "..",
      "../",
      "../a",
      "a/../b",
      "a/b/..",
      "a\\b",
      "C:\\x",
      "\\",
      "a/b\\",
      std::string("a\0", 2),
      std::string("a\0b", 3),
      std::string("\0", 1),
      std::string("a/\0/b", 5),
      "a\x01"
      "b",
      "a\x1f"
      "b",
      "a\x7f"
      "b",
      "a\tb",
      "a\nb",
      "a\rb",
      "\x1b[31m",
      "a/b\n",
      // Overlong encodings of '/' and '.': must not become separators or dots.
      "a\xC0\xAF"
      "b",
      "a\xE0\x80\xAF"
      "b",
      "a\xF0\x80\x80\xAF"
      "b",
      "\xC0\xAE",
      "\xC0\xAE\xC0\xAE",
      "a/\xC0\xAE\xC0\xAE/b",
      "\xE0\x80\xAE",
      "\xC0\x80",
      // Invalid UTF-8.
      "\x80",
      "a\xBF",
      "\xFF",
      "\xFE",
      "a\xC3",
      "a\xE2\x82",
      "\xED\xA0\x80",
      "\xF4\x90\x80\x80",
      "\xF5\x80\x80\x80",
      "a\xC3/b",
  };
  for (const auto& b : bad) {
    INFO("path: ", show(b));
    auto r = parse_repo_path(b);
    REQUIRE_FALSE(r.ok());
    CHECK(r.error().code == Errc::bad_path);
    CHECK_FALSE(r.error().message.empty());
  }
}

TEST_CASE("path: every byte below 0x20 and 0x7f is rejected anywhere in a path") {
  for (int c = 0; c < 0x20; ++c) {
    std::string ch(1, static_cast<char>(c));
    INFO("byte: ", c);
    CHECK(rejected(ch));
    CHECK(rejected(ch + "a"));
    CHECK(rejected("a" + ch));
    CHECK(rejected("a/" + ch + "/b"));
    CHECK(rejected("a/b" + ch + "/"));
  }
  CHECK(rejected("\x7f"));
  CHECK(rejected("a/\x7f/b"));
  // Their neighbours are fine.
  CHECK(must(" ").key() == " ");
  CHECK(must("~").key() == "~");
}

TEST_CASE("path: overlap is equality or component-prefix - in both directions") {
  CHECK(overlap("a/b", "a/b"));
  CHECK(overlap("a", "a/b"));
  CHECK(overlap("a/b", "a"));
  CHECK(overlap("a/", "a/b/c"));
  CHECK(overlap("a/b/c", "a/"));
  CHECK(overlap("a/b/", "a/b"));  // directory and file with the same components
  CHECK(overlap("a/b", "a/b/"));
  CHECK(overlap("a/b", "a/b/c"));  // "a/b" covers a/b/c should it become a directory
  CHECK(overlap("x/", "x/"));

  CHECK_FALSE(overlap("a/b", "a/c"));
  CHECK_FALSE(overlap("a/", "b/"));
  CHECK_FALSE(overlap("src", "srcx"));
  CHECK_FALSE(overlap("srcx", "src"));
  CHECK_FALSE(overlap("src/", "srcx/a"));
  CHECK_FALSE(overlap("a/b", "a/bc"));
  CHECK_FALSE(overlap("a/bc", "a/b"));
  CHECK_FALSE(overlap("a/b/", "a/bc"));
  CHECK_FALSE(overlap("ab/c", "a/bc"));
  CHECK_FALSE(overlap("x/y", "a/x/y"));  // suffix is not overlap
  CHECK_FALSE(overlap("a/b/c", "b/c"));
  CHECK_FALSE(overlap("a.b", "a/b"));
  CHECK_FALSE(overlap("caf\xC3\xA9", "caf\xC3\xA9s/x"));
}

TEST_CASE("path: overlap is symmetric - reflexive and matches a string oracle") {
  // Every path over the components {a, b, ab} up to depth 3, files and dirs.
  std::vector<std::string> keys;
  const char* comps[] = {"a", "b", "ab"};
  std::vector<std::string> level = {""};
  for (int depth = 1; depth <= 3; ++depth) {
    std::vector<std::string> next;
    for (const auto& prefix : level)
      for (const char* c : comps) next.push_back(prefix.empty() ? c : prefix + "/" + c);
    keys.insert(keys.end(), next.begin(), next.end());
    level = next;
  }
  std::vector<std::string> texts;
  for (const auto& k : keys) {
    texts.push_back(k);
    texts.push_back(k + "/");
  }
  REQUIRE(texts.size() == 2 * (3 + 9 + 27));
  std::vector<RepoPath> parsed;
  for (const auto& t : texts) parsed.push_back(must(t));

  auto oracle = [](const std::string& x, const std::string& y) {
    return x == y || y.rfind(x + "/", 0) == 0 || x.rfind(y + "/", 0) == 0;
  };
  int overlaps = 0, disjoint = 0;
  for (std::size_t i = 0; i < parsed.size(); ++i) {
    CHECK(paths_overlap(parsed[i], parsed[i]));
    for (std::size_t j = 0; j < parsed.size(); ++j) {
      bool ij = paths_overlap(parsed[i], parsed[j]);
      bool ji = paths_overlap(parsed[j], parsed[i]);
      INFO(texts[i], " vs ", texts[j]);
      CHECK(ij == ji);
      CHECK(ij == oracle(parsed[i].key(), parsed[j].key()));
      (ij ? overlaps : disjoint)++;
    }
  }
  CHECK(overlaps > 0);
  CHECK(disjoint > overlaps);
}

TEST_CASE("path: proper ancestors are the leading components - nearest the root first - never the path itself") {
  using V = std::vector<std::string>;
  CHECK(gitlocks::proper_ancestors(gitlocks::parse_repo_path("a/b/c").value()) == V{"a", "a/b"});
  CHECK(gitlocks::proper_ancestors(gitlocks::parse_repo_path("a/b/").value()) == V{"a"});  // a directory claim
  CHECK(gitlocks::proper_ancestors(gitlocks::parse_repo_path("top").value()).empty());
  CHECK(gitlocks::proper_ancestors(gitlocks::parse_repo_path("src/dir.d/x.c").value()) == V{"src", "src/dir.d"});
}
