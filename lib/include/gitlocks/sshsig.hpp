// gitlocks/sshsig.hpp — OpenSSH signatures (SSHSIG, PROTOCOL.sshsig) with
// Ed25519 keys, and the signature of a Git commit (gpg.format=ssh).
//
// Git signs a commit by running `ssh-keygen -Y sign -n git` over the commit
// object without its `gpgsig` header and storing the armored signature in
// that header. The core makes and checks those signatures itself
// (libsodium), so every host decides alike without ssh-keygen, and what it
// makes is byte for byte what ssh-keygen makes with the same key.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "gitlocks/crypto.hpp"
#include "gitlocks/result.hpp"

namespace gitlocks {

// The SSH name of the only key type the core signs and verifies with.
inline constexpr std::string_view kSshEd25519 = "ssh-ed25519";
// The namespace Git signs commits and tags in.
inline constexpr std::string_view kGitSignatureNamespace = "git";

// The key as a line of OpenSSH's authorized_keys / allowed_signers form,
// without a comment: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI...".
std::string ssh_public_key_line(const PublicKey& pk);

// The Ed25519 key of an OpenSSH public key line "ssh-ed25519 BASE64
// [comment]" (surrounding whitespace ignored, no authorized_keys options).
// Errors: usage (another key type, malformed base64 or key blob).
Result<PublicKey> parse_ssh_public_key(std::string_view line);

// The armored SSHSIG of `message` in namespace `ns` (not empty) by `key`,
// hashed with sha512: exactly what `ssh-keygen -Y sign -n NS` writes for
// the same key and message (Ed25519 signatures are deterministic).
std::string sshsig_sign(std::string_view message, std::string_view ns, const KeyPair& key);

// The signer's key when `armored` is a well-formed Ed25519 SSHSIG (hash
// sha256 or sha512) in namespace `ns` over `message`. Errors: bad_signature
// with the reason
//   signature-malformed   armor, base64 (strict; whitespace between
//                         characters allowed as OpenSSH allows it), magic,
//                         version other than 1, a truncated field, a length
//                         past the end, trailing bytes, a key or signature
//                         of the wrong size;
//   signature-algorithm   a key or signature type other than ssh-ed25519, a
//                         hash other than sha256 and sha512;
//   signature-namespace   a namespace other than `ns`;
//   signature-mismatch    the signature does not verify.
Result<PublicKey> sshsig_verify(std::string_view armored, std::string_view message, std::string_view ns);

// A commit object split as Git splits it to verify its signature
// (parse_signed_commit in a SHA-1 repository).
struct CommitSignature {
  // The commit without its `gpgsig` header and the header's continuation
  // lines; Git leaves any other header starting with "gpgsig" (such as a
  // SHA-256 repository's `gpgsig-sha256`) out of the payload as well.
  std::string payload;
  // The header's value, continuation lines without their leading space
  // (each line with its newline); empty when the commit is unsigned.
  std::string signature;
};

// `raw_commit` is the commit object's content (`git cat-file commit ID`).
// Errors: bad_signature, reason signature-malformed, for a header Git's
// fsck refuses (a NUL byte, no newline after the last header) and for more
// than one `gpgsig` header (Git would verify their concatenation).
Result<CommitSignature> split_commit_signature(std::string_view raw_commit);

// Who signed a commit: nullopt when it has no `gpgsig` header; the
// Ed25519 key of a valid SSHSIG over its payload in namespace "git".
// Errors: bad_signature with sshsig_verify's reasons; an OpenPGP or X.509
// signature is signature-algorithm.
Result<std::optional<PublicKey>> commit_signer(std::string_view raw_commit);

}  // namespace gitlocks
