// SSHSIG (OpenSSH's PROTOCOL.sshsig, sshsig.c) with Ed25519 keys, and Git's
// commit signatures (commit.c parse_buffer_signed_by_header, fsck.c
// verify_headers). Every input here is untrusted: each length is checked
// against the bytes that remain before it is used, and nothing is allocated
// by a length read from the input.
#include "gitlocks/sshsig.hpp"

#include <sodium.h>

#include <algorithm>
#include <array>
#include <cstdint>

namespace gitlocks {
namespace {

constexpr std::string_view kMagic = "SSHSIG";
constexpr std::uint32_t kVersion = 1;
constexpr std::string_view kBegin = "-----BEGIN SSH SIGNATURE-----";
constexpr std::string_view kEnd = "-----END SSH SIGNATURE-----";
// sshbuf_dtob64 wraps the armored blob at 70 characters.
constexpr std::size_t kArmorWidth = 70;
constexpr std::string_view kSha256 = "sha256";
constexpr std::string_view kSha512 = "sha512";
constexpr std::string_view kGitSigHeader = "gpgsig";
// What Git's get_format_by_sig recognises as OpenPGP and X.509 signatures.
constexpr std::string_view kOtherSignatures[] = {"-----BEGIN PGP SIGNATURE-----", "-----BEGIN PGP MESSAGE-----",
                                                 "-----BEGIN SIGNED MESSAGE-----"};

bool starts_with(std::string_view s, std::string_view prefix) { return s.substr(0, prefix.size()) == prefix; }

Error bad(std::string_view reason, const std::string& message) {
  return make_error(Errc::bad_signature, message).because(reason);
}

// -- SSH wire encoding (RFC 4251: uint32 big-endian, string = length || bytes)

void put_u32(std::string& out, std::uint32_t v) {
  for (int shift = 24; shift >= 0; shift -= 8) out.push_back(static_cast<char>((v >> shift) & 0xff));
}

void put_string(std::string& out, std::string_view s) {
  put_u32(out, static_cast<std::uint32_t>(s.size()));
  out.append(s);
}

std::string_view bytes_of(const std::uint8_t* p, std::size_t n) { return {reinterpret_cast<const char*>(p), n}; }

// Reads fields off the front of a byte string; a read that would run past
// the end fails and leaves the reader where it was.
class Reader {
 public:
  explicit Reader(std::string_view data) : rest_(data) {}
  bool done() const { return rest_.empty(); }
  [[nodiscard]] bool bytes(std::size_t n, std::string_view& out) {
    if (n > rest_.size()) return false;
    out = rest_.substr(0, n);
    rest_.remove_prefix(n);
    return true;
  }
  [[nodiscard]] bool u32(std::uint32_t& v) {
    std::string_view b;
    if (!bytes(4, b)) return false;
    v = 0;
    for (char c : b) v = v << 8 | static_cast<unsigned char>(c);
    return true;
  }
  [[nodiscard]] bool string(std::string_view& out) {
    const std::string_view before = rest_;
    std::uint32_t n = 0;
    if (u32(n) && bytes(n, out)) return true;
    rest_ = before;
    return false;
  }

