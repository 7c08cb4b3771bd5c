#!/usr/bin/env bash
# Installs the package's devDependencies (typescript) exactly as locked in
# wasm/package-lock.json into DIR/node_modules; a no-op when DIR already
# holds them for the same lock file.
#
#   wasm/tools/dev-deps.sh DIR
set -euo pipefail
src=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
dir=${1:?usage: dev-deps.sh DIR}
mkdir -p "$dir"
if [ -f "$dir/package-lock.json" ] && cmp -s "$src/package-lock.json" "$dir/package-lock.json" &&
   [ -x "$dir/node_modules/.bin/tsc" ]; then
  echo "dev-deps: up to date in $dir"
  exit 0
fi
cp "$src/package.json" "$src/package-lock.json" "$dir/"
cd "$dir"
npm ci --ignore-scripts --no-audit --no-fund
echo "dev-deps: installed $(node_modules/.bin/tsc --version)"
