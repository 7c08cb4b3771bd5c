// The WebAssembly binding: extern "C" functions over JSON strings and byte
// buffers, called only by wasm/js/api.js. Every function returns a string the
// caller frees with gitlocks_free:
//   {"ok":VALUE}  or  {"error":{"code":ERRC-NAME,"reason":REASON,"message":TEXT,
//   "fields"?:{NAME:TEXT}}} (the core's Error: code, stable reason, fields)
// Inputs are UTF-8 JSON, parsed leniently (whitespace and key order free, no
// floats, safe integers); signed material (packets, attestations) is passed
// as its exact stored bytes. Store handles are opaque integers owned by the
// caller (gitlocks_store_free). Member keys (the contents of an actor key
// file, or the bare seed in hex) are passed as bytes that the JS side wipes
// after the call; the key pairs and epoch keys made from them here are wiped
// before returning, and no message ever quotes them. The export list is
// wasm/exports.json.
#include <emscripten/emscripten.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <new>
#include <optional>
#include <string>
#include <vector>

#include "gitlocks/attest.hpp"
#include "gitlocks/canon.hpp"
#include "gitlocks/capabilities.hpp"
#include "gitlocks/crypto.hpp"
#include "gitlocks/enforce.hpp"
#include "gitlocks/expr.hpp"
#include "gitlocks/packet.hpp"
#include "gitlocks/path.hpp"
#include "gitlocks/plan.hpp"
#include "gitlocks/policy.hpp"
#include "gitlocks/query.hpp"
#include "gitlocks/replay.hpp"
#include "gitlocks/state.hpp"
#include "gitlocks/store.hpp"
#include "gitlocks/trust.hpp"
#include "gitlocks/unicode.hpp"
#include "gitlocks/vault.hpp"

using gitlocks::Errc;
using gitlocks::Error;
using gitlocks::json;

// Progress reports go to the JS callback registered for `token`.
EM_JS(void, gitlocks_js_progress, (int token, double done, double total), {
  if (Module["_gitlocksProgress"]) Module["_gitlocksProgress"](token, done, total);
});

// Batches of a long list go to the JS sink registered for `token`.
EM_JS(void, gitlocks_js_batch, (int token, int kind, const char* text, double len), {
  if (Module["_gitlocksBatch"]) Module["_gitlocksBatch"](token, kind, text, len);
});

namespace {

// A long list handed to JS in canonical JSON arrays of at most 1,000
// entries or 1 MiB, so neither side holds the whole list as one text.
class Batches {
 public:
  Batches(int token, int kind) : token_(token), kind_(kind) {}
  void add(const std::string& entry) {
    text_ += text_.empty() ? "[" : ",";
    text_ += entry;
    if (++count_ >= 1000 || text_.size() >= (std::size_t(1) << 20)) flush();
  }
  void flush() {
    if (text_.empty()) return;
    text_ += ']';
    gitlocks_js_batch(token_, kind_, text_.data(), static_cast<double>(text_.size()));
    text_.clear();
    count_ = 0;
  }

 private:
  int token_;
  int kind_;
  std::string text_;
  std::size_t count_ = 0;
};

char* to_c(const std::string& s) {
  char* out = static_cast<char*>(std::malloc(s.size() + 1));
  if (out) std::memcpy(out, s.data(), s.size() + 1);
  return out;
}

std::string encode(const json& v) {
  auto s = gitlocks::canon_dump(v);
  if (s.ok()) return *s;
  // Not in the data model (e.g. invalid UTF-8 in a message): still valid JSON.
  return v.dump(-1, ' ', false, json::error_handler_t::replace);
}

char* ok(const json& value) { return to_c(encode(json{{"ok", value}})); }

char* fail(const Error& e) {
  json err = {{"code", gitlocks::errc_name(e.code)}, {"reason", e.reason()}, {"message", e.message}};
  if (!e.fields.empty()) err["fields"] = e.fields;
  return to_c(encode(json{{"error", std::move(err)}}));
}

char* fail(Errc c, const std::string& message) { return fail(gitlocks::make_error(c, message)); }

gitlocks::Result<json> parse(const char* text, const char* what) {
  if (!text) return gitlocks::make_error(Errc::bad_json, std::string(what) + " is missing");
  auto v = gitlocks::canon_parse(text, gitlocks::CanonMode::lenient);
  if (!v.ok()) return gitlocks::make_error(v.error().code, std::string(what) + ": " + v.error().message);
  return v;
}

json interval_json(const gitlocks::Interval& i) { return json::array({i.lo, i.hi}); }

// Once per module, before any entry point's work: libsodium, and how libgit2
// treats this host — a browser or Node has no file owners to validate and no
// user configuration to read (gitlocks/store.hpp, LibraryOptions). Its
// stores are memory and pack stores, which never re-open (StoreOptions).
bool module_ready() {
  static const bool ready = [] {
    gitlocks::LibraryOptions host;
    host.validate_owner = false;
    host.read_host_config = false;
    // A mapped window is a copy here (MEMFS): 4 MiB copied per window miss
    // made reading a 146 MiB pack's commits 2.4x slower than a 16 MiB one's.
    host.pack_window_bytes = std::size_t(256) << 10;
    host.pack_mapped_limit_bytes = std::size_t(32) << 20;
    gitlocks::set_library_options(host);
    return gitlocks::crypto_init();
  }();
  return ready;
}

gitlocks::ObjectStore* store_of(int handle) { return reinterpret_cast<gitlocks::ObjectStore*>(handle); }

gitlocks::Result<std::vector<json>> records_of(gitlocks::StateReader& reader) {
  std::vector<json> out;
  GITLOCKS_CHECK(reader.for_each_record([&](const json& r) {
    out.push_back(r);
    return true;
  }));
  return out;
}

gitlocks::Result<std::vector<json>> records_of(gitlocks::ObjectStore& store, const gitlocks::Oid& state) {
  gitlocks::StateReader reader(store, state);
  return records_of(reader);
}

// A member key given to a call, wiped when the call returns. No key: a null
// pointer; an empty one is a usage error.
class MemberKey {
 public:
  MemberKey() = default;
  MemberKey(const MemberKey&) = delete;
  MemberKey& operator=(const MemberKey&) = delete;
  ~MemberKey() {
    if (key_) gitlocks::wipe(*key_);
  }
  gitlocks::Status read(const char* bytes, std::size_t len) {
    if (!bytes) return gitlocks::Ok{};
    auto kp = gitlocks::parse_actor_key(std::string_view(bytes, len));
    if (!kp.ok()) return gitlocks::make_error(kp.error().code, "member key: " + kp.error().message);
    key_ = *kp;
    gitlocks::wipe(*kp);
    return gitlocks::Ok{};
  }
  const gitlocks::KeyPair* get() const { return key_ ? &*key_ : nullptr; }

