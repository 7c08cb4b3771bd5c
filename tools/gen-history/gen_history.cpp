// gitlocks-gen-history — writes a synthetic store history with the core
// itself (no git processes): claims, shared claims, reclaims of expired
// leases, extends, releases, semaphores, batches and sweeps by eight actors,
// optionally under guard time with an in-process notary, optionally with one
// commit tampered. Deterministic for a given --seed.
//
//   gitlocks-gen-history --commits N (--pack FILE | --bundle FILE)
//                        [--attested] [--checkpoint-every N] [--cut-every M]
//                        [--tamper K:MODE] [--seed S]
//
// --checkpoint-every N: the owner's checkpoint (docs/FORMAT.md
// "Checkpoints") follows every N-th commit (counted from the root, the
// checkpoints included); the other commits are those of the same seed
// without it.
// --cut-every M: a checkpoint that follows a multiple of M commits is a cut
// (docs/FORMAT.md "The cut": committed without a parent, as `checkpoint
// --cut` does); M is a multiple of N. The bundle then also carries each
// archive ref, refs/locks/archive/PREV at PREV.
//
// Prints the tip commit id. --pack writes a bare packfile (load it into a
// repository with `git index-pack --stdin` and point refs/locks/state at the
// tip); --bundle writes a v2 bundle of refs/locks/state directly.
// Tamper modes, applied to the K-th commit from the root (commits above it
// are re-parented): state-byte (one byte of a record), resign (the packet
// re-signed by another key), unsigned (the packet edited without re-signing),
// drop (the commit removed from the chain), stray (an extra tree entry).
#include <algorithm>
#include <array>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "gitlocks/attest.hpp"
#include "gitlocks/crypto.hpp"
#include "gitlocks/ops.hpp"
#include "gitlocks/packet.hpp"
#include "gitlocks/plan.hpp"
#include "gitlocks/policy.hpp"
#include "gitlocks/state.hpp"
#include "gitlocks/store.hpp"
#include "gitlocks/transition.hpp"
#include "snapshot.h"

using gitlocks::json;
using gitlocks::Oid;

namespace {

[[noreturn]] void die(const std::string& m) {
  std::cerr << "gitlocks-gen-history: " << m << "\n";
  std::exit(2);
}

template <class T>
T must(gitlocks::Result<T> r, const char* what) {
  if (!r.ok())
    die(std::string(what) + ": " + std::string(gitlocks::errc_name(r.error().code)) + ": " + r.error().message);
  return std::move(r).value();
}

gitlocks::KeyPair key_of(const std::string& name) {
  std::array<std::uint8_t, gitlocks::kSeedBytes> seed{};
  auto h = gitlocks::sha256("test-actor:" + name);
  std::copy(h.begin(), h.end(), seed.begin());
  return gitlocks::keypair_from_seed(seed);
}

struct Rng {
  std::uint64_t s;
  std::uint64_t next() {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    return s;
  }
  std::size_t below(std::size_t n) { return static_cast<std::size_t>(next() % n); }
};

struct Held {
  std::string actor, path, sem, lease;
};

class Generator {
 public:
  Generator(std::uint64_t seed, bool attested) : rng_{seed * 2654435761u + 1}, attested_(attested) {
    store_ = must(gitlocks::open_memory_store(), "memory store");
    json policy = gitlocks::default_policy(std::string(64, 'a'), gitlocks::to_hex(key_of("owner").public_key));
    policy["families"] = json::array(
        {{{"name", "db"}, {"policy", "exclusive"}, {"members", json::array({"db/schema.sql", "db/migrations/"})}}});
    if (!submit("owner", "init", json{{"init", policy}}).ok()) die("init failed");
    if (attested_) {
      admit_ = [this](const std::string& stored) -> gitlocks::Result<std::string> {
        auto req = gitlocks::open_admission_request(stored);
        if (!req.ok()) return req.error();
        const json& iv = (*req)["interval"];
        std::int64_t t = std::max(now_, last_t_);
        if (t < iv[0].get<std::int64_t>() || t > iv[1].get<std::int64_t>())
          return gitlocks::make_error(gitlocks::Errc::guard_window, "T outside the interval");
        return gitlocks::make_attestation(*req, pins_, t, false, notary_);
      };
      auto snap = must(gitlocks::detail::read_unverified_snapshot(*store_, tip_), "snapshot");
      json enable = gitlocks::ops::admin_guard_time_enable(pins_.audience, pins_.service_key,
                                                           gitlocks::kDisclosureGuardWindow, snap.policy_hash);
      auto r = submit("owner", "guard-time", enable);
      if (!r.ok()) die("guard-time enable: " + r.error().message);
    }
  }

