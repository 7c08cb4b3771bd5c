// gitlocks-notary-test — `notary keygen|serve` as a stand-alone program, for
// the notary test suite until `git-locks notary` wraps the same entry point.
#include <signal.h>

#include <string>
#include <vector>

#include "notary.h"

int main(int argc, char** argv) {
  ::signal(SIGPIPE, SIG_IGN);  // as git-locks does: a closed stdout is not a crash
  return gitlocks::notary::notary_command(std::vector<std::string>(argv + 1, argv + argc));
}
