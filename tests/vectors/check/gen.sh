#!/usr/bin/env bash
# Writes tests/vectors/check/corpus.bundle: a small repository with a lock
# store and signed, unsigned and merge commits, for the claims rule
# (`git-locks check`, gitlocks::check_commits). cases.json, written by hand
# from the story below, says what the rule must answer for each named
# commit; every host runs it (tests/unit/check_vectors_test.cpp natively,
# wasm/test/vectors.test.mjs in Node, browser.test.mjs in Chromium).
#
#   tests/vectors/check/gen.sh path/to/git-locks
#
# Keys: the seed of NAME is sha256("test-actor:" NAME), as the unit tests'
# fixture derives actors, so every runner knows each key without a file.
# Lease ids and commit ids change with every run (the store's instance ids
# are random); cases.json names commits by ref (refs/vectors/NAME) only.
#
# The story, at NOW = 1767225600000 (2026-01-01T00:00:00Z):
#   owner creates the store with the family "art" (exclusive: assets/),
#   then sets require_claim on gen/ and the bot key "ci" (policy set);
#   dave's claim of tmp.c is force-released by the owner.
#   alice claims src/x.c (exclusive, 1h); bob claims docs/ (shared, 1h);
#   carol claims assets/a.png (exclusive, 1h); alice's claim of old.c
#   lasted 1s and has expired.
#   Commits, each on base unless said otherwise (refs/vectors/NAME):
#     bob-x        bob signed, changes src/x.c                -> held-path
#     alice-x      alice signed, changes src/x.c              -> clear
#     unsigned-y   unsigned, changes src/y.c (free)           -> clear
#     unsigned-x   unsigned, changes src/x.c                  -> held-path
#     bob-docs     bob signed, changes docs/a.md (his shared) -> clear
#     alice-docs   alice signed, changes docs/a.md (bob's shared claim: shared is no obstacle to a change)
#                                                           -> clear
#     bob-art      bob signed, changes assets/b.png (family art held by carol) -> family-policy
#     bob-old      bob signed, changes old.c (alice's expired lease) -> clear
#     bob-gen      bob signed, adds gen/out.txt (require_claim, bob holds none) -> claim-required
#     ci-gen       ci signed, adds gen/out.txt (a bot)        -> clear
#     ci-x         ci signed, changes src/x.c (a bot is still refused) -> held-path
#     two          bob signed, changes src/x.c and src/z.c    -> held-path on src/x.c only
#     merge-clean  unsigned merge of alice-x and unsigned-y (no change of its own) -> clear
#     merge-evil   bob's merge of alice-x and bob-docs that also edits src/x.c -> held-path
set -euo pipefail

cli=$(realpath "${1:?usage: gen.sh path/to/git-locks}")
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

export HOME="$tmp/home" GIT_CONFIG_NOSYSTEM=1 GIT_CONFIG_GLOBAL=/dev/null
mkdir -p "$HOME"
export GIT_AUTHOR_NAME="Vector" GIT_AUTHOR_EMAIL="vector@example.invalid"
export GIT_COMMITTER_NAME="Vector" GIT_COMMITTER_EMAIL="vector@example.invalid"
export GIT_AUTHOR_DATE="1767225000 +0000" GIT_COMMITTER_DATE="1767225000 +0000"
NOW=1767225600000

key() {  # the key file of NAME, seed sha256("test-actor:NAME")
  local f="$tmp/$1.key"
  if [ ! -f "$f" ]; then
    printf '{"format":"gitlocks-actor-key-v1","seed":"%s"}\n' \
      "$(printf 'test-actor:%s' "$1" | sha256sum | cut -d' ' -f1)" > "$f"
    chmod 600 "$f"
  fi
  echo "$f"
}
repo="$tmp/repo"
git init -q -b main "$repo"
g() { git -C "$repo" "$@"; }
locks() {  # locks WHO [NOW-OFFSET-MS] ARGS...
  local who=$1 at=$2
  shift 2
  GIT_LOCKS_KEY=$(key "$who") GIT_LOCKS_NOW_MS=$((NOW + at)) "$cli" --repo "$repo" "$@" > /dev/null
}
g config gpg.format ssh
g config gpg.ssh.program "$cli"
write() { mkdir -p "$(dirname "$repo/$1")"; printf '%s' "$2" > "$repo/$1"; }
for f in src/x.c src/y.c src/z.c docs/a.md assets/a.png assets/b.png old.c; do
  write "$f" "$f base
