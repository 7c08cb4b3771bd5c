#!/usr/bin/env bash
# Builds what the native git-locks links statically, from the Debian sources
# of the very versions the machine's -dev packages have:
#
#   libgit2      a static library without HTTPS, SSH, GSSAPI and NTLM
#                (git-locks reaches servers through the `git` program, never
#                through libgit2's transports);
#   cpp-httplib  the single-header library, used header-only without
#                OpenSSL, brotli or zlib (the notary and `web` speak plain
#                HTTP on loopback or behind the operator's TLS proxy).
#
# Why (issue 18): a claim is a short process. Debian's shared libgit2
# initialises its mbedTLS backend at start-up, parsing the whole system CA
# bundle (~6 ms of CPU); Debian's libcpp-httplib.so pulls in OpenSSL and
# brotli, whose loading and initialisation cost ~1.6 ms in every process. The
# installed package (gitlocksConfig.cmake, gitlocks.pc) still names the
# system libgit2: consumers link the same version.
#
#   toolchains/native-deps.sh            build what is missing (cached)
#   toolchains/native-deps.sh --prefix   print the cache folder CMake reads
#
# Cache: ${GITLOCKS_CACHE:-~/.cache/gitlocks}/native/<name>-<version>-r<recipe>,
# with native/libgit2 and native/cpp-httplib pointing at the current ones.
# CMake (cmake/native-deps.cmake) uses them when present and falls back to
# Debian's shared libraries otherwise, saying so.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
self=native-deps
. "$here/debian-src.sh"  # say, die, SUDO, cache_root, Debian sources, begin_build/run/fail

RECIPE_REV=1  # bump whenever a build recipe below (or toolchains/patches/) changes

native_dir=$cache_root/native


if [ "${1:-}" = "--prefix" ]; then
  echo "$native_dir"; exit 0
fi


# name -> the installed -dev package whose version we build.
declare -A dev_pkg=([libgit2]=libgit2-dev [cpp-httplib]=libcpp-httplib-dev)
declare -A done_file=([libgit2]=lib/libgit2.a [cpp-httplib]=include/httplib.h)
declare -A version key
for name in libgit2 cpp-httplib; do
  version[$name]=$(dpkg-query -W -f='${Version}' "${dev_pkg[$name]}" 2>/dev/null) || true
  [ -n "${version[$name]}" ] || die "Debian package ${dev_pkg[$name]} is not installed (run toolchains/setup.sh)"
  key[$name]=$(echo "$name-${version[$name]}-r$RECIPE_REV" | tr -c 'A-Za-z0-9.+_\n-' '_')
done

mkdir -p "$native_dir"
point_current() { # name
  ln -sfn "${key[$1]}" "$native_dir/.current.$$"
  mv -T "$native_dir/.current.$$" "$native_dir/$1"
}
is_complete() { [ -f "$native_dir/${key[$1]}/${done_file[$1]}" ] && [ -f "$native_dir/${key[$1]}/BUILDINFO" ]; }

missing=()
for name in libgit2 cpp-httplib; do
  if is_complete "$name"; then point_current "$name"; else missing+=("$name"); fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

need_tools cmake ninja cc dpkg-source apt-get patch
take_lock "$native_dir"
rm -rf "$native_dir"/.build.* "$native_dir"/*.tmp
ensure_deb_src "${missing[@]}"

begin_build "$native_dir"

# Unpacks (Debian's patches applied by dpkg-source) the source of $1 at the
# installed version if the mirror serves it, else the newest Debian revision
# of the same upstream version that it does serve (a security upload's
# source is sometimes missing from a mirror): same ABI, and
# toolchains/patches/ carries what the binary has on top. Sets source_version.
unpack() {
  local name=$1 want=${version[$1]} v dl=$build/dl-$1 attempt
  for attempt in 1 2; do
    for v in "$want" $(source_versions "$name" | grep -xF -v "$want"); do
      [ "${v%-*}" = "${want%-*}" ] || continue
      rm -rf "$dl"; mkdir -p "$dl"
      echo "+ apt-get source $name=$v" >>"$log"
      if ( cd "$dl" && apt-get source "${apt_src_opts[@]}" "$name=$v" ) >>"$log" 2>&1; then
        source_version=$v
        run "$dl" dpkg-source --no-check -x "$(cd "$dl" && ls ./*.dsc)" "$build/src-$name"
        say "source: $name $v (installed: $want)"
        return 0
      fi
      say "$name=$v is not downloadable here"
    done
    [ "$attempt" = 1 ] || break
    say "apt-get update (lists may be stale)"
    run "$build" $SUDO apt-get update -qq
  done
  fail "no Debian source of $name ${want%-*} could be downloaded"
}

finish() { # name tmp: BUILDINFO, then the prefix moves into place
  {
    echo "recipe_rev=$RECIPE_REV"
    echo "$1=$source_version (installed ${dev_pkg[$1]}: ${version[$1]})"
    echo "patches=$(cd "$here/patches" && ls "$1"-*.patch 2>/dev/null | tr '\n' ' ')"
    echo "built=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
  } >"$2/BUILDINFO"
  rm -rf "${2%.tmp}"
  mv -T "$2" "${2%.tmp}"
  point_current "$1"
}

apply_patches() { # name srcdir
  local p
  for p in "$here"/patches/"$1"-*.patch; do
    [ -e "$p" ] || continue
    run "$2" patch -p1 --forward -i "$p"
  done
}

for name in "${missing[@]}"; do
  unpack "$name"
  src=$build/src-$name
  apply_patches "$name" "$src"
  final=$native_dir/${key[$name]}
  tmp=$final.tmp
  rm -rf "$tmp"
  case $name in
    libgit2)
      launcher=()
      command -v ccache >/dev/null && launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache)
      say "building a static libgit2 $source_version (no HTTPS/SSH; ~1 min on 2 cores)"
      run "$build" cmake -G Ninja -S "$src" -B "$build/out-$name" "${launcher[@]}" \
        -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX="$final" -DCMAKE_POSITION_INDEPENDENT_CODE=ON \
        -DBUILD_SHARED_LIBS=OFF -DBUILD_TESTS=OFF -DBUILD_CLI=OFF -DBUILD_EXAMPLES=OFF -DBUILD_FUZZERS=OFF \
        -DUSE_HTTPS=OFF -DUSE_SSH=OFF -DUSE_GSSAPI=OFF -DUSE_NTLMCLIENT=OFF -DUSE_SHA1=CollisionDetection \
        -DUSE_SHA256=Builtin -DUSE_BUNDLED_ZLIB=OFF -DUSE_HTTP_PARSER=system -DREGEX_BACKEND=regcomp
      run "$build" cmake --build "$build/out-$name" -j2
      run "$build" cmake --install "$build/out-$name" --prefix "$tmp"
      ;;
    cpp-httplib)
      # The source's httplib.h is the whole library (Debian's package
      # splits it into a declarations header and libcpp-httplib.so).
      grep -q 'CPPHTTPLIB_VERSION' "$src/httplib.h" || fail "$src/httplib.h is not cpp-httplib"
      mkdir -p "$tmp/include"
      cp "$src/httplib.h" "$src/LICENSE" "$tmp/include/"
      ;;
  esac
  [ -f "$tmp/${done_file[$name]}" ] || fail "${done_file[$name]} missing from the $name install"
  finish "$name" "$tmp"
  say "installed $final"
done
rm -rf "$build"
