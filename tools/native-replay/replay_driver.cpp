// gitlocks-native-replay — the native reference for the WASM replay tests
// and benchmark: verifies refs/locks/state of a repository, or of a bundle
// or packfile read through the same pack store the WASM module uses.
//
//   gitlocks-native-replay (--repo DIR | --bundle FILE) [--tip OID]
//                          [--key FILE] [--allow-test-clock] [--quiet]
//                          [--timeline]
//
// --key: a member's actor key (key file or bare seed hex) for a PRIVATE
// store, opened from the tip's keyring as `git-locks verify` does.
// stdout: one canonical verdict_json line per commit, from the root (none
// with --quiet). stderr: {"commits":N,"invalid":N,"member":BOOL,
// "open_ms":MS,"replay_ms":MS}. Exit 0 all valid, 1 any invalid, 2 store-read.
// --timeline: instead of the verdict lines, one canonical line with what the
// WASM Store.timeline() returns: the core's lease_timeline over the replay
// plus "verdicts" and "summary" (replay_summary_json).
#include <chrono>
#include <fstream>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "gitlocks/canon.hpp"
#include "gitlocks/crypto.hpp"
#include "gitlocks/query.hpp"
#include "gitlocks/replay.hpp"
#include "gitlocks/state.hpp"
#include "gitlocks/store.hpp"

namespace {

int fail(const std::string& m) {
  std::cerr << "gitlocks-native-replay: " << m << "\n";
  return 2;
}

double ms_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace

int main(int argc, char** argv) {
  std::string repo, bundle, tip_arg, key_file;
  bool quiet = false;
  bool timeline = false;
  gitlocks::ReplayOptions options;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--repo" && i + 1 < argc) repo = argv[++i];
    else if (a == "--bundle" && i + 1 < argc) bundle = argv[++i];
    else if (a == "--tip" && i + 1 < argc) tip_arg = argv[++i];
    else if (a == "--key" && i + 1 < argc) key_file = argv[++i];
    else if (a == "--allow-test-clock") options.allow_test_clock = true;
    else if (a == "--quiet") quiet = true;
    else if (a == "--timeline") timeline = true;
    else
      return fail(
          "usage: (--repo DIR | --bundle FILE) [--tip OID] [--key FILE] [--allow-test-clock] [--quiet] "
          "[--timeline]");
  }
  if (repo.empty() == bundle.empty()) return fail("give exactly one of --repo, --bundle");
  if (!gitlocks::crypto_init()) return fail("libsodium");
  auto t0 = std::chrono::steady_clock::now();
  gitlocks::Result<std::unique_ptr<gitlocks::ObjectStore>> store = gitlocks::make_error(gitlocks::Errc::usage, "");
  if (!repo.empty()) {
    store = gitlocks::open_git_store(repo);
  } else {
    std::ifstream in(bundle, std::ios::binary);
    std::ostringstream ss;
    ss << in.rdbuf();
    if (!in) return fail("cannot read " + bundle);
    store = gitlocks::open_pack_store(ss.str());
  }
  if (!store.ok()) return fail(store.error().message);
  gitlocks::Oid tip;
  if (tip_arg.empty()) {
    auto ref = (*store)->read_ref(gitlocks::kStateRef);
    if (!ref.ok() || !*ref) return fail("no refs/locks/state");
    tip = **ref;
  } else if (auto id = gitlocks::Oid::from_hex(tip_arg)) {
    tip = *id;
  } else {
    return fail("not a commit id: " + tip_arg);
  }
  std::optional<gitlocks::KeyPair> key;
  if (!key_file.empty()) {
    std::ifstream in(key_file, std::ios::binary);
    std::ostringstream ss;
    ss << in.rdbuf();
    if (!in) return fail("cannot read " + key_file);
    auto kp = gitlocks::parse_actor_key(ss.str());
    if (!kp.ok()) return fail(kp.error().message);
    key = *kp;
  }
  gitlocks::MemberVault vault = gitlocks::verifier_keys(**store, tip, key ? &*key : nullptr).member;
  if (vault.vault) options.vault = &*vault.vault;
  const double open_ms = ms_since(t0);
  auto t1 = std::chrono::steady_clock::now();
  // --timeline: the timeline is built in the same pass as the replay (as the
  // WASM Store.timeline does), the verdict lines kept as text.
  std::string out, lines;
  std::optional<gitlocks::LeaseTimelineBuilder> builder;
  std::vector<gitlocks::TimelineTransition> transitions;
  if (timeline) builder.emplace(**store);
  auto on_verdict = [&](const gitlocks::Verdict& v) {
    if (quiet) return;
    out += gitlocks::canon_dump(gitlocks::verdict_json(v)).value();
    out += '\n';
  };
  auto on_commit = [&](const gitlocks::ReplayedCommit& rc) {
    lines += lines.empty() ? "[" : ",";
    lines += gitlocks::canon_dump(gitlocks::verdict_json(rc.verdict)).value();
    transitions.push_back(builder->add(rc));
  };
  auto r = timeline ? gitlocks::replay_commits(**store, tip, options, on_commit)
                    : gitlocks::replay_chain(**store, tip, options, on_verdict);
  const double replay_ms = ms_since(t1);
  if (!r.ok()) {
    if (key) gitlocks::wipe(*key);
    return fail(r.error().message);
  }
  if (timeline) {
    gitlocks::LeaseTimeline t = std::move(*builder).finish();
    t.transitions = std::move(transitions);
    lines += lines.empty() ? "[]" : "]";
    auto text = gitlocks::lease_timeline_text(
        t, {{"summary", gitlocks::canon_dump(gitlocks::replay_summary_json(*r, vault)).value()},
            {"verdicts", std::move(lines)}});
    if (!text.ok()) return fail(text.error().message);
    out = *text + "\n";
  }
  if (key) gitlocks::wipe(*key);
  std::cout << out << std::flush;
  std::cerr << gitlocks::json{{"commits", r->commits},
                              {"invalid", r->invalid},
                              {"member", vault.vault.has_value()},
                              {"open_ms", open_ms},
                              {"replay_ms", replay_ms}}
                   .dump()
            << "\n";
  return r->invalid == 0 ? 0 : 1;
}
