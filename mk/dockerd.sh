#!/usr/bin/env bash
# Private Docker engine for the compose test. Called by mk/docker.mk:
#
#   mk/dockerd.sh deps        install docker.io and docker-compose if missing (root)
#   mk/dockerd.sh up DIR      start dockerd with everything under DIR (and a short exec root)
#   mk/dockerd.sh down DIR    remove its containers and networks, stop it, unmount, remove DIR
#   mk/dockerd.sh status DIR  exit 0 when it answers
#
# The engine leaves the host as it was: --iptables=false, --ip6tables=false,
# --ip-forward=false, --ip-masq=false (no rules, no sysctls) and
# --bridge=none (no docker0). Compose's own network is a bridge the engine
# creates and deletes; published ports go through docker-proxy on
# 127.0.0.1. Its containerd is the one dockerd supervises under the exec
# root (unless a system containerd listens on /run/containerd/containerd.sock,
# which dockerd then uses). It is stopped by the pid it wrote, never by name.
set -euo pipefail

PACKAGES=(docker.io docker-compose)
START_TIMEOUT=${SYNCPOD_DOCKERD_START_TIMEOUT:-60}
STOP_TIMEOUT=${SYNCPOD_DOCKERD_STOP_TIMEOUT:-20}
# Compose networks come from this pool, away from docker's usual 172.x.
ADDRESS_POOL=${SYNCPOD_DOCKERD_ADDRESS_POOL:-10.213.0.0/16}
HARNESS=dockerd-harness
. "$(dirname "$0")/daemon.sh"

missing() {
	command -v dockerd >/dev/null || echo dockerd
	command -v docker >/dev/null || echo docker
	command -v docker-compose >/dev/null || echo docker-compose
	return 0
}

cmd_deps() {
	local m
	m=$(missing)
	[[ -z $m ]] && return 0
	if [[ $(id -u) -ne 0 ]]; then
		loud "missing: $(echo $m). Not root, so not installing: the compose test will SKIP. As root: apt-get install -y ${PACKAGES[*]}"
		return 0
	fi
	log "missing: $(echo $m); installing ${PACKAGES[*]}"
	# No service may start from the package (policy-rc.d 101), and the
	# policy file goes away again only if we created it.
	local policy=/usr/sbin/policy-rc.d had_policy=0 rc=0
	[[ -e $policy ]] && had_policy=1
	if ((!had_policy)); then printf '#!/bin/sh\nexit 101\n' >"$policy"; chmod +x "$policy"; fi
	export DEBIAN_FRONTEND=noninteractive
	{ apt-get -o DPkg::Lock::Timeout=300 update -qq &&
		apt-get -o DPkg::Lock::Timeout=300 install -y -qq --no-install-recommends "${PACKAGES[@]}" >/dev/null; } || rc=$?
	((had_policy)) || rm -f "$policy"
	((rc == 0)) || return $rc
	m=$(missing)
	[[ -z $m ]] || { loud "still missing after apt-get install: $m"; return 1; }
}

docker_() { DOCKER_HOST=unix://$SOCK docker "$@"; }

answers() {
	[[ -S $SOCK ]] && docker_ version >/dev/null 2>&1
}

cmd_up() {
	if [[ $(id -u) -ne 0 ]]; then
		loud "not root: not starting dockerd; the compose test will SKIP"
		return 0
	fi
	local m
	m=$(missing)
	[[ -z $m ]] || { loud "missing $(echo $m): run 'make dockerd-deps' as root"; return 1; }
	local pid
	if pid=$(pid_alive "$DIR"/dockerd.pid dockerd) && answers; then
		log "already running (pid $pid, $SOCK)"
		return 0
	fi
	cmd_down
	mkdir -p "$DIR"/data "$DIR"/tmp
	# The exec root holds containerd's and the shims' sockets: keep its
	# path short.
	local exec_root
	exec_root=$(mktemp -d /tmp/spdk.XXXXXX)
	echo "$exec_root" >"$DIR"/exec-root
	echo '{}' >"$DIR"/daemon.json
	rm -f "$DIR"/dockerd.pid
	# TMPDIR: dockerd starts its containerd before it points TMPDIR at
	# the data root, and when that containerd is slow to stop dockerd
	# sends it SIGUSR1, which writes containerd.<pid>.stacks.log into
	# the temp dir: this one, not the host's /tmp.
	TMPDIR="$DIR"/tmp setsid bash -c 'dockerd "$@" & echo $! >"$0"; wait' "$DIR"/dockerd.pid \
		--config-file "$DIR"/daemon.json \
		--host "unix://$SOCK" \
		--data-root "$DIR"/data \
		--exec-root "$exec_root" \
		--pidfile "$DIR"/dockerd.pid.own \
		--iptables=false --ip6tables=false --ip-forward=false --ip-masq=false \
		--bridge=none --userland-proxy=true \
		--default-address-pool "base=$ADDRESS_POOL,size=24" \
		--log-level=warn \
		</dev/null >>"$DIR"/dockerd.log 2>&1 9>&- &
	pid=$(await_start dockerd "$DIR"/dockerd.pid "$DIR"/dockerd.log 0.2) || return 1
	cat >"$DIR"/env <<-EOF
		# Source this to use the private engine (written by mk/dockerd.sh).
		export DOCKER_HOST=unix://$SOCK
	EOF
	log "started pid $pid, socket $SOCK, storage driver $(docker_ info --format '{{.Driver}}' 2>/dev/null), log $DIR/dockerd.log"
}

cmd_down() {
	[[ -d $DIR ]] || return 0
	if [[ $(id -u) -ne 0 ]]; then
		rm -rf --one-file-system "$DIR"
		return 0
	fi
	local pid
	if pid=$(pid_alive "$DIR"/dockerd.pid dockerd) && answers; then
		# Containers and compose networks first, while the engine can
		# remove them (and their bridges, veths and docker-proxies).
		local ids
		ids=$(docker_ ps -aq)
		[[ -z $ids ]] || docker_ rm -f -v $ids >/dev/null 2>&1 || true
		ids=$(docker_ network ls -q --filter type=custom)
		[[ -z $ids ]] || docker_ network rm $ids >/dev/null 2>&1 || true
	fi
	if pid=$(pid_alive "$DIR"/dockerd.pid dockerd); then
		local below
		below=$(descendants "$pid")
		stop_pid dockerd "$pid"
		# Whatever it started and left (its containerd, shims, proxies).
		local p left=()
		for p in $below; do running "$p" && left+=("$p"); done
		if ((${#left[@]})); then
			log "killing processes dockerd left: ${left[*]}"
			kill -KILL "${left[@]}" 2>/dev/null || true
		fi
		local deadline=$((SECONDS + 5))
		for p in $pid $below; do
			while [[ -e /proc/$p ]] && running "$p" && ((SECONDS < deadline)); do sleep 0.1; done
		done
	fi
	local exec_root=
	[[ -f $DIR/exec-root ]] && exec_root=$(<"$DIR"/exec-root)
	unmount_under "$DIR" || return 1
	if [[ -n $exec_root && -d $exec_root ]]; then
		unmount_under "$exec_root" || return 1
		rm -rf --one-file-system "$exec_root"
	fi
	rm -rf --one-file-system "$DIR"
}

daemon_main docker.sock "deps | up DIR | down DIR | status DIR" "$@"