 private:
  std::string_view rest_;
};

// -- Base64 (RFC 4648, with padding), as OpenSSH's b64_ntop / b64_pton

constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

std::string base64(std::string_view data) {
  std::string out;
  out.reserve((data.size() + 2) / 3 * 4);
  for (std::size_t i = 0; i < data.size(); i += 3) {
    const std::size_t n = std::min<std::size_t>(3, data.size() - i);
    std::uint32_t v = 0;
    for (std::size_t k = 0; k < 3; ++k) v = v << 8 | (k < n ? static_cast<unsigned char>(data[i + k]) : 0u);
    for (std::size_t k = 0; k < 4; ++k) out.push_back(k <= n ? kAlphabet[(v >> (18 - 6 * k)) & 63] : '=');
  }
  return out;
}

bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }

int base64_value(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return c - 'a' + 26;
  if (c >= '0' && c <= '9') return c - '0' + 52;
  if (c == '+') return 62;
  if (c == '/') return 63;
  return -1;
}

// Strict base64: only the alphabet, padding to a multiple of four and
// nothing but whitespace after it, the unused bits of the last character
// zero (else one blob would have several encodings). With `skip_space`,
// whitespace anywhere is ignored (b64_pton); without, it is refused.
bool unbase64(std::string_view text, bool skip_space, std::string& out) {
  out.clear();
  out.reserve(text.size() / 4 * 3 + 3);
  std::uint32_t acc = 0;
  std::size_t digits = 0;  // in the current group of four
  std::size_t pad = 0;
  for (char c : text) {
    if (skip_space && is_space(c)) continue;
    if (c == '=') {
      // One '=' after three digits, two after two; never after fewer.
      if (digits + pad < 2 || digits + pad >= 4) return false;
      ++pad;
      continue;
    }
    const int v = base64_value(c);
    if (v < 0 || pad > 0) return false;
    acc = acc << 6 | static_cast<std::uint32_t>(v);
    if (++digits == 4) {
      for (int shift = 16; shift >= 0; shift -= 8) out.push_back(static_cast<char>((acc >> shift) & 0xff));
      acc = 0;
      digits = 0;
    }
  }
  if (pad == 0) return digits == 0;
  if (digits + pad != 4) return false;
  // Two digits carry one byte and four spare bits, three carry two bytes and two.
  const std::uint32_t spare = digits == 2 ? 4 : 2;
  if ((acc & ((1u << spare) - 1)) != 0) return false;
  acc >>= spare;
  if (digits == 3) out.push_back(static_cast<char>((acc >> 8) & 0xff));
  out.push_back(static_cast<char>(acc & 0xff));
  return true;
}

// -- Keys and signatures

std::string public_key_blob(const PublicKey& pk) {
  std::string blob;
  put_string(blob, kSshEd25519);
  put_string(blob, bytes_of(pk.data(), pk.size()));
  return blob;
}

// H(message) for the hash names SSHSIG allows; empty for any other name.
std::string digest(std::string_view alg, std::string_view message) {
  const auto* m = reinterpret_cast<const unsigned char*>(message.data());
  if (alg == kSha512) {
    std::array<unsigned char, crypto_hash_sha512_BYTES> h{};
    crypto_hash_sha512(h.data(), m, message.size());
    return std::string(reinterpret_cast<const char*>(h.data()), h.size());
  }
  if (alg == kSha256) {
    std::array<unsigned char, crypto_hash_sha256_BYTES> h{};
    crypto_hash_sha256(h.data(), m, message.size());
    return std::string(reinterpret_cast<const char*>(h.data()), h.size());
  }
  return {};
}

// The bytes the key signs (PROTOCOL.sshsig §3); the reserved field is
// always empty here, whatever a signature blob carries (sshsig.c ignores it).
std::string signed_data(std::string_view ns, std::string_view hash_alg, std::string_view hash) {
  std::string data(kMagic);
  put_string(data, ns);
  put_string(data, "");
  put_string(data, hash_alg);
  put_string(data, hash);
  return data;
}

// The base64 blob between the armor lines, as sshsig_dearmor reads it: the
// header line first (LF or CRLF), the first "\n" + footer ends it. After
// the footer only the line's end may follow (OpenSSH ignores anything
// there; the core accepts one encoding of a commit's signature, not many).
Result<std::string> dearmor(std::string_view armored) {
  if (!starts_with(armored, kBegin)) return bad(reason::signature_malformed, "not an SSH signature: no armor header");
  std::string_view rest = armored.substr(kBegin.size());
  if (starts_with(rest, "\r\n")) rest.remove_prefix(2);
  else if (starts_with(rest, "\n")) rest.remove_prefix(1);
  else return bad(reason::signature_malformed, "SSH signature: no line end after the armor header");
  const std::string footer = "\n" + std::string(kEnd);
  const std::size_t end = rest.find(footer);
  if (end == std::string_view::npos) return bad(reason::signature_malformed, "SSH signature: no armor footer");
  const std::string_view after = rest.substr(end + footer.size());
  if (!after.empty() && after != "\n" && after != "\r\n")
    return bad(reason::signature_malformed, "SSH signature: text after the armor footer");
  std::string blob;
  if (!unbase64(rest.substr(0, end), true, blob))
    return bad(reason::signature_malformed, "SSH signature: invalid base64");
  return blob;
}

}  // namespace

std::string ssh_public_key_line(const PublicKey& pk) {
  return std::string(kSshEd25519) + " " + base64(public_key_blob(pk));
}

