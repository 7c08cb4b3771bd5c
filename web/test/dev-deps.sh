#!/usr/bin/env bash
# Installs the browser tests' devDependencies (playwright-core) exactly as
# locked in web/test/package-lock.json into DIR/node_modules; a no-op when
# DIR already holds them for the same lock file. Chromium itself is Debian's
# /usr/bin/chromium (toolchains/setup.sh), never a downloaded browser.
#
#   web/test/dev-deps.sh DIR
set -euo pipefail
src=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
dir=${1:?usage: dev-deps.sh DIR}
mkdir -p "$dir"
if [ -f "$dir/package-lock.json" ] && cmp -s "$src/package-lock.json" "$dir/package-lock.json" &&
   [ -f "$dir/node_modules/playwright-core/package.json" ]; then
  echo "web dev-deps: up to date in $dir"
  exit 0
fi
cp "$src/package.json" "$src/package-lock.json" "$dir/"
cd "$dir"
PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD=1 npm ci --ignore-scripts --no-audit --no-fund
echo "web dev-deps: installed playwright-core $(node -p "require('./node_modules/playwright-core/package.json').version")"
