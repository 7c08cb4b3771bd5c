#!/usr/bin/env bash
# Writes the SSHSIG corpus of tests/vectors/sshsig/ with the REAL tools —
# OpenSSH's ssh-keygen and Git — never with git-locks' own code, so that the
# core is checked against what they produce (tests/unit/sshsig_test.cpp runs
# cases.json over these files, natively and in WASM).
#
#   tests/vectors/sshsig/gen.sh        regenerate every file but cases.json
#
# ssh-keygen cannot derive a key from a chosen seed, so each run makes new
# keys and therefore new bytes; cases.json is written by hand and names files
# only, never their contents, so it stays true. key_a is a TEST key: its
# private file is checked in (the signing test needs it) and must never sign
# anything else. Every signature is checked here by ssh-keygen -Y verify,
# and the signed commits by git verify-commit, before it is kept.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# A Git of its own: no user or system configuration.
export HOME="$tmp/home" GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null
mkdir -p "$HOME"
export GIT_AUTHOR_NAME="Vector Author" GIT_AUTHOR_EMAIL="author@example.invalid"
export GIT_COMMITTER_NAME="Vector Committer" GIT_COMMITTER_EMAIL="committer@example.invalid"
export GIT_AUTHOR_DATE="1700000000 +0000" GIT_COMMITTER_DATE="1700000100 +0100"

ssh-keygen -q -t ed25519 -N '' -C 'git-locks test key a' -f "$tmp/key_a"
ssh-keygen -q -t ed25519 -N '' -C 'git-locks test key b' -f "$tmp/key_b"
ssh-keygen -q -t rsa -b 2048 -N '' -C 'git-locks test rsa key' -f "$tmp/rsa"

# The Ed25519 seed of key_a from its openssh-key-v1 file (unencrypted):
# "openssh-key-v1\0" | string cipher | string kdf | string kdfopts | uint32 n
# | string pubkey | string private, where private = uint32 check1 | uint32
# check2 | string "ssh-ed25519" | string pk | string sk (seed || pk) | ...
python3 - "$tmp/key_a" > "$tmp/key_a.seed" <<'EOF'
import base64, struct, sys
text = open(sys.argv[1]).read().split("-----")[2]
blob = base64.b64decode("".join(text.split()))
magic = b"openssh-key-v1\0"
assert blob.startswith(magic)
at = len(magic)
def string():
    global at
    (n,) = struct.unpack(">I", blob[at:at + 4])
    s = blob[at + 4:at + 4 + n]
    assert len(s) == n
    at += 4 + n
    return s
assert string() == b"none" and string() == b"none" and string() == b""
(count,) = struct.unpack(">I", blob[at:at + 4]); at += 4
assert count == 1
string()
blob, at = string(), 0
assert blob[0:4] == blob[4:8]
at = 8
assert string() == b"ssh-ed25519"
pk, sk = string(), string()
assert len(pk) == 32 and len(sk) == 64 and sk[32:] == pk
print(sk[:32].hex())
EOF

printf 'hello, sshsig\n' > "$tmp/hello.txt"
: > "$tmp/empty.txt"
python3 -c 'import sys; sys.stdout.buffer.write(bytes(range(256)) * 5)' > "$tmp/binary.bin"

# sign KEY NAMESPACE MESSAGE OUT [ssh-keygen -O options...]
sign() {
  local key=$1 ns=$2 msg=$3 out=$4
  shift 4
  rm -f "$msg.sig"
  ssh-keygen -q -Y sign -n "$ns" -f "$tmp/$key" "$@" "$msg"
  ssh-keygen -q -Y check-novalidate -n "$ns" -s "$msg.sig" < "$msg"
  mv "$msg.sig" "$tmp/$out"
}
sign key_a git "$tmp/hello.txt" hello.git.sha512.sig
sign key_a git "$tmp/hello.txt" hello.git.sha256.sig -O hashalg=sha256
sign key_a file "$tmp/hello.txt" hello.file.sha512.sig
sign key_b git "$tmp/hello.txt" hello.git.key_b.sig
sign rsa git "$tmp/hello.txt" hello.git.rsa.sig
sign key_a git "$tmp/empty.txt" empty.git.sha512.sig
sign key_a git "$tmp/binary.bin" binary.git.sha256.sig -O hashalg=sha256

