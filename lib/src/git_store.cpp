// The libgit2 implementation of ObjectStore, for a repository on disk and for
// an in-memory object database. Identical natively and in WASM.
#include <git2.h>
#include <git2/sys/commit.h>
#include <git2/sys/mempack.h>
#include <git2/sys/repository.h>
#include <stdlib.h>  // mkdtemp

#include <algorithm>
#include <array>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>
#include <set>
#include <system_error>
#include <unordered_map>

#include "gitlocks/hex.hpp"
#include "gitlocks/store.hpp"
#include "tree_edit.h"

namespace gitlocks {
namespace {

std::string last_git_error(const char* what) {
  const git_error* e = git_error_last();
  std::string m = what;
  if (e && e->message) {
    m += ": ";
    m += e->message;
  }
  return m;
}

Oid to_oid(const git_oid& oid) { return Oid::from_bytes(oid.id); }

// libgit2's id of `id`; the null id names no object.
Result<git_oid> parse_oid(const Oid& id) {
  if (id.empty()) return make_error(Errc::store_read, "no object id");
  git_oid oid;
  std::memcpy(oid.id, id.data(), GIT_OID_RAWSZ);
  return oid;
}

LibraryOptions& library_options() {
  static LibraryOptions options;
  return options;
}

// libgit2's global state is reference counted; every store holds one ref.
struct LibGit2 {
  LibGit2() {
    git_libgit2_init();
    // Every tree entry we write names an object just read from a tree or
    // just written through this store. libgit2's default check re-reads the
    // header of each entry (an open and an inflate per entry: 512 for a
    // claim on a large store), which made planning O(shard width).
    git_libgit2_opts(GIT_OPT_ENABLE_STRICT_OBJECT_CREATION, 0);
    // Memory independent of the history's length (issue 16). libgit2's
    // object cache kept growing over a verification walk although `verify`
    // capped it at 16 MiB (peak RSS 199 MiB at 20,000 commits; 71 MiB with
    // the cache off). Our readers cache what they reuse (StateReader, the
    // replay's CachingStore), so it is off. Packs are mapped in windows of
    // 1 GiB by default, which kept the whole pack resident during a walk:
    // small windows under a low mapped limit bound that too.
    git_libgit2_opts(GIT_OPT_ENABLE_CACHING, 0);
    git_libgit2_opts(GIT_OPT_SET_MWINDOW_SIZE, library_options().pack_window_bytes);
    git_libgit2_opts(GIT_OPT_SET_MWINDOW_MAPPED_LIMIT, library_options().pack_mapped_limit_bytes);
    if (!library_options().validate_owner) git_libgit2_opts(GIT_OPT_SET_OWNER_VALIDATION, 0);
    if (!library_options().read_host_config)
      for (int level :
           {GIT_CONFIG_LEVEL_SYSTEM, GIT_CONFIG_LEVEL_XDG, GIT_CONFIG_LEVEL_GLOBAL, GIT_CONFIG_LEVEL_PROGRAMDATA})
        git_libgit2_opts(GIT_OPT_SET_SEARCH_PATH, level, "");
  }
  ~LibGit2() { git_libgit2_shutdown(); }
  LibGit2(const LibGit2&) = delete;
  LibGit2& operator=(const LibGit2&) = delete;
};

// Adds `dirs` to `odb` as alternates (e.g. a push's quarantine).
Status add_object_dirs(git_odb* odb, const std::vector<std::string>& dirs) {
  for (const auto& dir : dirs)
    if (git_odb_add_disk_alternate(odb, dir.c_str()) != 0)
      return make_error(Errc::store_read, last_git_error(("cannot add object directory " + dir).c_str()));
  return Ok{};
}

class GitStore final : public ObjectStore {
 public:
  // `mempack` is the writable in-memory backend of a memory or pack store
  // (owned by odb); `temp_dir` holds a pack store's indexed pack.
  GitStore(git_repository* repo, git_odb* odb, git_odb_backend* mempack, std::string temp_dir = {})
      : repo_(repo), odb_(odb), mempack_(mempack), memory_(mempack != nullptr), temp_dir_(std::move(temp_dir)) {}
  ~GitStore() override {
    diff_cache_.clear();  // its trees belong to the repository freed below
    git_odb_free(odb_);
    git_repository_free(repo_);
    if (!temp_dir_.empty()) {
      std::error_code ec;
      std::filesystem::remove_all(temp_dir_, ec);
    }
  }
  GitStore(const GitStore&) = delete;
  GitStore& operator=(const GitStore&) = delete;

  // A repository store loads its object database afresh (with the same
  // extra object directories) every StoreOptions::reopen_after_reads
  // reads, so libgit2's pack index pages and delta-base cache do not
  // accumulate over a long walk.
  void enable_reopen(std::vector<std::string> extra_object_dirs, std::size_t every) {
    reopen_every_ = every;
    extra_dirs_ = std::move(extra_object_dirs);
  }

