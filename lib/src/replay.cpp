#include "gitlocks/replay.hpp"

#include <algorithm>
#include <unordered_map>

#include "gitlocks/crypto.hpp"
#include "gitlocks/hex.hpp"
#include "gitlocks/packet.hpp"
#include "gitlocks/plan.hpp"
#include "gitlocks/policy.hpp"
#include "gitlocks/state.hpp"
#include "gitlocks/transition.hpp"
#include "gitlocks/vault.hpp"
#include "timeline.h"
#include "tree_edit.h"

namespace gitlocks {

json verdict_json(const Verdict& v) {
  json j = {{"commit", v.commit}, {"command", v.command},         {"actor", v.actor},
            {"ok", v.ok},         {"level", level_name(v.level)}, {"reason", v.reason}};
  j["time"] = v.time ? json(*v.time) : json(nullptr);
  if (!v.ok) j["detail"] = v.detail;
  return j;
}

namespace {

// Read-through cache of trees and blobs for the walk: a commit's planner,
// its timeline diff and the next commit's planner read the same objects.
// Two generations of at most kCacheEntries each, so memory is bounded and
// independent of the history's length. Trees are shared, never copied, on a
// hit. Writes (hash-only) pass through.
class CachingStore final : public ObjectStore {
 public:
  explicit CachingStore(ObjectStore& s) : s_(s) {}
  Result<std::string> read_blob(const Oid& id) override {
    return cached(blobs_, id, [&] { return recall(written_blobs_, id, [&] { return s_.read_blob(id); }); });
  }
  Result<Tree> read_tree(const Oid& id) override {
    GITLOCKS_TRY(t, read_tree_shared(id));
    return Tree(*t);
  }
  Result<SharedTree> read_tree_shared(const Oid& id) override {
    return cached(trees_, id, [&] { return recall(written_trees_, id, [&] { return s_.read_tree_shared(id); }); });
  }
  Result<Commit> read_commit(const Oid& id) override {
    if (primed_ && primed_->first == id) return primed_->second;
    return s_.read_commit(id);
  }
  Result<std::string> read_commit_raw(const Oid& id) override { return s_.read_commit_raw(id); }
  Result<std::vector<std::string>> changed_paths(const Oid& id) override { return s_.changed_paths(id); }
  // The commit the walk read last: read_transition_commit reads it again.
  void prime_commit(Oid id, Commit c) { primed_.emplace(std::move(id), std::move(c)); }
  // A re-planned object is usually the recorded one: the timeline reads it
  // next. Its content is known (the id is its hash); it is handed out only
  // if the store holds that object, so a read fails exactly as before when
  // it does not.
  Result<Oid> write_blob(std::string_view data) override {
    GITLOCKS_TRY(id, s_.write_blob(data));
    remember(written_blobs_, id, std::string(data));
    return id;
  }
  Result<Oid> write_tree(const Tree& tree) override { return write_tree_owned(Tree(tree)); }
  Result<Oid> write_tree_owned(Tree&& tree) override {
    // Kept as read_tree returns it: in Git's order (a tree with two entries
    // of one name is not kept). Re-planned trees usually are in order.
    if (!std::is_sorted(tree.begin(), tree.end(), detail::git_entry_less))
      std::sort(tree.begin(), tree.end(), detail::git_entry_less);
    GITLOCKS_TRY(id, s_.write_tree(tree));
    bool unique = true;
    for (std::size_t i = 1; i < tree.size() && unique; ++i) unique = detail::git_entry_less(tree[i - 1], tree[i]);
    if (unique) remember(written_trees_, id, SharedTree(std::make_shared<const Tree>(std::move(tree))));
    return id;
  }
  bool has_object(const Oid& id) override { return s_.has_object(id); }
  // Parses of blobs read through this store (kept only after a successful
  // read and parse, so a hit stands for exactly that).
  std::shared_ptr<const json> parsed_blob(const Oid& id) override {
    if (const auto* kept = find(parsed_, id)) return *kept;
    // A record the planner wrote, once the store holds it (as recall()).
    const auto* hit = find(written_parsed_, id);
    if (!hit || !s_.has_object(id)) return nullptr;
    return remember(parsed_, id, std::shared_ptr<const json>(*hit));
  }
  void keep_written_parse(const Oid& id, json doc) override {
    remember(written_parsed_, id, std::shared_ptr<const json>(std::make_shared<const json>(std::move(doc))));
  }
  void keep_parsed(const Oid& id, const json& doc) override {
    remember(parsed_, id, std::shared_ptr<const json>(std::make_shared<const json>(doc)));
  }
  Result<Oid> write_commit(const Commit& commit) override { return s_.write_commit(commit); }
  Result<std::optional<Oid>> read_ref(std::string_view name) override { return s_.read_ref(name); }
  std::size_t objects_written() const override { return s_.objects_written(); }
  void set_hash_only(bool on) override { s_.set_hash_only(on); }

