#!/usr/bin/env bash
# Build static WebAssembly libraries of libsodium and libgit2 from Debian
# *source* packages with Debian's Emscripten, and cache them outside the tree.
#
#   toolchains/wasm-deps.sh            build (or reuse) the cached prefix
#   toolchains/wasm-deps.sh --prefix   print the prefix path only (no build)
#
# Prefix: ${GITLOCKS_CACHE:-$HOME/.cache/gitlocks}/wasm/<key>, also reachable
# as .../wasm/current. <key> encodes the exact Debian source versions of
# libsodium, libgit2, zlib and http-parser, the emscripten package version and
# RECIPE_REV. Layout: include/{sodium.h,sodium/,git2.h,git2/,nlohmann,doctest}
# (the last two are symlinks into /usr/include), lib/libsodium.a,
# lib/libgit2.a, BUILDINFO.
#
# Nothing is downloaded except Debian source packages through apt; Emscripten
# ports are never used. Needs (toolchains/setup.sh installs them): emscripten,
# node-acorn, dpkg-dev, autoconf, automake, libtool, cmake, make.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
self=wasm-deps
. "$here/debian-src.sh"  # say, die, SUDO, cache_root, Debian sources, begin_build/run/fail

RECIPE_REV=2          # bump whenever the build recipe below (or toolchains/patches/) changes
SRC_PKGS=(libsodium libgit2 zlib http-parser)

wasm_dir=$cache_root/wasm
export NODE_PATH=/usr/share/nodejs${NODE_PATH:+:$NODE_PATH}


# --- versions -----------------------------------------------------------------

emscripten_version() {
  local v
  v=$(dpkg-query -W -f='${Version}' emscripten 2>/dev/null) || true
  [ -n "$v" ] || die "Debian package 'emscripten' is not installed (run toolchains/setup.sh)"
  echo "$v"
}


# Signature of what apt currently offers (+ toolchain + recipe). Maps to the
# key that was resolved for it, so the cached path needs no download/update.
apt_signature() {
  local p vs text="rev=$RECIPE_REV emscripten=$emver"
  for p in "${SRC_PKGS[@]}"; do
    vs=$(source_versions "$p") || return 1
    text+=$'\n'"$p: ${vs//$'\n'/ }"
  done
  printf '%s\n' "$text" | sha256sum | cut -c1-16
}

sanitize() { echo "${1//[^A-Za-z0-9.+_-]/_}"; }

make_key() { # sodium git2 zlib http-parser versions
  sanitize "r${RECIPE_REV}-emcc$emver-sodium$1-git2-$2-zlib$3-hp$4"
}

is_complete() { [ -f "$wasm_dir/$1/lib/libgit2.a" ] && [ -f "$wasm_dir/$1/lib/libsodium.a" ] && [ -f "$wasm_dir/$1/BUILDINFO" ]; }

point_current() {
  local tmp_link="$wasm_dir/.current.$$"
  ln -sfn "$1" "$tmp_link"
  mv -T "$tmp_link" "$wasm_dir/current"
}

cached_exit() {
  point_current "$1"
  say "cached: $wasm_dir/$1 (${2:-up to date}); nothing to do"
  exit 0
}

if [ "${1:-}" = "--prefix" ]; then
  echo "$wasm_dir/current"; exit 0
fi

emver=$(emscripten_version)

mkdir -p "$wasm_dir/resolved"

# --- fast path: nothing to do if the cache already holds this combination ----

try_cached() {
  local sig key
  if sig=$(apt_signature 2>/dev/null); then
    if [ -f "$wasm_dir/resolved/$sig" ]; then
      key=$(cat "$wasm_dir/resolved/$sig")
      is_complete "$key" && cached_exit "$key"
    fi
  elif [ -L "$wasm_dir/current" ]; then
    # apt knows no source versions (no deb-src lists): trust the cached
    # record if it was built by this recipe with this emscripten.
    key=$(readlink "$wasm_dir/current")
    if is_complete "$key" && grep -qxF "recipe_rev=$RECIPE_REV" "$wasm_dir/$key/BUILDINFO" \
       && grep -qxF "emscripten=$emver" "$wasm_dir/$key/BUILDINFO"; then
      cached_exit "$key" "source versions from its BUILDINFO; apt has no deb-src lists"
    fi
  fi
  return 0
}
try_cached

# --- slow path ---------------------------------------------------------------

need_tools emcc emcmake emconfigure emmake emar cmake make autoreconf libtoolize dpkg-source apt-get patch