  std::size_t commits() const { return commits_; }
  gitlocks::ObjectStore& store() { return *store_; }
  const Oid& tip() const { return *tip_; }

  // The owner's checkpoint of the tip; a cut (no parent) when `cut`.
  void checkpoint(bool cut = false) {
    const Oid prev = *tip_;
    auto snap = must(gitlocks::detail::read_unverified_snapshot(*store_, tip_), "snapshot");
    auto r = submit("owner", "checkpoint", gitlocks::ops::admin_checkpoint(tip_->hex(), snap.policy_hash));
    if (!r.ok()) die("checkpoint: " + r.error().message);
    if (!cut) return;
    auto tc = must(gitlocks::read_transition_commit(*store_, *tip_), "checkpoint commit");
    auto msg = must(store_->read_commit(*tip_), "checkpoint commit").message;
    tip_ = must(gitlocks::write_transition_commit(*store_, std::nullopt, tc.state, tc.packet_stored, msg,
                                                  tc.time_seconds, tc.attestation_stored),
                "cut");
    archives_.push_back(prev);
  }
  // The commits the cuts follow, oldest first.
  const std::vector<Oid>& archives() const { return archives_; }

  // One more commit of a randomly chosen kind (refusals are retried).
  void step() {
    for (int attempt = 0; attempt < 50; ++attempt) {
      now_ += static_cast<std::int64_t>(rng_.below(8000));
      if (rng_.below(40) == 0) now_ += 600'000;  // a quiet spell: leases expire
      if (try_one()) return;
    }
    die("50 refusals in a row");
  }

 private:
  gitlocks::Result<gitlocks::Candidate> submit(const std::string& actor, const std::string& command, json body) {
    if (body.contains("ops")) {
      body["created_at"] = now_;
      body["name"] = actor;
    }
    auto snap = must(gitlocks::detail::read_unverified_snapshot(*store_, tip_), "snapshot");
    std::string instance = gitlocks::sha256_hex("gen:" + std::to_string(counter_++));
    auto c = gitlocks::build_candidate(*store_, snap, key_of(actor), command, instance, body, now_, admit_);
    if (c.ok()) {
      tip_ = c->commit;
      last_t_ = c->admitted_at_ms;
      ++commits_;
    }
    return c;
  }

  std::string random_path() {
    static const char* dirs[] = {"src/core/", "src/ui/", "src/net/", "docs/", "tests/", "db/migrations/", "tools/"};
    std::size_t d = rng_.below(7);
    if (rng_.below(6) == 0) return dirs[d];
    if (rng_.below(25) == 0) return "db/schema.sql";
    return std::string(dirs[d]) + "f" + std::to_string(rng_.below(60)) + ".c";
  }

  void remember(const std::string& actor, const gitlocks::Candidate& c) {
    for (const auto& l : c.outcome.leases) {
      const std::string& res = l.resource;
      Held h{actor, "", "", l.lease};
      if (res.rfind("path:", 0) == 0) h.path = res.substr(5);
      if (res.rfind("sem:", 0) == 0) h.sem = res.substr(4);
      bool dup = false;
      for (auto& x : held_)
        if (x.lease == h.lease) dup = true;
      if (!dup) held_.push_back(h);
    }
  }

  json target(const Held& h) {
    json op = {{"lease", h.lease}};
    if (!h.sem.empty()) op["sem"] = h.sem;
    else op["path"] = h.path;
    return op;
  }

