#include "tree_edit.h"

#include <algorithm>

namespace gitlocks::detail {
namespace {

using Iter = TreeUpdates::const_iterator;

// Applies updates [begin, end), all sharing the first `depth` components.
Result<std::optional<Oid>> apply_level(ObjectStore& store, const std::optional<Oid>& root, Iter begin, Iter end,
                                       std::size_t depth) {
  Tree entries;
  if (root) {
    GITLOCKS_TRY(t, store.read_tree(*root));
    entries = std::move(t);
  }
  auto find = [&](const std::string& name) {
    return std::find_if(entries.begin(), entries.end(), [&](const TreeEntry& e) { return e.name == name; });
  };
  for (Iter it = begin; it != end;) {
    const std::string& name = it->first[depth];
    Iter group_end = it;
    while (group_end != end && group_end->first[depth] == name) ++group_end;
    auto existing = find(name);
    if (it->first.size() == depth + 1) {
      // A leaf update; a path that is both a leaf and a prefix is a caller bug.
      if (std::next(it) != group_end)
        return make_error(Errc::store_write, "conflicting tree updates at '" + name + "'");
      if (existing != entries.end() && existing->is_tree)
        return make_error(Errc::store_write, "'" + name + "' is a tree, not a blob");
      if (it->second) {
        if (existing != entries.end()) existing->oid = *it->second;
        else entries.push_back({name, false, *it->second});
      } else if (existing != entries.end()) {
        entries.erase(existing);
      }
    } else {
      std::optional<Oid> sub;
      if (existing != entries.end()) {
        if (!existing->is_tree) return make_error(Errc::store_write, "'" + name + "' is a blob, not a tree");
        sub = existing->oid;
      }
      GITLOCKS_TRY(child, apply_level(store, sub, it, group_end, depth + 1));
      existing = find(name);
      if (child) {
        if (existing != entries.end()) existing->oid = *child;
        else entries.push_back({name, true, *child});
      } else if (existing != entries.end()) {
        entries.erase(existing);
      }
    }
    it = group_end;
  }
  if (entries.empty()) return std::optional<Oid>{};
  GITLOCKS_TRY(id, store.write_tree_owned(std::move(entries)));
  return std::optional<Oid>{id};
}

}  // namespace

bool git_entry_less(const TreeEntry& a, const TreeEntry& b) {
  // Without building name + "/" (this runs for every entry of every
  // re-planned tree).
  const std::string& x = a.name;
  const std::string& y = b.name;
  const std::size_t nx = x.size() + (a.is_tree ? 1 : 0);
  const std::size_t ny = y.size() + (b.is_tree ? 1 : 0);
  const std::size_t n = std::min(nx, ny);
  for (std::size_t i = 0; i < n; ++i) {
    const auto cx = static_cast<unsigned char>(i < x.size() ? x[i] : '/');
    const auto cy = static_cast<unsigned char>(i < y.size() ? y[i] : '/');
    if (cx != cy) return cx < cy;
  }
  return nx < ny;
}

Result<std::optional<Oid>> tree_apply(ObjectStore& store, const std::optional<Oid>& root, const TreeUpdates& updates) {
  for (const auto& [path, _] : updates)
    if (path.empty()) return make_error(Errc::store_write, "empty tree path");
  if (updates.empty()) return root;
  return apply_level(store, root, updates.begin(), updates.end(), 0);
}

}  // namespace gitlocks::detail