 private:
  std::optional<gitlocks::KeyPair> key_;
};

// The common start of a store export that takes a member key and options:
// the module ready, the key read (wiped when the call ends), the options
// parsed. start() returns nullptr when ready, else the error answer.
class StoreCall {
 public:
  char* start(int handle, const char* key, std::size_t key_len, const char* options_json) {
    if (!module_ready()) return fail(Errc::invalid, "libsodium did not initialise");
    store_ = store_of(handle);
    if (auto s = member_.read(key, key_len); !s.ok()) return fail(s.error());
    auto options = parse(options_json, "options");
    if (!options.ok()) return fail(options.error());
    options_ = std::move(*options);
    return nullptr;
  }
  gitlocks::ObjectStore& store() const { return *store_; }
  const MemberKey& member() const { return member_; }
  const json& options() const { return options_; }

 private:
  gitlocks::ObjectStore* store_ = nullptr;
  MemberKey member_;
  json options_;
};

// An object id a caller passed: 40 lowercase hex digits (store-read, as a
// store refuses an id it cannot read).
gitlocks::Result<gitlocks::Oid> id_arg(const std::string& text) {
  if (auto id = gitlocks::Oid::from_hex(text)) return *id;
  return gitlocks::make_error(Errc::store_read, "invalid object id '" + text + "'");
}

// The policy a commit's state records (a state of a known format only).
struct CommitPolicy {
  gitlocks::TransitionCommit commit;
  json policy;
};

gitlocks::Result<CommitPolicy> commit_policy(gitlocks::ObjectStore& store, const char* commit) {
  GITLOCKS_TRY(id, id_arg(commit ? commit : ""));
  GITLOCKS_TRY(tc, gitlocks::read_transition_commit(store, id));
  gitlocks::StateReader reader(store, tc.state);
  GITLOCKS_CHECK(reader.check_format());
  GITLOCKS_TRY(policy, reader.policy());
  return CommitPolicy{std::move(tc), std::move(policy)};
}

// The replay options every store export reads from its options object:
// "allow_test_clock", "pins" ({"audience","service_key"}) and "owner" (the
// expected owner key: the core's owner-mismatch rule).
gitlocks::Status read_replay_options(const json& options, gitlocks::ReplayOptions& ro) {
  ro.allow_test_clock = options.value("allow_test_clock", false);
  if (options.contains("pins")) {
    const json& p = options["pins"];
    GITLOCKS_TRY(audience, gitlocks::get_string(p, "audience"));
    GITLOCKS_TRY(key, gitlocks::get_string(p, "service_key"));
    ro.expected_pins = gitlocks::Pins{audience, key};
  }
  if (options.contains("owner")) {
    GITLOCKS_TRY(owner, gitlocks::get_string(options, "owner"));
    ro.expected_owner = owner;
  }
  return gitlocks::Ok{};
}

// What store_replay (with "from" or "from_checkpoint") and store_timeline
// read from their options: the tip (options.tip, else refs/locks/state) and
// the replay options. With "from_checkpoint", the replay starts at the
// newest checkpoint of the owner (the expected owner's when "owner" is
// given), as a fresh clone of the CLI does (trust.hpp checkpoint_anchor),
// else at the root.
struct ReplayRequest {
  gitlocks::Oid tip;
  gitlocks::ReplayOptions options;
  std::optional<gitlocks::Oid> checkpoint;  // the checkpoint it starts at
};

gitlocks::Result<ReplayRequest> replay_request(gitlocks::ObjectStore& store, const json& options, bool with_from) {
  if (with_from)
    GITLOCKS_CHECK(gitlocks::check_keys(
        options, {"tip", "from", "from_checkpoint", "allow_test_clock", "pins", "owner"}, "replay options"));
  else GITLOCKS_CHECK(gitlocks::check_keys(options, {"tip", "allow_test_clock", "pins", "owner"}, "timeline options"));
  ReplayRequest r;
  if (options.contains("tip")) {
    GITLOCKS_TRY(t, gitlocks::get_string(options, "tip"));
    GITLOCKS_TRY(id, id_arg(t));
    r.tip = id;
  } else {
    GITLOCKS_TRY(ref, store.read_ref(gitlocks::kStateRef));
    if (!ref) return gitlocks::make_error(Errc::store_read, "no refs/locks/state in the bundle: pass options.tip");
    r.tip = *ref;
  }
  if (options.contains("from")) {
    GITLOCKS_TRY(f, gitlocks::get_string(options, "from"));
    GITLOCKS_TRY(id, id_arg(f));
    r.options.from = id;
  }
  GITLOCKS_CHECK(read_replay_options(options, r.options));
  if (options.contains("from_checkpoint")) {
    if (!options["from_checkpoint"].is_boolean())
      return gitlocks::make_error(Errc::usage, "replay options: from_checkpoint must be a boolean");
    if (options["from_checkpoint"].get<bool>()) {
      if (r.options.from)
        return gitlocks::make_error(Errc::usage, "replay options: from and from_checkpoint exclude each other");
      GITLOCKS_TRY(found, gitlocks::checkpoint_anchor(store, r.tip, r.options, ""));
      if (found) {
        r.options.from = found->commit;
        r.checkpoint = found->commit;
      }
    }
  }
  return r;
}

// The commit `options.tip` or `commit` names, else refs/locks/state.
gitlocks::Result<gitlocks::Oid> tip_of(gitlocks::ObjectStore& store, const char* commit) {
  if (commit && *commit) return id_arg(commit);
  GITLOCKS_TRY(ref, store.read_ref(gitlocks::kStateRef));
  if (!ref) return gitlocks::make_error(Errc::store_read, "no refs/locks/state in the bundle: pass a commit");
  return *ref;
}

// A replay a store export runs: the tip and options it asked for, progress
// reported to the JS callback of `progress_token`, and the member's vault
// (a PRIVATE store replays in full with it). On the heap: the options point
// into the vault.
struct PreparedReplay {
  gitlocks::Oid tip;
  gitlocks::ReplayOptions options;
  gitlocks::MemberVault vault;
  std::optional<gitlocks::Oid> checkpoint;  // the checkpoint the replay starts at (from_checkpoint)
};

gitlocks::Result<std::unique_ptr<PreparedReplay>> prepare_replay(const StoreCall& call, bool with_from,
                                                                 int progress_token) {
  GITLOCKS_TRY(request, replay_request(call.store(), call.options(), with_from));
  auto p = std::make_unique<PreparedReplay>();
  p->tip = std::move(request.tip);
  p->options = std::move(request.options);
  p->checkpoint = std::move(request.checkpoint);
  if (progress_token != 0)
    p->options.progress = [progress_token](std::size_t done, std::size_t total) {
      gitlocks_js_progress(progress_token, static_cast<double>(done), static_cast<double>(total));
    };
  p->vault = gitlocks::verifier_keys(call.store(), p->tip, call.member().get()).member;
  if (p->vault.vault) p->options.vault = &*p->vault.vault;
  return p;
}

// The snapshot at `commit` (tip_of: "" is refs/locks/state) after verifying
// its whole history from the root (gitlocks::verified_snapshot): a query
// never answers from a forged commit. With a member's key a PRIVATE store
// is replayed in full and the snapshot carries the member's keys and the
// codec of the tip's epoch (Snapshot::vault(), codec()); a key that opens
// no key of that epoch is not-member.
gitlocks::Result<gitlocks::Snapshot> verified_at(gitlocks::ObjectStore& store, const char* commit,
                                                 const gitlocks::KeyPair* member, bool allow_test_clock,
                                                 const std::optional<std::string>& owner = std::nullopt) {
  GITLOCKS_TRY(tip, tip_of(store, commit));
  const gitlocks::VerifierKeys keys = gitlocks::verifier_keys(store, tip, member);
  gitlocks::TrustOptions to;
  to.allow_test_clock = allow_test_clock;
  to.expected_owner = owner;  // a store of another owner is invalid-history (owner-mismatch)
  to.vault = keys.vault();
  to.verifier = keys.verifier;
  GITLOCKS_TRY(trusted, gitlocks::verified_snapshot(store, tip, to));
  if (trusted.snapshot.keys && trusted.snapshot.keys->codec_error)
    return trusted.snapshot.keys->codec_error->prefixed("commit " + tip + ": ");
  return std::move(trusted.snapshot);
}

// The expected owner a query's options name ("owner": 64 hex), if any.
gitlocks::Result<std::optional<std::string>> owner_option(const json& options) {
  if (!options.contains("owner")) return std::optional<std::string>();
  GITLOCKS_TRY(owner, gitlocks::get_string(options, "owner"));
  return std::optional<std::string>(owner);
}

// The trust states of the last commits a store handle's readState or
// readChanges verified, per handle and clock setting: the next call starts
// from the one naming its commit, or continues from the newest when its
// commit descends from it (a reader walking a history from the root
// verifies each commit once).
struct ReadAnchors {
  std::vector<gitlocks::TrustState> trust;  // newest last, at most kReadAnchors
  bool allow_test_clock = false;
};
constexpr std::size_t kReadAnchors = 4;
std::map<int, ReadAnchors>& read_anchors() {
  static std::map<int, ReadAnchors> anchors;
  return anchors;
}

// The verified view of `commit` for store_read_state / store_read_changes
// (gitlocks::commit_view), options {"allow_test_clock":BOOL?}.
gitlocks::Result<gitlocks::CommitView> read_view(StoreCall& call, int handle, const char* commit, bool with_parent) {
  GITLOCKS_CHECK(gitlocks::check_keys(call.options(), {"allow_test_clock"}, "read options"));
  GITLOCKS_TRY(id, id_arg(commit ? commit : ""));
  gitlocks::CommitViewOptions o;
  o.member = call.member().get();
  o.allow_test_clock = call.options().value("allow_test_clock", false);
  o.with_parent = with_parent;
  ReadAnchors& kept = read_anchors()[handle];
  if (kept.allow_test_clock != o.allow_test_clock) kept = ReadAnchors{{}, o.allow_test_clock};
  o.anchors = kept.trust;
  GITLOCKS_TRY(view, gitlocks::commit_view(call.store(), id, o));
  auto keep = [&](const gitlocks::TrustState& t) {
    auto& list = kept.trust;
    list.erase(std::remove(list.begin(), list.end(), t), list.end());
    list.push_back(t);
    if (list.size() > kReadAnchors) list.erase(list.begin());
  };
  if (view.parent_trust) keep(*view.parent_trust);
  keep(view.trust);
  return view;
}

}  // namespace

