// migrate: offline migration of the store layout, format 1 -> 2
// (docs/FORMAT.md "Format versions and migration"). Published like any
// writer, through publish(): the same compare-and-swap, replans and ref-lock
// retries (seed 000). An unknown format version is refused, never guessed; a
// store already in the current format is left alone.
#include "cli.h"
#include "gitlocks/state.hpp"
#include "publish.h"

namespace gitlocks::cli {

int cmd_migrate(Context& ctx, const Argv& argv) {
  auto a = ctx.parse(argv);
  if (!a.ok()) return ctx.fail(a.error());
  auto me = ctx.identity();
  if (!me.ok()) return ctx.fail(me.error());
  auto p = publish(ctx, "migrate", [&](const Snapshot& snap, std::int64_t) -> Result<std::optional<json>> {
    GITLOCKS_CHECK(require_store(ctx, snap));
    if (snap.format == 2) return std::optional<json>{};
    if (snap.format != 1)
      return make_error(Errc::unknown_format, "no migration from store format " + std::to_string(snap.format));
    return std::optional<json>{
        json{{"migrate", {{"from", std::string(kStateFormatV1)}, {"to", std::string(kStateFormat)}}}}};
  });
  if (!p.ok()) return ctx.fail(p.error());
  if (!p->candidate) {
    const Snapshot& s = p->source;
    return ctx.done(
        {{"op", "migrate"}, {"migrated", false}, {"format", std::string(kStateFormat)}, {"commit", *s.commit}},
        "the store is already in the current format (" + std::string(kStateFormat) + "); nothing written");
  }
  const Candidate& c = *p->candidate;
  return ctx.done({{"op", "migrate"},
                   {"migrated", true},
                   {"from", std::string(kStateFormatV1)},
                   {"to", std::string(kStateFormat)},
                   {"commit", c.commit},
                   {"attempts", ctx.attempts.value_or(0)}},
                  "migrated the store from " + std::string(kStateFormatV1) + " to " + std::string(kStateFormat) +
                      " (refs/locks/state -> " + c.commit.hex().substr(0, 12) + ")");
}

}  // namespace gitlocks::cli
