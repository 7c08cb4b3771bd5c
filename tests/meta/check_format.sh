#!/bin/sh
# The C++ sources follow .clang-format (Debian's clang-format 14): prints each
# file clang-format would change and fails. usage: check_format.sh SOURCE_DIR
# [CLANG_FORMAT]. The shared vectors and generated tables are data, not code.
set -eu
cd "$1"
cf=${2:-clang-format}
if ! command -v "$cf" >/dev/null 2>&1; then
  echo "check_format: $cf not found (toolchains/setup.sh installs Debian's clang-format)" >&2
  exit 1
fi
bad=0
for f in $(find lib tools tests wasm bench -type f \( -name '*.cpp' -o -name '*.h' -o -name '*.hpp' \) \
             -not -path '*/node_modules/*' -not -path 'tests/vectors/*' | sort); do
  if ! "$cf" --dry-run -Werror "$f" >/dev/null 2>&1; then
    echo "not formatted: $f (clang-format -i $f)"
    bad=$((bad + 1))
  fi
done
[ "$bad" -eq 0 ] || { echo "check_format: $bad file(s) differ from .clang-format" >&2; exit 1; }
echo "check_format: every C++ source follows .clang-format"