 private:
  static constexpr std::size_t kCacheEntries = 256;
  template <typename T>
  struct Generations {
    std::unordered_map<Oid, T> young, old;
  };
  template <typename T, typename Load>
  Result<T> cached(Generations<T>& g, const Oid& id, Load load) {
    if (auto it = g.young.find(id); it != g.young.end()) return it->second;
    if (auto it = g.old.find(id); it != g.old.end()) {
      T v = std::move(it->second);
      g.old.erase(it);
      return remember(g, id, std::move(v));
    }
    GITLOCKS_TRY(v, load());
    return remember(g, id, std::move(v));
  }
  // An object this walk wrote (hash-only), if the store holds it.
  template <typename T, typename Load>
  Result<T> recall(Generations<T>& g, const Oid& id, Load load) {
    const T* hit = find(g, id);
    if (hit && s_.has_object(id)) return *hit;
    return load();
  }
  template <typename T>
  static const T* find(const Generations<T>& g, const Oid& id) {
    if (auto it = g.young.find(id); it != g.young.end()) return &it->second;
    if (auto it = g.old.find(id); it != g.old.end()) return &it->second;
    return nullptr;
  }
  template <typename T>
  static T remember(Generations<T>& g, const Oid& id, T v) {
    if (g.young.size() >= kCacheEntries) {
      g.old = std::move(g.young);
      g.young.clear();
    }
    g.young.emplace(id, v);
    return v;
  }
  ObjectStore& s_;
  std::optional<std::pair<Oid, Commit>> primed_;
  Generations<std::string> blobs_;
  Generations<SharedTree> trees_;
  Generations<std::string> written_blobs_;
  Generations<SharedTree> written_trees_;
  Generations<std::shared_ptr<const json>> parsed_;
  Generations<std::shared_ptr<const json>> written_parsed_;
};

struct ChainState {
  Oid state;  // recorded state tree of the previous commit
  std::string store_id;
  std::string owner;
  std::optional<std::int64_t> last_time;           // last local-clock T
  std::optional<std::int64_t> last_attested_time;  // last notary T
  Oid policy_blob;                                 // cache key of `policy`
  Oid policy_state;                                // the state `policy` was read from last
  std::string policy_hash;
  Policy policy;
  // PRIVATE stores: the codec of cs.state's epoch (null when the verifier
  // holds no key for it), and whether the timeline model follows the chain.
  std::shared_ptr<const RecordCodec> codec;
  std::int64_t codec_epoch = -1;
  bool timeline_synced = true;
};

// The last T of the chain, local or attested: T never decreases, across
// the activation and the switch-off of guard time alike.
std::optional<std::int64_t> last_admission(const ChainState& cs) {
  if (!cs.last_time) return cs.last_attested_time;
  if (!cs.last_attested_time) return cs.last_time;
  return std::max(*cs.last_time, *cs.last_attested_time);
}

// The codec for records of a state under `policy` (nullptr for public
// stores; nullopt when the verifier cannot read a PRIVATE state).
std::optional<const RecordCodec*> codec_for(ChainState& cs, const Policy& policy, const ReplayOptions& options) {
  if (!policy.is_private) return nullptr;
  if (cs.codec && cs.codec_epoch == policy.epoch) return cs.codec.get();
  auto c = state_codec(policy, options.vault);
  if (!c.ok()) return std::nullopt;
  cs.codec = std::shared_ptr<const RecordCodec>(std::move(c).value());
  cs.codec_epoch = policy.epoch;
  return cs.codec.get();
}

Status load_policy(ObjectStore& store, ChainState& cs) {
  StateReader reader(store, cs.state);
  GITLOCKS_TRY(id, reader.lookup({"policy.json"}));
  if (!id) return make_error(Errc::invalid, "state has no policy.json");
  if (*id == cs.policy_blob) {
    cs.policy_state = cs.state;
    return Ok{};
  }
  GITLOCKS_TRY(bytes, store.read_blob(*id));
  auto doc = canon_parse(bytes, CanonMode::strict);
  if (!doc.ok()) return make_error(Errc::invalid, "policy.json: " + doc.error().message);
  auto pol = parse_policy(*doc);
  if (!pol.ok()) return make_error(Errc::invalid, "policy.json: " + pol.error().message);
  cs.policy = std::move(pol).value();
  cs.policy_blob = *id;
  cs.policy_hash = sha256_hex(bytes);
  cs.policy_state = cs.state;
  return Ok{};
}

// result_pins of a commit's state; the policy in force at the source (cs)
// is usually unchanged: then its parsed pins are reused.
Result<std::optional<Pins>> pins_at(ObjectStore& store, const Oid& state, const ChainState& cs) {
  StateReader reader(store, state);
  if (!cs.policy_blob.empty()) {
    auto id = reader.lookup({"policy.json"});
    if (id.ok() && *id && **id == cs.policy_blob) return cs.policy.guard_time;
  }
  return result_pins(store, state);
}

// The steps of verify_commit. Every step runs (unless an earlier one leaves
// nothing to check); the first failure decides the verdict.
void fail(Verdict& v, const std::string& reason, const std::string& detail) {
  if (v.ok) {
    v.ok = false;
    v.reason = reason;
    v.detail = detail;
  }
}

// How a commit joins the chain the replay walks (docs/FORMAT.md "The
// cut"): the store's creation; an ordinary commit on its Git parent; a cut
// (a checkpoint with no Git parent) joined to the chain it continues, its
// `prev`, which is in the store; or a cut where the replay starts, the
// history before it not being here.
struct Link {
  enum Kind { creation, parent, cut, cut_start } kind = parent;
  Oid below;  // the commit it follows (parent, cut); empty otherwise
};

// The commit's shape: one parent (none for the root and for a cut), no
// stray tree entries.
void check_layout(const TransitionCommit& tc, const Link& link, Verdict& v) {
  if (link.kind == Link::parent ? tc.parents.size() != 1 : !tc.parents.empty())
    fail(v, "bad-parents", "commit has " + std::to_string(tc.parents.size()) + " parents");
  if (!tc.unexpected.empty()) fail(v, "unexpected-entry", "unexpected tree entry '" + tc.unexpected.front() + "'");
}

// Who made the commit and how: command, action, actor; returns the
// packet's admission interval.
Interval read_packet_header(const PacketFields& f, Verdict& v) {
  v.command = f.header.command;
  v.action = f.action;
  v.actor = f.header.actor;
  return {f.interval_lo, f.interval_hi};
}

// PRIVATE stores: who may sign, and who may change the public policy.
// Structure only, so every verifier applies it, with a key or without,
// and first: the other verdicts of such a commit follow from it.
void check_private_signer(ObjectStore& store, const TransitionCommit& tc, bool root, const ChainState& cs,
                          const json& body, Verdict& v) {
  if (root || !cs.policy.is_private) return;
  auto result_policy = StateReader(store, tc.state).lookup({"policy.json"});
  const std::optional<Oid> result_blob = result_policy.ok() ? *result_policy : std::nullopt;
  if (auto breach = check_private_commit(cs.policy, cs.policy_blob, result_blob, v.actor, body.contains("admin")))
    fail(v, breach->reason, breach->detail);
}

// Under guard time: no client clock, and a notary attestation of this
// packet under the chain's pins, whose T (set in `t`) never decreases. (The
// pins a verifier expects are checked once, in force at the tip:
// check_pins_in_force.)
void check_notary_time(const TransitionCommit& tc, const PacketFields& fields, const Pins& pins, const ChainState& cs,
                       const ReplayOptions& options, std::optional<std::int64_t>& t, Verdict& v) {
  if (fields.claimed_at_ms) fail(v, "time-source-mismatch", "a client clock reading under guard time");
  if (!tc.attestation_stored) {
    fail(v, "missing-attestation", "guard time is on but the commit carries no attestation");
    return;
  }
  auto att = open_attestation(*tc.attestation_stored);
  if (!att.ok()) {
    fail(v, att.error().code == Errc::bad_signature ? "bad-attestation-signature" : "bad-attestation",
         att.error().message);
    return;
  }
  auto checked = check_attestation(*att, fields, tc.packet_stored, pins, options.allow_test_clock);
  if (!checked.ok()) fail(v, "attestation-mismatch", checked.error().message);
  t = att->admitted_at_ms;
  // T never decreases along the chain: across the activation too,
  // where the previous T is a local-clock one.
  const std::optional<std::int64_t> previous = last_admission(cs);
  if (previous && *t < *previous)
    fail(v, "time-decreased",
         "attested T = " + std::to_string(*t) + " is before the previous " + std::to_string(*previous));
}

// Which rules was this commit made under? Those of its result (state.hpp
// result_pins, as every writer): guard time applies from the activation on
// (the commit that installs the pins included): then T is the notary's,
// otherwise the packet's own clock reading. Sets `t`; returns
// whether guard time applies.
bool check_time_source(ObjectStore& store, const TransitionCommit& tc, const PacketFields& fields, const ChainState& cs,
                       const ReplayOptions& options, std::optional<std::int64_t>& t, Verdict& v) {
  auto pins = pins_at(store, tc.state, cs);
  if (!pins.ok())
    fail(v, pins.error().code == Errc::unknown_format ? "unknown-format" : "bad-policy", pins.error().message);
  const bool attested = pins.ok() && pins->has_value();
  if (attested) {
    check_notary_time(tc, fields, **pins, cs, options, t, v);
  } else {
    if (tc.attestation_stored) fail(v, "unexpected-entry", "an attestation on a commit made without guard time");
    if (fields.claimed_at_ms) t = *fields.claimed_at_ms;
  }
  return attested;
}

// The packet's place in the chain: the root creates the store (signed by
// its owner, with that policy's hash; sets the chain's store and owner);
// any other commit names the parent's state, the store and the policy in
// force.
void check_chain_link(const OpenedPacket& op, const Link& link, ChainState& cs, const ReplayOptions& options,
                      Verdict& v) {
  const json& body = op.body;
  const PacketHeader& h = op.fields.header;
  const bool root = link.kind == Link::creation;
  // Where the replay learns the store's owner (its creation, or a cut it
  // starts at), that owner must be the expected one.
  auto expect_owner = [&] {
    if (options.expected_owner && cs.owner != *options.expected_owner)
      fail(v, "owner-mismatch", "the store's owner is " + cs.owner + ", expected " + *options.expected_owner);
  };
  if (root) {
    auto created = creation_of(body);
    if (!h.source.empty() || (created.ok() && !*created))
      fail(v, "bad-packet", "the root commit must create the store");
    if (!created.ok()) {
      fail(v, "bad-packet", "creation policy: " + created.error().message);
    } else if (*created) {
      cs.store_id = (*created)->policy.store;
      cs.owner = (*created)->policy.owner;
      if (v.actor != cs.owner) fail(v, "not-owner", "the store was not created by its owner");
      expect_owner();
      if ((*created)->policy_hash != h.policy_hash)
        fail(v, "policy-mismatch", "policy_hash is not the creation policy's");
    }
  } else {
    if (h.source != cs.state)
      fail(v, "source-mismatch", "packet source " + h.source + " is not the parent's state " + cs.state);
    if (h.store != cs.store_id) fail(v, "store-mismatch", "packet names another store");
    if (h.policy_hash != cs.policy_hash)
      fail(v, "policy-mismatch", "policy_hash is not the policy in force at the source");
    // A checkpoint vouches for the history up to the commit it names: that
    // must be the commit it follows, its Git parent (a cut's is the one it
    // was joined to). The planner sees states, not commits. A cut where the
    // replay starts follows nothing here: it stands on its owner's
    // signature (its `prev` binds the archive, checked when that is here).
    const auto prev = checkpoint_of(body);
    if (link.kind == Link::cut_start) {
      expect_owner();
      // (A key its policy does not name is the planner's refusal.)
      if (cs.policy.may_checkpoint(v.actor) && !trusted_to_start(v.actor, cs.owner, options.checkpoint_signers))
        fail(v, "not-owner",
             "the cut this chain starts at is signed by " + v.actor + ", neither the owner " + cs.owner +
                 " nor a checkpoint signer this verifier trusts (its history before the cut is elsewhere)");
    } else if (prev && *prev != link.below) {
      fail(v, "checkpoint-mismatch",
           "the checkpoint names " + prev->hex() + " as the commit it follows, but it follows " + link.below.hex());
    }
  }
  if (h.store != cs.store_id && root) fail(v, "store-mismatch", "packet store id differs from its policy's");
}

// The body to re-plan. PRIVATE bodies are sealed under the source's epoch
// key, bound to the operation; without that key only the structure can be
// checked (the verdict's level becomes "structural").
json open_body(const OpenedPacket& op, bool root, const ChainState& cs, const ReplayOptions& options, Verdict& v) {
  const json& body = op.body;
  const PacketHeader& h = op.fields.header;
  json plain_body = body;
  const bool source_private = !root && cs.policy.is_private;
  const std::int64_t want_epoch = source_private ? cs.policy.epoch : 0;
  // A root may start at its creation policy's epoch (a PRIVATE store's
  // first). A policy that does not parse has none (check_chain_link has
  // refused it already: the first failure decides).
  auto creation_epoch = [&]() -> std::optional<std::int64_t> {
    if (!root) return std::nullopt;
    auto created = creation_of(body);
    if (!created.ok() || !*created) return std::nullopt;
    return (*created)->policy.epoch;
  };
  if (h.epoch != want_epoch && creation_epoch() != h.epoch)
    fail(v, "wrong-epoch",
         "packet epoch " + std::to_string(h.epoch) + ", the store is at epoch " + std::to_string(want_epoch));
  if (body.contains("sealed")) {
    auto epoch = sealed_epoch(body);
    if (!source_private) {
      fail(v, "bad-packet", "a sealed body in a store that is not PRIVATE");
    } else if (!epoch.ok() || *epoch != cs.policy.epoch) {
      fail(v, "wrong-epoch",
           "body sealed under epoch " + (epoch.ok() ? std::to_string(*epoch) : std::string("?")) +
               ", the store is at epoch " + std::to_string(cs.policy.epoch));
    } else if (const EpochKey* k = options.vault ? options.vault->key(*epoch) : nullptr) {
      auto opened_body = open_document(body, *k, cs.store_id, sealed_body_location(h.instance));
      if (!opened_body.ok()) fail(v, "bad-sealed-body", opened_body.error().message);
      else plain_body = std::move(opened_body).value();
      // Only ops are sealed: creation, migration and admin bodies (a
      // checkpoint's `prev` among them) are read by every verifier as stored.
      if (opened_body.ok() && !plain_body.contains("ops"))
        fail(v, "bad-sealed-body", "a sealed body must hold ops: admin and other bodies are not sealed");
    } else {
      v.level = VerifyLevel::structural;
    }
  } else if (source_private && body.contains("ops")) {
    fail(v, "bad-packet", "a PRIVATE store's transition body must be sealed");
  }
  return plain_body;
}

// Re-plans the body on the parent's state: it must be admitted and give
// the packet's result, action and interval (a verifier without the key
// checks structure only).
void check_replan(ObjectStore& store, const PacketFields& f, const json& plain_body, bool root, const ChainState& cs,
                  const ReplayOptions& options, const Interval& interval, Verdict& v) {
  PlanContext ctx{v.actor, f.header.instance, options.vault};
  auto replayed = v.level == VerifyLevel::structural ? Result<PlanOutcome>(make_error(Errc::not_member, "no key"))
                                                     : plan(store, root ? Oid() : cs.state, ctx, plain_body);
  if (v.level == VerifyLevel::structural) {
    // Nothing semantic to compare: structure only.
  } else if (!replayed.ok() && replayed.error().code == Errc::not_member) {
    v.level = VerifyLevel::structural;
  } else if (!replayed.ok()) {
    // A body this version cannot plan because it names a format it does not
    // know (a newer store) is unknown-format, not a refused transition.
    fail(v, replayed.error().code == Errc::unknown_format ? "unknown-format" : "replay-refused",
         std::string(errc_name(replayed.error().code)) + ": " + replayed.error().message);
  } else {
    if (replayed->result_state != f.result)
      fail(v, "result-mismatch", "re-planning gives state " + replayed->result_state + ", packet says " + f.result);
    if (action_name(replayed->action) != f.action)
      fail(v, "action-mismatch", std::string("re-planning gives action ") + action_name(replayed->action));
    if (replayed->interval != interval)
      fail(v, "interval-mismatch",
           "derived interval [" + std::to_string(replayed->interval.lo) + ", " + std::to_string(replayed->interval.hi) +
               "] differs from the packet's");
  }
}

// The recorded commit against its packet: the state is the packet's result,
// T lies in the interval and never decreases (the notary's T is then
// remembered for the chain).
void check_admission(const TransitionCommit& tc, const PacketFields& f, const std::optional<std::int64_t>& t,
                     const Interval& interval, bool attested, ChainState& cs, Verdict& v) {
  if (tc.state != f.result) fail(v, "state-mismatch", "commit state " + tc.state + " is not the packet's result");
  if (t && !interval.contains(*t))
    fail(v, "time-outside-interval",
         "T = " + std::to_string(*t) + " is outside [" + std::to_string(interval.lo) + ", " +
             std::to_string(interval.hi) + "]");
  // A local T too: after guard time was turned off, the last T is the notary's.
  const std::optional<std::int64_t> previous = last_admission(cs);
  if (!attested && t && previous && *t < *previous)
    fail(v, "time-decreased", "T = " + std::to_string(*t) + " is before the previous " + std::to_string(*previous));
  if (attested && t) cs.last_attested_time = std::max(*t, cs.last_attested_time.value_or(*t));
}

// The independent invariant check of parent_state -> state at T = at, on
// the recorded states: the timeline model is loaded first when it no
// longer follows the chain.
void check_invariant(ObjectStore& store, const Oid& parent_state, const Policy& parent_policy,
                     const RecordCodec* old_codec, const Oid& state, std::int64_t at, ChainState& cs,
                     detail::Timeline& timeline, const ReplayOptions& options, Verdict& v) {
  // Keep the old epoch's codec alive while computing the new one.
  std::shared_ptr<const RecordCodec> keep_old =
      old_codec && cs.codec_epoch != cs.policy.epoch ? std::move(cs.codec) : nullptr;
  if (keep_old) cs.codec_epoch = -1;
  auto new_codec = codec_for(cs, cs.policy, options);
  if (!new_codec) {
    cs.timeline_synced = false;
    return;
  }
  if (!cs.timeline_synced) {
    auto loaded = timeline.load(store, parent_state, old_codec);
    if (!loaded.ok()) {
      fail(v, "store-read", loaded.error().message);
      return;
    }
    cs.timeline_synced = true;
  }
  auto violations = timeline.apply(store, parent_state, state, at, parent_policy, old_codec, *new_codec);
  if (!violations.ok()) fail(v, "store-read", violations.error().message);
  else if (!violations->empty()) fail(v, violations->front().reason, violations->front().detail);
}

// Moves the chain on to the commit (its local-clock T, state and policy),
// then checks the invariant where the verifier reads both states.
void follow_chain(ObjectStore& store, const TransitionCommit& tc, bool root, const std::optional<std::int64_t>& t,
                  ChainState& cs, detail::Timeline& timeline, const ReplayOptions& options, Verdict& v) {
  const std::int64_t at = t.value_or(last_admission(cs).value_or(0));
  const Oid parent_state = cs.state;
  const Policy parent_policy = cs.policy;
  auto old_codec = codec_for(cs, parent_policy, options);
  if (t && !tc.attestation_stored) cs.last_time = std::max(*t, cs.last_time.value_or(*t));
  cs.state = tc.state;
  auto pol = load_policy(store, cs);
  if (!pol.ok()) fail(v, "bad-policy", pol.error().message);
  if (root || v.level == VerifyLevel::structural || !old_codec) {
    cs.timeline_synced = root;
    return;
  }
  check_invariant(store, parent_state, parent_policy, *old_codec, tc.state, at, cs, timeline, options, v);
}

// Checks one commit against the chain so far: fills v and moves cs (and the
// timeline model) on to the commit's recorded state.
void verify_commit(ObjectStore& store, const TransitionCommit& tc, const Link& link, ChainState& cs,
                   detail::Timeline& timeline, const ReplayOptions& options, Verdict& v) {
  const bool root = link.kind == Link::creation;
  check_layout(tc, link, v);
  std::optional<std::int64_t> t;
  auto opened = open_packet(tc.packet_stored);
  if (!opened.ok()) {
    const Errc c = opened.error().code;
    fail(v,
         c == Errc::bad_signature    ? "bad-signature"
         : c == Errc::unknown_format ? "unknown-format"
                                     : "bad-packet",
         opened.error().message);
  } else {
    const Interval interval = read_packet_header(opened->fields, v);
    check_private_signer(store, tc, root, cs, opened->body, v);
    const bool attested = check_time_source(store, tc, opened->fields, cs, options, t, v);
    v.time = t;
    check_chain_link(*opened, link, cs, options, v);
    if (!t) fail(v, "missing-time", "packet carries no admission time");
    const json plain_body = open_body(*opened, root, cs, options, v);
    check_replan(store, opened->fields, plain_body, root, cs, options, interval, v);
    check_admission(tc, opened->fields, t, interval, attested, cs, v);
  }
  // The independent invariant check runs on the recorded states.
  follow_chain(store, tc, root, t, cs, timeline, options, v);
}

// A replay that starts at a cut: the chain so far is the cut's own state,
// its store and owner those of the policy it records, no T yet; the leases
// in force are not read (as from a trusted commit).
void start_at_cut(ObjectStore& store, const TransitionCommit& tc, ChainState& cs, detail::Timeline& timeline,
                  const ReplayOptions& options, Verdict& v) {
  cs.state = tc.state;
  auto pol = load_policy(store, cs);
  if (!pol.ok()) {
    fail(v, "bad-policy", pol.error().message);
    return;
  }
  cs.store_id = cs.policy.store;
  cs.owner = cs.policy.owner;
  auto codec = codec_for(cs, cs.policy, options);
  if (codec) timeline.start_lazy();
  cs.timeline_synced = codec.has_value();
}

// At the tip: the expected notary pins are the ones in force (a store
// without guard time has no attestation to check them against).
void check_pins_in_force(const ChainState& cs, const ReplayOptions& options, Verdict& v) {
  if (!options.expected_pins) return;
  const Pins& want = *options.expected_pins;
  if (!cs.policy.guard_time)
    fail(v, "pins-mismatch",
         "the expected notary pins (" + want.audience + " / " + want.service_key +
             ") are not in force: the store has no guard time");
  else if (!(*cs.policy.guard_time == want))
    fail(v, "pins-mismatch",
         "the notary pins in force are " + cs.policy.guard_time->audience + " / " + cs.policy.guard_time->service_key +
             ", expected " + want.audience + " / " + want.service_key);
}

}  // namespace

bool trusted_to_start(const std::string& actor, const std::string& owner,
                      const std::vector<std::string>& checkpoint_signers) {
  return actor == owner ||
         std::find(checkpoint_signers.begin(), checkpoint_signers.end(), actor) != checkpoint_signers.end();
}

std::optional<PrivateBreach> check_private_commit(const Policy& source, const Oid& source_policy_blob,
                                                  const std::optional<Oid>& result_policy_blob,
                                                  const std::string& actor, bool admin) {
  if (!source.is_private) return std::nullopt;
  const bool member =
      actor == source.owner || std::find(source.members.begin(), source.members.end(), actor) != source.members.end();
  if (!member)
    return PrivateBreach{"not-member", "signed by " + actor + ", who is neither the owner nor a member of epoch " +
                                           std::to_string(source.epoch)};
  const bool changed = !result_policy_blob || *result_policy_blob != source_policy_blob;
  if (changed && !admin)
    return PrivateBreach{"policy-changed",
                         "a transition that is not an admin one changed the public policy "
                         "(policy.json " +
                             source_policy_blob + " -> " +
                             (result_policy_blob ? result_policy_blob->hex() : std::string("none")) + ")"};
  if ((changed || admin) && actor != source.owner)
    return PrivateBreach{"not-owner", std::string(changed ? "the public policy was changed" : "an admin transition") +
                                          " signed by " + actor + ", not by the owner " + source.owner};
  return std::nullopt;
}

std::optional<Policy> recorded_policy(ObjectStore& store, const Oid& commit) {
  auto tc = read_transition_commit(store, commit);
  if (!tc.ok()) return std::nullopt;
  auto doc = StateReader(store, tc->state).policy();
  if (!doc.ok()) return std::nullopt;
  auto pol = parse_policy(*doc);
  if (!pol.ok()) return std::nullopt;
  return std::move(pol).value();
}

namespace {
// The policy `tip` records when it is a readable PRIVATE one (else nullopt:
// a public or unreadable store, which replay reports).
std::optional<Policy> private_policy_at(ObjectStore& store, const Oid& tip) {
  auto pol = recorded_policy(store, tip);
  if (!pol || !pol->is_private) return std::nullopt;
  return pol;
}

MemberVault vault_of(const std::optional<Policy>& pol, const KeyPair* member) {
  MemberVault out;
  out.is_private = pol.has_value();
  if (!pol || !member) return out;
  if (auto vault = Vault::open(*pol, *member); vault.ok()) out.vault = std::move(vault).value();
  return out;
}

VerifierKeys keys_of(const std::optional<Policy>& pol, const KeyPair* member) {
  VerifierKeys out;
  out.member = vault_of(pol, member);
  if (out.member.vault) out.verifier = to_hex(member->public_key);
  return out;
}
}  // namespace

MemberVault open_member_vault(ObjectStore& store, const Oid& tip, const KeyPair* member) {
  return vault_of(private_policy_at(store, tip), member);
}

Result<VerifierKeys> verifier_keys(ObjectStore& store, const Oid& tip, const MemberKeyFn& key) {
  const std::optional<Policy> pol = private_policy_at(store, tip);  // read once
  if (!pol) return VerifierKeys{};
  GITLOCKS_TRY(member, key());
  return keys_of(pol, member);
}

VerifierKeys verifier_keys(ObjectStore& store, const Oid& tip, const KeyPair* member) {
  return keys_of(private_policy_at(store, tip), member);
}

std::optional<Oid> cut_prev(ObjectStore& store, const Oid& commit) {
  auto tc = read_transition_commit(store, commit);
  if (!tc.ok() || !tc->parents.empty()) return std::nullopt;
  auto opened = open_packet(tc->packet_stored);
  if (!opened.ok()) return std::nullopt;
  return checkpoint_of(opened->body);
}

std::optional<Oid> chain_parent(ObjectStore& store, const Oid& commit, const Commit& c) {
  if (!c.parents.empty()) return c.parents.front();
  auto prev = cut_prev(store, commit);
  if (!prev || !store.read_commit(*prev).ok()) return std::nullopt;
  return prev;
}

std::optional<Oid> chain_predecessor(ObjectStore& store, const Oid& commit) {
  auto c = store.read_commit(commit);
  if (!c.ok()) return std::nullopt;
  if (!c->parents.empty()) return c->parents.front();
  return cut_prev(store, commit);
}

namespace {
// The one walk of both: `on_commit` set, each commit's facts are handed out
// (its codec made for the purpose when the verifier did not need one).
Result<ReplaySummary> replay(ObjectStore& raw_store, const Oid& tip, const ReplayOptions& options,
                             const std::function<void(const Verdict&)>& on_verdict,
                             const std::function<void(const ReplayedCommit&)>& on_commit) {
  // The chain is walked twice: once from the tip to count it, keeping every
  // kSegment-th id, then segment by segment from the root, each segment's ids
  // read again from its mark. Memory is O(count / kSegment + kSegment) ids,
  // not one id per commit; the second walk reads each commit object once more.
  constexpr std::size_t kSegment = 1024;
  std::vector<Oid> marks;  // marks[m]: the commit m * kSegment first parents below the tip
  std::size_t count = 0;
  Oid cur = tip;
  bool reached_from = false;
  while (true) {
    if (options.from && cur == *options.from) {
      reached_from = true;
      break;
    }
    if (count % kSegment == 0) marks.push_back(cur);
    ++count;
    GITLOCKS_TRY(c, raw_store.read_commit(cur));
    auto below = chain_parent(raw_store, cur, c);
    if (!below) break;
    cur = std::move(*below);
  }
  if (options.from && !reached_from) {
    Error e = make_error(Errc::invalid, "trusted commit " + *options.from + " is not an ancestor of " + tip);
    e.fields["rewrite"] = options.from->hex();
    // The chain reached a cut whose earlier history is not here: the
    // trusted commit may be in it (a host fetches refs/locks/archive/PREV).
    if (auto prev = cut_prev(raw_store, cur)) e.fields["archived"] = prev->hex();
    return e;
  }

  HashOnlyScope hash_only(raw_store);
  CachingStore store(raw_store);
  ChainState cs;
  detail::Timeline timeline;
  bool root = true;
  if (options.from) {
    GITLOCKS_TRY(start, read_transition_commit(store, *options.from));
    auto opened = open_packet(start.packet_stored);
    if (!opened.ok()) return make_error(Errc::invalid, "trusted commit: " + opened.error().message);
    cs.state = start.state;
    cs.store_id = opened->fields.header.store;
    auto recorded = recorded_admission_time(start.attestation_stored, opened->fields.claimed_at_ms);
    if (!recorded.ok()) return make_error(Errc::invalid, "trusted commit attestation: " + recorded.error().message);
    if (*recorded) ((*recorded)->attested ? cs.last_attested_time : cs.last_time) = (*recorded)->ms;
    GITLOCKS_CHECK(load_policy(store, cs));
    cs.owner = cs.policy.owner;
    if (options.expected_owner && cs.owner != *options.expected_owner)
      return make_error(Errc::invalid, "the store's owner is " + cs.owner + ", expected " + *options.expected_owner);
    auto codec = codec_for(cs, cs.policy, options);
    // From a trusted commit the leases in force are not read: each admission
    // is checked against its own state's records and markers (O(changes)).
    if (codec) timeline.start_lazy();
    cs.timeline_synced = codec.has_value();
    root = false;
  }
  ReplaySummary summary;
  summary.tip = tip;
  Oid previous = options.from.value_or(Oid());  // the commit the next one follows
  std::vector<std::pair<Oid, Commit>> segment;  // the commits of one segment, tip first
  for (std::size_t i = 0; i < count; ++i) {
    if (segment.empty()) {
      const std::size_t m = (count - 1 - i) / kSegment;  // the segment holding commit i (from the root)
      const std::size_t len = std::min(kSegment, count - m * kSegment);
      Oid at = marks[m];
      for (std::size_t k = 0; k < len; ++k) {
        GITLOCKS_TRY(c, raw_store.read_commit(at));
        Oid next;
        if (k + 1 < len) {
          auto below = chain_parent(raw_store, at, c);
          if (!below) return make_error(Errc::store_read, "the chain below " + marks[m] + " changed while read");
          next = std::move(*below);
        }
        segment.emplace_back(std::move(at), std::move(c));
        at = std::move(next);
      }
    }
    Verdict v;
    v.commit = segment.back().first;
    store.prime_commit(std::move(segment.back().first), std::move(segment.back().second));
    segment.pop_back();
    auto tc = read_transition_commit(store, v.commit);
    if (!tc.ok()) {
      if (tc.error().code != Errc::invalid) return tc.error();
      v.ok = false;
      v.reason = "bad-layout";
      v.detail = tc.error().message;
    } else {
      Link link{tc->parents.empty() ? Link::cut : Link::parent, previous};
      if (root && tc->parents.empty()) {
        // The bottom of the chain: the store's creation, or a cut whose
        // earlier history is not here. The replay starts from the cut's own
        // state, as from a trusted commit: it is verified as a checkpoint of
        // that state (its owner's signature, bindings, time).
        if (cut_prev(store, v.commit)) {
          link = Link{Link::cut_start, Oid()};
          start_at_cut(store, *tc, cs, timeline, options, v);
          summary.cut_start = v.commit;
        } else {
          link = Link{Link::creation, Oid()};
        }
      }
      verify_commit(store, *tc, link, cs, timeline, options, v);
      if (i + 1 == count) check_pins_in_force(cs, options, v);
    }
    root = false;
    previous = v.commit;
    ++summary.commits;
    if (v.level == VerifyLevel::structural) ++summary.structural;
    if (v.action == "checkpoint") ++(v.ok ? summary.checkpoints : summary.invalid_checkpoints);
    if (!v.ok) {
      ++summary.invalid;
      if (!summary.first_invalid) {
        summary.first_invalid = v.commit;
        summary.first_invalid_verdict = v;
      }
    }
    if (on_verdict) on_verdict(v);
    if (on_commit) {
      // The commit's own state and policy, when the replay could read them.
      const bool read = tc.ok() && cs.state == tc->state && cs.policy_state == cs.state;
      std::shared_ptr<const RecordCodec> codec;
      if (read && cs.policy.is_private)
        if (auto c = codec_for(cs, cs.policy, options); c && *c) codec = cs.codec;
      on_commit(ReplayedCommit{v, read ? &cs.state : nullptr, cs.policy, cs.policy_blob, last_admission(cs),
                               std::move(codec)});
    }
    if (options.progress) options.progress(i + 1, count);
  }
  if (count == 0) {  // nothing after the trusted commit: its pins must still be the expected ones
    Verdict at_tip;
    check_pins_in_force(cs, options, at_tip);
    if (!at_tip.ok) return make_error(Errc::invalid, at_tip.detail);
  }
  summary.end.commit = tip;
  summary.end.store_id = cs.store_id;
  summary.end.policy_hash = cs.policy_hash;
  summary.end.guard_time = cs.policy.guard_time;
  summary.end.epoch = cs.policy.epoch;
  summary.end.full = summary.structural == 0;
  summary.end.last_time = last_admission(cs);
  return summary;
}

}  // namespace

Result<ReplaySummary> replay_chain(ObjectStore& store, const Oid& tip, const ReplayOptions& options,
                                   const std::function<void(const Verdict&)>& on_verdict) {
  return replay(store, tip, options, on_verdict, {});
}

Result<ReplaySummary> replay_commits(ObjectStore& store, const Oid& tip, const ReplayOptions& options,
                                     const std::function<void(const ReplayedCommit&)>& on_commit) {
  return replay(store, tip, options, {}, on_commit);
}

}  // namespace gitlocks
