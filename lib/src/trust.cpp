#include "gitlocks/trust.hpp"

#include <algorithm>

#include "gitlocks/crypto.hpp"
#include "gitlocks/hex.hpp"
#include "gitlocks/packet.hpp"
#include "gitlocks/policy.hpp"
#include "gitlocks/state.hpp"
#include "snapshot.h"

namespace gitlocks {
namespace {

// A trust state describes the snapshot read at its commit: the chain's
// store and last T, and the facts of the tip's policy (which a Snapshot
// reads from that policy alone).
bool agrees(const Snapshot& at, const TrustState& t) {
  return at.store_id == t.store_id && at.policy_hash == t.policy_hash && at.guard_time() == t.guard_time &&
         at.last_time == t.last_time && at.epoch() == t.epoch;
}

Error history_error(const std::string& message, const Oid& commit, const std::string& verdict,
                    const std::string& last_valid) {
  Error e = make_error(Errc::invalid_history, message);
  e.fields = {{"commit", commit.hex()}, {"verdict", verdict}, {"last_valid", last_valid}};
  return e;
}

// `archived`: the tip's chain starts at a cut whose earlier history (that
// commit) is not in the store; fetched, the anchor may well be below it.
Error rewrite_error(const std::optional<Oid>& tip, const Oid& anchor, const std::string& archived = "") {
  Error e = history_error(
      "the history was rewritten: refs/locks/state is " +
          (tip ? "at " + *tip + ", which does not descend from " : std::string("gone, but this clone verified ")) +
          anchor + (tip ? ", the tip this clone last verified" : std::string()),
      tip.value_or(Oid{}), "rewrite", anchor.hex());
  if (!archived.empty()) e.fields["archived"] = archived;
  return e;
}

bool hex_oid(const json& j) {
  if (!j.is_string()) return false;
  const auto& s = j.get_ref<const std::string&>();
  return is_hex(s, 40);
}

}  // namespace

// The snapshot read at a trust state's commit, with the trust's facts. The
// pins and the epoch are the tip policy's (Snapshot::guard_time(), epoch()):
// a trust state saying otherwise does not describe this commit and gives
// no snapshot (replay and trust_after take both from that very policy, so
// a verified chain always agrees; a checkpoint file is compared by agrees()).
static Result<Snapshot> with_trust(Snapshot snap, const TrustState& trust) {
  if (!(snap.guard_time() == trust.guard_time) || snap.epoch() != trust.epoch)
    return make_error(Errc::store_read,
                      "the trusted state of " + trust.commit + " disagrees with its policy (notary pins or key epoch)");
  snap.store_id = trust.store_id;
  snap.policy_hash = trust.policy_hash;
  snap.last_time = trust.last_time;
  snap.full = trust.full;
  snap.verifier = trust.verifier;
  return snap;
}

Result<Snapshot> snapshot_at(ObjectStore& store, const TrustState& trust) {
  GITLOCKS_TRY(snap, detail::read_unverified_snapshot(store, trust.commit));
  return with_trust(std::move(snap), trust);
}

// The member's keys on a verified snapshot of a PRIVATE store (the vault
// the verifier brought opened from the tip's keyring: its epoch's codec,
// state_codec's one rule). A public store or no vault: none.
void detail::attach_keys(Snapshot& snap, const Vault* vault) {
  if (!vault || !snap.commit || !snap.is_private()) return;
  auto keys = std::make_shared<SnapshotKeys>();
  keys->vault = *vault;
  auto codec = state_codec(snap.policy, &keys->vault);
  if (codec.ok()) keys->codec = std::shared_ptr<const RecordCodec>(std::move(codec).value());
  else keys->codec_error = codec.error();
  snap.keys = std::move(keys);
}

Result<Trusted> verified_snapshot(ObjectStore& store, const std::optional<Oid>& tip, const TrustOptions& options) {
  Trusted out;
  std::optional<TrustState> anchor = options.anchor;
  // An anchor naming a commit that is not here, or disagreeing with it, is
  // not trusted: the replay starts at the root (slower, still correct).
  std::optional<Snapshot> at_anchor;
  if (anchor) {
    auto at = store.read_commit(anchor->commit).ok() ? detail::read_unverified_snapshot(store, anchor->commit)
                                                     : Result<Snapshot>(make_error(Errc::store_read, "gone"));
    if (at.ok() && agrees(*at, *anchor)) at_anchor = std::move(at).value();
    else anchor.reset();
  }
  // A structural anchor is somebody else's partial check: replay from the
  // root with our keys, and still require the anchor on the chain.
  std::optional<Oid> must_contain;
  if (anchor && !anchor->full && anchor->verifier != options.verifier) {
    must_contain = anchor->commit;
    anchor.reset();
    at_anchor.reset();
  }
  if (!tip) {
    if (anchor) return rewrite_error(tip, anchor->commit);
    return out;
  }
  ReplayOptions ro;
  ro.expected_owner = options.expected_owner;
  ro.allow_test_clock = options.allow_test_clock;
  ro.vault = options.vault;
  ro.checkpoint_signers = options.checkpoint_signers;
  ro.cosigned = options.cosigned;
  ro.cosign_quorum = options.cosign_quorum;
  // Nothing trusted yet: the newest checkpoint, when there is one to start at.
  if (!anchor && !must_contain && options.start_at_checkpoint) {
    GITLOCKS_TRY(start, checkpoint_anchor(store, *tip, ro, options.verifier));
    if (start) {
      GITLOCKS_TRY(at, detail::read_unverified_snapshot(store, start->commit));
      anchor = std::move(start);
      at_anchor = std::move(at);
      out.from_checkpoint = true;
    }
  }
  TrustState trust;
  if (anchor && anchor->commit == *tip) {
    trust = *anchor;
    out.anchored = true;
  } else {
    if (anchor) ro.from = anchor->commit;
    bool contained = !must_contain;
    auto summary = replay_chain(store, *tip, ro, [&](const Verdict& v) {
      if (must_contain && v.commit == *must_contain) contained = true;
    });
    if (!summary.ok()) {
      if (anchor && summary.error().fields.count("rewrite")) {
        auto archived = summary.error().fields.find("archived");
        return rewrite_error(tip, anchor->commit,
                             archived == summary.error().fields.end() ? std::string() : archived->second.text());
      }
      return summary.error();
    }
    if (summary->first_invalid_verdict) {
      const Verdict& v = *summary->first_invalid_verdict;
      std::string parent;
      const std::optional<Oid> below = chain_predecessor(store, v.commit);
      if (below) parent = below->hex();
      Error e = history_error("the history of refs/locks/state does not verify: commit " + v.commit + " is invalid (" +
                                  v.reason + (v.detail.empty() ? "" : ": " + v.detail) + "); nothing was done",
                              v.commit, v.reason, parent);
      // A format or profile this version does not know is refused as such
      // (unknown-format, a store-read failure: exit 2), never ignored (seed
      // 002): the fields still name the commit.
      if (v.reason == "unknown-format") e.code = Errc::unknown_format;
      // A cut whose earlier history is not here, refused where the chain
      // starts (its signer is not trusted to start at): fetched, that
      // history may verify it (`archived`, as for a rewrite).
      if (below && cut_prev(store, v.commit) && !store.read_commit(*below).ok()) e.fields["archived"] = below->hex();
      return e;
    }
    if (!contained) return rewrite_error(tip, *must_contain);
    trust = continued_trust(*summary, anchor, options.verifier);
    out.replayed = summary->commits;
    out.anchored = anchor.has_value();
  }
  if (out.replayed == 0 && at_anchor) {
    GITLOCKS_TRY(snap, with_trust(std::move(*at_anchor), trust));  // the anchor is the tip: read once
    out.snapshot = std::move(snap);
  } else {
    GITLOCKS_TRY(snap, snapshot_at(store, trust));
    out.snapshot = std::move(snap);
  }
  // The pinned owner, whichever way the trust came (a trusted anchor at the
  // tip replays nothing): the store's owner never changes, so the tip's is
  // the root's.
  if (options.expected_owner && out.snapshot.policy.owner != *options.expected_owner)
    return history_error("the store's owner is " + out.snapshot.policy.owner + ", not the pinned owner " +
                             *options.expected_owner + "; nothing was done",
                         *tip, "owner-mismatch", "");
  detail::attach_keys(out.snapshot, options.vault);
  out.trust = std::move(trust);
  return out;
}

Result<std::optional<TrustState>> checkpoint_anchor(ObjectStore& store, const Oid& tip, const ReplayOptions& replay,
                                                    const std::string& verifier, std::size_t within) {
  // Candidates by their commit message (transition.cpp writes "git-locks:
  // <action>"), which verifiers otherwise ignore: a message that lies costs
  // a wasted replay of one commit or a missed checkpoint, never trust, for
  // the candidate counts only when its verified verdict is a checkpoint.
  constexpr std::string_view kHint = "git-locks: checkpoint";
  Oid cur = tip;
  std::size_t witnessed = 0;  // cosigned checkpoints at or above `cur`
  for (std::size_t walked = 0; walked < within; ++walked) {
    GITLOCKS_TRY(c, store.read_commit(cur));
    witnessed += static_cast<std::size_t>(std::count(replay.cosigned.begin(), replay.cosigned.end(), cur));
    // A cut is a checkpoint too: from its prev when that is here, else on
    // its own (replay's cut start).
    const std::optional<Oid> below = chain_parent(store, cur, c);
    const bool hinted =
        c.message.compare(0, kHint.size(), kHint) == 0 &&
        (c.message.size() == kHint.size() || c.message[kHint.size()] == '\n' || c.message[kHint.size()] == ' ');
    if (hinted) {
      ReplayOptions ro;  // the following replay's rules, for this one commit
      ro.from = below;
      ro.expected_owner = replay.expected_owner;
      ro.allow_test_clock = replay.allow_test_clock;
      ro.vault = replay.vault;
      ro.checkpoint_signers = replay.checkpoint_signers;
      std::optional<Verdict> verdict;
      auto summary = replay_chain(store, cur, ro, [&](const Verdict& v) { verdict = v; });
      if (!summary.ok() || summary->invalid != 0 || !verdict || verdict->action != "checkpoint")
        return std::optional<TrustState>();
      // Another key the policy names for checkpoints: valid, but the
      // policy saying so is the very state it vouches for. Started at only
      // when this verifier trusts the key; else an older checkpoint.
      const auto pol = recorded_policy(store, cur);
      const bool cosigned = replay.cosign_quorum > 0 && witnessed >= replay.cosign_quorum;
      if (pol && (cosigned || trusted_to_start(verdict->actor, pol->owner, replay.checkpoint_signers))) {
        TrustState t = summary->end;
        t.verifier = verifier;
        return std::optional<TrustState>(std::move(t));
      }
    }
    if (!below) break;
    cur = *below;
  }
  return std::optional<TrustState>();
}

Result<std::optional<Oid>> untrusted_cut_start(ObjectStore& store, const Oid& tip,
                                               const std::vector<std::string>& checkpoint_signers) {
  Oid bottom = tip;
  for (;;) {
    GITLOCKS_TRY(c, store.read_commit(bottom));
    const std::optional<Oid> below = chain_parent(store, bottom, c);
    if (!below) break;
    bottom = *below;
  }
  const std::optional<Oid> prev = cut_prev(store, bottom);
  if (!prev) return std::optional<Oid>();
  GITLOCKS_TRY(tc, read_transition_commit(store, bottom));
  auto opened = open_packet(tc.packet_stored);
  const auto pol = recorded_policy(store, bottom);
  if (opened.ok() && pol && trusted_to_start(opened->fields.header.actor, pol->owner, checkpoint_signers))
    return std::optional<Oid>();
  return std::optional<Oid>(*prev);
}

Status check_cosigned(ObjectStore& store, const Oid& tip, const std::vector<Oid>& cosigned) {
  if (cosigned.empty()) return Ok{};
  std::vector<Oid> pending = cosigned;
  Oid at = tip;
  for (;;) {
    pending.erase(std::remove(pending.begin(), pending.end(), at), pending.end());
    if (pending.empty()) return Ok{};
    GITLOCKS_TRY(c, store.read_commit(at));
    const std::optional<Oid> below = chain_parent(store, at, c);
    if (!below) break;
    at = *below;
  }
  Error e = history_error("a witness cosigned checkpoint " + pending.front().hex() +
                              " of this store, which is not in the history of refs/locks/state at " + tip.hex() +
                              ": the server shows this clone another history than the one the witness verified "
                              "(a split view); nothing was done",
                          tip, "split-view", "");
  e.fields["cosigned"] = pending.front().hex();
  if (auto prev = cut_prev(store, at); prev && !store.read_commit(*prev).ok()) e.fields["archived"] = prev->hex();
  return e;
}

std::optional<TrustState> usable_anchor(ObjectStore& store, const TrustState& anchor, const std::string& verifier) {
  if (!store.read_commit(anchor.commit).ok()) return std::nullopt;
  auto at = detail::read_unverified_snapshot(store, anchor.commit);
  if (!at.ok() || !agrees(*at, anchor)) return std::nullopt;
  if (!anchor.full && anchor.verifier != verifier) return std::nullopt;
  return anchor;
}

TrustState continued_trust(const ReplaySummary& summary, const std::optional<TrustState>& anchor,
                           const std::string& verifier) {
  TrustState trust = summary.end;
  trust.full = summary.end.full && (!anchor || anchor->full);
  trust.verifier = verifier;
  return trust;
}

Result<TrustState> trust_after(ObjectStore& store, const Snapshot& base, const Candidate& c) {
  GITLOCKS_TRY(t, trust_after(store, c));
  t.full = base.full;
  t.verifier = base.verifier;
  return t;
}

Result<TrustState> trust_after(ObjectStore& store, const Candidate& c) {
  StateReader reader(store, c.outcome.result_state);
  GITLOCKS_TRY(bytes, reader.policy_bytes());
  GITLOCKS_TRY(doc, reader.policy());
  GITLOCKS_TRY(pol, parse_policy(doc));
  TrustState t;
  t.commit = c.commit;
  t.store_id = pol.store;
  t.policy_hash = sha256_hex(bytes);
  t.guard_time = pol.guard_time;
  t.last_time = c.admitted_at_ms;
  t.epoch = pol.epoch;
  return t;
}

json trust_state_json(const TrustState& t) {
  json j = {{"commit", t.commit}, {"store", t.store_id}, {"policy_hash", t.policy_hash}, {"epoch", t.epoch}};
  j["guard_time"] = t.guard_time
                        ? json{{"audience", t.guard_time->audience}, {"service_key", t.guard_time->service_key}}
                        : json(nullptr);
  j["last_time"] = t.last_time ? json(*t.last_time) : json(nullptr);
  j["full"] = t.full;
  j["verifier"] = t.verifier;
  return j;
}

std::optional<TrustState> parse_trust_state(const json& j) {
  if (!j.is_object() || j.size() != 8) return std::nullopt;
  for (const char* k : {"commit", "store", "policy_hash", "epoch", "guard_time", "last_time", "full", "verifier"})
    if (!j.contains(k)) return std::nullopt;
  if (!hex_oid(j["commit"]) || !j["store"].is_string() || !j["policy_hash"].is_string() ||
      !j["epoch"].is_number_integer() || !j["full"].is_boolean() || !j["verifier"].is_string())
    return std::nullopt;
  TrustState t;
  t.commit = *Oid::from_hex(j["commit"].get<std::string>());
  t.store_id = j["store"].get<std::string>();
  t.policy_hash = j["policy_hash"].get<std::string>();
  t.epoch = j["epoch"].get<std::int64_t>();
  t.full = j["full"].get<bool>();
  t.verifier = j["verifier"].get<std::string>();
  const json& g = j["guard_time"];
  if (g.is_object()) {
    if (g.size() != 2 || !g.contains("audience") || !g.contains("service_key") || !g["audience"].is_string() ||
        !g["service_key"].is_string())
      return std::nullopt;
    t.guard_time = Pins{g["audience"].get<std::string>(), g["service_key"].get<std::string>()};
  } else if (!g.is_null()) {
    return std::nullopt;
  }
  const json& l = j["last_time"];
  if (l.is_number_integer()) t.last_time = l.get<std::int64_t>();
  else if (!l.is_null()) return std::nullopt;
  return t;
}

}  // namespace gitlocks
