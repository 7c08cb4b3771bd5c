// capabilities [--json]: what this build's core can do, by name
// (gitlocks/capabilities.hpp, seed 002). Human: one name per line; --json:
// the core's report, the same bytes as the npm module's capabilities().
// Needs no repository and no key.
#include "cli.h"
#include "gitlocks/capabilities.hpp"

namespace gitlocks::cli {

int cmd_capabilities(Context& ctx, const Argv& argv) {
  auto a = ctx.parse(argv);
  if (!a.ok()) return ctx.fail(a.error());
  std::string human;
  for (Capability c : capabilities()) human += std::string(capability_name(c)) + "\n";
  return ctx.done(capabilities_json(), human);
}

}  // namespace gitlocks::cli
