// `git-locks witness serve` (witness.h, docs/WITNESS.md): verifies the
// chain a client sends with the core's verifier, from the checkpoint it
// cosigned last for that store, and cosigns only a checkpoint that extends it.
//
//   DIR/lock               flock()ed while a witness serves from DIR
//   DIR/repo.git           a bare repository: the objects of every chain verified
//                          (refs/witness/STORE keeps the newest cosigned reachable)
//   DIR/stores/STORE.json  {"cosignature":TEXT,"format":"gitlocks-witness-state-v1",
//                           "trust":TRUST_STATE}, written durably before the
//                          cosignature leaves the process
#include <fcntl.h>
#include <sodium.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>

#include "fsio.h"
#include "gitlocks/hex.hpp"
#include "gitlocks/packet.hpp"
#include "gitlocks/replay.hpp"
#include "gitlocks/trust.hpp"
#include "http_serve.h"
#include "keyfile.h"
#include "witness.h"

namespace gitlocks::cli {
namespace {

namespace fs = std::filesystem;
using notary::error_reply;
using notary::Reply;
using notary::StartFailure;

constexpr const char* kStateFormat = "gitlocks-witness-state-v1";
constexpr const char* kWitnessFormat = "gitlocks-witness-v1";

int refuse(const StartFailure& f) {
  notary::print_line(stderr,
                     {{"error", "witness-start"}, {"code", f.code}, {"op", "witness serve"}, {"detail", f.detail}});
  return f.exit_status;
}

struct StoreState {
  TrustState trust;
  std::string cosignature;
};

class Witness {
 public:
  Witness(const KeyPair& key, std::string dir, bool allow_test_clock, std::size_t max_request_bytes,
          std::vector<std::string> owners)
      : key_(key),
        dir_(std::move(dir)),
        repo_(dir_ + "/repo.git"),
        allow_test_clock_(allow_test_clock),
        max_request_bytes_(max_request_bytes),
        owners_(std::move(owners)) {}
  ~Witness() { sodium_memzero(key_.secret_key.data(), key_.secret_key.size()); }

  std::string key_hex() const { return to_hex(key_.public_key); }

  Reply discovery() const {
    return json_reply(
        200, {{"format", kWitnessFormat}, {"witness_key", key_hex()}, {"max_request_bytes", max_request_bytes_}});
  }

  Reply latest(const std::string& store) {
    if (!is_hex(store, 64)) return error_reply(400, "bad-request", "store must be 64 lowercase hex digits");
    std::lock_guard<std::mutex> lock(mutex_);
    auto st = load(store);
    if (!st) return error_reply(404, "unknown-store", "this witness has cosigned nothing for store " + store);
    return {200, st->cosignature};
  }

  Reply cosign(const std::string& checkpoint_hex, const std::string& bundle) {
    const auto checkpoint = Oid::from_hex(checkpoint_hex);
    if (!checkpoint) return error_reply(400, "bad-request", "checkpoint must be a commit id (40 lowercase hex digits)");
    std::lock_guard<std::mutex> lock(mutex_);
    Reply r = cosign_locked(*checkpoint, bundle);
    // The refs a bundle brought go; the objects stay (the next chain is
    // verified from them), the newest cosigned kept by refs/witness/STORE.
    auto refs = git().run({"for-each-ref", "--format=delete %(refname)", "refs/incoming/"});
    if (refs.ok() && refs->status == 0 && !refs->out.empty()) (void)git().run({"update-ref", "--stdin"}, refs->out);
    return r;
  }

 private:
  Git git() const { return Git(repo_); }

  static Reply json_reply(int status, const json& body) {
    auto text = canon_dump(body);
    if (!text.ok()) return error_reply(500, "internal", text.error().message);
    return {status, *text};
  }

  std::string state_path(const std::string& store) const { return dir_ + "/stores/" + store + ".json"; }

  std::optional<StoreState> load(const std::string& store) const {
    std::ifstream in(state_path(store), std::ios::binary);
    if (!in) return std::nullopt;
    std::stringstream ss;
    ss << in.rdbuf();
    json doc = json::parse(ss.str(), nullptr, false);
    if (!doc.is_object() || doc.value("format", "") != kStateFormat || !doc.contains("trust") ||
        !doc["cosignature"].is_string())
      return std::nullopt;
    auto trust = parse_trust_state(doc["trust"]);
    if (!trust) return std::nullopt;
    return StoreState{*trust, doc["cosignature"].get<std::string>()};
  }

