#!/usr/bin/env bash
# images.sh BIN_DIR VERSION REVISION BINARY... — build the FROM-scratch
# images of deploy/compose.yaml with the Docker engine at DOCKER_HOST (or
# the default one). Each image gets a context of its own under
# .tmp/image-context holding only what goes into it (a binary, not all of
# bin/), and OCI labels. Also builds syncpod/prometheus:debian from
# Debian's /usr/bin/prometheus when it is installed.
set -euo pipefail

bin=${1:?usage: images.sh BIN_DIR VERSION REVISION BINARY...}
version=${2:?version}
revision=${3:?revision}
shift 3
root=$(cd "$(dirname "$0")/.." && pwd)
ctx_root=$root/.tmp/image-context
docker=${DOCKER:-docker}
source_url=${SYNCPOD_IMAGE_SOURCE:-https://github.com/syncpod/syncpod}
busybox=${SYNCPOD_IMAGE_BUSYBOX:-/bin/busybox}
# The legacy builder: it needs no buildx plugin and pulls nothing for
# FROM scratch.
export DOCKER_BUILDKIT=0

log() { echo "images: $*" >&2; }

# build TAG CONTEXT DOCKERFILE [docker build args...]: starts the build in
# the background (the engine builds them side by side, which is most of
# the time saved on a busy machine); `wait_builds` collects them.
pids=()
tags=()
build() {
	local tag=$1 ctx=$2 dockerfile=$3
	shift 3
	cp "$dockerfile" "$ctx/Dockerfile"
	log "building $tag ($(du -sh "$ctx" | cut -f1) context)"
	"$docker" build -q "$@" --build-arg VERSION="$version" --build-arg REVISION="$revision" \
		--build-arg SOURCE="$source_url" -t "$tag:$version" -t "$tag:latest" "$ctx" >"$ctx.log" 2>&1 &
	pids+=($!)
	tags+=("$tag")
}

wait_builds() {
	local i rc=0
	for i in "${!pids[@]}"; do
		if ! wait "${pids[$i]}"; then
			log "building ${tags[$i]} failed:"
			cat "$ctx_root/$(basename "${tags[$i]}").log" >&2
			rc=1
		fi
	done
	return $rc
}

# libs_of FILE: the absolute paths of the shared libraries FILE loads.
libs_of() {
	ldd "$1" | awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\// {print $1}'
}

rm -rf "$ctx_root"
for b in "$@"; do
	ctx=$ctx_root/$b
	mkdir -p "$ctx/rootfs" "$ctx/state/data" "$ctx/state/var/log/pods" "$ctx/state/run/crisim" "$ctx/state/pki"
	cp "$bin/$b" "$ctx/rootfs/syncpod"
	if [[ $b == syncpod-crisim ]]; then
		# Process-mode containers run inside crisim's container: give them
		# a static busybox (no shared libraries to carry).
		if ! [[ -x $busybox ]] || ldd "$busybox" >/dev/null 2>&1; then
			log "$busybox is missing or not static (apt-get install busybox-static)"
			exit 1
		fi
		mkdir -p "$ctx/rootfs/bin"
		cp "$busybox" "$ctx/rootfs/bin/busybox"
		# One process for the ~270 links (perl-base is essential on
		# Debian): a fork per link is tens of seconds on a busy machine.
		"$busybox" --list | (cd "$ctx/rootfs/bin" &&
			perl -ne 'chomp; $_ eq "busybox" or symlink("busybox", $_) or die "symlink $_: $!\n"')
	fi
	build "syncpod/$b" "$ctx" "$root/deploy/Dockerfile" --build-arg BINARY="$b"
done

prom=${SYNCPOD_IMAGE_PROMETHEUS:-/usr/bin/prometheus}
if [[ -x $prom ]]; then
	ctx=$ctx_root/prometheus
	mkdir -p "$ctx/rootfs/bin" "$ctx/rootfs/etc/prometheus" "$ctx/state/prometheus"
	cp "$prom" "$ctx/rootfs/bin/prometheus"
	cp "$root/deploy/prometheus/prometheus.yml" "$ctx/rootfs/etc/prometheus/prometheus.yml"
	for lib in $(libs_of "$prom"); do
		mkdir -p "$ctx/rootfs$(dirname "$lib")"
		cp -L "$lib" "$ctx/rootfs$lib"
	done
	pv=$("$prom" --version 2>&1 | awk 'NR == 1 {print $3}' | tr -c 'A-Za-z0-9_.\n-' _)
	version=$pv-debian build syncpod/prometheus "$ctx" "$root/deploy/prometheus/Dockerfile"
	wait_builds
	"$docker" tag "syncpod/prometheus:$pv-debian" syncpod/prometheus:debian
else
	log "no $prom (apt-get install prometheus): syncpod/prometheus:debian not built; the monitoring profile needs it or SYNCPOD_PROMETHEUS_IMAGE"
	wait_builds
fi
log "built ${tags[*]}"
