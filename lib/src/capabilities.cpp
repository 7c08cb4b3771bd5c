#include "gitlocks/capabilities.hpp"

#include <string>

namespace gitlocks {

std::string_view capability_name(Capability c) {
  switch (c) {
    case Capability::owner_guard_time_enable:
      return "owner_guard_time_enable";
    case Capability::private_time_add_guard_windows:
      return "private_time_add_guard_windows";
    case Capability::owner_guard_time_migrate:
      return "owner_guard_time_migrate";
    case Capability::owner_checkpoint:
      return "owner_checkpoint";
    case Capability::policy_checkpoints:
      return "policy_checkpoints";
    case Capability::witness_cosignatures:
      return "witness_cosignatures";
    case Capability::lease_handoff:
      return "lease_handoff";
    case Capability::lease_intent:
      return "lease_intent";
    case Capability::lease_queue:
      return "lease_queue";
  }
  return "";
}

const std::vector<Capability>& capabilities() {
  static const std::vector<Capability> all = {Capability::owner_guard_time_enable,
                                              Capability::private_time_add_guard_windows,
                                              Capability::owner_guard_time_migrate,
                                              Capability::owner_checkpoint,
                                              Capability::policy_checkpoints,
                                              Capability::witness_cosignatures,
                                              Capability::lease_handoff,
                                              Capability::lease_intent,
                                              Capability::lease_queue};
  return all;
}

json capabilities_json() {
  json names = json::array();
  for (Capability c : capabilities()) names.push_back(std::string(capability_name(c)));
  return json{{"capabilities", std::move(names)}, {"format", std::string(kCapabilitiesFormat)}};
}

}  // namespace gitlocks