  bool try_one() {
    const std::string actor = "actor" + std::to_string(rng_.below(8));
    const std::size_t kind = rng_.below(100);
    json ops = json::array();
    std::string command;
    std::size_t held_index = held_.size();
    if (kind < 8) {
      auto sweep = gitlocks::propose_sweep(
          *store_, must(gitlocks::detail::read_unverified_snapshot(*store_, tip_), "snap").state, now_);
      if (!sweep.ok() || !*sweep) return false;
      ops.push_back(**sweep);
      command = "sweep";
    } else if (kind < 45 || held_.empty()) {
      const char* mode = rng_.below(3) == 0 ? "shared" : "exclusive";
      ops.push_back({{"op", "claim"},
                     {"path", random_path()},
                     {"mode", mode},
                     {"expires_at", now_ + 30'000 + static_cast<std::int64_t>(rng_.below(600'000))}});
      if (rng_.below(5) == 0)
        ops.push_back({{"op", "claim"},
                       {"path", random_path()},
                       {"mode", mode},
                       {"expires_at", now_ + 30'000 + static_cast<std::int64_t>(rng_.below(600'000))}});
      command = ops.size() > 1 ? "batch" : "claim";
    } else if (kind < 55) {
      ops.push_back({{"op", "sem-acquire"},
                     {"sem", "ci"},
                     {"limit", 3},
                     {"expires_at", now_ + 20'000 + static_cast<std::int64_t>(rng_.below(300'000))}});
      command = "sem-acquire";
    } else if (kind < 75) {
      held_index = rng_.below(held_.size());
      json op = target(held_[held_index]);
      op["op"] = "extend";
      op["expires_at"] = now_ + 60'000 + static_cast<std::int64_t>(rng_.below(600'000));
      ops.push_back(op);
      command = "extend";
    } else {
      held_index = rng_.below(held_.size());
      json op = target(held_[held_index]);
      op["op"] = "release";
      ops.push_back(op);
      command = held_[held_index].sem.empty() ? "release" : "sem-release";
    }
    const std::string who = held_index < held_.size() ? held_[held_index].actor : actor;
    auto c = submit(who, command, json{{"ops", ops}});
    if (!c.ok()) {
      if (held_index < held_.size()) held_.erase(held_.begin() + static_cast<std::ptrdiff_t>(held_index));
      return false;
    }
    if (command == "release" || command == "sem-release")
      held_.erase(held_.begin() + static_cast<std::ptrdiff_t>(held_index));
    remember(who, *c);
    if (held_.size() > 200) held_.erase(held_.begin());
    return true;
  }

  Rng rng_;
  bool attested_;
  std::unique_ptr<gitlocks::ObjectStore> store_;
  std::optional<Oid> tip_;
  std::int64_t now_ = 1'700'000'000'000;
  std::int64_t last_t_ = 0;
  std::size_t counter_ = 0;
  std::size_t commits_ = 0;
  std::vector<Held> held_;
  std::vector<Oid> archives_;
  gitlocks::KeyPair notary_ = key_of("notary-service");
  gitlocks::Pins pins_{"locks.example", gitlocks::to_hex(key_of("notary-service").public_key)};
  gitlocks::AdmitFn admit_;
};

// Rewrites commit `k` (from the root) with `mode`, re-parenting the rest.
Oid tamper(gitlocks::ObjectStore& store, const Oid& tip, std::size_t k, const std::string& mode) {
  std::vector<Oid> chain;
  for (std::optional<Oid> cur = tip; cur;) {
    chain.insert(chain.begin(), *cur);
    auto c = must(store.read_commit(*cur), "read commit");
    cur = c.parents.empty() ? std::nullopt : std::optional<Oid>(c.parents.front());
  }
  if (k == 0 || k >= chain.size()) die("tamper index out of range");
  std::optional<Oid> parent;
  for (std::size_t i = 0; i < chain.size(); ++i) {
    if (i == k && mode == "drop") continue;
    auto tc = must(gitlocks::read_transition_commit(store, chain[i]), "read transition");
    auto c = must(store.read_commit(chain[i]), "read commit");
    if (i == k) {
      json doc = json::parse(tc.packet_stored);
      if (mode == "resign") {
        auto mallory = key_of("mallory");
        doc["packet"]["actor"] = gitlocks::to_hex(mallory.public_key);
        tc.packet_stored = must(gitlocks::seal_packet(doc["packet"], mallory), "seal");
      } else if (mode == "unsigned") {
        json& body = doc["packet"]["body"];
        if (body.contains("created_at")) body["created_at"] = body["created_at"].get<std::int64_t>() + 1;
        else doc["packet"]["epoch"] = 1;
        tc.packet_stored = must(gitlocks::canon_dump(doc), "dump");
      } else if (mode == "stray") {
        tc.unexpected.push_back("notes.txt");
      } else if (mode == "state-byte") {
        gitlocks::StateReader reader(store, tc.state);
        std::optional<json> victim;
        if (!reader
                 .for_each_record([&](const json& r) {
                   if (r.contains("leases") && !r["leases"].empty()) victim = r;
                   return !victim;
                 })
                 .ok() ||
            !victim)
          die("commit has no record with leases to tamper with");
        std::string bytes = must(gitlocks::canon_dump(*victim), "dump");
        auto at = bytes.find("\"expires_at\":");
        bytes[at + 13] = bytes[at + 13] == '9' ? '8' : static_cast<char>(bytes[at + 13] + 1);  // one byte
        auto blob = must(store.write_blob(bytes), "blob");
        auto loc = gitlocks::record_location((*victim)["kind"].get<std::string>() + ":" +
                                             (*victim)["name"].get<std::string>());
        std::function<Oid(const Oid&, std::size_t)> put = [&](const Oid& tree, std::size_t depth) -> Oid {
          auto t = must(store.read_tree(tree), "tree");
          for (auto& e : t)
            if (e.name == loc[depth]) e.oid = depth + 1 == loc.size() ? blob : put(e.oid, depth + 1);
          return must(store.write_tree(t), "write tree");
        };
        tc.state = put(tc.state, 0);
      } else {
        die("unknown tamper mode " + mode);
      }
    }
    if (tc.unexpected.empty()) {
      parent = must(gitlocks::write_transition_commit(store, parent, tc.state, tc.packet_stored, c.message,
                                                      c.time_seconds, tc.attestation_stored),
                    "write commit");
    } else {
      auto packet_blob = must(store.write_blob(tc.packet_stored), "blob");
      gitlocks::Tree txn = {{"packet.json", false, packet_blob}};
      if (tc.attestation_stored)
        txn.push_back({"attestation.json", false, must(store.write_blob(*tc.attestation_stored), "blob")});
      gitlocks::Tree root = {{"state", true, tc.state}, {"txn", true, must(store.write_tree(txn), "tree")}};
      for (const auto& extra : tc.unexpected) root.push_back({extra, false, packet_blob});
      gitlocks::Commit nc = c;
      nc.tree = must(store.write_tree(root), "tree");
      nc.parents.clear();
      if (parent) nc.parents.push_back(*parent);
      parent = must(store.write_commit(nc), "commit");
    }
  }
  return *parent;
}

}  // namespace

