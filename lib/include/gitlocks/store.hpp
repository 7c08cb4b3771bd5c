// gitlocks/store.hpp — the narrow storage interface of the core: Git objects
// in, Git objects out. The core never sees libgit2 types; the libgit2
// implementation (git_store.cpp) is shared by native and WASM builds.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gitlocks/canon.hpp"
#include "gitlocks/result.hpp"

namespace gitlocks {

// A Git object id: the 20 bytes of a SHA-1 object name. Ids are parsed
// once, where they enter (an object read from the store, a ref, a host's
// argument: Oid::from_hex), and are shown as 40 lowercase hex digits (hex(),
// and as a JSON string). The default value is the null id: "no object"
// (empty(), shown as ""), e.g. the source state of a store's creation. It
// is not the all-zero id: "0000…" read from a document stays that id, as
// distinct from "" as the two texts are. Ordered as their hex is (the null
// id first, then byte by byte).
class Oid {
 public:
  static constexpr std::size_t kBytes = 20;
  static constexpr std::size_t kHexDigits = 2 * kBytes;

  Oid() = default;
  // From 40 lowercase hex digits; nullopt for anything else.
  static std::optional<Oid> from_hex(std::string_view hex);
  static Oid from_bytes(const std::uint8_t* bytes) {
    Oid o;
    std::memcpy(o.bytes_.data(), bytes, kBytes);
    o.null_ = false;
    return o;
  }

  // 40 lowercase hex digits ("" for the null id).
  std::string hex() const;
  const std::uint8_t* data() const { return bytes_.data(); }
  // The null id.
  bool empty() const { return null_; }

  bool operator==(const Oid& o) const { return null_ == o.null_ && bytes_ == o.bytes_; }
  bool operator!=(const Oid& o) const { return !(*this == o); }
  bool operator<(const Oid& o) const { return null_ != o.null_ ? null_ : bytes_ < o.bytes_; }

