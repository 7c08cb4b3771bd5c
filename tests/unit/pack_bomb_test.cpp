// A delta bomb in a pack (issue 18's static libgit2, toolchains/patches/):
// an OFS_DELTA of a few kilobytes whose copy instructions would expand a
// 64 KiB blob into more than 2 GiB. The libgit2 the core links refuses such
// a delta before allocating its result (the limit of Debian's fix for
// CVE-2026-53585); the same construction with a small result reads back, so
// the refusal is the limit's and not a malformed pack's.
//
// The pack and its version-2 index are written here byte by byte from Git's
// pack-format documentation (gitformat-pack(5)); zlib streams use stored
// blocks, so no compressor is needed. libgit2 compares the pack checksum in
// the index with the pack's trailer and does not recompute it, so both are a
// fixed 20 bytes; it does check each object's id when it reads it.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "fixture.h"

#ifndef __EMSCRIPTEN__
#include <stdlib.h>  // mkdtemp
#include <sys/resource.h>
#endif

namespace {

namespace fs = std::filesystem;

std::string zlib_stored(const std::string& data) {
  std::string out = "\x78\x01";
  std::size_t at = 0;
  do {
    const std::size_t n = std::min<std::size_t>(65535, data.size() - at);
    const bool last = at + n == data.size();
    out += static_cast<char>(last ? 1 : 0);
    out += static_cast<char>(n & 0xff);
    out += static_cast<char>(n >> 8);
    out += static_cast<char>(~n & 0xff);
    out += static_cast<char>((~n >> 8) & 0xff);
    out.append(data, at, n);
    at += n;
  } while (at < data.size());
  std::uint32_t a = 1, b = 0;
  for (unsigned char c : data) {
    a = (a + c) % 65521;
    b = (b + a) % 65521;
  }
  const std::uint32_t adler = (b << 16) | a;
  for (int shift = 24; shift >= 0; shift -= 8) out += static_cast<char>((adler >> shift) & 0xff);
  return out;
}

// An object header: type in bits 4-6 of the first byte, size in 4 + 7k bits.
std::string object_header(int type, std::uint64_t size) {
  std::string out;
  unsigned char c = static_cast<unsigned char>((type << 4) | (size & 15));
  size >>= 4;
  while (size) {
    out += static_cast<char>(c | 0x80);
    c = static_cast<unsigned char>(size & 0x7f);
    size >>= 7;
  }
  out += static_cast<char>(c);
  return out;
}

// A delta's size header: little-endian base-128.
std::string delta_size(std::uint64_t size) {
  std::string out;
  do {
    unsigned char c = static_cast<unsigned char>(size & 0x7f);
    size >>= 7;
    out += static_cast<char>(size ? (c | 0x80) : c);
  } while (size);
  return out;
}

// OFS_DELTA's distance back to its base (Git's offset encoding).
std::string ofs_distance(std::uint64_t ofs) {
  std::string out(1, static_cast<char>(ofs & 0x7f));
  while (ofs >>= 7) {
    --ofs;
    out.insert(out.begin(), static_cast<char>(0x80 | (ofs & 0x7f)));
  }
  return out;
}

void put32(std::string& s, std::uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) s += static_cast<char>((v >> shift) & 0xff);
}

// Blob ids of n bytes of 'a', from Python's hashlib over "blob <n>\0" and
// the bytes (the first also from `git hash-object`): libgit2 checks the id
// of every object it reads.
constexpr const char* kBase = "dbdcf4b7feebd9fab1c18b1b8c016c8e56f33962";   // 65,536
constexpr const char* kSmall = "f72d95b21df00a2eab920f0e2be452375204bdaf";  // 131,077
constexpr const char* kBomb = "1bb15e98c686149def76c7c6d86cdfc90cf52840";   // 2^31 + 1

std::string raw_id(const std::string& hex) {
  std::string out;
  for (std::size_t i = 0; i < 40; i += 2) out += static_cast<char>(std::stoi(hex.substr(i, 2), nullptr, 16));
  return out;
}