  Result<std::string> read_blob(const Oid& id) override { return read_raw(id, GIT_OBJECT_BLOB, "blob"); }

  Result<Tree> read_tree(const Oid& id) override {
    GITLOCKS_TRY(oid, parse_oid(id));
    GITLOCKS_CHECK(before_read());
    git_tree* tree = nullptr;
    if (git_tree_lookup(&tree, repo_, &oid) != 0)
      return make_error(Errc::store_read, last_git_error(("cannot read tree " + id).c_str()));
    Tree out;
    size_t n = git_tree_entrycount(tree);
    out.reserve(n);
    for (size_t i = 0; i < n; ++i) {
      const git_tree_entry* e = git_tree_entry_byindex(tree, i);
      git_filemode_t mode = git_tree_entry_filemode(e);
      if (mode != GIT_FILEMODE_TREE && mode != GIT_FILEMODE_BLOB) {
        git_tree_free(tree);
        return make_error(Errc::store_read, "tree " + id + " has an entry of unexpected mode");
      }
      out.push_back({git_tree_entry_name(e), mode == GIT_FILEMODE_TREE, to_oid(*git_tree_entry_id(e))});
    }
    git_tree_free(tree);
    return out;
  }

  Result<Commit> read_commit(const Oid& id) override {
    GITLOCKS_TRY(oid, parse_oid(id));
    GITLOCKS_CHECK(before_read());
    git_commit* c = nullptr;
    if (git_commit_lookup(&c, repo_, &oid) != 0)
      return make_error(Errc::store_read, last_git_error(("cannot read commit " + id).c_str()));
    Commit out;
    out.tree = to_oid(*git_commit_tree_id(c));
    for (unsigned i = 0; i < git_commit_parentcount(c); ++i) out.parents.push_back(to_oid(*git_commit_parent_id(c, i)));
    const char* msg = git_commit_message_raw(c);
    out.message = msg ? msg : "";
    out.time_seconds = git_commit_time(c);
    git_commit_free(c);
    return out;
  }

  Result<std::string> read_commit_raw(const Oid& id) override { return read_raw(id, GIT_OBJECT_COMMIT, "commit"); }

  Result<Oid> write_blob(std::string_view data) override {
    git_oid oid;
    if (hash_only_) {
      if (git_odb_hash(&oid, data.data(), data.size(), GIT_OBJECT_BLOB) != 0)
        return make_error(Errc::store_write, last_git_error("cannot hash blob"));
      return to_oid(oid);
    }
    if (!odb_) return make_error(Errc::store_write, reopen_error_);
    if (git_odb_write(&oid, odb_, data.data(), data.size(), GIT_OBJECT_BLOB) != 0)
      return make_error(Errc::store_write, last_git_error("cannot write blob"));
    ++written_;
    return to_oid(oid);
  }

  Result<Oid> write_tree(const Tree& tree) override {
    if (hash_only_) return hash_tree(tree);
    if (!odb_) return make_error(Errc::store_write, reopen_error_);
    git_treebuilder* b = nullptr;
    if (git_treebuilder_new(&b, repo_, nullptr) != 0)
      return make_error(Errc::store_write, last_git_error("cannot build tree"));
    for (const auto& e : tree) {
      auto oid = parse_oid(e.oid);
      if (!oid.ok() || git_treebuilder_insert(nullptr, b, e.name.c_str(), &oid.value(),
                                              e.is_tree ? GIT_FILEMODE_TREE : GIT_FILEMODE_BLOB) != 0) {
        git_treebuilder_free(b);
        return make_error(Errc::store_write, last_git_error(("cannot add tree entry " + e.name).c_str()));
      }
    }
    git_oid oid;
    int rc = git_treebuilder_write(&oid, b);
    git_treebuilder_free(b);
    if (rc != 0) return make_error(Errc::store_write, last_git_error("cannot write tree"));
    ++written_;
    return to_oid(oid);
  }

  Result<Oid> write_commit(const Commit& commit) override {
    if (!odb_) return make_error(Errc::store_write, reopen_error_);
    GITLOCKS_TRY(tree, parse_oid(commit.tree));
    std::vector<git_oid> parents;
    for (const auto& p : commit.parents) {
      GITLOCKS_TRY(po, parse_oid(p));
      parents.push_back(po);
    }
    std::vector<const git_oid*> pp;
    for (auto& p : parents) pp.push_back(&p);
    git_signature* sig = nullptr;
    if (git_signature_new(&sig, "git-locks", "git-locks@invalid", commit.time_seconds, 0) != 0)
      return make_error(Errc::store_write, last_git_error("cannot make signature"));
    git_oid oid;
    int rc = git_commit_create_from_ids(&oid, repo_, nullptr, sig, sig, nullptr, commit.message.c_str(), &tree,
                                        pp.size(), pp.empty() ? nullptr : pp.data());
    git_signature_free(sig);
    if (rc != 0) return make_error(Errc::store_write, last_git_error("cannot write commit"));
    ++written_;
    return to_oid(oid);
  }

