#!/bin/sh
# A bundle of 15,000 generated commits (23 MB) opens as a pack store and
# replays in full. libgit2 1.5's indexer stops at a pack window's end when the
# input there yields no output yet; with the core's 4 MiB windows one append
# of this bundle failed with "unexpected data at the end of the pack" (the
# npm module and the page could not open it). lib/src/git_store.cpp resumes
# the indexer. usage: large_bundle.sh GEN_HISTORY NATIVE_REPLAY
set -eu
gen=$1
replay=$2
dir=$(mktemp -d "${TMPDIR:-/tmp}/gitlocks-large-bundle-XXXXXX")
trap 'rm -rf "$dir"' EXIT
"$gen" --commits 15000 --bundle "$dir/h.bundle" --seed 42 >/dev/null
# The verdicts go to stdout, the summary (or the error) is the last line of stderr.
out=$("$replay" --bundle "$dir/h.bundle" 2>&1 >/dev/null | tail -n 1)
case $out in
  *'"commits":15000,"invalid":0,'*) echo "ok: $out" ;;
  *) echo "unexpected replay summary: $out" >&2; exit 1 ;;
esac