// A repository holding one pack: a blob of 64 KiB of 'a' (kBase) and a delta
// on it, `delta_id`, claiming `result` bytes made of copies of the base.
fs::path repository_with_delta(const fs::path& root, std::uint64_t result, const std::string& delta_id) {
  const fs::path repo = root / ("r" + std::to_string(result));
  fs::create_directories(repo / "objects" / "pack");
  fs::create_directories(repo / "refs" / "heads");
  std::ofstream(repo / "HEAD") << "ref: refs/heads/main\n";
  std::ofstream(repo / "config") << "[core]\n\trepositoryformatversion = 0\n\tbare = true\n";

  const std::string base(65536, 'a');
  std::string delta = delta_size(base.size()) + delta_size(result);
  // 0x80 with no offset or size bytes: copy 0x10000 bytes from offset 0;
  // 0x90 n: copy n (< 256) bytes from offset 0.
  std::uint64_t left = result;
  for (; left >= 0x10000; left -= 0x10000) delta += '\x80';
  if (left) {
    REQUIRE(left < 256);
    delta += '\x90';
    delta += static_cast<char>(left);
  }

  std::string pack = "PACK";
  put32(pack, 2);
  put32(pack, 2);
  const std::uint32_t base_at = static_cast<std::uint32_t>(pack.size());
  pack += object_header(3, base.size()) + zlib_stored(base);
  const std::uint32_t delta_at = static_cast<std::uint32_t>(pack.size());
  pack += object_header(6, delta.size()) + ofs_distance(delta_at - base_at) + zlib_stored(delta);
  const std::string checksum(20, '\x5a');
  pack += checksum;

  // Ids sorted, the fanout counting ids by first byte, then CRC-32s (read
  // only by verification), then offsets, in the same order.
  struct Entry {
    std::string id;
    std::uint32_t at;
  };
  std::vector<Entry> entries = {{raw_id(kBase), base_at}, {raw_id(delta_id), delta_at}};
  std::sort(entries.begin(), entries.end(), [](const Entry& x, const Entry& y) { return x.id < y.id; });
  std::string idx = "\xfftOc";
  put32(idx, 2);
  for (int i = 0; i < 256; ++i) {
    std::uint32_t n = 0;
    for (const auto& e : entries) n += static_cast<unsigned char>(e.id[0]) <= i ? 1 : 0;
    put32(idx, n);
  }
  for (const auto& e : entries) idx += e.id;
  for (std::size_t i = 0; i < entries.size(); ++i) put32(idx, 0);
  for (const auto& e : entries) put32(idx, e.at);
  idx += checksum + std::string(20, '\0');

  const std::string name = "pack-" + std::string(40, '5');
  std::ofstream(repo / "objects" / "pack" / (name + ".pack"), std::ios::binary) << pack;
  std::ofstream(repo / "objects" / "pack" / (name + ".idx"), std::ios::binary) << idx;
  return repo;
}

}  // namespace

TEST_CASE("store: a delta that would expand past 2 GiB is refused before it is applied") {
#ifdef __EMSCRIPTEN__
  const fs::path root = fs::temp_directory_path() / "gitlocks-delta-bomb";
  fs::create_directories(root);
#else
  char tmpl[] = "/tmp/gitlocks-delta-bomb-XXXXXX";
  REQUIRE(mkdtemp(tmpl) != nullptr);
  const fs::path root(tmpl);
#endif
  // The control: the same construction with a 128 KiB + 5 byte result reads back.
  {
    auto store = gitlocks::open_git_store(repository_with_delta(root, 0x20005, kSmall).string());
    REQUIRE(store.ok());
    auto base = (*store)->read_blob(*gitlocks::Oid::from_hex(kBase));
    REQUIRE(base.ok());
    CHECK(*base == std::string(65536, 'a'));
    auto small = (*store)->read_blob(*gitlocks::Oid::from_hex(kSmall));
    REQUIRE(small.ok());
    CHECK(*small == std::string(0x20005, 'a'));
  }
  // 2 GiB + 1 byte: one past the limit (32,768 copies of 64 KiB and one of
  // a byte). Unpatched, libgit2 allocates and fills the whole result.
  {
    auto store = gitlocks::open_git_store(repository_with_delta(root, (std::uint64_t{2} << 30) + 1, kBomb).string());
    REQUIRE(store.ok());
#ifndef __EMSCRIPTEN__
    rusage before{};
    getrusage(RUSAGE_SELF, &before);
#endif
    auto bomb = (*store)->read_blob(*gitlocks::Oid::from_hex(kBomb));
    REQUIRE_FALSE(bomb.ok());
    CHECK(bomb.error().code == gitlocks::Errc::store_read);
    // Ours says "exceeds the maximum object size"; Debian's deb12u2 (the
    // shared library, GITLOCKS_USE_NATIVE_DEPS=OFF) "overly large object".
    const std::string& why = bomb.error().message;
    CHECK_MESSAGE((why.find("exceeds the maximum object size") != std::string::npos ||
                   why.find("overly large object") != std::string::npos),
                  why);
#ifndef __EMSCRIPTEN__
    rusage after{};
    getrusage(RUSAGE_SELF, &after);
    CHECK(after.ru_maxrss - before.ru_maxrss < 256 * 1024);  // KiB: nothing near 2 GiB was touched
#endif
    CHECK((*store)->read_blob(*gitlocks::Oid::from_hex(kBase)).ok());  // the store is still usable
  }
  std::error_code ec;
  fs::remove_all(root, ec);
}