  Result<std::optional<Oid>> read_ref(std::string_view name) override {
    if (memory_) {
      auto it = refs_.find(std::string(name));
      if (it == refs_.end()) return std::optional<Oid>{};
      return std::optional<Oid>{it->second};
    }
    if (!odb_) return make_error(Errc::store_read, reopen_error_);
    git_oid oid;
    int rc = git_reference_name_to_id(&oid, repo_, std::string(name).c_str());
    if (rc == GIT_ENOTFOUND) return std::optional<Oid>{};
    if (rc != 0) return make_error(Errc::store_read, last_git_error(("cannot read ref " + std::string(name)).c_str()));
    return std::optional<Oid>{to_oid(oid)};
  }

  bool has_object(const Oid& id) override {
    auto oid = parse_oid(id);
    if (!oid.ok()) return false;
    if (!before_read().ok()) return false;
    return git_odb_exists(odb_, &oid.value()) == 1;
  }

  Result<std::vector<std::string>> changed_paths(const Oid& id) override {
    GITLOCKS_TRY(oid, parse_oid(id));
    GITLOCKS_CHECK(before_read());
    git_commit* c = nullptr;
    if (git_commit_lookup(&c, repo_, &oid) != 0)
      return make_error(Errc::store_read, last_git_error(("cannot read commit " + id).c_str()));
    std::unique_ptr<git_commit, void (*)(git_commit*)> commit(c, git_commit_free);
    struct EndDiff {
      GitStore& s;
      ~EndDiff() { s.end_diff(); }
    } end_diff{*this};
    git_tree* tree_ptr = nullptr;
    GITLOCKS_CHECK(diff_tree(git_commit_tree_id(c), &tree_ptr));
    git_tree* const tree = tree_ptr;
    const unsigned parents = git_commit_parentcount(c);
    std::vector<git_tree*> parent_trees;
    for (unsigned i = 0; i < parents; ++i) {
      git_commit* pc = nullptr;
      if (git_commit_parent(&pc, c, i) != 0)
        return make_error(Errc::store_read, last_git_error(("cannot read a parent of commit " + id).c_str()));
      git_tree* pt = nullptr;
      auto st = diff_tree(git_commit_tree_id(pc), &pt);
      git_commit_free(pc);
      GITLOCKS_CHECK(st);
      parent_trees.push_back(pt);
    }
    std::set<std::string> changed;
    GITLOCKS_CHECK(diff_trees(parents ? parent_trees[0] : nullptr, tree, "", changed));
    // A merge changes what differs from every parent ...
    for (unsigned i = 1; i < parents && !changed.empty(); ++i) {
      std::set<std::string> against;
      GITLOCKS_CHECK(diff_trees(parent_trees[i], tree, "", against));
      std::set<std::string> both;
      for (const auto& p : changed)
        if (against.count(p)) both.insert(p);
      changed = std::move(both);
    }
    // ... and, for two parents, is not the automatic three-way merge of
    // the parents' versions (a clean merge adds no change of its own).
    if (parents == 2 && !changed.empty()) {
      git_oid base_oid;
      std::unique_ptr<git_tree, void (*)(git_tree*)> base(nullptr, git_tree_free);
      if (git_merge_base(&base_oid, repo_, git_commit_parent_id(c, 0), git_commit_parent_id(c, 1)) == 0) {
        git_commit* bc = nullptr;
        git_tree* bt = nullptr;
        if (git_commit_lookup(&bc, repo_, &base_oid) == 0 && git_commit_tree(&bt, bc) == 0) base.reset(bt);
        git_commit_free(bc);
      }
      for (auto it = changed.begin(); it != changed.end();) {
        GITLOCKS_TRY(clean, is_automatic_merge(*it, base.get(), parent_trees[0], parent_trees[1], tree));
        it = clean ? changed.erase(it) : std::next(it);
      }
    }
    return std::vector<std::string>(changed.begin(), changed.end());
  }

  std::size_t objects_written() const override { return written_; }
  void set_hash_only(bool on) override { hash_only_ = on; }

  Status set_ref(std::string_view name, const Oid& target) {
    if (!memory_) return make_error(Errc::store_write, "refs of a repository move only through git");
    refs_[std::string(name)] = target;
    return Ok{};
  }

  Result<std::string> dump_pack() {
    if (!mempack_) return make_error(Errc::store_read, "not a memory store");
    git_buf buf = GIT_BUF_INIT;
    if (git_mempack_dump(&buf, repo_, mempack_) != 0)
      return make_error(Errc::store_read, last_git_error("cannot pack the memory store"));
    std::string out(buf.ptr, buf.size);
    git_buf_dispose(&buf);
    return out;
  }

