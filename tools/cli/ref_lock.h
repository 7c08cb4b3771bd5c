// ref_lock.h — what this machine can see of refs/locks/state.lock (seed 000:
// recovering an abandoned lock requires establishing that its writer has
// stopped). The core grades what is seen (gitlocks/doctor.hpp,
// ref_lock_finding); this looks: the file's age from its mtime against the
// system clock, and on Linux every process whose open files include it.
// It only reads; nothing is ever removed.
#pragma once

#include <filesystem>
#include <optional>

#include "gitlocks/doctor.hpp"

namespace gitlocks::cli {

// The lock of refs/locks/state in `common_dir` (refs live in the common git
// dir, shared by linked worktrees), or nullopt when there is none.
std::optional<RefLockObservation> observe_ref_lock(const std::filesystem::path& common_dir);

}  // namespace gitlocks::cli
