// notary keygen|serve: the trusted-time notary (tools/notary, docs/NOTARY.md).
// The words after "notary" go to the notary library unchanged; it prints its
// own output and errors and returns the exit status.
#include "cli.h"
#include "notary.h"

namespace gitlocks::cli {

int cmd_notary(Context& ctx, const Argv& argv) {
  std::vector<std::string> args;
  args.push_back(ctx.op.substr(ctx.op.find(' ') + 1));  // "keygen" or "serve"
  args.insert(args.end(), argv.begin(), argv.end());
  return gitlocks::notary::notary_command(args);
}

}  // namespace gitlocks::cli