"
done
g add -A
g commit -q --no-gpg-sign -m base
g update-ref refs/vectors/base HEAD

for who in ci; do key "$who" > /dev/null; done
ci=$(GIT_LOCKS_KEY=$(key ci) "$cli" --json whoami | python3 -c 'import json,sys; print(json.load(sys.stdin)["actor"])')
cat > "$tmp/policy.json" <<POLICY
{"families":[{"name":"art","policy":"exclusive","members":["assets/"]}]}
POLICY
locks owner -600000 init --policy "$tmp/policy.json"
locks alice -600000 claim --ttl 1s old.c
# The owner's policy change (a policy-set transition every verifier replays).
hash=$(GIT_LOCKS_KEY=$(key owner) GIT_LOCKS_NOW_MS=$((NOW - 500000)) "$cli" --repo "$repo" --json policy show |
  python3 -c 'import json,sys; print(json.load(sys.stdin)["policy_hash"])')
printf '{"require_claim":{"paths":["gen/"]},"bots":["%s"]}\n' "$ci" > "$tmp/change.json"
locks owner -500000 policy set "$tmp/change.json" --expected-policy-hash "$hash"
# dave's lease of tmp.c, force-released by the owner (a force-release transition).
locks dave -400000 claim --ttl 1h tmp.c
locks owner -300000 release --force --reason "vector" tmp.c
locks alice 0 claim --ttl 1h src/x.c
locks bob 0 claim --mode shared --ttl 1h docs/
locks carol 0 claim --ttl 1h assets/a.png

# commit NAME SIGNER(-: unsigned) PATH=TEXT... : a commit on base.
commit() {
  local name=$1 signer=$2
  shift 2
  g checkout -q --detach refs/vectors/base
  for pv in "$@"; do write "${pv%%=*}" "${pv#*=}
"; git -C "$repo" add "${pv%%=*}"; done
  if [ "$signer" = - ]; then
    g commit -q --no-gpg-sign -m "$name"
  else
    g -c user.signingKey="$(key "$signer")" commit -q -S -m "$name"
  fi
  g update-ref "refs/vectors/$name" HEAD
}
commit bob-x bob src/x.c=bob
commit alice-x alice src/x.c=alice
commit unsigned-y - src/y.c=unsigned
commit unsigned-x - src/x.c=unsigned
commit bob-docs bob docs/a.md=bob
commit alice-docs alice docs/a.md=alice
commit bob-art bob assets/b.png=bob
commit bob-old bob old.c=bob
commit bob-gen bob gen/out.txt=bob
commit ci-gen ci gen/out.txt=ci
commit ci-x ci src/x.c=ci
commit two bob src/x.c=two src/z.c=two

g checkout -q --detach refs/vectors/alice-x
g merge -q --no-ff --no-gpg-sign -m merge-clean refs/vectors/unsigned-y
g update-ref refs/vectors/merge-clean HEAD
g checkout -q --detach refs/vectors/alice-x
g merge -q --no-ff --no-commit refs/vectors/bob-docs
write src/x.c "evil
"
g add src/x.c
g -c user.signingKey="$(key bob)" commit -q -S -m merge-evil
g update-ref refs/vectors/merge-evil HEAD

g bundle create -q "$here/corpus.bundle" refs/locks/state $(g for-each-ref --format='%(refname)' refs/vectors/)
echo "wrote $here/corpus.bundle"
