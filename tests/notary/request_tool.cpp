// gitlocks-notary-request — the client side of admission for the notary
// tests, through the core only:
//   make-request --actor-seed HEX --interval LO HI [--instance HEX]
//                [--packet-out FILE]
//     builds and seals a packet (make_packet; a body with a marker the
//     notary must never see), prints the stored admission request.
//   check --packet FILE --attestation FILE --audience A --service-key HEX
//         [--allow-test-clock]
//     open_attestation + check_attestation against the packet; prints
//     {"admitted_at_ms","clock","ok":true} (exit 0) or {"code","detail",
//     "ok":false} (exit 1).
#include <array>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "gitlocks/attest.hpp"
#include "gitlocks/packet.hpp"

using gitlocks::json;

namespace {

constexpr const char* kBodyMarker = "BODY-MARKER-never-sent-to-the-notary";

int fail(const std::string& what) {
  std::cerr << json{{"error", "usage"}, {"detail", what}}.dump() << "\n";
  return 64;
}

bool read_file(const std::string& path, std::string& out) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return false;
  std::ostringstream ss;
  ss << f.rdbuf();
  out = ss.str();
  return true;
}

bool seed_from_hex(const std::string& hex, std::array<std::uint8_t, gitlocks::kSeedBytes>& seed) {
  if (hex.size() != 2 * seed.size()) return false;
  for (std::size_t i = 0; i < seed.size(); ++i) {
    unsigned v = 0;
    if (std::sscanf(hex.c_str() + 2 * i, "%2x", &v) != 1) return false;
    seed[i] = static_cast<std::uint8_t>(v);
  }
  return true;
}

int make_request(const std::vector<std::string>& args) {
  std::map<std::string, std::string> f;
  std::int64_t lo = -1, hi = -1;
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--interval" && i + 2 < args.size()) {
      lo = std::stoll(args[i + 1]);
      hi = std::stoll(args[i + 2]);
      i += 2;
    } else if (args[i].rfind("--", 0) == 0 && i + 1 < args.size()) {
      f[args[i].substr(2)] = args[i + 1];
      ++i;
    } else {
      return fail("bad argument " + args[i]);
    }
  }
  std::array<std::uint8_t, gitlocks::kSeedBytes> seed{};
  if (!seed_from_hex(f["actor-seed"], seed)) return fail("--actor-seed takes 64 hex digits");
  if (lo < 0 || hi < 0) return fail("--interval LO HI is required");
  gitlocks::KeyPair actor = gitlocks::keypair_from_seed(seed);

  gitlocks::PacketHeader h;
  h.store = gitlocks::sha256_hex("notary-test-store");
  h.actor = gitlocks::to_hex(actor.public_key);
  h.command = "claim";
  h.instance = f.count("instance") ? f["instance"] : gitlocks::sha256_hex("instance");
  h.policy_hash = gitlocks::sha256_hex("policy");
  h.source = *gitlocks::Oid::from_hex(std::string(40, 'b'));
  gitlocks::PlanOutcome outcome;
  outcome.action = gitlocks::Action::claim;
  outcome.body = {{"ops", json::array({{{"op", "claim"}, {"path", "src/secret.txt"}, {"note", kBodyMarker}}})}};
  outcome.result_state = *gitlocks::Oid::from_hex(std::string(40, 'c'));
  outcome.interval = {lo, hi};
  json packet = gitlocks::make_packet(h, outcome, std::nullopt);
  auto stored = gitlocks::seal_packet(packet, actor);
  if (!stored.ok()) return fail("seal_packet: " + stored.error().message);
  auto req = gitlocks::make_admission_request(packet, *stored, actor);
  if (!req.ok()) return fail("make_admission_request: " + req.error().message);
  if (f.count("packet-out")) {
    std::ofstream out(f["packet-out"], std::ios::binary);
    out << *stored;
    if (!out) return fail("cannot write " + f["packet-out"]);
  }
  std::cout << *req << "\n";
  return 0;
}

int check(const std::vector<std::string>& args) {
  std::map<std::string, std::string> f;
  bool allow_test_clock = false;
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--allow-test-clock") {
      allow_test_clock = true;
    } else if (args[i].rfind("--", 0) == 0 && i + 1 < args.size()) {
      f[args[i].substr(2)] = args[i + 1];
      ++i;
    } else {
      return fail("bad argument " + args[i]);
    }
  }
  std::string packet_stored, att_stored;
  if (!read_file(f["packet"], packet_stored) || !read_file(f["attestation"], att_stored))
    return fail("--packet and --attestation take readable files");
  auto report = [](const gitlocks::Error& e) {
    std::cout << json{{"ok", false}, {"code", gitlocks::errc_name(e.code)}, {"detail", e.message}}.dump() << "\n";
    return 1;
  };
  auto packet = gitlocks::open_packet(packet_stored);
  if (!packet.ok()) return report(packet.error());
  auto att = gitlocks::open_attestation(att_stored);
  if (!att.ok()) return report(att.error());
  gitlocks::Pins pins{f["audience"], f["service-key"]};
  auto st = gitlocks::check_attestation(*att, packet->fields, packet_stored, pins, allow_test_clock);
  if (!st.ok()) return report(st.error());
  std::cout << json{{"ok", true}, {"admitted_at_ms", att->admitted_at_ms}, {"clock", att->clock}}.dump() << "\n";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (!gitlocks::crypto_init()) return 2;
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty()) return fail("make-request ... | check ...");
  std::string cmd = args.front();
  args.erase(args.begin());
  if (cmd == "make-request") return make_request(args);
  if (cmd == "check") return check(args);
  return fail("unknown command " + cmd);
}
