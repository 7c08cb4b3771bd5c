#!/usr/bin/env bash
# Builds a static libgit2 for the native git-locks from the Debian source of
# the very libgit2 version the machine's libgit2-dev has, configured without
# HTTPS, SSH, GSSAPI and NTLM (git-locks reaches servers through the `git`
# program, never through libgit2's transports).
#
# Why (issue 18): Debian's shared libgit2 initialises its mbedTLS backend at
# start-up, parsing the whole system CA bundle (~6 ms of CPU), and pulls in
# ~20 shared libraries; a claim is a short process, so that was most of its
# own time. The installed package (gitlocksConfig.cmake, gitlocks.pc) still
# names the system libgit2: consumers link the same version.
#
#   toolchains/native-deps.sh            build if needed (cached), print nothing else
#   toolchains/native-deps.sh --prefix   print the prefix CMake uses
#
# Cache: ${GITLOCKS_CACHE:-~/.cache/gitlocks}/native/libgit2-<version>-r<recipe>,
# with ~/.cache/gitlocks/native/libgit2 pointing at the current one. CMake
# (cmake/native-deps.cmake) uses that prefix when it holds lib/libgit2.a and
# falls back to the system's shared libgit2 otherwise, saying so.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)

RECIPE_REV=1  # bump whenever the build recipe below (or toolchains/patches/) changes

cache_root=${GITLOCKS_CACHE:-$HOME/.cache/gitlocks}
native_dir=$cache_root/native
export DEBIAN_FRONTEND=noninteractive

SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"

say() { echo "native-deps: $*"; }
die() { echo "native-deps: error: $*" >&2; exit 1; }

if [ "${1:-}" = "--prefix" ]; then
  echo "$native_dir/libgit2"; exit 0
fi

. "$here/debian-src.sh"  # source_versions, ensure_deb_src

version=$(dpkg-query -W -f='${Version}' libgit2-dev 2>/dev/null) || true
[ -n "$version" ] || die "Debian package libgit2-dev is not installed (run toolchains/setup.sh)"
key=$(echo "libgit2-$version-r$RECIPE_REV" | tr -c 'A-Za-z0-9.+_\n-' '_')
final=$native_dir/$key

point_current() {
  ln -sfn "$key" "$native_dir/.current.$$"
  mv -T "$native_dir/.current.$$" "$native_dir/libgit2"
}

mkdir -p "$native_dir"
if [ -f "$final/lib/libgit2.a" ] && [ -f "$final/BUILDINFO" ]; then
  point_current
  exit 0
fi

for tool in cmake ninja cc dpkg-source apt-get; do
  command -v "$tool" >/dev/null || die "'$tool' not found (run toolchains/setup.sh)"
done

exec 9>"$native_dir/.lock"
if ! flock -n 9; then
  say "another native-deps build is running; waiting for it"
  flock 9
fi
if [ -f "$final/lib/libgit2.a" ]; then point_current; exit 0; fi
rm -rf "$native_dir"/.build.* "$native_dir"/*.tmp

ensure_deb_src libgit2

build=$(mktemp -d "$native_dir/.build.XXXXXX")
log=$build/build.log
: >"$log"
fail() {
  echo "native-deps: FAILED: $*" >&2
  echo "native-deps: ---- last lines of $log ----" >&2
  tail -n 40 "$log" >&2 || true
  echo "native-deps: build dir kept for inspection: $build" >&2
  exit 1
}
run() { # run <dir> <cmd...>: output to the log, tail on failure
  local dir=$1; shift
  echo "+ (cd $dir && $*)" >>"$log"
  ( cd "$dir" && "$@" ) >>"$log" 2>&1 || fail "$*"
}

apt_src_opts=(-qq --only-source --download-only)
[ "$(id -u)" -eq 0 ] && apt_src_opts+=(-o APT::Sandbox::User=root)

# The installed version's source if the mirror serves it, else the newest
# Debian revision of the same upstream version that it does serve (a
# security upload's source is sometimes missing from a mirror): same ABI,
# and toolchains/patches/ carries what the binary has on top.
fetch() {
  local v
  for v in "$version" $(source_versions libgit2 | grep -xF -v "$version"); do
    [ "${v%-*}" = "${version%-*}" ] || continue
    rm -rf "$build/dl"; mkdir -p "$build/dl"
    echo "+ apt-get source libgit2=$v" >>"$log"
    if ( cd "$build/dl" && apt-get source "${apt_src_opts[@]}" "libgit2=$v" ) >>"$log" 2>&1; then
      source_version=$v
      return 0
    fi
    say "libgit2=$v is not downloadable here"
  done
  return 1
}
if ! fetch; then
  say "apt-get update (lists may be stale)"
  run "$build" $SUDO apt-get update -qq
  fetch || fail "no Debian source of libgit2 ${version%-*} could be downloaded"
fi
say "source: libgit2 $source_version (installed: $version)"
run "$build/dl" dpkg-source --no-check -x "$(cd "$build/dl" && ls ./*.dsc)" "$build/src"
for p in "$here"/patches/libgit2-*.patch; do
  run "$build/src" patch -p1 --forward -i "$p"
done

launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache)
say "building a static libgit2 $source_version (no HTTPS/SSH; ~1 min on 2 cores)"
tmp=$final.tmp
rm -rf "$tmp"
run "$build" cmake -G Ninja -S "$build/src" -B "$build/out" "${launcher[@]}" \
  -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX="$final" -DCMAKE_POSITION_INDEPENDENT_CODE=ON \
  -DBUILD_SHARED_LIBS=OFF -DBUILD_TESTS=OFF -DBUILD_CLI=OFF -DBUILD_EXAMPLES=OFF -DBUILD_FUZZERS=OFF \
  -DUSE_HTTPS=OFF -DUSE_SSH=OFF -DUSE_GSSAPI=OFF -DUSE_NTLMCLIENT=OFF -DUSE_SHA1=CollisionDetection \
  -DUSE_SHA256=Builtin -DUSE_BUNDLED_ZLIB=OFF -DUSE_HTTP_PARSER=system -DREGEX_BACKEND=regcomp
run "$build" cmake --build "$build/out" -j2
run "$build" cmake --install "$build/out" --prefix "$tmp"
for f in include/git2.h include/git2/sys/mempack.h lib/libgit2.a; do
  [ -f "$tmp/$f" ] || fail "$f missing from the install"
done
{
  echo "recipe_rev=$RECIPE_REV"
  echo "libgit2=$source_version (installed libgit2-dev: $version)"
  echo "patches=$(cd "$here/patches" && ls libgit2-*.patch | tr '\n' ' ')"
  echo "built=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
} >"$tmp/BUILDINFO"
rm -rf "$final"
mv -T "$tmp" "$final"
point_current
rm -rf "$build"
say "installed $final ($(du -h "$final/lib/libgit2.a" | cut -f1) libgit2.a)"
