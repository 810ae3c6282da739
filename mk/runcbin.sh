#!/usr/bin/env bash
# mk/runcbin.sh — build runc from the Go module proxy, once per version,
# into a cache outside the clone, and print the path of the binary.
#
# Debian's runc 1.1 has no idmapped mounts, so containerd 2.x reports that
# it cannot run pods in user namespaces of their own (hostUsers: false);
# runc 1.2 and later can. The containerd 2.x instance of the tests runs
# this one as a runtime handler of its own (mk/containerd.sh).
#
#   RUNC_VERSION       the release (default below)
#   SYNCPOD_RUNC_CACHE where builds are kept (default /var/cache/syncpod/runc,
#                      or ~/.cache/syncpod/runc when not writable)
#   --cached           print the path only when the build is already there
#                      (exit 1 otherwise), never build
#
# runc's nsenter is C, so this is a cgo build, with the seccomp tag as
# runc's own Makefile builds it: it needs gcc, pkg-config and libseccomp-dev, installed
# with apt-get when missing (as root). Concurrent callers wait on a lock
# and reuse one build. Progress goes to stderr; stdout is only the path.
set -euo pipefail

VERSION=${RUNC_VERSION:-v1.5.3}
GO=${GO:-go}
cached_only=0
if [ "${1:-}" = --cached ]; then cached_only=1; fi

. "$(dirname "$0")/cachedir.sh"
cache=${SYNCPOD_RUNC_CACHE:-$(cache_dir runc)}
root=$cache/$VERSION
bin=$root/bin/runc

if [ -x "$bin" ]; then
  echo "$bin"
  exit 0
fi
if [ $cached_only = 1 ]; then
  echo "runcbin: runc $VERSION not built yet (make containerd2-build)" >&2
  exit 1
fi

mkdir -p "$root/bin"
exec 9>"$root/.lock"
flock 9
if [ -x "$bin" ]; then
  echo "$bin"
  exit 0
fi

if ! command -v gcc >/dev/null || ! command -v pkg-config >/dev/null || [ ! -e /usr/include/seccomp.h ]; then
  if [ "$(id -u)" -ne 0 ]; then
    echo "runcbin: gcc, pkg-config or libseccomp-dev missing and not root: apt-get install -y gcc libc6-dev libseccomp-dev pkg-config" >&2
    exit 1
  fi
  echo "runcbin: installing gcc, libseccomp-dev and pkg-config" >&2
  DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 install -y -qq --no-install-recommends gcc libc6-dev libseccomp-dev pkg-config >/dev/null ||
    { apt-get -o DPkg::Lock::Timeout=300 update -qq &&
      DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=300 install -y -qq --no-install-recommends gcc libc6-dev libseccomp-dev pkg-config >/dev/null; }
fi

start=$(date +%s)
tmp=$root/bin.tmp
rm -rf "$tmp"
mkdir -p "$tmp"
echo "runcbin: building runc $VERSION (cached in $root for later runs)" >&2
# go install pkg@version builds the module as released, with its own
# go.mod. The version string is what `runc --version` prints.
GOWORK=off GOFLAGS= GOBIN=$tmp CGO_ENABLED=1 $GO install -trimpath -tags seccomp \
  -ldflags "-s -w -X main.version=${VERSION#v}" \
  "github.com/opencontainers/runc@$VERSION" >&2
mv "$tmp/runc" "$bin"
rmdir "$tmp"
echo "runcbin: built runc $VERSION in $(( $(date +%s) - start )) s" >&2
echo "$bin"