 private:
  // The exact bytes of object `id`, which must be of `type` (`what` names
  // it in errors).
  Result<std::string> read_raw(const Oid& id, git_object_t type, const char* what) {
    GITLOCKS_TRY(oid, parse_oid(id));
    GITLOCKS_CHECK(before_read());
    git_odb_object* obj = nullptr;
    if (git_odb_read(&obj, odb_, &oid) != 0)
      return make_error(Errc::store_read, last_git_error(("cannot read " + std::string(what) + " " + id).c_str()));
    std::unique_ptr<git_odb_object, void (*)(git_odb_object*)> owned(obj, git_odb_object_free);
    if (git_odb_object_type(obj) != type) return make_error(Errc::store_read, "object " + id + " is not a " + what);
    return std::string(static_cast<const char*>(git_odb_object_data(obj)), git_odb_object_size(obj));
  }

  // Tree `id` for diff_trees, owned by the diff cache: the trees one
  // changed_paths call reads stay until the next call ends, so walking a
  // range oldest first reads each tree once (commit N's trees are commit
  // N+1's parent's).
  Status diff_tree(const git_oid* id, git_tree** t) {
    const std::string key(reinterpret_cast<const char*>(id->id), GIT_OID_RAWSZ);
    auto it = diff_cache_.find(key);
    if (it != diff_cache_.end()) {
      it->second.second = diff_generation_;
      *t = it->second.first.get();
      return Ok{};
    }
    if (git_tree_lookup(t, repo_, id) != 0)
      return make_error(Errc::store_read, last_git_error("cannot read a tree of a commit"));
    diff_cache_.emplace(key, std::make_pair(TreePtr(*t, git_tree_free), diff_generation_));
    return Ok{};
  }

  // Drops the trees neither this changed_paths call nor the one before read.
  void end_diff() {
    for (auto it = diff_cache_.begin(); it != diff_cache_.end();)
      it = it->second.second + 1 < diff_generation_ ? diff_cache_.erase(it) : std::next(it);
    ++diff_generation_;
  }

  // Every path below `prefix` whose entry differs between trees `a` and
  // `b` (either may be null: empty). Entries compare by name, mode and id;
  // a subtree on one side only, or replaced by a file, contributes every
  // file below it.
  Status diff_trees(git_tree* a, git_tree* b, const std::string& prefix, std::set<std::string>& out) {
    auto subtree = [&](const git_tree_entry* e, git_tree** t) -> Status {
      *t = nullptr;
      if (!e || git_tree_entry_filemode(e) != GIT_FILEMODE_TREE) return Ok{};
      return diff_tree(git_tree_entry_id(e), t);
    };
    auto visit = [&](const char* name, const git_tree_entry* x, const git_tree_entry* y) -> Status {
      if (x && y && git_tree_entry_filemode(x) == git_tree_entry_filemode(y) &&
          git_oid_equal(git_tree_entry_id(x), git_tree_entry_id(y)))
        return Ok{};
      const std::string path = prefix + name;
      const bool xt = x && git_tree_entry_filemode(x) == GIT_FILEMODE_TREE;
      const bool yt = y && git_tree_entry_filemode(y) == GIT_FILEMODE_TREE;
      if ((x && !xt) || (y && !yt)) out.insert(path);
      if (xt || yt) {
        git_tree* tx = nullptr;
        git_tree* ty = nullptr;
        GITLOCKS_CHECK(subtree(xt ? x : nullptr, &tx));
        auto st = subtree(yt ? y : nullptr, &ty);
        if (st.ok()) st = diff_trees(tx, ty, path + "/", out);
        return st;
      }
      return Ok{};
    };
    // Both trees list their entries in Git's order: one merge of the two
    // lists, without copying them. A name that is a file on one side and a
    // directory on the other sorts apart ("a" before "a/"), so it is seen
    // as a file removed (or added) and a directory added (or removed).
    const size_t na = a ? git_tree_entrycount(a) : 0, nb = b ? git_tree_entrycount(b) : 0;
    size_t i = 0, j = 0;
    while (i < na || j < nb) {
      const git_tree_entry* x = i < na ? git_tree_entry_byindex(a, i) : nullptr;
      const git_tree_entry* y = j < nb ? git_tree_entry_byindex(b, j) : nullptr;
      const int order = !x ? 1 : !y ? -1 : git_tree_entry_cmp(x, y);
      if (order < 0) {
        GITLOCKS_CHECK(visit(git_tree_entry_name(x), x, nullptr));
        ++i;
      } else if (order > 0) {
        GITLOCKS_CHECK(visit(git_tree_entry_name(y), nullptr, y));
        ++j;
      } else {
        GITLOCKS_CHECK(visit(git_tree_entry_name(x), x, y));
        ++i, ++j;
      }
    }
    return Ok{};
  }

