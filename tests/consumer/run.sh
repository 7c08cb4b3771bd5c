#!/usr/bin/env bash
# Installs the built core into a scratch prefix and builds a consumer against
# it twice: with CMake's find_package and with pkg-config (static).
# usage: run.sh BUILD_DIR [CXXFLAGS [LDFLAGS]]
# The flags are the ones the library was built with (e.g. the asan preset's
# sanitizers): a consumer must compile and link the same way.
set -euo pipefail
build=$1
cxxflags=${2:-}
ldflags=${3:-}
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install "$build" --prefix "$tmp/prefix" --component dev >/dev/null
test -f "$tmp/prefix/lib/libgitlocks.a"
test -f "$tmp/prefix/include/gitlocks/plan.hpp"
if grep -rqE '#include *[<"](git2|sodium)' "$tmp/prefix/include/gitlocks"; then
  echo "public headers include libgit2 or libsodium" >&2; exit 1
fi
cmake -S "$here" -B "$tmp/cmake-build" -G Ninja -DCMAKE_PREFIX_PATH="$tmp/prefix" \
      -DCMAKE_CXX_FLAGS="$cxxflags" -DCMAKE_EXE_LINKER_FLAGS="$ldflags" >/dev/null
cmake --build "$tmp/cmake-build" >/dev/null
out_cmake=$("$tmp/cmake-build/consumer")
export PKG_CONFIG_PATH="$tmp/prefix/lib/pkgconfig"
# shellcheck disable=SC2046
# shellcheck disable=SC2086
c++ -std=c++17 $cxxflags "$here/main.cpp" -o "$tmp/consumer-pc" $(pkg-config --cflags gitlocks) \
    $(pkg-config --static --libs gitlocks) $ldflags
out_pc=$("$tmp/consumer-pc")
echo "find_package: $out_cmake"
echo "pkg-config:   $out_pc"
case "$out_cmake" in claim\ *) ;; *) echo "unexpected output" >&2; exit 1;; esac
[ "$out_cmake" = "$out_pc" ]