# Commits: the same tree, message and dates, unsigned and signed by key_a
# through Git's own SSH signing (gpg.ssh.program ssh-keygen), and once
# through a program that signs in namespace "file" instead of "git". The
# body has a line starting "gpgsig ": a header only before the blank line.
repo="$tmp/repo"
git init -q "$repo"
printf 'signed content\n' > "$repo/file.txt"
git -C "$repo" add file.txt
tree=$(git -C "$repo" write-tree)
message=$'Add file.txt\n\ngpgsig this line is in the body, not a header\n'
ssh_git=(-c gpg.format=ssh -c "user.signingKey=$tmp/key_a" -c gpg.ssh.program=ssh-keygen)
unsigned=$(git -C "$repo" commit-tree -m "$message" "$tree")
signed=$(git -C "$repo" "${ssh_git[@]}" commit-tree -S -m "$message" "$tree")
cat > "$tmp/sign-file-ns" <<'EOF'
#!/bin/sh
# ssh-keygen -Y sign with namespace "file" wherever Git asks for "git".
for a; do shift; [ "$a" = git ] && a=file; set -- "$@" "$a"; done
exec ssh-keygen "$@"
EOF
chmod +x "$tmp/sign-file-ns"
file_ns=$(git -C "$repo" -c gpg.format=ssh -c "user.signingKey=$tmp/key_a" -c "gpg.ssh.program=$tmp/sign-file-ns" \
  commit-tree -S -m "$message" "$tree")
git -C "$repo" cat-file commit "$unsigned" > "$tmp/commit.unsigned"
git -C "$repo" cat-file commit "$signed" > "$tmp/commit.signed"
git -C "$repo" cat-file commit "$file_ns" > "$tmp/commit.file_ns"

# A second header of another hash algorithm (as a SHA-256 repository's
# signature would be): Git leaves every other gpgsig* header out of the
# payload, so the commit still verifies with git verify-commit.
python3 - "$tmp/commit.signed" > "$tmp/commit.signed_sha256_header" <<'EOF'
import sys
raw = open(sys.argv[1], "rb").read()
head, body = raw.split(b"\n\n", 1)
lines = head.split(b"\n")
extra = [b"gpgsig-sha256 -----BEGIN SSH SIGNATURE-----", b" not a signature this commit is checked by",
         b" -----END SSH SIGNATURE-----"]
at = next(i for i, l in enumerate(lines) if l.startswith(b"committer "))
sys.stdout.buffer.write(b"\n".join(lines[:at + 1] + extra + lines[at + 1:]) + b"\n\n" + body)
EOF
sha256_header=$(git -C "$repo" hash-object -t commit -w "$tmp/commit.signed_sha256_header")

printf 'test@example.invalid %s\n' "$(cut -d' ' -f1-2 "$tmp/key_a.pub")" > "$tmp/allowed_signers"
verify=(-c gpg.ssh.program=ssh-keygen -c "gpg.ssh.allowedSignersFile=$tmp/allowed_signers")
git -C "$repo" "${verify[@]}" verify-commit "$signed" 2> /dev/null
git -C "$repo" "${verify[@]}" verify-commit "$sha256_header" 2> /dev/null
if git -C "$repo" "${verify[@]}" verify-commit "$file_ns" 2> /dev/null; then
  echo "gen.sh: git verified a signature in namespace file" >&2
  exit 1
fi
if git -C "$repo" "${verify[@]}" verify-commit "$unsigned" 2> /dev/null; then
  echo "gen.sh: git verified an unsigned commit" >&2
  exit 1
fi
# Ed25519 is deterministic: the commit's signature is ssh-keygen's over the
# unsigned commit (which is the signed one's payload).
cp "$tmp/commit.unsigned" "$tmp/payload"
ssh-keygen -q -Y sign -n git -f "$tmp/key_a" "$tmp/payload"
python3 - "$tmp/commit.signed" "$tmp/payload.sig" <<'EOF'
import sys
raw = open(sys.argv[1], "rb").read().split(b"\n\n", 1)[0] + b"\n"
sig = b"".join(l[7:] + b"\n" if l.startswith(b"gpgsig ") else l[1:] + b"\n"
               for l in raw.split(b"\n") if l.startswith(b"gpgsig ") or l.startswith(b" "))
assert sig == open(sys.argv[2], "rb").read(), "the gpgsig header is not ssh-keygen's signature of the payload"
EOF

# The signed commit in a bundle, as a pack store reads it.
git -C "$repo" update-ref refs/heads/signed "$signed"
git -C "$repo" bundle create -q "$tmp/signed.bundle" refs/heads/signed

umask 022
for f in key_a key_a.pub key_a.seed key_b.pub rsa.pub hello.txt empty.txt binary.bin \
  hello.git.sha512.sig hello.git.sha256.sig hello.file.sha512.sig hello.git.key_b.sig hello.git.rsa.sig \
  empty.git.sha512.sig binary.git.sha256.sig \
  commit.unsigned commit.signed commit.file_ns commit.signed_sha256_header signed.bundle; do
  cp "$tmp/$f" "$here/$f"
  chmod 644 "$here/$f"
done
echo "gen.sh: wrote the corpus into $here (signed commit $signed)"
