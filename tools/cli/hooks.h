// hooks.h — what the hook commands share: Git's hooks (cmd_hook.cpp) and
// an agent host's pre-edit hook (cmd_agent_hook.cpp).
#pragma once

#include <string>

#include "cli.h"

namespace gitlocks::cli {

// `s` quoted for sh: '...' with every ' written as '\''.
std::string shell_quote(const std::string& s);

// The absolute path of this git-locks binary (/proc/self/exe), which an
// installed hook runs; "git-locks" when it cannot be read.
std::string self_path();

// hook install --agent NAME [--force] [--ttl DUR]: the agent host's own
// pre-edit hook, merged into its settings (docs/CLI.md "Claim on first
// edit"); `a` is the parsed command line of `hook install`, `exe` the
// binary the hook runs. Returns the exit status.
int install_agent_hook(Context& ctx, const Parsed& a, const std::string& exe);

}  // namespace gitlocks::cli
