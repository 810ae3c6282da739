# mk/cachedir.sh — sourced by the scripts that build third-party binaries
# once (mk/*bin.sh, mk/gotool.sh). `cache_dir NAME` prints where the one-time builds of
# NAME are kept, outside the clone: /var/cache/syncpod/NAME, or
# ${XDG_CACHE_HOME:-~/.cache}/syncpod/NAME when that is not writable.
cache_dir() {
  local d=/var/cache/syncpod/$1
  if ! mkdir -p "$d" 2>/dev/null || [ ! -w "$d" ]; then
    d=${XDG_CACHE_HOME:-$HOME/.cache}/syncpod/$1
  fi
  echo "$d"
}

# build_once BIN TAG WHAT BUILD: unless BIN is there, builds it once,
# holding a lock beside it, so concurrent callers share one build: BUILD
# is a command (a function) given a fresh temporary directory, in which it
# leaves the binary under BIN's base name. The build's start and its time
# go to stderr, prefixed TAG, naming it WHAT.
build_once() {
  local bin=$1 tag=$2 what=$3 build=$4 root start tmp
  root=$(dirname "$bin")
  [ -x "$bin" ] && return 0
  mkdir -p "$root"
  exec 9>"$root/.lock"
  flock 9
  if [ ! -x "$bin" ]; then
    start=$(date +%s)
    echo "$tag: building $what with $($GO env GOVERSION) once (cached in $root for later runs)" >&2
    tmp=$(mktemp -d "$root/.build.XXXXXX")
    # shellcheck disable=SC2064 # the directory is known now
    trap "rm -rf '$tmp'" EXIT
    "$build" "$tmp"
    mv "$tmp/$(basename "$bin")" "$bin"
    echo "$tag: one-time build of $what: $(( $(date +%s) - start )) s" >&2
  fi
  exec 9>&-
}

# install_copy BIN OUT: copies BIN to OUT, never leaving a half-written OUT.
install_copy() {
  mkdir -p "$(dirname "$2")"
  cp "$1" "$2.tmp"
  mv "$2.tmp" "$2"
}