  // Whether `result`'s entry at `path` is what libgit2's automatic
  // three-way merge of `ours` and `theirs` over `base` (null: no common
  // ancestor) gives, without conflict. Only regular files can be; anything
  // else (a deletion, a link, a submodule, a mode change, a conflict) is
  // the merge's own change.
  Result<bool> is_automatic_merge(const std::string& path, git_tree* base, git_tree* ours, git_tree* theirs,
                                  git_tree* result) {
    struct Side {
      git_tree_entry* entry = nullptr;
      git_blob* blob = nullptr;
      ~Side() {
        git_blob_free(blob);
        git_tree_entry_free(entry);
      }
    };
    auto load = [&](git_tree* t, Side& s) -> Result<bool> {
      if (!t || git_tree_entry_bypath(&s.entry, t, path.c_str()) != 0) return false;
      const git_filemode_t m = git_tree_entry_filemode(s.entry);
      if (m != GIT_FILEMODE_BLOB && m != GIT_FILEMODE_BLOB_EXECUTABLE) return false;
      if (git_blob_lookup(&s.blob, repo_, git_tree_entry_id(s.entry)) != 0)
        return make_error(Errc::store_read, last_git_error(("cannot read " + path).c_str()));
      return true;
    };
    Side b, o, t, r;
    GITLOCKS_TRY(has_o, load(ours, o));
    GITLOCKS_TRY(has_t, load(theirs, t));
    GITLOCKS_TRY(has_r, load(result, r));
    if (!has_o || !has_t || !has_r) return false;
    GITLOCKS_TRY(has_b, load(base, b));
    if (!has_b && base && b.entry) return false;  // the base has something else there
    const git_filemode_t mo = git_tree_entry_filemode(o.entry), mt = git_tree_entry_filemode(t.entry);
    const git_filemode_t mb = has_b ? git_tree_entry_filemode(b.entry) : mo;
    const git_filemode_t merged_mode = mo == mb ? mt : mo;
    if ((mo != mb && mt != mb && mo != mt) || git_tree_entry_filemode(r.entry) != merged_mode) return false;
    auto input = [](const git_blob* blob, const char* p, git_filemode_t mode) {
      git_merge_file_input in;
      git_merge_file_input_init(&in, GIT_MERGE_FILE_INPUT_VERSION);
      if (blob) {
        in.ptr = static_cast<const char*>(git_blob_rawcontent(blob));
        in.size = static_cast<size_t>(git_blob_rawsize(blob));
        in.path = p;
        in.mode = static_cast<unsigned>(mode);
      }
      return in;
    };
    git_merge_file_input in_b = input(has_b ? b.blob : nullptr, path.c_str(), mb);
    git_merge_file_input in_o = input(o.blob, path.c_str(), mo);
    git_merge_file_input in_t = input(t.blob, path.c_str(), mt);
    git_merge_file_result merged;
    std::memset(&merged, 0, sizeof merged);
    if (git_merge_file(&merged, &in_b, &in_o, &in_t, nullptr) != 0)
      return make_error(Errc::store_read, last_git_error(("cannot merge " + path).c_str()));
    const std::string_view got(static_cast<const char*>(git_blob_rawcontent(r.blob)),
                               static_cast<size_t>(git_blob_rawsize(r.blob)));
    const bool same = merged.automergeable && std::string_view(merged.ptr ? merged.ptr : "", merged.len) == got;
    git_merge_file_result_free(&merged);
    return same;
  }

  // libgit2 shares an open pack (its index mapping and delta-base cache)
  // among every database of the process that has it open, so the old
  // database is released before the repository loads a new one (else the
  // pack would live on in it). A database that cannot be loaded again (the
  // repository was removed under us) fails this read and every later one.
  Status before_read() {
    if (!odb_) return make_error(Errc::store_read, reopen_error_);
    if (reopen_every_ == 0 || ++reads_ < reopen_every_) return Ok{};
    reads_ = 0;
    git_odb_free(odb_);
    odb_ = nullptr;
    // Frees the repository's own database (and configuration and ref
    // database, loaded again when next needed) without closing it.
    if (git_repository__cleanup(repo_) != 0 || git_repository_odb(&odb_, repo_) != 0) {
      reopen_error_ = last_git_error("cannot open the object database again");
      odb_ = nullptr;
      return make_error(Errc::store_read, reopen_error_);
    }
    if (auto added = add_object_dirs(odb_, extra_dirs_); !added.ok()) {
      reopen_error_ = added.error().message;
      git_odb_free(odb_);
      odb_ = nullptr;
      return added;
    }
    return Ok{};
  }

  // Git's canonical tree encoding: entries sorted by name, a tree's name
  // compared as if it ended in '/'; "<mode> <name>\0<20-byte id>".
  static bool git_order(const TreeEntry* a, const TreeEntry* b) { return detail::git_entry_less(*a, *b); }

