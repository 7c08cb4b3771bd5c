// hooks.h — what the hook commands share.
#pragma once

#include <string>

namespace gitlocks::cli {

// `s` quoted for sh: '...' with every ' written as '\''.
std::string shell_quote(const std::string& s);

// The absolute path of this git-locks binary (/proc/self/exe), which an
// installed hook runs; "git-locks" when it cannot be read.
std::string self_path();

}  // namespace gitlocks::cli