  Reply cosign_locked(const Oid& checkpoint, const std::string& bundle) {
    // The bundle into the repository: every ref it holds under refs/incoming/.
    const std::string file = dir_ + "/incoming.bundle";
    if (auto err = fsio::write_file(file, bundle, {0600, fsio::Sync::none, fsio::Replace::yes}))
      return error_reply(503, "state-unwritable", fsio::message(*err, file));
    auto fetched =
        git().run({"fetch", "--quiet", "--no-tags", "--no-write-fetch-head", file, "+refs/*:refs/incoming/*"});
    std::error_code ec;
    fs::remove(file, ec);
    if (!fetched.ok()) return error_reply(500, "internal", fetched.error().message);
    if (fetched->status != 0)
      return error_reply(400, "bad-bundle", "the request is not a Git bundle this witness can read: " + fetched->err);
    auto store = open_git_store(repo_);
    if (!store.ok()) return error_reply(500, "internal", store.error().message);
    ObjectStore& objects = **store;
    if (!objects.read_commit(checkpoint).ok())
      return error_reply(400, "bad-bundle", "the bundle does not hold commit " + checkpoint.hex());
    const std::optional<Policy> named = recorded_policy(objects, checkpoint);
    if (!named) return error_reply(422, "invalid-history", checkpoint.hex() + " is not a commit of a lock store");
    const std::string store_id = named->store;
    std::optional<StoreState> last = load(store_id);
    if (last && last->trust.commit == checkpoint) return {200, last->cosignature};
    // The checkpoint cosigned last must be on the chain: the clients' own
    // rule (trust.hpp check_cosigned), here before anything is verified.
    if (last) {
      auto on_chain = check_cosigned(objects, checkpoint, {last->trust.commit});
      if (!on_chain.ok()) {
        const auto& f = on_chain.error().fields;
        if (f.count("archived"))
          return error_reply(400, "incomplete-bundle",
                             "the chain to " + checkpoint.hex() + " starts at a cut after " + f.at("archived").text() +
                                 "; send that history too (refs/locks/archive/" + f.at("archived").text() + ")",
                             {{"archived", f.at("archived").text()}});
        if (on_chain.error().code != Errc::invalid_history)
          return error_reply(400, "bad-bundle", on_chain.error().message);
        return error_reply(409, "split-view",
                           "checkpoint " + checkpoint.hex() + " does not extend checkpoint " +
                               last->trust.commit.hex() + ", which this witness cosigned for store " + store_id +
                               "; refusing to cosign",
                           {{"commit", checkpoint.hex()}, {"cosigned", last->trust.commit.hex()}});
      }
    }

    // The core's verifier, from the checkpoint cosigned last (or the
    // beginning of the chain the first time): the same rule as every host
    // (an anchor it cannot use costs a replay from the beginning).
    TrustOptions options;
    if (last) options.anchor = last->trust;
    options.allow_test_clock = allow_test_clock_;
    auto trusted = verified_snapshot(objects, checkpoint, options);
    if (!trusted.ok()) {
      const Error& e = trusted.error();
      auto field = [&](const char* k) { return e.fields.count(k) ? e.fields.at(k).text() : std::string(); };
      if (e.code == Errc::invalid_history || e.code == Errc::unknown_format)
        return error_reply(422, "invalid-history", e.message,
                           {{"commit", field("commit")}, {"verdict", field("verdict")}});
      return error_reply(400, "bad-bundle", e.message);
    }
    if (!trusted->trust || trusted->trust->store_id != store_id)
      return error_reply(422, "invalid-history", "the verified chain is of another store");
    // Only the stores of the owners it serves (--owner): nobody else can
    // make it record a first history for a store and so refuse the real one.
    const std::string& owner = trusted->snapshot.policy.owner;
    if (!owners_.empty() && std::find(owners_.begin(), owners_.end(), owner) == owners_.end())
      return error_reply(403, "owner-not-served",
                         "this witness serves the stores of other owners, not of " + owner + " (witness serve --owner)",
                         {{"owner", owner}});
    auto tc = read_transition_commit(objects, checkpoint);
    auto opened = tc.ok() ? open_packet(tc->packet_stored) : Result<OpenedPacket>(tc.error());
    if (!opened.ok() || opened->fields.action != "checkpoint")
      return error_reply(422, "not-a-checkpoint",
                         checkpoint.hex() + " is not a checkpoint; a witness cosigns checkpoints only");
    auto cosignature = make_cosignature(store_id, checkpoint.hex(), key_);
    if (!cosignature.ok()) return error_reply(500, "internal", cosignature.error().message);
    // Durable before the cosignature leaves: a restarted witness never
    // cosigns a checkpoint that does not extend one it gave out.
    json doc = {{"format", kStateFormat}, {"trust", trust_state_json(*trusted->trust)}, {"cosignature", *cosignature}};
    auto text = canon_dump(doc);
    if (!text.ok()) return error_reply(500, "internal", text.error().message);
    if (auto err =
            fsio::write_file(state_path(store_id), *text + "\n", {0600, fsio::Sync::durable, fsio::Replace::yes}))
      return error_reply(503, "state-unwritable", fsio::message(*err, state_path(store_id)));
    auto kept = git().run({"update-ref", "refs/witness/" + store_id, checkpoint.hex()});
    if (!kept.ok() || kept->status != 0)
      return error_reply(503, "state-unwritable", "cannot keep the cosigned chain: " + (kept.ok() ? kept->err : ""));
    return {200, *cosignature};
  }

