// witness keygen|serve|cosign (witness.h, docs/WITNESS.md): a witness's key
// and service, and a client asking the witnesses it requires to cosign the
// newest checkpoint of its store.
#include <algorithm>

#include "checkpoint.h"
#include "cli.h"
#include "gitlocks/hex.hpp"
#include "gitlocks/state.hpp"
#include "gitlocks/trust.hpp"
#include "notary.h"
#include "publish.h"
#include "witness.h"

namespace gitlocks::cli {

int cmd_witness_keygen(Context& ctx, const Argv& argv) {
  auto a = ctx.parse(argv);
  if (!a.ok()) return ctx.fail(a.error());
  const std::string out = *a->value("out");
  std::string error, key;
  const int rc = notary::notary_keygen(out, error, &key);
  if (rc != notary::kExitOk)
    return ctx.fail(make_error(rc == notary::kExitUsage ? Errc::usage : Errc::store_write, error));
  return ctx.done({{"op", ctx.op}, {"key_file", out}, {"witness_key", key}},
                  "wrote witness key " + out + " (public key " + key + ")");
}

int cmd_witness_serve(Context& ctx, const Argv& argv) {
  auto a = ctx.parse(argv);
  if (!a.ok()) return ctx.fail(a.error());
  WitnessServeConfig c;
  // `witness serve --key FILE`, as `notary serve` takes it, names the
  // witness key too (the global --key: a witness's identity is its key).
  c.key_path = a->value("witness-key").value_or(ctx.key_flag.value_or(""));
  if (c.key_path.empty())
    return ctx.fail(make_error(Errc::usage, "witness serve needs --witness-key FILE (a key from witness keygen)"));
  c.state_dir = *a->value("state");
  c.listen = *a->value("listen");
  c.allow_remote = a->has("allow-remote");
  c.allow_test_clock = ctx.allow_test_clock;
  for (const auto& o : a->values("owner")) {
    std::string k = o;
    std::transform(k.begin(), k.end(), k.begin(), [](unsigned char ch) { return std::tolower(ch); });
    if (!is_hex(k, 64)) return ctx.fail(make_error(Errc::usage, "--owner takes a store owner's public key (64 hex)"));
    c.owners.push_back(k);
  }
  if (auto n = a->value("max-request-bytes")) {
    auto v = parse_count(*n, "--max-request-bytes");
    if (!v.ok()) return ctx.fail(v.error());
    c.max_request_bytes = static_cast<std::size_t>(*v);
  }
  return witness_serve(c);
}

int cmd_witness_cosign(Context& ctx, const Argv& argv) {
  auto a = ctx.parse(argv);
  if (!a.ok()) return ctx.fail(a.error());
  auto config = witness_config(ctx);
  if (!config.ok()) return ctx.fail(config.error());
  if (config->witnesses.empty())
    return ctx.fail(make_error(Errc::usage,
                               "no witnesses: list them in git config locks.witnesses "
                               "(KEY@http://HOST:PORT, separated by spaces or commas)"));
  auto snap = current_snapshot(ctx);
  if (!snap.ok()) return ctx.fail(snap.error());
  if (auto s = require_store(ctx, *snap); !s.ok()) return ctx.fail(s.error());
  auto store = ctx.store();
  if (!store.ok()) return ctx.fail(store.error());
  // The newest checkpoint on the verified chain, within a fresh start's reach.
  std::optional<Oid> newest;
  auto since = commits_since_checkpoint(**store, *snap->commit, kCheckpointSearchCommits, &newest);
  if (!since.ok()) return ctx.fail(since.error());
  if (!newest)
    return ctx.fail(make_error(Errc::usage, "no checkpoint to cosign within " +
                                                std::to_string(kCheckpointSearchCommits) +
                                                " commits of the tip: publish one first (git-locks checkpoint)"));
  json results = cosign_everywhere(ctx, *config, snap->store_id, *newest);
  std::size_t cosigned = 0;
  std::string human;
  for (const auto& r : results) {
    if (r.value("cosigned", false)) ++cosigned;
    human += r["url"].get<std::string>() + ": " +
             (r.value("cosigned", false) ? std::string("cosigned")
                                         : r["error"].get<std::string>() + ": " + r["detail"].get<std::string>()) +
             "\n";
  }
  for (const auto& r : results)
    if (r.value("error", "") == "split-view") {
      Error e = make_error(Errc::invalid_history, "witness " + r["url"].get<std::string>() +
                                                      " refused to cosign: " + r["detail"].get<std::string>() +
                                                      " (a split view); nothing was cosigned there");
      e.fields = {{"commit", newest->hex()},
                  {"verdict", "split-view"},
                  {"cosigned", r.value("cosigned_before", "")},
                  {"witness", r["witness"].get<std::string>()},
                  {"last_valid", ""}};
      return ctx.fail(e);
    }
  if (cosigned < config->quorum)
    return ctx.fail(
        make_error(Errc::store_write, std::to_string(cosigned) + " of " + std::to_string(config->witnesses.size()) +
                                          " witnesses cosigned checkpoint " + newest->hex() +
                                          ", fewer than the quorum of " + std::to_string(config->quorum) + ": " + human)
            .because(reason::witness_quorum));
  return ctx.done({{"op", ctx.op}, {"checkpoint", *newest}, {"cosigned", cosigned}, {"witnesses", results}},
                  human + "checkpoint " + newest->hex().substr(0, 12) + " cosigned by " + std::to_string(cosigned) +
                      " witness(es)");
}

}  // namespace gitlocks::cli