Result<PublicKey> parse_ssh_public_key(std::string_view line) {
  auto usage = [](const std::string& why) { return make_error(Errc::usage, "not an OpenSSH public key: " + why); };
  while (!line.empty() && is_space(line.front())) line.remove_prefix(1);
  while (!line.empty() && is_space(line.back())) line.remove_suffix(1);
  const std::size_t type_end = line.find_first_of(" \t");
  const std::string_view type = line.substr(0, type_end);
  if (type != kSshEd25519) {
    bool printable = !type.empty() && type.size() <= 64;
    for (char c : type) printable = printable && c > ' ' && c < 127;
    return usage(printable ? "key type " + std::string(type) + " is not supported (only ssh-ed25519)"
                           : "expected \"ssh-ed25519 BASE64 [COMMENT]\"");
  }
  std::string_view rest = type_end == std::string_view::npos ? std::string_view{} : line.substr(type_end);
  while (!rest.empty() && (rest.front() == ' ' || rest.front() == '\t')) rest.remove_prefix(1);
  const std::string_view encoded = rest.substr(0, rest.find_first_of(" \t"));
  std::string blob;
  if (encoded.empty() || !unbase64(encoded, false, blob)) return usage("the key is not valid base64");
  Reader r(blob);
  std::string_view blob_type, key;
  if (!r.string(blob_type) || !r.string(key) || !r.done() || blob_type != kSshEd25519 || key.size() != kPublicKeyBytes)
    return usage("the base64 is not an ssh-ed25519 key");
  PublicKey pk{};
  std::copy(key.begin(), key.end(), pk.begin());
  return pk;
}

std::string sshsig_sign(std::string_view message, std::string_view ns, const KeyPair& key) {
  const std::string data = signed_data(ns, kSha512, digest(kSha512, message));
  std::array<unsigned char, crypto_sign_BYTES> sig{};
  crypto_sign_detached(sig.data(), nullptr, reinterpret_cast<const unsigned char*>(data.data()), data.size(),
                       key.secret_key.data());
  std::string sig_blob;
  put_string(sig_blob, kSshEd25519);
  put_string(sig_blob, bytes_of(sig.data(), sig.size()));

  std::string blob(kMagic);
  put_u32(blob, kVersion);
  put_string(blob, public_key_blob(key.public_key));
  put_string(blob, ns);
  put_string(blob, "");
  put_string(blob, kSha512);
  put_string(blob, sig_blob);

  const std::string text = base64(blob);
  std::string out(kBegin);
  out += '\n';
  for (std::size_t i = 0; i < text.size(); i += kArmorWidth) {
    out.append(text, i, kArmorWidth);
    out += '\n';
  }
  out.append(kEnd);
  out += '\n';
  return out;
}

// The payload of an SSHSIG key or signature blob: string "ssh-ed25519"
// then string PAYLOAD of exactly `size` bytes, nothing after. `what` and
// `not_ed25519` word the errors.
Result<std::string_view> ed25519_payload(std::string_view blob, std::size_t size, const std::string& what,
                                         const std::string& not_ed25519) {
  Reader r(blob);
  std::string_view type, payload;
  if (!r.string(type)) return bad(reason::signature_malformed, "SSH signature: truncated " + what);
  if (type != kSshEd25519) return bad(reason::signature_algorithm, "SSH signature: " + not_ed25519);
  if (!r.string(payload) || !r.done() || payload.size() != size)
    return bad(reason::signature_malformed, "SSH signature: malformed ssh-ed25519 " + what);
  return payload;
}