  Result<Oid> hash_tree(const Tree& tree) {
    std::vector<const TreeEntry*> sorted;
    sorted.reserve(tree.size());
    for (const auto& e : tree) sorted.push_back(&e);
    // Entries usually arrive in order (a tree as read, one entry changed):
    // sort only when they do not.
    bool in_order = true;
    for (std::size_t i = 1; i < sorted.size() && in_order; ++i) in_order = git_order(sorted[i - 1], sorted[i]);
    if (!in_order) std::sort(sorted.begin(), sorted.end(), git_order);
    std::string buf;
    buf.reserve(tree.size() * 64);
    for (const auto* e : sorted) {
      if (e->name.empty() || e->name.find('/') != std::string::npos || e->name.find('\0') != std::string::npos)
        return make_error(Errc::store_write, "invalid tree entry name '" + e->name + "'");
      GITLOCKS_TRY(oid, parse_oid(e->oid));
      buf += e->is_tree ? "40000 " : "100644 ";
      buf += e->name;
      buf.push_back('\0');
      buf.append(reinterpret_cast<const char*>(oid.id), GIT_OID_RAWSZ);
    }
    git_oid out;
    if (git_odb_hash(&out, buf.data(), buf.size(), GIT_OBJECT_TREE) != 0)
      return make_error(Errc::store_write, last_git_error("cannot hash tree"));
    return to_oid(out);
  }

  LibGit2 lib_;
  bool hash_only_ = false;
  // diff_tree's cache: raw oid -> (tree, generation of the call that last read it).
  using TreePtr = std::unique_ptr<git_tree, void (*)(git_tree*)>;
  std::unordered_map<std::string, std::pair<TreePtr, std::uint64_t>> diff_cache_;
  std::uint64_t diff_generation_ = 0;
  git_repository* repo_;
  git_odb* odb_;
  git_odb_backend* mempack_;
  bool memory_;
  std::string temp_dir_;
  std::map<std::string, Oid> refs_;
  std::size_t written_ = 0;
  std::size_t reopen_every_ = 0;  // 0: never (memory and pack stores)
  std::vector<std::string> extra_dirs_;
  std::size_t reads_ = 0;
  std::string reopen_error_;
};

}  // namespace

Result<std::unique_ptr<ObjectStore>> open_git_store(const std::string& path,
                                                    const std::vector<std::string>& extra_object_dirs,
                                                    const StoreOptions& options) {
  LibGit2 lib;  // keeps libgit2 initialised while we open
  git_repository* repo = nullptr;
  if (git_repository_open_ext(&repo, path.c_str(), 0, nullptr) != 0)
    return make_error(Errc::store_read, last_git_error(("cannot open repository at " + path).c_str()));
  git_odb* odb = nullptr;
  if (git_repository_odb(&odb, repo) != 0) {
    git_repository_free(repo);
    return make_error(Errc::store_read, last_git_error("cannot open object database"));
  }
  if (auto added = add_object_dirs(odb, extra_object_dirs); !added.ok()) {
    git_odb_free(odb);
    git_repository_free(repo);
    return added.error();
  }
  auto store = std::make_unique<GitStore>(repo, odb, nullptr);
  store->enable_reopen(extra_object_dirs, options.reopen_after_reads);
  return std::unique_ptr<ObjectStore>(std::move(store));
}

Result<std::string> repository_common_dir(const std::string& path) {
  LibGit2 lib;
  git_repository* repo = nullptr;
  if (git_repository_open_ext(&repo, path.c_str(), 0, nullptr) != 0)
    return make_error(Errc::store_read, last_git_error(("cannot open the repository at " + path).c_str()));
  std::string dir = git_repository_commondir(repo);
  git_repository_free(repo);
  return dir;
}

namespace {

// An object database with a writable mempack backend; `pack_index`, when
// given, adds that indexed pack below it (read only).
Result<std::unique_ptr<GitStore>> new_memory_store(const std::string& pack_index, std::string temp_dir) {
  git_odb* odb = nullptr;
  if (git_odb_new(&odb) != 0) return make_error(Errc::store_read, last_git_error("cannot create object database"));
  git_odb_backend* mempack = nullptr;
  if (git_mempack_new(&mempack) != 0 || git_odb_add_backend(odb, mempack, 1000) != 0) {
    git_odb_free(odb);
    return make_error(Errc::store_read, last_git_error("cannot create in-memory object database"));
  }
  if (!pack_index.empty()) {
    git_odb_backend* pack = nullptr;
    if (git_odb_backend_one_pack(&pack, pack_index.c_str()) != 0 || git_odb_add_backend(odb, pack, 1) != 0) {
      git_odb_free(odb);
      return make_error(Errc::store_read, last_git_error("cannot open the indexed pack"));
    }
  }
  git_repository* repo = nullptr;
  if (git_repository_wrap_odb(&repo, odb) != 0) {
    git_odb_free(odb);
    return make_error(Errc::store_read, last_git_error("cannot wrap object database"));
  }
  return std::make_unique<GitStore>(repo, odb, mempack, std::move(temp_dir));
}

struct BundleHeader {
  std::map<std::string, Oid> refs;
  std::string_view pack;
};

bool is_hex40(std::string_view s) { return is_hex(s, GIT_OID_HEXSZ); }

// Git's bundle formats (Documentation/technical/bundle-format.txt): a
// signature line, v3 capabilities ("@key=value"), prerequisites ("-OID ..."),
// references ("OID REFNAME"), an empty line, then the packfile.
Result<BundleHeader> parse_bundle(std::string_view bytes) {
  BundleHeader h;
  if (bytes.substr(0, 4) == "PACK") {
    h.pack = bytes;
    return h;
  }
  constexpr std::string_view kV2 = "# v2 git bundle\n", kV3 = "# v3 git bundle\n";
  const bool v3 = bytes.substr(0, kV3.size()) == kV3;
  if (!v3 && bytes.substr(0, kV2.size()) != kV2)
    return make_error(Errc::unknown_format, "neither a Git bundle (v2 or v3) nor a packfile");
  std::size_t pos = kV2.size();
  for (;;) {
    std::size_t eol = bytes.find('\n', pos);
    if (eol == std::string_view::npos) return make_error(Errc::store_read, "truncated bundle header");
    std::string_view line = bytes.substr(pos, eol - pos);
    pos = eol + 1;
    if (line.empty()) break;
    if (line[0] == '@') {
      if (!v3) return make_error(Errc::store_read, "capability line in a v2 bundle");
      if (line != "@object-format=sha1")
        return make_error(Errc::unknown_format, "unsupported bundle capability '" + std::string(line.substr(1)) + "'");
      continue;
    }
    if (line[0] == '-')
      return make_error(Errc::store_read,
                        "the bundle has prerequisites (an incremental bundle): the history must start at its root");
    std::size_t sp = line.find(' ');
    if (sp == std::string_view::npos || !is_hex40(line.substr(0, sp)) || sp + 1 == line.size())
      return make_error(Errc::store_read, "malformed bundle reference line '" + std::string(line) + "'");
    h.refs[std::string(line.substr(sp + 1))] = *Oid::from_hex(line.substr(0, sp));
  }
  h.pack = bytes.substr(pos);
  if (h.pack.substr(0, 4) != "PACK") return make_error(Errc::store_read, "the bundle carries no packfile");
  return h;
}

}  // namespace

Result<std::unique_ptr<ObjectStore>> open_memory_store() {
  LibGit2 lib;
  GITLOCKS_TRY(store, new_memory_store("", ""));
  return std::unique_ptr<ObjectStore>(std::move(store));
}

// The indexer of a PackStoreBuilder, once the bundle header is known.
struct PackStoreBuilder::Impl {
  LibGit2 lib;
  StoreOptions options;
  std::string head;  // bytes before the pack starts (bundle header), while incomplete
  bool header_done = false;
  std::map<std::string, Oid> refs;
  std::string dir;
  git_indexer* idx = nullptr;
  git_indexer_progress stats{};
  std::uint64_t pack_bytes = 0;
  bool failed = false;

