#!/usr/bin/env bash
# mk/gotool.sh OUT PACKAGE VERSION — install the pinned Go tool PACKAGE@VERSION
# (grpcurl, protoc-gen-go, protoc-gen-go-grpc, golangci-lint) as OUT.
#
# The tool is built once per (package, version, Go toolchain) with `go
# install` from the Go module proxy, static and -trimpath, into a cache
# outside the clone, like containerd 2.x, Docker Compose and the Kubernetes
# binaries (mk/cachedir.sh: /var/cache/syncpod/gotools, or
# ~/.cache/syncpod/gotools when that is not writable); every later install
# on the machine, from any clone, is a copy. These are third-party tools
# at pinned versions, not syncpod's code: compiling grpcurl alone is 100 to
# 150 CPU seconds, a tenth of a fresh-machine `make test` on two cores.
#
#   SYNCPOD_GOTOOLS_CACHE   where builds are kept (default above)
#   GO                      the go command (default go)
#
# Concurrent callers wait on a lock and share one build. Progress goes to
# stderr.
set -euo pipefail

out=${1:?usage: gotool.sh OUT PACKAGE VERSION}
pkg=${2:?package}
version=${3:?version}
GO=${GO:-go}

. "$(dirname "$0")/cachedir.sh"
name=$(basename "$pkg")
gover=$($GO env GOVERSION)
cache=${SYNCPOD_GOTOOLS_CACHE:-$(cache_dir gotools)}
root=$cache/$name/$version-$gover

build() {
  GOBIN=$1 CGO_ENABLED=0 GOWORK=off $GO install -trimpath "$pkg@$version"
}
build_once "$root/$name" gotool "$pkg@$version" build
install_copy "$root/$name" "$out"