 private:
  std::array<std::uint8_t, kBytes> bytes_{};
  bool null_ = true;
};

// An id as a JSON value: its hex string ("" for the null id).
void to_json(json& j, const Oid& id);
std::ostream& operator<<(std::ostream& os, const Oid& id);
// "oid" + "…": error texts name ids by their hex.
inline std::string operator+(const std::string& s, const Oid& id) { return s + id.hex(); }
inline std::string operator+(const char* s, const Oid& id) { return s + id.hex(); }
inline std::string operator+(const Oid& id, const std::string& s) { return id.hex() + s; }
inline std::string operator+(const Oid& id, const char* s) { return id.hex() + s; }

struct TreeEntry {
  std::string name;
  bool is_tree = false;  // else a regular blob (mode 100644)
  Oid oid;
};
// Entries in any order; the store writes them in Git's order.
using Tree = std::vector<TreeEntry>;
// A tree shared by the readers of a cache (never modified once read).
using SharedTree = std::shared_ptr<const Tree>;

struct Commit {
  Oid tree;
  std::vector<Oid> parents;
  std::string message;
  std::int64_t time_seconds = 0;  // committer time
};

class ObjectStore {
 public:
  virtual ~ObjectStore() = default;
  virtual Result<std::string> read_blob(const Oid& id) = 0;
  virtual Result<Tree> read_tree(const Oid& id) = 0;
  // The same tree, shared rather than copied: a caching store hands out the
  // tree it holds (the verifier reads each state tree several times).
  virtual Result<SharedTree> read_tree_shared(const Oid& id) {
    auto t = read_tree(id);
    if (!t.ok()) return t.error();
    return SharedTree(std::make_shared<const Tree>(std::move(t).value()));
  }
  virtual Result<Commit> read_commit(const Oid& id) = 0;
  // The commit object's content exactly as stored (what `git cat-file
  // commit ID` prints): the bytes its signature covers (sshsig.hpp).
  // Errors: store_read (missing, unreadable, or not a commit).
  virtual Result<std::string> read_commit_raw(const Oid& id) = 0;
  virtual Result<Oid> write_blob(std::string_view data) = 0;
  virtual Result<Oid> write_tree(const Tree& tree) = 0;
  // write_tree for a caller that is done with `tree`: a caching store keeps
  // it rather than a copy (the planner rewrites trees of hundreds of entries).
  virtual Result<Oid> write_tree_owned(Tree&& tree) { return write_tree(tree); }
  // Author and committer are "git-locks <git-locks@invalid>" at time_seconds,
  // so a commit is a pure function of its inputs.
  virtual Result<Oid> write_commit(const Commit& commit) = 0;
  // The strict canonical parse (canon_parse, CanonMode::strict) of blob
  // `id`, if this store kept it: a caching store keeps what its readers
  // parsed, so the planner and the timeline parse each record once. nullptr
  // otherwise (then read and parse it, and offer the result to keep_parsed).
  virtual std::shared_ptr<const json> parsed_blob(const Oid& id) { return (void)id, nullptr; }
  virtual void keep_parsed(const Oid& id, const json& doc) { (void)id, (void)doc; }
  // `doc` is the document whose canonical encoding (canon_dump) the caller
  // just wrote as blob `id`, so it is that blob's strict canonical parse: a
  // caching store hands it out from parsed_blob once the store holds `id`
  // (the planner's re-encoded records are what the verifier reads next).
  virtual void keep_written_parse(const Oid& id, json doc) { (void)id, (void)doc; }
  // True when the object is in the store; false when it is not or the
  // store cannot tell without reading it (then read it).
  virtual bool has_object(const Oid& id) { return (void)id, false; }
  // The paths (files, '/'-separated, as Git spells them) that commit `id`
  // changes, sorted: against its first parent (a root commit: every file
  // of its tree); a merge changes only what differs from every parent and,
  // with two parents, is not the automatic three-way merge of the parents'
  // versions over their merge base (a clean merge adds no change of its
  // own). Errors: store_read.
  virtual Result<std::vector<std::string>> changed_paths(const Oid& id) {
    return (void)id, make_error(Errc::store_read, "this store cannot compare commits");
  }
  // The ref's target, or nullopt if it does not exist.
  virtual Result<std::optional<Oid>> read_ref(std::string_view name) = 0;
  // Number of objects written through this store (for tests and benchmarks).
  virtual std::size_t objects_written() const = 0;
  // In hash-only mode, write_blob and write_tree compute the ids Git would
  // give the objects but store nothing: a verifier re-plans transitions
  // without writing into the repository or growing memory.
  virtual void set_hash_only(bool on) = 0;
};

// Hash-only mode for as long as it lives (ObjectStore::set_hash_only): a
// dry run or a verifier's re-plan computes ids and stores nothing.
class HashOnlyScope {
 public:
  explicit HashOnlyScope(ObjectStore& s) : s_(s) { s_.set_hash_only(true); }
  ~HashOnlyScope() { s_.set_hash_only(false); }
  HashOnlyScope(const HashOnlyScope&) = delete;
  HashOnlyScope& operator=(const HashOnlyScope&) = delete;

