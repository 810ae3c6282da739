#!/usr/bin/env bash
# mk/critestbin.sh OUT VERSION — install critest (cri-tools' CRI validation
# suite, sigs.k8s.io/cri-tools/cmd/critest) at the pinned VERSION as OUT.
#
# critest is a Go test binary, not a command `go install` can build: it is
# compiled with `go test -c` inside the cri-tools module, fetched from the
# Go module proxy into the module cache. Like mk/gotool.sh, it is built
# once per (version, Go toolchain) into a cache outside the clone
# (mk/cachedir.sh: /var/cache/syncpod/gotools), static and -trimpath, and
# copied from there afterwards. Concurrent callers share one build.
#
#   SYNCPOD_GOTOOLS_CACHE   where builds are kept (default above)
#   GO                      the go command (default go)
set -euo pipefail

out=${1:?usage: critestbin.sh OUT VERSION}
version=${2:?version}
GO=${GO:-go}

. "$(dirname "$0")/cachedir.sh"
gover=$($GO env GOVERSION)
cache=${SYNCPOD_GOTOOLS_CACHE:-$(cache_dir gotools)}
root=$cache/critest/$version-$gover
bin=$root/critest

if [ ! -x "$bin" ]; then
  mkdir -p "$root"
  exec 9>"$root/.lock"
  flock 9
  if [ ! -x "$bin" ]; then
    start=$(date +%s)
    echo "critestbin: building critest $version with $gover once (cached in $root for later runs)" >&2
    dir=$(cd / && GOWORK=off GOFLAGS=-mod=mod $GO mod download -json "sigs.k8s.io/cri-tools@$version" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
    [ -d "$dir" ] || { echo "critestbin: sigs.k8s.io/cri-tools@$version not in the module cache after go mod download" >&2; exit 1; }
    tmp=$(mktemp -d "$root/.build.XXXXXX")
    trap 'rm -rf "$tmp"' EXIT
    (cd "$dir" && GOWORK=off CGO_ENABLED=0 GOFLAGS=-mod=mod $GO test -c -trimpath -o "$tmp/critest" ./cmd/critest)
    mv "$tmp/critest" "$bin"
    echo "critestbin: one-time build of critest $version: $(( $(date +%s) - start )) s" >&2
  fi
fi
mkdir -p "$(dirname "$out")"
cp "$bin" "$out.tmp"
mv "$out.tmp" "$out"