extern "C" {

void gitlocks_free(char* p) { std::free(p); }

// {"ok":{"version":"0.1.0","packet_format":...,"state_format":...}}
char* gitlocks_version() {
  return ok({{"version", GITLOCKS_VERSION},
             {"packet_format", gitlocks::kPacketFormat},
             {"state_format", gitlocks::kStateFormat}});
}

// {"ok":{"capabilities":[NAME,...],"format":"gitlocks-capabilities-v1"}}:
// the core's report, as `git-locks capabilities --json` prints it.
char* gitlocks_capabilities() { return ok(gitlocks::capabilities_json()); }

// derive_interval(guards, body) -> {"ok":[LO,HI]}
char* gitlocks_derive_interval(const char* guards_json, const char* body_json) {
  auto guards = parse(guards_json, "guards");
  if (!guards.ok()) return fail(guards.error());
  auto body = parse(body_json, "body");
  if (!body.ok()) return fail(body.error());
  auto r = gitlocks::derive_interval(*guards, *body);
  if (!r.ok()) return fail(r.error());
  return ok(interval_json(*r));
}

// action_preflight(action) -> {"ok":true}
char* gitlocks_action_preflight(const char* action_json) {
  auto action = parse(action_json, "action");
  if (!action.ok()) return fail(action.error());
  auto s = gitlocks::action_preflight(*action);
  if (!s.ok()) return fail(s.error());
  return ok(true);
}

// plan(state, policy, body, context): state is null (no store yet; the body
// must be {"init":POLICY}) or {"records":[RECORD,...]} with `policy` the
// policy document in force; context is {"actor":HEX64,"instance":HEX64,
// "now":MS?} (with now: propose mode). Result: {"action","body","guards",
// "interval":[LO,HI],"leases","state":{"tree","policy","records"}}.
char* gitlocks_plan(const char* state_json, const char* policy_json, const char* body_json, const char* context_json) {
  if (!module_ready()) return fail(Errc::invalid, "libsodium did not initialise");
  auto state = parse(state_json, "state");
  if (!state.ok()) return fail(state.error());
  auto body = parse(body_json, "body");
  if (!body.ok()) return fail(body.error());
  auto ctx_doc = parse(context_json, "context");
  if (!ctx_doc.ok()) return fail(ctx_doc.error());
  if (auto s = gitlocks::check_keys(*ctx_doc, {"actor", "instance", "now"}, "context"); !s.ok()) return fail(s.error());
  auto actor = gitlocks::get_string(*ctx_doc, "actor");
  if (!actor.ok()) return fail(actor.error());
  auto instance = gitlocks::get_string(*ctx_doc, "instance");
  if (!instance.ok()) return fail(instance.error());
  std::optional<std::int64_t> now;
  if (ctx_doc->contains("now")) {
    auto n = gitlocks::get_int(*ctx_doc, "now");
    if (!n.ok()) return fail(n.error());
    now = *n;
  }
  auto store = gitlocks::open_memory_store();
  if (!store.ok()) return fail(store.error());
  gitlocks::Oid source;
  if (!state->is_null()) {
    if (auto s = gitlocks::check_keys(*state, {"records"}, "state"); !s.ok()) return fail(s.error());
    if (!state->contains("records") || !(*state)["records"].is_array())
      return fail(Errc::bad_json, "state must be null or {\"records\":[...]}");
    auto policy = parse(policy_json, "policy");
    if (!policy.ok()) return fail(policy.error());
    auto tree = gitlocks::write_state(**store, *policy, (*state)["records"].get<std::vector<json>>());
    if (!tree.ok()) return fail(tree.error());
    source = *tree;
  }
  auto r = gitlocks::plan(**store, source, gitlocks::PlanContext{*actor, *instance}, *body, now);
  if (!r.ok()) return fail(r.error());
  auto records = records_of(**store, r->result_state);
  if (!records.ok()) return fail(records.error());
  gitlocks::StateReader reader(**store, r->result_state);
  auto policy_doc = reader.policy();
  if (!policy_doc.ok()) return fail(policy_doc.error());
  return ok({{"action", gitlocks::action_name(r->action)},
             {"body", r->body},
             {"guards", gitlocks::guard_documents(r->guards)},
             {"interval", interval_json(r->interval)},
             {"leases", r->leases},
             {"state", {{"tree", r->result_state}, {"policy", *policy_doc}, {"records", *records}}}});
}

// verify_packet(stored bytes) -> {"ok":{"packet":PACKET,"digest":HEX}}
char* gitlocks_verify_packet(const char* stored, std::size_t len) {
  if (!module_ready()) return fail(Errc::invalid, "libsodium did not initialise");
  auto opened = gitlocks::open_packet(std::string_view(stored ? stored : "", stored ? len : 0));
  if (!opened.ok()) return fail(opened.error());
  return ok({{"packet", opened->document()}, {"digest", opened->digest}});
}

// verify_attestation(attestation bytes, packet bytes, pins, options):
// pins {"audience","service_key"}, options {"allow_test_clock":BOOL?}.
// -> {"ok":{"attestation":ATT,"admitted_at_ms":T}}
char* gitlocks_verify_attestation(const char* att, std::size_t att_len, const char* packet, std::size_t packet_len,
                                  const char* pins_json, const char* options_json) {
  if (!module_ready()) return fail(Errc::invalid, "libsodium did not initialise");
  auto pins_doc = parse(pins_json, "pins");
  if (!pins_doc.ok()) return fail(pins_doc.error());
  if (auto s = gitlocks::check_keys(*pins_doc, {"audience", "service_key"}, "pins"); !s.ok()) return fail(s.error());
  auto audience = gitlocks::get_string(*pins_doc, "audience");
  if (!audience.ok()) return fail(audience.error());
  auto key = gitlocks::get_string(*pins_doc, "service_key");
  if (!key.ok()) return fail(key.error());
  auto options = parse(options_json, "options");
  if (!options.ok()) return fail(options.error());
  if (auto s = gitlocks::check_keys(*options, {"allow_test_clock"}, "options"); !s.ok()) return fail(s.error());
  const bool allow_test_clock = options->value("allow_test_clock", false);
  std::string_view packet_stored(packet ? packet : "", packet ? packet_len : 0);
  auto opened_packet = gitlocks::open_packet(packet_stored);
  if (!opened_packet.ok()) return fail(opened_packet.error());
  auto opened = gitlocks::open_attestation(std::string_view(att ? att : "", att ? att_len : 0));
  if (!opened.ok()) return fail(opened.error());
  auto s = gitlocks::check_attestation(*opened, opened_packet->fields, packet_stored, gitlocks::Pins{*audience, *key},
                                       allow_test_clock);
  if (!s.ok()) return fail(s.error());
  return ok({{"attestation", opened->document}, {"admitted_at_ms", opened->admitted_at_ms}});
}

void gitlocks_store_free(int handle) {
  read_anchors().erase(handle);
  delete store_of(handle);
}

// A store opened from a bundle or packfile given in pieces
// (gitlocks::PackStoreBuilder), so the JS side never copies the whole bundle
// into the heap:
// store_builder_new() -> handle (0: out of memory); store_builder_append(h,
// bytes) -> {"ok":{"pack_bytes":N}}; store_builder_finish(h) -> as
// store_open, and the builder is spent; store_builder_free(h) always.
int gitlocks_store_builder_new() {
  return static_cast<int>(reinterpret_cast<std::intptr_t>(new (std::nothrow) gitlocks::PackStoreBuilder()));
}

char* gitlocks_store_builder_append(int handle, const std::uint8_t* bytes, std::size_t len) {
  auto* b = reinterpret_cast<gitlocks::PackStoreBuilder*>(handle);
  auto st = b->append(std::string_view(reinterpret_cast<const char*>(bytes), bytes ? len : 0));
  if (!st.ok()) return fail(st.error());
  return ok({{"pack_bytes", b->pack_bytes()}});
}

char* gitlocks_store_builder_finish(int handle) {
  if (!module_ready()) return fail(Errc::invalid, "libsodium did not initialise");
  auto store = reinterpret_cast<gitlocks::PackStoreBuilder*>(handle)->finish();
  if (!store.ok()) return fail(store.error());
  json refs = json::object();
  auto tip = (*store)->read_ref(gitlocks::kStateRef);
  if (tip.ok() && *tip) refs[std::string(gitlocks::kStateRef)] = **tip;
  auto* raw = store->release();
  return ok({{"handle", reinterpret_cast<std::intptr_t>(raw)}, {"refs", refs}});
}

void gitlocks_store_builder_free(int handle) { delete reinterpret_cast<gitlocks::PackStoreBuilder*>(handle); }

// store_replay(handle, options, member key, progress token): options
// {"tip":OID?, "from":OID? | "from_checkpoint":BOOL?, "allow_test_clock":BOOL?,
// "pins":{"audience","service_key"}?, "owner":HEX?}; the tip defaults to
// refs/locks/state. The summary says where the replay started ("start":
// "root", "from" or "checkpoint"; "start_commit").
// With the key of a member of a PRIVATE store (its vault opened from the
// tip's keyring, as `git-locks verify` does), sealed commits replay in full;
// without one, or with a key that is not a member's, structurally. A key
// that does not parse is a usage error. -> {"ok":{"verdicts":[VERDICT,...],
// "summary":{"commits","invalid","structural","tip","first_invalid",
// "private","member","checkpoints","cut_start","note"?}}}, "note" exactly
// when native verify adds it.
char* gitlocks_store_replay(int handle, const char* options_json, const char* key, std::size_t key_len,
                            int progress_token) {
  StoreCall call;
  if (char* refused = call.start(handle, key, key_len, options_json)) return refused;
  auto prepared = prepare_replay(call, true, progress_token);
  if (!prepared.ok()) return fail(prepared.error());
  PreparedReplay& p = **prepared;
  json verdicts = json::array();
  auto r = gitlocks::replay_chain(call.store(), p.tip, p.options,
                                  [&](const gitlocks::Verdict& v) { verdicts.push_back(gitlocks::verdict_json(v)); });
  if (!r.ok()) return fail(r.error());
  json summary = gitlocks::replay_summary_json(*r, p.vault);
  // Where it started, as `git-locks verify --json` says it.
  summary["start"] = p.checkpoint ? "checkpoint" : p.options.from ? "from" : "root";
  summary["start_commit"] = p.options.from ? json(*p.options.from) : json(nullptr);
  return ok({{"verdicts", std::move(verdicts)}, {"summary", std::move(summary)}});
}

// store_timeline(handle, options, member key, progress token, sink token):
// the replay of store_replay (same options but "from") and, in the same
// pass, the core's timeline of leases (gitlocks::LeaseTimelineBuilder).
// The long lists go to the JS sink registered for `sink_token` as they are
// made, in batches of canonical JSON arrays (kind 0: transitions, 1:
// verdicts, 2: leases, 3: tickets), so the module never holds the history as
// text or JSON; the answer is {"ok":{"end_time","policy","summary"}}.
// Progress: the commits of the one pass.
char* gitlocks_store_timeline(int handle, const char* options_json, const char* key, std::size_t key_len,
                              int progress_token, int sink_token) {
  StoreCall call;
  if (char* refused = call.start(handle, key, key_len, options_json)) return refused;
  auto prepared = prepare_replay(call, false, progress_token);
  if (!prepared.ok()) return fail(prepared.error());
  PreparedReplay& p = **prepared;
  gitlocks::ObjectStore* store = &call.store();
  const gitlocks::Oid& tip = p.tip;
  const gitlocks::ReplayOptions& ro = p.options;
  const gitlocks::MemberVault& vault = p.vault;
  gitlocks::LeaseTimelineBuilder builder(*store);
  Batches transitions(sink_token, 0), verdicts(sink_token, 1);
  auto r = gitlocks::replay_commits(*store, tip, ro, [&](const gitlocks::ReplayedCommit& rc) {
    verdicts.add(encode(gitlocks::verdict_json(rc.verdict)));
    transitions.add(encode(gitlocks::timeline_transition_json(builder.add(rc))));
  });
  if (!r.ok()) return fail(r.error());
  verdicts.flush();
  transitions.flush();
  const gitlocks::LeaseTimeline t = std::move(builder).finish();
  Batches leases(sink_token, 2);
  for (const auto& l : t.leases) leases.add(encode(gitlocks::timeline_lease_json(l)));
  leases.flush();
  Batches tickets(sink_token, 3);
  for (const auto& k : t.tickets) tickets.add(encode(gitlocks::timeline_ticket_json(k)));
  tickets.flush();
  return ok({{"end_time", t.end_time ? json(*t.end_time) : json(nullptr)},
             {"policy", t.policy},
             {"summary", gitlocks::replay_summary_json(*r, vault)}});
}

// store_status(handle, commit, options, member key): what `git-locks status
// --json` prints at `commit` ("" : refs/locks/state) after verifying its
// history from the root (gitlocks::status_document). options {"now":MS,
// "paths":[TEXT...]?, "all":BOOL?, "me":ACTOR?, "allow_test_clock":BOOL?}.
// Errors: invalid-history (the commit's history does not verify), bad-path,
// not-member, store-read.
char* gitlocks_store_status(int handle, const char* commit, const char* options_json, const char* key,
                            std::size_t key_len) {
  StoreCall call;
  if (char* refused = call.start(handle, key, key_len, options_json)) return refused;
  gitlocks::ObjectStore* store = &call.store();
  const MemberKey& member = call.member();
  const json* options = &call.options();
  if (auto s =
          gitlocks::check_keys(*options, {"now", "paths", "all", "me", "allow_test_clock", "owner"}, "status options");
      !s.ok())
    return fail(s.error());
  auto owner = owner_option(*options);
  if (!owner.ok()) return fail(owner.error());
  gitlocks::StatusQuery q;
  auto now = gitlocks::get_int(*options, "now");
  if (!now.ok()) return fail(now.error());
  q.now = *now;
  q.include_expired = options->value("all", false);
  if (options->contains("me")) {
    auto me = gitlocks::get_string(*options, "me");
    if (!me.ok()) return fail(me.error());
    q.me = *me;
  }
  std::vector<std::string> typed;
  if (options->contains("paths")) {
    const json& paths = (*options)["paths"];
    if (!paths.is_array()) return fail(Errc::bad_json, "'paths' must be an array of strings");
    for (const auto& p : paths) {
      if (!p.is_string()) return fail(Errc::bad_json, "'paths' must be an array of strings");
      typed.push_back(p.get<std::string>());
    }
  }
  if (auto checked = gitlocks::path_filters(typed, gitlocks::PathCase::sensitive); !checked.ok())
    return fail(checked.error());
  auto at = verified_at(*store, commit, member.get(), options->value("allow_test_clock", false), *owner);
  if (!at.ok()) return fail(at.error());
  auto filters = gitlocks::path_filters(typed, at->path_case());
  if (!filters.ok()) return fail(filters.error());
  q.paths = std::move(*filters);
  gitlocks::StateReader reader(*store, at->state, at->codec());
  auto doc = gitlocks::status_document(reader, *at, q);
  if (!doc.ok()) return fail(doc.error());
  return ok(*doc);
}

// store_check(handle, tip, commits, options, member key): what `git-locks
// check --json` prints (gitlocks::check_report_json), as its exact text
// (nlohmann's dump, as the CLI prints it), for the commits `commits_json`
// (an array of commit ids, in the order to report them) judged on the
// state at `tip` ("" : refs/locks/state) after verifying its history from
// the root as store_status does. options {"now":MS, "allow_test_clock":BOOL?};
// the check is made at gitlocks::check_instant(snapshot, now). A PRIVATE
// store needs a member's key (else not-member). The pack must hold each
// commit, its parents' trees and, for a merge, its merge bases (the core
// merges the files). -> {"ok":TEXT}. Errors: invalid-history, not-member,
// store-read, bad-json.
char* gitlocks_store_check(int handle, const char* tip, const char* commits_json, const char* options_json,
                           const char* key, std::size_t key_len) {
  StoreCall call;
  if (char* refused = call.start(handle, key, key_len, options_json)) return refused;
  const json& options = call.options();
  if (auto s = gitlocks::check_keys(options, {"now", "allow_test_clock", "owner"}, "check options"); !s.ok())
    return fail(s.error());
  auto owner = owner_option(options);
  if (!owner.ok()) return fail(owner.error());
  auto clock = gitlocks::get_int(options, "now");
  if (!clock.ok()) return fail(clock.error());
  auto commits = parse(commits_json, "commits");
  if (!commits.ok()) return fail(commits.error());
  if (!commits->is_array()) return fail(Errc::bad_json, "'commits' must be an array of commit ids");
  std::vector<gitlocks::Oid> ids;
  ids.reserve(commits->size());
  for (const auto& c : *commits) {
    auto id = c.is_string() ? gitlocks::Oid::from_hex(c.get<std::string>()) : std::nullopt;
    if (!id) return fail(Errc::bad_json, "'commits' must be an array of commit ids");
    ids.push_back(*id);
  }
  auto at = verified_at(call.store(), tip, call.member().get(), options.value("allow_test_clock", false), *owner);
  if (!at.ok()) return fail(at.error());
  gitlocks::EnforcementView view;
  view.snap = &*at;
  view.now = gitlocks::check_instant(*at, *clock);
  auto checks = gitlocks::check_commits(call.store(), view, ids);
  if (!checks.ok()) return fail(checks.error());
  const json doc = gitlocks::check_report_json(*at, view.now, *checks);
  return ok(doc.dump(-1, ' ', false, json::error_handler_t::replace));
}

// store_fence(handle, commit, resource, options, member key): what
// `git-locks fence RESOURCE GENERATION --json` prints at `commit` ("" :
// refs/locks/state) after verifying its history (gitlocks::fence), with
// "commit". options {"generation":N, "now":MS, "allow_test_clock":BOOL?}.
// Errors: stale-generation (not live; fields resource, generation,
// current_generation), invalid-history, bad-path, store-read.
char* gitlocks_store_fence(int handle, const char* commit, const char* resource_text, const char* options_json,
                           const char* key, std::size_t key_len) {
  StoreCall call;
  if (char* refused = call.start(handle, key, key_len, options_json)) return refused;
  gitlocks::ObjectStore* store = &call.store();
  const MemberKey& member = call.member();
  const json* options = &call.options();
  if (auto s = gitlocks::check_keys(*options, {"generation", "now", "allow_test_clock"}, "fence options"); !s.ok())
    return fail(s.error());
  auto generation = gitlocks::get_int(*options, "generation");
  if (!generation.ok()) return fail(generation.error());
  if (*generation < 0) return fail(Errc::usage, "the generation must not be negative");
  auto now = gitlocks::get_int(*options, "now");
  if (!now.ok()) return fail(now.error());
  const std::string typed = resource_text ? resource_text : "";
  if (auto checked = gitlocks::resource_of(typed, gitlocks::PathCase::sensitive); !checked.ok())
    return fail(checked.error());
  auto at = verified_at(*store, commit, member.get(), options->value("allow_test_clock", false));
  if (!at.ok()) return fail(at.error());
  auto resource = gitlocks::resource_of(typed, at->path_case());
  if (!resource.ok()) return fail(resource.error());
  gitlocks::StateReader reader(*store, at->state, at->codec());
  auto answer = gitlocks::fence(reader, *resource, *generation, *now);
  if (!answer.ok()) return fail(answer.error());
  (*answer)["commit"] = *at->commit;
  return ok(*answer);
}

// store_read_state(handle, commit, options, member key) ->
// {"ok":{"commit","tree","policy","records"}}: the state of `commit` after
// verifying the history that ends there (gitlocks::commit_view: the
// snapshot `status` would build on at that commit). The records of a
// PRIVATE state are decrypted with a member key of the commit's keyring
// (a member keeps old epochs' keys); otherwise not-member. The policy is
// the one in force there, as stored (its families stay sealed). Errors:
// invalid-history, unknown-format, not-member, store-read.
char* gitlocks_store_read_state(int handle, const char* commit, const char* options_json, const char* key,
                                std::size_t key_len) {
  StoreCall call;
  if (char* refused = call.start(handle, key, key_len, options_json)) return refused;
  auto view = read_view(call, handle, commit, false);
  if (!view.ok()) return fail(view.error());
  const gitlocks::Snapshot& at = view->at;
  gitlocks::StateReader reader(call.store(), at.state, at.codec());
  auto records = records_of(reader);
  if (!records.ok()) return fail(records.error());
  return ok({{"commit", *at.commit},
             {"tree", at.state},
             {"policy", gitlocks::policy_document(at.policy)},
             {"records", *records}});
}

// store_read_changes(handle, commit, options, member key) ->
// {"ok":{"commit","tree","policy","before":[RECORD,...],"after":[RECORD,...]}}:
// the records the commit changed (gitlocks::commit_changes against its first
// parent's state; the root commit against no records), verified as for
// read_state. Costs O(the commit's changes) once the history is verified;
// the handle keeps the last verified commit, so a reader walking the
// history in order verifies each commit once. Key and options as for
// read_state.
char* gitlocks_store_read_changes(int handle, const char* commit, const char* options_json, const char* key,
                                  std::size_t key_len) {
  StoreCall call;
  if (char* refused = call.start(handle, key, key_len, options_json)) return refused;
  auto view = read_view(call, handle, commit, true);
  if (!view.ok()) return fail(view.error());
  auto changes = gitlocks::commit_changes(call.store(), *view);
  if (!changes.ok()) return fail(changes.error());
  return ok({{"commit", *view->at.commit},
             {"tree", view->at.state},
             {"policy", gitlocks::policy_document(view->at.policy)},
             {"before", changes->before},
             {"after", changes->after}});
}

// canonical_json(text) -> {"ok":TEXT}: the canonical form of a JSON value
// (sorted keys, no whitespace), what the core signs: the one encoder every
// host uses. Errors: bad-json, non-canonical (floats, unsafe integers).
char* gitlocks_canonical_json(const char* text) {
  auto v = parse(text, "value");
  if (!v.ok()) return fail(v.error());
  auto out = gitlocks::canon_dump(*v);
  if (!out.ok()) return fail(out.error());
  return ok(*out);
}

// store_read_policy(handle, commit) -> {"ok":{"commit","tree","policy"}}: the
// policy a commit's state records. It is in the clear in every store (a
// PRIVATE one's families stay sealed), so no key is needed.
char* gitlocks_store_read_policy(int handle, const char* commit) {
  if (!module_ready()) return fail(Errc::invalid, "libsodium did not initialise");
  auto at = commit_policy(*store_of(handle), commit);
  if (!at.ok()) return fail(at.error());
  return ok({{"commit", at->commit.commit}, {"tree", at->commit.state}, {"policy", at->policy}});
}

// key_actor(member key) -> {"ok":{"actor":HEX64}}: the public key of an actor
// key (to show which member a key is; the key itself never comes back).
char* gitlocks_key_actor(const char* key, std::size_t key_len) {
  if (!module_ready()) return fail(Errc::invalid, "libsodium did not initialise");
  MemberKey member;
  if (auto s = member.read(key, key_len); !s.ok()) return fail(s.error());
  if (!member.get()) return fail(Errc::usage, "member key: none given");
  return ok({{"actor", gitlocks::to_hex(member.get()->public_key)}});
}

// unicode_forms(text, len) -> {"ok":{"nfc","fold","unicode_version"}}: the
// NFC and the case-folded NFC of UTF-8 text (unicode.hpp).
char* gitlocks_unicode_forms(const char* text, std::size_t len) {
  const std::string_view in(text ? text : "", text ? len : 0);
  auto nfc = gitlocks::to_nfc(in);
  if (!nfc.ok()) return fail(nfc.error());
  auto fold = gitlocks::case_fold_nfc(in);
  if (!fold.ok()) return fail(fold.error());
  return ok({{"nfc", *nfc}, {"fold", *fold}, {"unicode_version", std::string(gitlocks::unicode_version())}});
}

// normalize_path(text, len, case_insensitive) -> {"ok":{"path"}}: what a
// host makes of a path a user typed (path.hpp normalize_path_input).
char* gitlocks_normalize_path(const char* text, std::size_t len, int case_insensitive) {
  auto p = gitlocks::normalize_path_input(
      std::string_view(text ? text : "", text ? len : 0),
      case_insensitive ? gitlocks::PathCase::insensitive : gitlocks::PathCase::sensitive);
  if (!p.ok()) return fail(p.error());
  return ok({{"path", *p}});
}

}  // extern "C"
