// Minimal rewriting of a Git tree: apply path -> blob updates (or removals)
// and write only the trees on the changed paths.
#pragma once

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "gitlocks/store.hpp"

namespace gitlocks::detail {

using TreePath = std::vector<std::string>;
// nullopt removes the entry; empty trees disappear.
using TreeUpdates = std::map<TreePath, std::optional<Oid>>;

// Git's order of tree entries: by name, a tree's name compared as if it
// ended in '/'.
bool git_entry_less(const TreeEntry& a, const TreeEntry& b);

// Returns the new root id; nullopt when the result is empty.
Result<std::optional<Oid>> tree_apply(ObjectStore& store, const std::optional<Oid>& root, const TreeUpdates& updates);

}  // namespace gitlocks::detail
