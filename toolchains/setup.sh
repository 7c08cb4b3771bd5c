#!/usr/bin/env bash
# One idempotent set-up for a fresh Debian bookworm machine (run as root, or
# with sudo available): every build and test dependency of git-locks.
#
#   toolchains/setup.sh            native + WASM toolchains and WASM deps
#   toolchains/setup.sh --native   native toolchain only (no Emscripten; Node.js
#                                  and npm for the MCP test)
#   toolchains/setup.sh --demo     only what building the git-locks CLI needs
#                                  (tools/demo.sh): Debian's shared libgit2
#                                  and cpp-httplib, no test tools
#
# Everything comes from Debian packages (binary and source) and npm; nothing
# is downloaded from anywhere else. The native static libgit2 and the WASM
# builds of libsodium and libgit2 are cached outside the tree (see
# toolchains/native-deps.sh and wasm-deps.sh), so a second run takes seconds.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
want_wasm=1
want_tests=1
[ "${1:-}" = "--native" ] && want_wasm=0
if [ "${1:-}" = "--demo" ]; then want_wasm=0; want_tests=0; fi

SUDO=""
[ "$(id -u)" -ne 0 ] && SUDO="sudo"

native_pkgs=(
  build-essential cmake ninja-build git pkg-config clang clang-format
  libgit2-dev libhttp-parser-dev zlib1g-dev libsodium-dev nlohmann-json3-dev doctest-dev libcpp-httplib-dev
  libclang-rt-14-dev python3 python3-cryptography python3-nacl ca-certificates
  lighttpd util-linux ccache unicode-data libmimalloc-dev
  help2man man-db dpkg-dev
  # ssh-keygen: OpenSSH's verifier of the commits git-locks signs (tests/cli/test_signing.py)
  # and the maker of the SSHSIG corpus (tests/vectors/sshsig/gen.sh)
  openssh-client
)
wasm_pkgs=(
  emscripten node-acorn autoconf automake libtool chromium
)

# What building the CLI alone needs (tools/demo.sh).
demo_pkgs=(
  build-essential cmake ninja-build git pkg-config
  libgit2-dev libhttp-parser-dev zlib1g-dev libsodium-dev nlohmann-json3-dev libcpp-httplib-dev
  ccache libmimalloc-dev ca-certificates
)

missing=()
pkgs=("${native_pkgs[@]}")
[ "$want_tests" = 0 ] && pkgs=("${demo_pkgs[@]}")
[ "$want_wasm" = 1 ] && pkgs+=("${wasm_pkgs[@]}")
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

# Node.js and npm run the WASM, npm-package and browser suites, and (native
# too) the MCP server's test through the official TypeScript SDK
# (tests/mcp). Debian's `nodejs` ships without npm (it is the separate `npm`
# package); a Node.js from elsewhere (e.g. NodeSource's, which bundles npm)
# is used as it is.
if [ "$want_tests" = 1 ]; then
  command -v node >/dev/null || missing+=(nodejs)
  command -v npm >/dev/null || missing+=(npm)
fi

if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  # Packages that ship a service (lighttpd, the smart-HTTP front of the
  # remote-store tests) must not start it: the tests start their own on
  # 127.0.0.1. policy-rc.d is Debian's switch for that, for this install only.
  policy=/usr/sbin/policy-rc.d
  own_policy=0
  if [ ! -e "$policy" ]; then
    printf '#!/bin/sh\nexit 101\n' | $SUDO tee "$policy" >/dev/null
    $SUDO chmod 755 "$policy"
    own_policy=1
  fi
  status=0
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null || status=$?
  [ "$own_policy" = 1 ] && $SUDO rm -f "$policy"
  [ "$status" = 0 ] || exit "$status"
else
  echo "setup: Debian packages already installed"
fi

if [ "$want_tests" = 0 ]; then
  echo "setup: done (the CLI's build dependencies only)"
  exit 0
fi

# The fault suite (tests/cli/faults.py) drops root with setpriv; util-linux
# is essential in Debian, so its absence is a broken machine, not a skip.
if ! command -v setpriv >/dev/null; then
  echo "setup: setpriv is missing although util-linux is installed: reinstall util-linux" >&2
  exit 1
fi

# The suites use `node --test --test-concurrency`, global WebCrypto and
# fetch, and the MCP SDK's dependencies need Node.js 20: Node.js 20.10 or
# newer, native set-up included (the npm package itself runs on 18).
node_version=$(node -p 'process.versions.node' 2>/dev/null || echo none)
if ! node -e 'const [a,b]=process.versions.node.split(".").map(Number); process.exit(a>20||(a===20&&b>=10)?0:1)' 2>/dev/null; then
  echo "setup: the test suite needs Node.js >= 20.10, found $node_version (Debian bookworm's own nodejs is 18: install Node.js 20 from Debian trixie/bookworm-backports or NodeSource, then re-run)" >&2
  exit 1
fi
command -v npm >/dev/null || { echo "setup: npm is missing after installing Debian's npm package" >&2; exit 1; }
# The static libgit2 the native build links (toolchains/native-deps.sh;
# cached, seconds when up to date), then the WASM libraries.
"$here/native-deps.sh"
if [ "$want_wasm" = 1 ]; then
  "$here/wasm-deps.sh"
fi
echo "setup: done"