  KeyPair key_;
  std::string dir_;
  std::string repo_;
  bool allow_test_clock_;
  std::size_t max_request_bytes_;
  std::vector<std::string> owners_;
  std::mutex mutex_;
};

// DIR (0700), its lock, its repository and stores/.
bool open_state(const std::string& dir, int& lock_fd, StartFailure& failure) {
  auto fail = [&](std::string code, std::string detail) {
    failure = {std::move(code), std::move(detail), notary::kExitFailure};
    return false;
  };
  std::error_code ec;
  fs::create_directories(dir + "/stores", ec);
  if (ec) return fail("state-unwritable", "cannot create " + dir + "/stores: " + ec.message());
  fs::permissions(dir, fs::perms::owner_all, fs::perm_options::replace, ec);
  lock_fd = ::open((dir + "/lock").c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (lock_fd < 0) return fail("state-unwritable", fsio::errno_message("cannot open", dir + "/lock"));
  if (::flock(lock_fd, LOCK_EX | LOCK_NB) != 0)
    return fail("state-locked", "another witness serves from " + dir + " (" + dir + "/lock is held)");
  if (!fs::exists(dir + "/repo.git/HEAD")) {
    auto init = Git().run({"init", "--quiet", "--bare", dir + "/repo.git"});
    if (!init.ok() || init->status != 0)
      return fail("state-unwritable", "cannot create " + dir + "/repo.git: " + (init.ok() ? init->err : ""));
  }
  return true;
}

void add_routes(httplib::Server& svr, Witness& w, std::size_t max_request_bytes) {
  svr.Get("/v1/discovery", [&](const httplib::Request&, httplib::Response& res) { notary::send(res, w.discovery()); });
  svr.Get("/v1/checkpoint", [&](const httplib::Request& req, httplib::Response& res) {
    notary::send(res, w.latest(req.get_param_value("store")));
  });
  svr.Post("/v1/cosign", [&](const httplib::Request& req, httplib::Response& res) {
    notary::send(res, w.cosign(req.get_param_value("checkpoint"), req.body));
  });
  notary::add_common_handlers(svr, max_request_bytes,
                              {{"/v1/discovery", "GET"}, {"/v1/checkpoint", "GET"}, {"/v1/cosign", "POST"}});
}

}  // namespace

int witness_serve(const WitnessServeConfig& config) {
  notary::ListenAddress addr;
  StartFailure failure;
  if (!notary::check_listen(config.listen, config.allow_remote, config.max_request_bytes, kWitnessMaxRequestLimit, addr,
                            failure))
    return refuse(failure);
  if (!crypto_init()) return refuse({"crypto-init", "libsodium failed to initialise", notary::kExitFailure});
  KeyPair key;
  if (!notary::load_service_key(config.key_path, key, failure)) return refuse(failure);
  int lock_fd = -1;
  const bool opened = open_state(config.state_dir, lock_fd, failure);
  if (!opened) {
    if (lock_fd >= 0) ::close(lock_fd);
    return refuse(failure);
  }
  Witness witness(key, config.state_dir, config.allow_test_clock, config.max_request_bytes, config.owners);
  sodium_memzero(key.secret_key.data(), key.secret_key.size());
  httplib::Server svr;
  add_routes(svr, witness, config.max_request_bytes);
  const int rc = notary::serve_until_signalled(
      svr, addr, config.listen, config.max_request_bytes,
      [&](int port) {
        return json{{"listening", addr.with_port(port)}, {"witness_key", witness.key_hex()}};
      },
      refuse);
  ::close(lock_fd);
  return rc;
}

}  // namespace gitlocks::cli
