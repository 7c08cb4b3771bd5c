# debian-src.sh — sourced by the dependency builds (wasm-deps.sh,
# native-deps.sh): Debian source packages through apt. The caller defines
# say, die and SUDO.

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
