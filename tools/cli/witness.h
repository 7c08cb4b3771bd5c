// witness.h — witnesses against split views (docs/FORMAT.md "Witnesses",
// docs/WITNESS.md): the service (`git-locks witness serve`) and its clients.
//
// A witness keeps, per store, the newest checkpoint it cosigned and the
// verified trust state there. POST /v1/cosign?checkpoint=C brings a Git
// bundle with the chain from that checkpoint to C (the whole history the
// first time); the witness verifies it with the core's verifier from its
// own trust state (verified_snapshot), refuses a C that does not extend
// the checkpoint it cosigned last (409 split-view, both commits named), and
// otherwise signs a cosignature of C (attest.hpp make_cosignature).
// GET /v1/checkpoint?store=S answers with the newest cosignature for S.
//
// Clients list the witnesses they require in `git config locks.witnesses`
// ("KEY@http://HOST:PORT", separated by spaces or commas) and how many must
// answer in `locks.witnessQuorum` (default: all of them). Every command
// that verifies the history asks each witness for its newest cosignature
// and refuses a tip whose chain does not hold it (split-view); a fresh
// clone may start at a checkpoint the quorum cosigned.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "cli.h"
#include "gitlocks/attest.hpp"

namespace gitlocks::cli {

struct WitnessEndpoint {
  std::string key;  // 64 hex: its cosignatures must be signed by this key
  std::string url;  // http://HOST:PORT
};

struct WitnessConfig {
  std::vector<WitnessEndpoint> witnesses;  // empty: none required
  std::size_t quorum = 0;                  // how many must answer (1..witnesses.size())
  std::int64_t connect_timeout_ms = 3000;
  std::int64_t read_timeout_ms = 10000;
};

// `git config locks.witnesses` and `locks.witnessQuorum` (and the notary's
// timeouts, locks.notaryConnectTimeout|ReadTimeout). Errors: usage.
Result<WitnessConfig> witness_config(Context& ctx);

// What the required witnesses say of `store_id` whose chain ends at `tip`:
// the newest checkpoint each cosigned (signature verified under its pinned
// key, naming this store). Errors: store_read when fewer than the quorum
// answered (unreachable, an error, a bad cosignature: each named).
Result<std::vector<Oid>> witnessed_checkpoints(const WitnessConfig& config, const std::string& store_id);

// What the witnesses this clone requires vouch for, checked against the
// chain ending at `tip` (the core's check_cosigned): every newest
// cosignature they give must be on it. A checkpoint not found is looked
// for again once, in the history before the chain's cut (the archive,
// fetched) and on a freshly read tip (which `tip` becomes). No witnesses
// configured: nothing, and no network. Errors: invalid_history (verdict
// split-view: "cosigned" and the tip named), store_read (witness-quorum).
struct Witnessed {
  std::vector<Oid> cosigned;
  std::size_t quorum = 0;
};
Result<Witnessed> witnesses_on_chain(Context& ctx, ObjectStore& store, std::optional<Oid>& tip);

// `git-locks witness cosign`: asks every required witness to cosign
// `checkpoint` (a checkpoint on the verified chain of this clone), sending
// the chain since the checkpoint it cosigned last. One JSON object per
// witness: {"witness","url","cosigned":true} or {"witness","url","error",
// "detail"[,"cosigned_before"]}.
json cosign_everywhere(Context& ctx, const WitnessConfig& config, const std::string& store_id, const Oid& checkpoint);

// The largest request body `witness serve --max-request-bytes` accepts (a
// first cosignature brings the whole history since the newest cut).
inline constexpr std::size_t kWitnessDefaultMaxRequest = 256u * 1024 * 1024;
inline constexpr std::size_t kWitnessMaxRequestLimit = std::size_t{4096} * 1024 * 1024;

// After a checkpoint is published: cosign_everywhere when this clone
// requires witnesses (null when it requires none, or its configuration is
// unusable: the publication stands either way).
json cosign_if_required(Context& ctx, const std::string& store_id, const Oid& checkpoint);

// `git-locks witness serve` flags, checked (docs/WITNESS.md).
struct WitnessServeConfig {
  std::string key_path;
  std::string state_dir;
  std::string listen;
  bool allow_remote = false;
  bool allow_test_clock = false;  // accept a notary's test-clock attestations in what it verifies (tests)
  // The store owners it serves (--owner, repeatable; empty: any store, its
  // owner trusted on first use as a fresh clone's is).
  std::vector<std::string> owners;
  std::size_t max_request_bytes = kWitnessDefaultMaxRequest;
};
int witness_serve(const WitnessServeConfig& config);

}  // namespace gitlocks::cli