  ~Impl() {
    if (idx) git_indexer_free(idx);
    if (!dir.empty()) {
      std::error_code ec;
      std::filesystem::remove_all(dir, ec);
    }
  }

  Error fail(const std::string& what) {
    failed = true;
    Error e = make_error(Errc::store_read, last_git_error(what.c_str()));
    if (idx) git_indexer_free(idx);
    idx = nullptr;
    std::error_code ec;
    if (!dir.empty()) std::filesystem::remove_all(dir, ec);
    dir.clear();
    return e;
  }

  Status start_indexer() {
    std::error_code ec;
    const std::string& base = options.temp_dir;
    const auto parent = base.empty() ? std::filesystem::temp_directory_path(ec) : std::filesystem::path(base);
    dir = (parent / "gitlocks-pack-XXXXXX").string();
    if (ec || mkdtemp(dir.data()) == nullptr) {
      dir.clear();
      failed = true;
      return make_error(Errc::store_read, "cannot create a temporary directory for the pack index");
    }
    git_indexer_options opts{};
    if (git_indexer_options_init(&opts, GIT_INDEXER_OPTIONS_VERSION) != 0 ||
        git_indexer_new(&idx, dir.c_str(), 0, nullptr, &opts) != 0)
      return fail("cannot start indexing the pack");
    return Ok{};
  }