 private:
  ObjectStore& s_;
};

// How libgit2 treats the host it runs on. Process-wide because libgit2's
// own settings are: they apply to every store opened after the call (the
// WASM binding sets them once, before its first store). Defaults suit a
// native process: repositories owned by another user are refused (Git's
// safe.directory rule) and the system, XDG and global configuration are
// read. The WASM binding turns both off: a browser has no file owners and
// no user configuration. Packs are read through windows of
// `pack_window_bytes`, at most `pack_mapped_limit_bytes` mapped at once
// (memory independent of the pack's size). Natively a window is an mmap, so
// large windows cost nothing; under Emscripten a mapped window is a copy of
// the file's bytes, so the binding takes small windows and keeps more.
struct LibraryOptions {
  bool validate_owner = true;
  bool read_host_config = true;
  std::size_t pack_window_bytes = std::size_t(4) << 20;
  std::size_t pack_mapped_limit_bytes = std::size_t(8) << 20;
};
void set_library_options(const LibraryOptions& options);

// What one store does, passed when it is opened.
//
// A repository store loads its object database afresh after every
// `reopen_after_reads` object reads (0: never). libgit2 keeps a 16 MiB
// cache of delta bases per open pack that it cannot be told to bound, and
// maps each pack's whole .idx, keeping every page a lookup touched; a new
// database drops both. Measured on a 200,000-commit verify: anonymous
// memory stays at ~8 MiB instead of growing to ~24 MiB, for ~5% more time
// at 4,096. The index pages come back quickly (object ids are random and
// the kernel maps 64 KiB around each fault): a shorter period trades much
// more time for little (README, "Verification at scale"). Memory and pack
// stores never re-open (under Emscripten the index is a heap copy).
//
// A pack store indexes its pack in a private directory made inside
// `temp_dir`; empty: the system's temporary directory
// (std::filesystem::temp_directory_path, i.e. $TMPDIR or /tmp).
struct StoreOptions {
  std::size_t reopen_after_reads = 4096;
  std::string temp_dir;
};

// Opens the repository at (or around) `path` with libgit2; objects are also
// read from `extra_object_dirs` (e.g. the quarantine of a push that a
// pre-receive hook inspects). Errors: store_read.
Result<std::unique_ptr<ObjectStore>> open_git_store(const std::string& path,
                                                    const std::vector<std::string>& extra_object_dirs = {},
                                                    const StoreOptions& options = {});

// The common Git directory of the repository at (or around) `path`, found
// as open_git_store finds it: the main repository's git directory for a
// linked worktree, else its own. Hosts keep per-clone files there (the CLI's
// trust checkpoint). Errors: store_read.
Result<std::string> repository_common_dir(const std::string& path);

// An in-memory object database (libgit2 mempack): for tests, vectors and the
// browser. Refs live in a map. Errors: store_read.
Result<std::unique_ptr<ObjectStore>> open_memory_store();

// A read-only object database over a Git bundle (v2 or v3, SHA-1, without
// prerequisites) or a bare packfile, given as bytes; writes go to an
// in-memory overlay, as in a memory store. The pack is indexed with
// libgit2's indexer into a private temporary directory (MEMFS in the
// browser) that lives as long as the store. The bundle's refs become the
// store's refs (a bare packfile has none). Errors: unknown_format (neither a
// bundle nor a packfile, another bundle version, SHA-256, a filter or any
// other capability), store_read (malformed header, prerequisites, a corrupt
// or truncated pack).
Result<std::unique_ptr<ObjectStore>> open_pack_store(std::string_view pack_or_bundle_bytes,
                                                     const StoreOptions& options = {});

// open_pack_store with the bytes given in pieces, split anywhere, so that a
// host never holds the whole bundle (the browser reads a File in slices):
// the header is kept until it is complete, then each piece goes straight to
// the indexer. The same errors as open_pack_store, as soon as the bytes show
// them (a wrong signature after 16 bytes, a corrupt pack when it is
// appended). After an error, or after finish(), every call fails with
// store_read. Not copyable; the temporary directory is removed if the
// builder is dropped before finish().
class PackStoreBuilder {
 public:
  explicit PackStoreBuilder(const StoreOptions& options = {});
  ~PackStoreBuilder();
  PackStoreBuilder(const PackStoreBuilder&) = delete;
  PackStoreBuilder& operator=(const PackStoreBuilder&) = delete;
  Status append(std::string_view bytes);
  // Bytes of the pack (after the bundle header) given to the indexer so far.
  std::uint64_t pack_bytes() const;
  Result<std::unique_ptr<ObjectStore>> finish();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The objects of a memory store (or of a pack store's overlay) as one
// packfile, e.g. to write a bundle. Errors: store_read.
Result<std::string> memory_store_pack(ObjectStore& store);

// Sets a ref in a memory or pack store (an error for a repository store:
// refs of a real repository move only through git update-ref in tools/).
Status memory_store_set_ref(ObjectStore& store, std::string_view name, const Oid& target);

}  // namespace gitlocks

namespace std {
template <>
struct hash<gitlocks::Oid> {
  size_t operator()(const gitlocks::Oid& id) const noexcept {
    // An object name is a uniform hash already: its first bytes are one.
    size_t h;
    memcpy(&h, id.data(), sizeof h);
    return h;
  }
};
}  // namespace std
