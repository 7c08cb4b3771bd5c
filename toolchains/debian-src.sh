# debian-src.sh — sourced by the dependency builds (wasm-deps.sh,
# native-deps.sh): Debian source packages through apt, and the build folder
# with its log. The caller sets self (its name) before sourcing it.

cache_root=${GITLOCKS_CACHE:-$HOME/.cache/gitlocks}
export DEBIAN_FRONTEND=noninteractive
SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi
say() { echo "$self: $*"; }
die() { echo "$self: error: $*" >&2; exit 1; }

need_tools() {
  local t
  for t in "$@"; do
    command -v "$t" >/dev/null || die "'$t' not found (run toolchains/setup.sh)"
  done
}

# One builder per cache folder $1 at a time (fd 9 stays open until exit).
take_lock() {
  exec 9>"$1/.lock"
  if ! flock -n 9; then
    say "another $self build is running; waiting for it"
    flock 9
  fi
}

# Starts a build in a fresh folder under $1: sets build, log and
# apt_src_opts (apt-get source, download only); fail and run below use them.
begin_build() {
  build=$(mktemp -d "$1/.build.XXXXXX")
  log=$build/build.log
  : >"$log"
  apt_src_opts=(-qq --only-source --download-only)
  if [ "$(id -u)" -eq 0 ]; then apt_src_opts+=(-o APT::Sandbox::User=root); fi
}

fail() {
  echo "$self: FAILED: $*" >&2
  echo "$self: ---- last lines of $log ----" >&2
  tail -n 40 "$log" >&2 || true
  echo "$self: build dir kept for inspection: $build" >&2
  exit 1
}

run() { # run <dir> <cmd...>: output to the log, tail on failure
  local dir=$1; shift
  echo "+ (cd $dir && $*)" >>"$log"
  ( cd "$dir" && "$@" ) >>"$log" 2>&1 || fail "$*"
}

# All versions of source package $1 known to apt, newest first (Debian order).
# Fails if apt knows none (no deb-src entry, or lists not downloaded yet).
source_versions() {
  local out v sorted=() i j
  out=$(apt-cache showsrc --only-source "$1" 2>/dev/null | sed -n 's/^Version: //p' | sort -u) || return 1
  [ -n "$out" ] || return 1
  while read -r v; do
    sorted+=("$v")
    i=$((${#sorted[@]} - 1))
    while [ "$i" -gt 0 ] && dpkg --compare-versions "${sorted[i]}" gt "${sorted[i-1]}"; do
      j=${sorted[i-1]}; sorted[i-1]=${sorted[i]}; sorted[i]=$j; i=$((i - 1))
    done
  done <<<"$out"
  printf '%s\n' "${sorted[@]}"
}

# Makes sure apt knows the source packages "$@": adds a deb-src entry that
# mirrors the machine's Debian sources if needed, then updates the lists.
ensure_deb_src() {
  local p ok=1
  for p in "$@"; do
    source_versions "$p" >/dev/null 2>&1 || { ok=0; break; }
  done
  [ "$ok" = 1 ] && return 0

  local f=/etc/apt/sources.list.d/gitlocks-src.sources want
  if [ -f /etc/apt/sources.list.d/debian.sources ]; then
    want=$(sed 's/^Types:.*/Types: deb-src/' /etc/apt/sources.list.d/debian.sources)
  elif [ -f /etc/apt/sources.list ] && grep -q '^deb ' /etc/apt/sources.list; then
    f=/etc/apt/sources.list.d/gitlocks-src.list
    want=$(grep '^deb ' /etc/apt/sources.list | grep -i debian | sed 's/^deb /deb-src /')
  else
    die "cannot find Debian apt sources to mirror as deb-src"
  fi
  if [ ! -f "$f" ] || [ "$(cat "$f")" != "$want" ]; then
    say "adding deb-src entry $f"
    printf '%s\n' "$want" | $SUDO tee "$f" >/dev/null
  fi
  say "apt-get update (source lists)"
  $SUDO apt-get update -qq >/dev/null || die "apt-get update failed"
  for p in "$@"; do
    source_versions "$p" >/dev/null || die "apt knows no source package '$p' even with deb-src"
  done
}