  // libgit2 1.5's indexer stops at a pack window's end when the input there
  // yields no output yet (git_packfile_stream_read's "need more data"), as
  // if the pack were cut short; a fetch resumes it with its next packet. So
  // the pack goes in in chunks of at most 1 MiB, and once it is all in,
  // empty appends resume the indexer until every object is indexed or no
  // progress is made (finish). (With the 4 MiB windows set above, one
  // append of a whole bundle of 15,000 commits failed with "unexpected data
  // at the end of the pack".)
  Status feed(std::string_view pack) {
    constexpr std::size_t kChunk = std::size_t(1) << 20;
    for (std::size_t at = 0; at < pack.size(); at += kChunk) {
      std::size_t n = std::min(kChunk, pack.size() - at);
      if (git_indexer_append(idx, pack.data() + at, n, &stats) != 0) return fail("cannot index the pack");
      pack_bytes += n;
    }
    return Ok{};
  }
};

PackStoreBuilder::PackStoreBuilder(const StoreOptions& options) : impl_(std::make_unique<Impl>()) {
  impl_->options = options;
}
PackStoreBuilder::~PackStoreBuilder() = default;

Status PackStoreBuilder::append(std::string_view bytes) {
  Impl& b = *impl_;
  if (b.failed) return make_error(Errc::store_read, "the pack store failed earlier");
  if (b.header_done) return b.feed(bytes);
  // The header of a bundle ends at its first empty line; the pack follows.
  // Until then the bytes are kept, and parse_bundle() reads them whole (the
  // same checks and messages as open_pack_store on the whole bundle). Bytes
  // that hold the whole header are read in place, not copied (a whole
  // bundle given at once is not doubled in memory).
  constexpr std::size_t kMaxHeader = std::size_t(64) << 20;
  if (!b.head.empty()) b.head.append(bytes);
  std::string_view head = b.head.empty() ? bytes : std::string_view(b.head);
  std::size_t pack_at = std::string_view::npos;
  if (head.size() >= 4 && head.substr(0, 4) == "PACK") {
    pack_at = 0;
  } else if (std::size_t blank = head.find("\n\n"); blank != std::string_view::npos && head.size() >= blank + 2 + 4) {
    pack_at = blank + 2;
  } else if (head.size() >= 16 && head.substr(0, 16) != "# v2 git bundle\n" &&
             head.substr(0, 16) != "# v3 git bundle\n") {
    b.failed = true;
    return make_error(Errc::unknown_format, "neither a Git bundle (v2 or v3) nor a packfile");
  } else if (head.size() > kMaxHeader) {
    b.failed = true;
    return make_error(Errc::store_read, "the bundle header is longer than 64 MiB");
  }
  if (pack_at == std::string_view::npos) {
    if (b.head.empty()) b.head.assign(bytes);
    return Ok{};
  }
  auto header = parse_bundle(head);
  if (!header.ok()) {
    b.failed = true;
    return header.error();
  }
  b.refs = header->refs;
  b.header_done = true;
  GITLOCKS_CHECK(b.start_indexer());
  if (b.head.empty()) return b.feed(bytes.substr(pack_at));
  std::string rest = std::move(b.head);
  b.head.clear();
  b.head.shrink_to_fit();
  return b.feed(std::string_view(rest).substr(pack_at));
}

std::uint64_t PackStoreBuilder::pack_bytes() const { return impl_->pack_bytes; }

Result<std::unique_ptr<ObjectStore>> PackStoreBuilder::finish() {
  Impl& b = *impl_;
  if (b.failed) return make_error(Errc::store_read, "the pack store failed earlier");
  if (!b.header_done) {
    // Too short to hold a pack: parse_bundle says what is wrong with it.
    auto header = parse_bundle(b.head);
    b.failed = true;
    if (!header.ok()) return header.error();
    return make_error(Errc::store_read, "truncated packfile");
  }
  for (unsigned seen = b.stats.indexed_objects + 1;
       b.stats.indexed_objects < b.stats.total_objects && b.stats.indexed_objects != seen;) {
    seen = b.stats.indexed_objects;
    if (git_indexer_append(b.idx, "", 0, &b.stats) != 0) return b.fail("cannot index the pack");
  }
  if (git_indexer_commit(b.idx, &b.stats) != 0) return b.fail("cannot index the pack");
  std::string index = b.dir + "/pack-" + git_indexer_name(b.idx) + ".idx";
  git_indexer_free(b.idx);
  b.idx = nullptr;
  b.failed = true;  // finished: the builder is spent
  auto store = new_memory_store(index, b.dir);
  if (!store.ok()) return store.error();  // ~Impl removes the directory
  b.dir.clear();                          // the store owns it now
  for (const auto& [name, target] : b.refs) GITLOCKS_CHECK((*store)->set_ref(name, target));
  return std::unique_ptr<ObjectStore>(std::move(store).value());
}

Result<std::unique_ptr<ObjectStore>> open_pack_store(std::string_view bytes, const StoreOptions& options) {
  PackStoreBuilder builder(options);
  GITLOCKS_CHECK(builder.append(bytes));
  return builder.finish();
}

Result<std::string> memory_store_pack(ObjectStore& store) {
  auto* g = dynamic_cast<GitStore*>(&store);
  if (!g) return make_error(Errc::store_read, "not a memory store");
  return g->dump_pack();
}

Status memory_store_set_ref(ObjectStore& store, std::string_view name, const Oid& target) {
  auto* g = dynamic_cast<GitStore*>(&store);
  if (!g) return make_error(Errc::store_write, "not a memory store");
  return g->set_ref(name, target);
}

void set_library_options(const LibraryOptions& options) { library_options() = options; }

}  // namespace gitlocks
