# mk/cachedir.sh — sourced by mk/k8sbin.sh, mk/containerdbin.sh and
# mk/composebin.sh. `cache_dir NAME` prints where the one-time builds of
# NAME are kept, outside the clone: /var/cache/syncpod/NAME, or
# ${XDG_CACHE_HOME:-~/.cache}/syncpod/NAME when that is not writable.
cache_dir() {
  local d=/var/cache/syncpod/$1
  if ! mkdir -p "$d" 2>/dev/null || [ ! -w "$d" ]; then
    d=${XDG_CACHE_HOME:-$HOME/.cache}/syncpod/$1
  fi
  echo "$d"
}
