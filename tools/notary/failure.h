// failure.h — why the notary refuses to start: a stable code for the JSON
// error line and the exit status, plus a message.
#pragma once

#include <string>

#include "notary.h"

namespace gitlocks::notary {

struct StartFailure {
  std::string code;    // e.g. "key-permissions", "state-corrupt"
  std::string detail;  // one line for the operator
  int exit_status = kExitFailure;
};

}  // namespace gitlocks::notary
