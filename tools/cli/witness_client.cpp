// The clients of witnesses (witness.h): the required witnesses from git
// config, their newest cosignatures, and cosigning a checkpoint.
#include <httplib.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>

#include "gitlocks/hex.hpp"
#include "gitlocks/replay.hpp"
#include "gitlocks/state.hpp"
#include "gitlocks/trust.hpp"
#include "notary_client.h"
#include "witness.h"

namespace gitlocks::cli {
namespace {

std::unique_ptr<httplib::Client> client(const WitnessConfig& config, const WitnessEndpoint& w) {
  auto c = std::make_unique<httplib::Client>(w.url);
  c->set_connection_timeout(std::chrono::milliseconds(config.connect_timeout_ms));
  c->set_read_timeout(std::chrono::milliseconds(config.read_timeout_ms));
  c->set_write_timeout(std::chrono::milliseconds(config.read_timeout_ms));
  return c;
}

// The witness's error object ({"error","detail",...}), or one made of the
// raw body.
json error_body(const httplib::Result& res) {
  json e = json::parse(res->body, nullptr, false);
  if (e.is_object() && e.contains("error")) return e;
  return {{"error", "http-" + std::to_string(res->status)}, {"detail", res->body.substr(0, 400)}};
}

// A cosignature a witness sent, opened and checked against what it must say.
Result<Cosignature> checked_cosignature(const WitnessEndpoint& w, const std::string& text, const std::string& store_id,
                                        const std::optional<Oid>& checkpoint) {
  GITLOCKS_TRY(c, open_cosignature(text));
  if (c.witness != w.key)
    return make_error(Errc::bad_signature, "witness " + w.url + " answered with a cosignature by " + c.witness +
                                               ", not by its pinned key " + w.key);
  if (c.store != store_id)
    return make_error(Errc::bad_signature, "witness " + w.url + " answered with a cosignature of store " + c.store);
  if (checkpoint && c.checkpoint != checkpoint->hex())
    return make_error(Errc::bad_signature, "witness " + w.url + " cosigned " + c.checkpoint + ", not " + *checkpoint);
  return c;
}

// What a witness says of `store_id` (GET /v1/checkpoint): `error` empty
// when it answered, with `checkpoint` the newest it cosigned (nullopt:
// none yet); else "unreachable", "http-error" or "bad-cosignature".
struct Latest {
  std::optional<Oid> checkpoint;
  std::string error;
  std::string detail;
};

Latest latest_cosigned(const WitnessConfig& config, const WitnessEndpoint& w, const std::string& store_id) {
  auto res = client(config, w)->Get("/v1/checkpoint?store=" + store_id);
  if (!res) return {std::nullopt, "unreachable", "unreachable (" + httplib::to_string(res.error()) + ")"};
  if (res->status == 404) return {};  // it has cosigned nothing for this store
  if (res->status != 200)
    return {std::nullopt, "http-error", "HTTP " + std::to_string(res->status) + " " + error_body(res).dump()};
  auto c = checked_cosignature(w, res->body, store_id, std::nullopt);
  if (!c.ok()) return {std::nullopt, "bad-cosignature", c.error().message};
  return {Oid::from_hex(c->checkpoint), "", ""};
}

}  // namespace

Result<WitnessConfig> witness_config(Context& ctx) {
  WitnessConfig config;
  for (const std::string& item : ctx.config_list("locks.witnesses")) {
    const auto at = item.find('@');
    WitnessEndpoint w;
    if (at != std::string::npos) {
      w.key = item.substr(0, at);
      w.url = item.substr(at + 1);
    }
    std::transform(w.key.begin(), w.key.end(), w.key.begin(), [](unsigned char c) { return std::tolower(c); });
    while (w.url.size() > 7 && w.url.back() == '/') w.url.pop_back();
    if (!is_hex(w.key, 64) || w.url.rfind("http://", 0) != 0 || w.url.size() <= 7)
      return make_error(Errc::usage,
                        "git config locks.witnesses lists witnesses as KEY@http://HOST:PORT (KEY: its "
                        "64-hex-digit public key), separated by spaces or commas, not '" +
                            item + "'");
    for (const auto& other : config.witnesses)
      if (other.key == w.key) return make_error(Errc::usage, "git config locks.witnesses lists " + w.key + " twice");
    config.witnesses.push_back(std::move(w));
  }
  config.quorum = config.witnesses.size();
  const std::string quorum = ctx.config("locks.witnessquorum");
  if (!quorum.empty()) {
    auto k = parse_count(quorum, "locks.witnessQuorum");
    if (!k.ok() || *k < 1 || static_cast<std::size_t>(*k) > config.witnesses.size())
      return make_error(Errc::usage, "git config locks.witnessQuorum must be a count from 1 to the " +
                                         std::to_string(config.witnesses.size()) +
                                         " witnesses locks.witnesses lists, not '" + quorum + "'");
    config.quorum = static_cast<std::size_t>(*k);
  }
  GITLOCKS_TRY(timeouts, http_timeouts(ctx));
  config.connect_timeout_ms = timeouts.first;
  config.read_timeout_ms = timeouts.second;
  return config;
}

Result<std::vector<Oid>> witnessed_checkpoints(const WitnessConfig& config, const std::string& store_id) {
  std::vector<Oid> out;
  std::size_t answered = 0;
  std::string failures;
  for (const auto& w : config.witnesses) {
    const Latest latest = latest_cosigned(config, w, store_id);
    if (!latest.error.empty()) {
      failures += (failures.empty() ? "" : "; ") + w.url + ": " + latest.detail;
      continue;
    }
    ++answered;  // with nothing cosigned for this store: no conflict to find
    if (latest.checkpoint) out.push_back(*latest.checkpoint);
  }
  if (answered < config.quorum)
    return make_error(Errc::store_read, std::to_string(answered) +
                                            " of the witnesses this clone requires answered, fewer than its " +
                                            "quorum of " + std::to_string(config.quorum) +
                                            " (git config locks.witnessQuorum): " + failures + "; nothing was done")
        .because(reason::witness_quorum);
  return out;
}

Result<Witnessed> witnesses_on_chain(Context& ctx, ObjectStore& store, std::optional<Oid>& tip) {
  GITLOCKS_TRY(config, witness_config(ctx));
  if (config.witnesses.empty() || !tip) return Witnessed{};
  // The store the tip names (unverified: only which one to ask about; the
  // verification that follows establishes it).
  const std::optional<Policy> named = recorded_policy(store, *tip);
  if (!named) return Witnessed{};
  GITLOCKS_TRY(cosigned, witnessed_checkpoints(config, named->store));
  auto checked = check_cosigned(store, *tip, cosigned);
  if (!checked.ok() && checked.error().fields.count("archived")) {
    const auto prev = Oid::from_hex(checked.error().fields.at("archived").text());
    GITLOCKS_TRY(fetched, ctx.fetch_archive(prev));
    if (fetched) checked = check_cosigned(store, *tip, cosigned);
  }
  if (!checked.ok()) {
    // A witness may have cosigned after this clone read the tip.
    GITLOCKS_TRY(fresh, ctx.read_tip());
    if (fresh && fresh != tip) {
      tip = fresh;
      checked = check_cosigned(store, *tip, cosigned);
    }
  }
  GITLOCKS_CHECK(checked);
  return Witnessed{std::move(cosigned), config.quorum};
}

json cosign_everywhere(Context& ctx, const WitnessConfig& config, const std::string& store_id, const Oid& checkpoint) {
  json out = json::array();
  auto remote = ctx.remote();
  // A remote store's archives (the history before its cuts), for chains
  // that cross a cut since a witness's last cosigned checkpoint.
  (void)ctx.fetch_archive(std::nullopt);
  // Each witness's bundle: the checkpoint (under a temporary ref, bundles
  // name refs) and every archive this clone has, less what the witness has.
  const std::string temp_ref = "refs/locks/witness-cosign";
  std::vector<std::string> refs = {temp_ref};
  const std::string archives =
      remote.ok() && *remote ? "refs/locks/remotes/" + **remote + "/archive/" : std::string(kArchivePrefix);
  if (auto listed = ctx.git().run({"for-each-ref", "--format=%(refname)", archives});
      listed.ok() && listed->status == 0) {
    std::istringstream lines(listed->out);
    for (std::string ref; std::getline(lines, ref);)
      if (!ref.empty()) refs.push_back(ref);
  }
  auto made = ctx.git().run({"update-ref", "--no-deref", temp_ref, checkpoint.hex()});
  auto store = ctx.store();
  for (const auto& w : config.witnesses) {
    json entry = {{"witness", w.key}, {"url", w.url}};
    auto fail = [&](const std::string& code, const std::string& detail) {
      entry["cosigned"] = false;
      entry["error"] = code;
      entry["detail"] = detail;
      out.push_back(entry);
    };
    // The chain since the checkpoint it cosigned last (all of it the first
    // time, or when it answered with an HTTP error).
    const Latest latest = latest_cosigned(config, w, store_id);
    if (latest.error == "unreachable" || latest.error == "bad-cosignature") {
      fail(latest.error, latest.error == "unreachable" ? "witness " + w.url + " is " + latest.detail : latest.detail);
      continue;
    }
    const std::optional<Oid>& last = latest.checkpoint;
    if (last == checkpoint) {  // cosigned already
      entry["cosigned"] = true;
      out.push_back(entry);
      continue;
    }
    std::vector<std::string> args = {"bundle", "create", "--quiet", "-"};
    args.insert(args.end(), refs.begin(), refs.end());
    if (last && store.ok() && (*store)->read_commit(*last).ok()) args.push_back("^" + last->hex());
    auto bundle = ctx.git().run(args);
    if (!made.ok() || made->status != 0 || !bundle.ok() || bundle->status != 0) {
      fail("bundle", "cannot bundle the chain to " + checkpoint.hex() + ": " +
                         (bundle.ok() ? bundle->err : bundle.error().message));
      continue;
    }
    auto res =
        client(config, w)->Post("/v1/cosign?checkpoint=" + checkpoint.hex(), bundle->out, "application/x-git-bundle");
    if (!res) {
      fail("unreachable", "witness " + w.url + " did not answer (" + httplib::to_string(res.error()) + ")");
      continue;
    }
    if (res->status != 200) {
      json e = error_body(res);
      if (e.contains("cosigned")) entry["cosigned_before"] = e["cosigned"];
      fail(e.value("error", "http-error"), e.value("detail", res->body));
      continue;
    }
    auto cs = checked_cosignature(w, res->body, store_id, checkpoint);
    if (!cs.ok()) {
      fail("bad-cosignature", cs.error().message);
      continue;
    }
    entry["cosigned"] = true;
    out.push_back(entry);
  }
  (void)ctx.git().run({"update-ref", "-d", temp_ref});
  return out;
}

json cosign_if_required(Context& ctx, const std::string& store_id, const Oid& checkpoint) {
  auto config = witness_config(ctx);
  if (!config.ok() || config->witnesses.empty()) return nullptr;
  return cosign_everywhere(ctx, *config, store_id, checkpoint);
}

}  // namespace gitlocks::cli
