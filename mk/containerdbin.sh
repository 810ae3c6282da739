#!/usr/bin/env bash
# mk/containerdbin.sh — build containerd 2.x (containerd, containerd-shim-runc-v2,
# ctr) from the Go module proxy, once per version, into a cache outside the
# clone, and print the directory that holds the binaries.
#
# Debian ships containerd 1.6, which has no CRI GetContainerEvents; 2.x has
# them, so this is the runtime the evented PLEG is tested on.
#
#   CONTAINERD2_VERSION      the release (default below)
#   SYNCPOD_CONTAINERD_CACHE where builds are kept (default
#                            /var/cache/syncpod/containerd, or
#                            ~/.cache/syncpod/containerd when not writable)
#   --cached                 print the directory only when the build is
#                            already there (exit 1 otherwise), never build
#
# Concurrent callers wait on a lock and reuse one build. Progress goes to
# stderr; stdout is only the bin directory.
set -euo pipefail

VERSION=${CONTAINERD2_VERSION:-v2.4.2}
GO=${GO:-go}
cached_only=0
if [ "${1:-}" = --cached ]; then cached_only=1; fi

. "$(dirname "$0")/cachedir.sh"
cache=${SYNCPOD_CONTAINERD_CACHE:-$(cache_dir containerd)}
root=$cache/$VERSION
bins=(containerd containerd-shim-runc-v2 ctr)

have_all() {
  local b
  for b in "${bins[@]}"; do [ -x "$root/bin/$b" ] || return 1; done
}

if have_all; then
  echo "$root/bin"
  exit 0
fi
if [ $cached_only = 1 ]; then
  echo "containerdbin: containerd $VERSION not built yet (make containerd2-build)" >&2
  exit 1
fi

mkdir -p "$root/bin"
exec 9>"$root/.lock"
flock 9
if have_all; then
  echo "$root/bin"
  exit 0
fi

start=$(date +%s)
tmp=$root/bin.tmp
rm -rf "$tmp"
mkdir -p "$tmp"
for b in "${bins[@]}"; do
  echo "containerdbin: building $b $VERSION (cached in $root for later runs)" >&2
  # go install pkg@version builds the module as released, with its own
  # go.mod; static, so it runs on any of these machines. The version string
  # is what `containerd --version` and CRI Version report.
  GOWORK=off GOFLAGS= GOBIN=$tmp CGO_ENABLED=0 $GO install -trimpath \
    -ldflags "-s -w -X github.com/containerd/containerd/v2/version.Version=$VERSION" \
    "github.com/containerd/containerd/v2/cmd/$b@$VERSION" >&2
done
for b in "${bins[@]}"; do mv "$tmp/$b" "$root/bin/$b"; done
rmdir "$tmp"
echo "containerdbin: built containerd $VERSION in $(( $(date +%s) - start )) s" >&2
echo "$root/bin"
