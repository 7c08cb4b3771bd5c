// Forgeries of a signed JSON document for adversarial tests: every value,
// at any depth, removed or replaced by a value of another type.
#pragma once

#include <doctest/doctest.h>

#include <functional>
#include <string>

#include "gitlocks/canon.hpp"
#include "gitlocks/plan.hpp"

namespace gitlocks::test {

// Each variant of `body` with one value (at any depth) removed or replaced
// by a value of another type.
inline void for_each_forgery(const json& body, const std::function<void(const std::string&, const json&)>& fn) {
  const json others[] = {nullptr, 0, -1, 9007199254740991LL, "x", json::array(), json::object(), true};
  std::function<void(const json::json_pointer&)> walk = [&](const json::json_pointer& at) {
    const json& v = body.at(at);
    if (!at.empty()) {
      json dropped = body;
      json& parent = dropped.at(at.parent_pointer());
      if (parent.is_array()) parent.erase(static_cast<std::size_t>(std::stoul(at.back())));
      else parent.erase(at.back());
      fn("drop " + at.to_string(), dropped);
      for (const json& o : others) {
        if (o == v) continue;
        json changed = body;
        changed.at(at) = o;
        fn("set " + at.to_string() + " = " + o.dump(), changed);
      }
    }
    if (v.is_object())
      for (const auto& [k, _] : v.items()) walk(at / k);
    if (v.is_array())
      for (std::size_t i = 0; i < v.size(); ++i) walk(at / i);
  };
  walk(json::json_pointer());
}

// Replays `body` as signed (it must be admitted) and then each forgery of
// it on `source`: each is planned or refused for a fault of the body, never
// of the store. Counts forgeries and refusals.
inline void replay_forgeries(ObjectStore& objects, const Oid& source, const PlanContext& ctx, const json& body,
                             std::size_t& forgeries, std::size_t& refused) {
  auto original = plan(objects, source, ctx, body);
  REQUIRE_MESSAGE(original.ok(), (original.ok() ? "" : original.error().message));  // the body as signed replays
  for_each_forgery(body, [&](const std::string& how, const json& forged) {
    CAPTURE(how);
    ++forgeries;
    auto r = plan(objects, source, ctx, forged);
    if (r.ok()) return;
    ++refused;
    CHECK(r.error().code != Errc::store_read);
    CHECK(r.error().code != Errc::store_write);
    CHECK(r.error().code != Errc::invalid_history);
    CHECK_FALSE(r.error().message.empty());
  });
}

}  // namespace gitlocks::test
