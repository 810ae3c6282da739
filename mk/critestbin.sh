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

build() {
  local dir
  dir=$(cd / && GOWORK=off GOFLAGS=-mod=mod $GO mod download -json "sigs.k8s.io/cri-tools@$version" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
  [ -d "$dir" ] || { echo "critestbin: sigs.k8s.io/cri-tools@$version not in the module cache after go mod download" >&2; exit 1; }
  (cd "$dir" && GOWORK=off CGO_ENABLED=0 GOFLAGS=-mod=mod $GO test -c -trimpath -o "$1/critest" ./cmd/critest)
}
build_once "$root/critest" critestbin "critest $version" build
install_copy "$root/critest" "$out"