Result<PublicKey> sshsig_verify(std::string_view armored, std::string_view message, std::string_view ns) {
  GITLOCKS_TRY(blob, dearmor(armored));
  Reader r(blob);
  std::string_view magic, key_blob, sig_ns, reserved, hash_alg, sig_blob;
  std::uint32_t version = 0;
  if (!r.bytes(kMagic.size(), magic) || magic != kMagic)
    return bad(reason::signature_malformed, "SSH signature: not an SSHSIG blob");
  if (!r.u32(version) || version != kVersion)
    return bad(reason::signature_malformed, "SSH signature: unsupported SSHSIG version");
  if (!r.string(key_blob) || !r.string(sig_ns) || !r.string(reserved) || !r.string(hash_alg) || !r.string(sig_blob))
    return bad(reason::signature_malformed, "SSH signature: truncated SSHSIG blob");
  if (!r.done()) return bad(reason::signature_malformed, "SSH signature: trailing bytes after the SSHSIG blob");

  GITLOCKS_TRY(key, ed25519_payload(key_blob, kPublicKeyBytes, "public key",
                                    "the key is not ssh-ed25519 (the only type accepted)"));
  GITLOCKS_TRY(sig, ed25519_payload(sig_blob, crypto_sign_BYTES, "signature", "the signature is not ssh-ed25519"));

  const std::string hash = digest(hash_alg, message);
  if (hash.empty())
    return bad(reason::signature_algorithm, "SSH signature: hash algorithm is neither sha256 nor sha512");
  if (ns.empty() || sig_ns != ns)
    return bad(reason::signature_namespace,
               "SSH signature: made for another namespace than \"" + std::string(ns) + "\"");
  const std::string data = signed_data(ns, hash_alg, hash);
  if (crypto_sign_verify_detached(reinterpret_cast<const unsigned char*>(sig.data()),
                                  reinterpret_cast<const unsigned char*>(data.data()), data.size(),
                                  reinterpret_cast<const unsigned char*>(key.data())) != 0)
    return bad(reason::signature_mismatch, "SSH signature: does not verify (the signed data or the key differ)");
  PublicKey pk{};
  std::copy(key.begin(), key.end(), pk.begin());
  return pk;
}

Result<CommitSignature> split_commit_signature(std::string_view raw) {
  // fsck's verify_headers: no NUL in the header, whose last line ends.
  const std::size_t blank = raw.find("\n\n");
  const std::string_view header = blank == std::string_view::npos ? raw : raw.substr(0, blank + 1);
  if (header.find('\0') != std::string_view::npos)
    return bad(reason::signature_malformed, "commit: NUL byte in the header");
  if (!header.empty() && header.back() != '\n')
    return bad(reason::signature_malformed, "commit: the header's last line does not end");

  // parse_buffer_signed_by_header for a SHA-1 repository, line by line.
  CommitSignature out;
  bool in_signature = false, other_signature = false;
  int signatures = 0;
  std::size_t at = 0;
  while (at < raw.size()) {
    const std::size_t eol = raw.find('\n', at);
    std::size_t next = eol == std::string_view::npos ? raw.size() : eol + 1;
    const std::string_view line = raw.substr(at, next - at);
    std::string_view sig;
    bool is_sig = false;
    if (in_signature && line[0] == ' ') {
      sig = line.substr(1);
      is_sig = true;
    } else if (starts_with(line, kGitSigHeader) && line.size() > kGitSigHeader.size() &&
               line[kGitSigHeader.size()] == ' ') {
      sig = line.substr(kGitSigHeader.size() + 1);
      is_sig = true;
      other_signature = false;
      ++signatures;
    } else if (starts_with(line, kGitSigHeader)) {
      other_signature = true;  // another algorithm's signature: in neither part
    } else if (other_signature && line[0] != ' ') {
      other_signature = false;
    }
    if (is_sig) {
      out.signature.append(sig);
      in_signature = true;
    } else {
      if (line[0] == '\n') next = raw.size();  // the blank line: the rest is the message
      if (!other_signature) out.payload.append(raw.substr(at, next - at));
      in_signature = false;
    }
    at = next;
  }
  if (signatures > 1) return bad(reason::signature_malformed, "commit: more than one gpgsig header");
  return out;
}

Result<std::optional<PublicKey>> commit_signer(std::string_view raw_commit) {
  GITLOCKS_TRY(split, split_commit_signature(raw_commit));
  if (split.signature.empty()) return std::optional<PublicKey>{};
  if (starts_with(split.signature, kBegin)) {
    GITLOCKS_TRY(key, sshsig_verify(split.signature, split.payload, kGitSignatureNamespace));
    return std::optional<PublicKey>{key};
  }
  for (std::string_view other : kOtherSignatures)
    if (starts_with(split.signature, other))
      return bad(reason::signature_algorithm, "commit: an OpenPGP or X.509 signature, not an SSH signature");
  return bad(reason::signature_malformed, "commit: the gpgsig header is not a signature Git knows");
}

}  // namespace gitlocks