# One builder at a time; re-check the cache once we hold the lock.
take_lock "$wasm_dir"
try_cached
# We hold the lock: leftovers of earlier failed builds can go.
rm -rf "$wasm_dir"/.build.* "$wasm_dir"/*.tmp

ensure_deb_src "${SRC_PKGS[@]}"

begin_build "$wasm_dir"

# Fetch + unpack (patches from debian/patches/series are applied by
# dpkg-source) the newest version of $1 that the mirror actually serves.
# Sets ver[$1]; returns 1 if no version could be downloaded.
declare -A ver
fetch_source() {
  local pkg=$1 v dl=$build/dl/$1
  for v in $(source_versions "$pkg"); do
    rm -rf "$dl"; mkdir -p "$dl"
    echo "+ apt-get source $pkg=$v" >>"$log"
    if ( cd "$dl" && apt-get source "${apt_src_opts[@]}" "$pkg=$v" ) >>"$log" 2>&1; then
      rm -rf "$build/src/$pkg"
      run "$dl" dpkg-source --no-check -x "$(cd "$dl" && ls ./*.dsc)" "$build/src/$pkg"
      ver[$pkg]=$v
      return 0
    fi
    say "$pkg=$v is not downloadable; trying an older version"
  done
  return 1
}

say "fetching Debian sources (${SRC_PKGS[*]})"
mkdir -p "$build/src"
updated=0
for p in "${SRC_PKGS[@]}"; do
  if ! fetch_source "$p"; then
    [ "$updated" = 1 ] && fail "no version of source package $p could be downloaded"
    say "apt-get update (lists may be stale)"
    run "$build" $SUDO apt-get update -qq
    updated=1
    fetch_source "$p" || fail "no version of source package $p could be downloaded"
  fi
done
say "versions: libsodium ${ver[libsodium]}, libgit2 ${ver[libgit2]}, zlib ${ver[zlib]}, http-parser ${ver[http-parser]}, emscripten $emver"

key=$(make_key "${ver[libsodium]}" "${ver[libgit2]}" "${ver[zlib]}" "${ver[http-parser]}")
sig=$(apt_signature)
final=$wasm_dir/$key
tmp=$wasm_dir/$key.tmp

if is_complete "$key"; then
  echo "$key" >"$wasm_dir/resolved/$sig"
  rm -rf "$build"
  cached_exit "$key"
fi

rm -rf "$tmp"
mkdir -p "$tmp"

# --- libsodium ----------------------------------------------------------------
s=$build/src/libsodium
say "building libsodium ${ver[libsodium]} (configure takes ~3 min on 2 cores)"
run "$s" env DO_NOT_UPDATE_CONFIG_SCRIPTS=1 ./autogen.sh -s
run "$s" emconfigure ./configure --host=wasm32-unknown-emscripten --prefix="$final" \
  --enable-minimal --disable-shared --without-pthreads --disable-ssp --disable-asm --disable-pie \
  CFLAGS="-O2"
run "$s" emmake make -j2
run "$s" emmake make install prefix="$tmp"

# --- libgit2 (+ zlib and http-parser put back into deps/) ---------------------
g=$build/src/libgit2
say "building libgit2 ${ver[libgit2]} with zlib ${ver[zlib]}, http-parser ${ver[http-parser]}"
mkdir -p "$g/deps/zlib" "$g/deps/http-parser"
z=$build/src/zlib
# The same file set libgit2 upstream bundles (no gz*/compress/uncompr).
for f in adler32 crc32 deflate infback inffast inflate inftrees trees zutil; do
  cp "$z/$f.c" "$g/deps/zlib/"
done
cp "$z"/*.h "$g/deps/zlib/"
[ -f "$z/LICENSE" ] && cp "$z/LICENSE" "$g/deps/zlib/"
cat >"$g/deps/zlib/CMakeLists.txt" <<'EOF'
# Recreated by toolchains/wasm-deps.sh (Debian's +ds tarball drops deps/).
add_definitions(-DNO_VIZ -DSTDC -DNO_GZIP)
file(GLOB SRC_ZLIB "*.c" "*.h")
list(SORT SRC_ZLIB)
include_directories(".")
add_library(zlib OBJECT ${SRC_ZLIB})
EOF
cp "$build/src/http-parser/http_parser.c" "$build/src/http-parser/http_parser.h" "$g/deps/http-parser/"
cat >"$g/deps/http-parser/CMakeLists.txt" <<'EOF'
# Recreated by toolchains/wasm-deps.sh (Debian's +ds tarball drops deps/).
file(GLOB SRC_HTTP "*.c" "*.h")
list(SORT SRC_HTTP)
add_library(http-parser OBJECT ${SRC_HTTP})
EOF

for p in "$here"/patches/libgit2-*.patch; do
  run "$g" patch -p1 --forward -i "$p"
done
run "$build" emcmake cmake -S "$g" -B "$build/libgit2-build" \
  -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX="$final" \
  -DBUILD_SHARED_LIBS=OFF -DBUILD_TESTS=OFF -DBUILD_CLI=OFF -DBUILD_EXAMPLES=OFF \
  -DBUILD_FUZZERS=OFF -DUSE_THREADS=OFF -DUSE_HTTPS=OFF -DUSE_SSH=OFF \
  -DUSE_GSSAPI=OFF -DUSE_NTLMCLIENT=OFF -DUSE_SHA1=CollisionDetection \
  -DUSE_SHA256=Builtin -DUSE_BUNDLED_ZLIB=ON -DUSE_HTTP_PARSER=builtin \
  -DREGEX_BACKEND=regcomp
run "$build" cmake --build "$build/libgit2-build" -j2
run "$build" cmake --install "$build/libgit2-build" --prefix "$tmp"

# --- finish the prefix ------------------------------------------------------------
rm -f "$tmp"/lib/*.la
for f in include/sodium.h include/sodium/crypto_sign.h include/git2.h include/git2/sys/mempack.h \
         lib/libsodium.a lib/libgit2.a; do
  [ -f "$tmp/$f" ] || fail "$f missing from the install"
done
ln -sfn /usr/include/nlohmann "$tmp/include/nlohmann"
ln -sfn /usr/include/doctest "$tmp/include/doctest"
{
  echo "recipe_rev=$RECIPE_REV"
  echo "emscripten=$emver"
  for p in "${SRC_PKGS[@]}"; do echo "$p=${ver[$p]}"; done
  echo "built=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
} >"$tmp/BUILDINFO"

rm -rf "$final"
mv -T "$tmp" "$final"
echo "$key" >"$wasm_dir/resolved/$sig"
point_current "$key"
rm -rf "$build"
say "installed $final ($(du -h "$final/lib/libsodium.a" | cut -f1) libsodium.a, $(du -h "$final/lib/libgit2.a" | cut -f1) libgit2.a)"
say "prefix: $wasm_dir/current"