int main(int argc, char** argv) {
  std::size_t commits = 100;
  std::size_t checkpoint_every = 0;
  std::size_t cut_every = 0;
  std::uint64_t seed = 1;
  bool attested = false;
  std::string pack_out, bundle_out, tamper_spec;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto val = [&]() -> std::string {
      if (i + 1 >= argc) die("missing value for " + a);
      return argv[++i];
    };
    if (a == "--commits") commits = std::stoul(val());
    else if (a == "--seed") seed = std::stoull(val());
    else if (a == "--attested") attested = true;
    else if (a == "--pack") pack_out = val();
    else if (a == "--bundle") bundle_out = val();
    else if (a == "--tamper") tamper_spec = val();
    else if (a == "--checkpoint-every") checkpoint_every = std::stoul(val());
    else if (a == "--cut-every") cut_every = std::stoul(val());
    else die("unknown argument " + a);
  }
  if (pack_out.empty() == bundle_out.empty()) die("give exactly one of --pack FILE, --bundle FILE");
  if (cut_every && (!checkpoint_every || cut_every % checkpoint_every != 0))
    die("--cut-every M needs --checkpoint-every N with M a multiple of N");
  if (cut_every && !tamper_spec.empty()) die("--tamper walks one Git chain: not with --cut-every");
  if (!gitlocks::crypto_init()) die("libsodium");
  auto started = std::chrono::steady_clock::now();
  Generator g(seed, attested);
  while (g.commits() < commits) {
    g.step();
    if (checkpoint_every && g.commits() < commits && g.commits() % checkpoint_every == 0)
      g.checkpoint(cut_every && g.commits() % cut_every == 0);
  }
  Oid tip = g.tip();
  if (!tamper_spec.empty()) {
    auto colon = tamper_spec.find(':');
    if (colon == std::string::npos) die("--tamper K:MODE");
    tip = tamper(g.store(), tip, std::stoul(tamper_spec.substr(0, colon)), tamper_spec.substr(colon + 1));
  }
  std::string pack = must(gitlocks::memory_store_pack(g.store()), "pack");
  std::ofstream out(pack_out.empty() ? bundle_out : pack_out, std::ios::binary);
  if (!bundle_out.empty()) {
    out << "# v2 git bundle\n" << tip << " " << gitlocks::kStateRef << "\n";
    for (const Oid& prev : g.archives()) out << prev << " " << gitlocks::archive_ref(prev) << "\n";
    out << "\n";
  }
  out << pack;
  if (!out.flush()) die("cannot write output");
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now() - started).count();
  std::cerr << "gitlocks-gen-history: " << g.commits() << " commits, " << pack.size() << " pack bytes, " << ms
            << " ms\n";
  std::cout << tip << "\n";
  return 0;
}
