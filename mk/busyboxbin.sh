#!/usr/bin/env bash
# mk/busyboxbin.sh — build a static busybox 1.37 from its source, fetched
# through the Go module proxy (the github.com/mirror/busybox module at a
# pinned commit), once, into a cache outside the clone, and print the
# binary's path.
#
# The upstream conformance images are built on busybox 1.37. Debian 12
# ships 1.35, whose sh differs where the specs look: it drops environment
# names that are not shell identifiers (such as "data-1", which the
# ConfigMap and Secret specs set and read back with `env`), and bash,
# which keeps them, words its errors differently from the "can't create
# /file: Read-only file system" a spec expects. So the images get the
# release the specs were written against.
#
#   BUSYBOX_MODULE_VERSION  the module version (default below)
#   SYNCPOD_BUSYBOX_CACHE   where builds are kept (default
#                           /var/cache/syncpod/busybox, or
#                           ~/.cache/syncpod/busybox when not writable)
#
# Concurrent callers wait on a lock and reuse one build. Progress goes to
# stderr; stdout is only the binary's path.
set -euo pipefail

VERSION=${BUSYBOX_MODULE_VERSION:-v0.0.0-20240713231254-371fe9f71d44}
MODULE=github.com/mirror/busybox
GO=${GO:-go}

. "$(dirname "$0")/cachedir.sh"
cache=${SYNCPOD_BUSYBOX_CACHE:-$(cache_dir busybox)}
root=$cache/$VERSION
bin=$root/busybox

if [[ -x $bin ]]; then
	echo "$bin"
	exit 0
fi
mkdir -p "$root"
exec 9>"$root/.lock"
flock 9
if [[ -x $bin ]]; then
	echo "$bin"
	exit 0
fi

start=$(date +%s)
src=$(cd /tmp && GOFLAGS=-mod=mod $GO mod download -json "$MODULE@$VERSION" |
	sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
[[ -n $src && -f $src/Makefile ]] || { echo "busyboxbin: could not fetch $MODULE@$VERSION" >&2; exit 1; }
work=$root/build
rm -rf "$work"
cp -r "$src" "$work"
# The module cache keeps neither write nor execute bits.
chmod -R u+w "$work"
chmod -R +x "$work"/scripts "$work"/applets
echo "busyboxbin: building busybox from $MODULE@$VERSION (cached in $root for later runs)" >&2
(
	cd "$work"
	make defconfig >/dev/null
	# Static, so it runs in an image with no libc; tc does not build
	# against current kernel headers and no spec uses it.
	sed -i 's/^# CONFIG_STATIC is not set/CONFIG_STATIC=y/; s/^CONFIG_TC=y/# CONFIG_TC is not set/' .config
	nice -n 19 make -j"$(nproc)" >build.log 2>&1 || { tail -n 30 build.log >&2; exit 1; }
)
install -m 0755 "$work"/busybox "$bin.tmp"
mv "$bin.tmp" "$bin"
rm -rf "$work"
echo "busyboxbin: built in $(( $(date +%s) - start )) s" >&2
echo "$bin"
