#!/usr/bin/env bash
# Private containerd for the syncpod tests. Called by mk/containerd.mk:
#
#   mk/containerd.sh deps                    install the Debian packages if missing (root)
#   mk/containerd.sh up DIR PAUSE BUSYBOX TAR...  start containerd under DIR, import TARs
#   mk/containerd.sh down DIR                stop it, kill its shims, unmount, remove DIR
#   mk/containerd.sh status DIR              exit 0 when it answers
#
# Everything lives under DIR (root, state, config, socket, log, runc root,
# CNI conf): several worktrees can each run their own instance. The only
# shared path is /run/containerd/s/<hash>, where containerd 1.6 shims put their
# sockets (not configurable; the hash includes our socket path, so no clash).
#
# SYNCPOD_CONTAINERD_BIN, when set, is a directory holding another
# containerd, containerd-shim-runc-v2 and ctr (mk/containerdbin.sh builds
# containerd 2.x there); the shim is found first on containerd's PATH. A 2.x
# containerd gets a version-3 config with NRI off (its socket would be the
# host's /var/run/nri/nri.sock). runc and the CNI loopback stay Debian's.
#
# SYNCPOD_CONTAINERD_USERNS_RUNC, for a 2.x containerd, names a runc with
# idmapped mounts (mk/runcbin.sh builds one): the config then has a second
# runtime handler, runc-userns, that runs it, so that pods in user
# namespaces of their own (hostUsers: false) run on it (Debian's runc 1.1
# has no idmapped mounts: containerd says the default handler cannot run
# them). Its pods get a network of their own from mk/cni-podnet.sh (an
# address the CRI needs, nothing outside the pod's namespace), since such
# a pod may not share the node's.
set -euo pipefail

# bash-completion: the e2e test that loads syncpodctl's completion script
# into bash as a shell does (cobra's script needs its _get_comp_words_by_ref).
# dbus-daemon: the planner's logind test starts a private bus of its own
# (planner/logind/realbus_test.go).
PACKAGES=(containerd runc containernetworking-plugins busybox-static bash-completion dbus-daemon)
NEEDED_FILES=(/usr/bin/containerd /usr/bin/ctr /usr/bin/containerd-shim-runc-v2 /usr/sbin/runc /usr/lib/cni/loopback /bin/busybox /usr/share/bash-completion/bash_completion /usr/bin/dbus-daemon)
# Knobs (environment): SYNCPOD_CONTAINERD_SNAPSHOTTER forces a snapshotter
# (default: overlayfs when an overlay mount works under DIR, else native);
# SYNCPOD_CONTAINERD_LOG_LEVEL sets containerd's log level (default info;
# trace logs every CRI call, the reads too, in DIR/containerd.log);
# SYNCPOD_CONTAINERD_CNI_CONFLIST names a CNI network list to use instead
# of the loopback-only one (the conformance run's pod network).
# SYNCPOD_CONTAINERD_METRICS_ADDRESS, a loopback HOST:PORT, turns on
# containerd's Prometheus endpoint there (http://HOST:PORT/v1/metrics) with
# its gRPC handling-time histograms: what each CRI method cost the runtime
# (the density bench reads it); default off.
# SYNCPOD_CONTAINERD_RUNC, for a 2.x containerd, names the runc of the
# default handler (default Debian's /usr/sbin/runc).
BIN_DIR=${SYNCPOD_CONTAINERD_BIN:-}
USERNS_RUNC=${SYNCPOD_CONTAINERD_USERNS_RUNC:-}
RUNC=${SYNCPOD_CONTAINERD_RUNC:-/usr/sbin/runc}
if [[ -n $BIN_DIR ]]; then
	NEEDED_FILES=("$BIN_DIR"/containerd "$BIN_DIR"/ctr "$BIN_DIR"/containerd-shim-runc-v2 "$RUNC" /usr/lib/cni/loopback /bin/busybox /usr/bin/dbus-daemon ${USERNS_RUNC:+"$USERNS_RUNC"})
	export PATH=$BIN_DIR:$PATH
fi
START_TIMEOUT=${SYNCPOD_CONTAINERD_START_TIMEOUT:-30}
STOP_TIMEOUT=${SYNCPOD_CONTAINERD_STOP_TIMEOUT:-10}
HARNESS=containerd-harness
. "$(dirname "$0")/daemon.sh"

missing_files() {
	local f
	for f in "${NEEDED_FILES[@]}"; do [[ -e $f ]] || echo "$f"; done
	# busybox must be the static one: it runs inside an empty image.
	if [[ -e /bin/busybox ]] && ! file_is_static /bin/busybox; then echo "/bin/busybox (not static)"; fi
}

file_is_static() {
	# A static ELF has no PT_INTERP program header; ldd says so without
	# needing the `file` package.
	! ldd "$1" >/dev/null 2>&1
}

cmd_deps() {
	local missing
	missing=$(missing_files)
	if [[ -z $missing ]]; then
		return 0
	fi
	if [[ $(id -u) -ne 0 ]]; then
		loud "missing: $(echo $missing). Not root, so not installing: containerd tests will SKIP. As root: apt-get install -y ${PACKAGES[*]}"
		return 0
	fi
	log "missing: $(echo $missing); installing ${PACKAGES[*]}"
	export DEBIAN_FRONTEND=noninteractive
	# Other worktrees may run apt at the same time: wait for the dpkg lock.
	local try
	for try in 1 2 3; do
		apt-get -o DPkg::Lock::Timeout=300 update -qq && break
		((try < 3)) || return 1
		log "apt-get update failed (another apt running?): retrying"
		sleep 5
	done
	apt-get -o DPkg::Lock::Timeout=300 install -y -qq --no-install-recommends "${PACKAGES[@]}" >/dev/null
	missing=$(missing_files)
	if [[ -n $missing ]]; then
		loud "still missing after apt-get install: $missing"
		return 1
	fi
}

# major_version: 1 for Debian's containerd 1.6, 2 for a 2.x build.
major_version() {
	local v
	v=$(containerd --version 2>/dev/null | grep -Eo ' v?[0-9]+\.[0-9]+' | head -n1)
	v=${v# }
	v=${v#v}
	echo "${v%%.*}"
}

ctr_() { ctr --address "$SOCK" --timeout 10s "$@"; }

answers() {
	[[ -S $SOCK ]] || return 1
	ctr_ version >/dev/null 2>&1 || return 1
	# The CRI plugin must have loaded, else every CRI call is Unimplemented.
	# (Captured first: grep -q closing the pipe early would trip pipefail.)
	local plugins
	plugins=$(ctr_ plugins ls 2>/dev/null) || return 1
	grep -Eq '^io\.containerd\.grpc\.v1[[:space:]]+cri[[:space:]].*[[:space:]]ok[[:space:]]*$' <<<"$plugins"
}

# overlay_works DIR: can this machine mount overlayfs on the filesystem of
# DIR? containerd's own check only looks at the kernel; this mounts for real.
overlay_works() {
	local p=$1/overlay-probe rc=0
	rm -rf "$p"
	mkdir -p "$p"/{lower,upper,work,merged}
	echo ok >"$p"/lower/f
	if mount -t overlay overlay -o "lowerdir=$p/lower,upperdir=$p/upper,workdir=$p/work" "$p"/merged 2>/dev/null; then
		[[ $(cat "$p"/merged/f 2>/dev/null) == ok ]] || rc=1
		umount "$p"/merged || rc=1
	else
		rc=1
	fi
	rm -rf "$p"
	return $rc
}

# config_common PLUGIN...: what the private containerd's config says the
# same in versions 2 and 3 (its top-level keys, so it comes before any
# table): its directories, the plugins it disables, and the unix sockets
# as its only listeners.
config_common() {
	cat <<-EOF
		root = "$DIR/root"
		state = "$DIR/state"
		oom_score = 0
		disabled_plugins = [
	EOF
	printf '  "%s",\n' "$@"
	cat <<-EOF
		]

		[grpc]
		  address = "$SOCK"
		[ttrpc]
		  address = "$SOCK.ttrpc"
		# No TCP listeners: debug is off, metrics too unless asked for
		# (SYNCPOD_CONTAINERD_METRICS_ADDRESS, on loopback).
		[debug]
		  address = ""
		  level = "${SYNCPOD_CONTAINERD_LOG_LEVEL:-info}"
	EOF
	if [[ -n ${SYNCPOD_CONTAINERD_METRICS_ADDRESS:-} ]]; then
		cat <<-EOF
			[metrics]
			  address = "$SYNCPOD_CONTAINERD_METRICS_ADDRESS"
			  grpc_histogram = true

		EOF
	else
		cat <<-EOF
			[metrics]
			  address = ""

		EOF
	fi
}

write_config() {
	local snapshotter=$1 pause=$2
	mkdir -p "$DIR"/cni/net.d "$DIR"/opt
	# Loopback-only CNI network: the runtime reports NetworkReady, host-network
	# pods work. Pods on the pod network get no IP and fail to start; the
	# tests never use them (and never send traffic to pod IPs).
	if [[ -n ${SYNCPOD_CONTAINERD_CNI_CONFLIST:-} ]]; then
		cp "$SYNCPOD_CONTAINERD_CNI_CONFLIST" "$DIR"/cni/net.d/10-syncpod.conflist
	else
		cat >"$DIR"/cni/net.d/10-syncpod-loopback.conflist <<-EOF
			{"cniVersion": "0.4.0", "name": "syncpod-loopback", "plugins": [{"type": "loopback"}]}
		EOF
	fi
	if (($(major_version) >= 2)); then
		write_config_v3 "$snapshotter" "$pause"
		return
	fi
	cat >"$DIR"/config.toml <<-EOF
		# Generated by mk/containerd.sh; containerd 1.6 (Debian bookworm), config version 2.
		version = 2
	EOF
	config_common \
		io.containerd.snapshotter.v1.aufs \
		io.containerd.snapshotter.v1.btrfs \
		io.containerd.snapshotter.v1.devmapper \
		io.containerd.snapshotter.v1.zfs \
		io.containerd.tracing.processor.v1.otlp \
		io.containerd.internal.v1.tracing >>"$DIR"/config.toml
	cat >>"$DIR"/config.toml <<-EOF
		[plugins."io.containerd.internal.v1.opt"]
		  path = "$DIR/opt"

		[plugins."io.containerd.grpc.v1.cri"]
		  sandbox_image = "$pause"
		  # Required on these machines: without it the CRI plugin asks for
		  # oom_score_adj -998 for the pause container, which runc cannot set
		  # here, and every RunPodSandbox fails with "runc create failed: ...
		  # can't get final child's PID from pipe: EOF". With it, the value
		  # is clamped to containerd's own (0).
		  restrict_oom_score_adj = true
		  # Exec/attach/port-forward streaming: loopback, random port.
		  stream_server_address = "127.0.0.1"
		  stream_server_port = "0"
		  enable_selinux = false
		  max_container_log_line_size = 16384
		  [plugins."io.containerd.grpc.v1.cri".containerd]
		    snapshotter = "$snapshotter"
		    default_runtime_name = "runc"
		    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
		      runtime_type = "io.containerd.runc.v2"
		      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
		        # cgroupfs driver: no systemd on these machines (cgroup v1).
		        SystemdCgroup = false
		        Root = "$DIR/runc"
		  [plugins."io.containerd.grpc.v1.cri".cni]
		    bin_dir = "/usr/lib/cni"
		    conf_dir = "$DIR/cni/net.d"
		    max_conf_num = 1
		  [plugins."io.containerd.grpc.v1.cri".registry]
		    config_path = "$DIR/certs.d"
	EOF
}

# write_config_v3 SNAPSHOTTER PAUSE: the same private setup for containerd
# 2.x, whose CRI plugin is split into images and runtime sections.
write_config_v3() {
	local snapshotter=$1 pause=$2
	cat >"$DIR"/config.toml <<-EOF
		# Generated by mk/containerd.sh; containerd 2.x, config version 3.
		version = 3
	EOF
	config_common \
		io.containerd.snapshotter.v1.btrfs \
		io.containerd.snapshotter.v1.devmapper \
		io.containerd.snapshotter.v1.zfs \
		io.containerd.snapshotter.v1.erofs \
		io.containerd.tracing.processor.v1.otlp \
		io.containerd.internal.v1.tracing \
		io.containerd.nri.v1.nri >>"$DIR"/config.toml
	cat >>"$DIR"/config.toml <<-EOF
		[plugins.'io.containerd.internal.v1.opt']
		  path = "$DIR/opt"

		[plugins.'io.containerd.cri.v1.images']
		  snapshotter = "$snapshotter"
		  [plugins.'io.containerd.cri.v1.images'.pinned_images]
		    sandbox = "$pause"
		  [plugins.'io.containerd.cri.v1.images'.registry]
		    config_path = "$DIR/certs.d"

		[plugins.'io.containerd.cri.v1.runtime']
		  # See the 1.6 config: runc cannot set the pause container's -998.
		  restrict_oom_score_adj = true
		  enable_selinux = false
		  max_container_log_line_size = 16384
		  cdi_spec_dirs = []
		  [plugins.'io.containerd.cri.v1.runtime'.containerd]
		    default_runtime_name = "runc"
		    [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
		      runtime_type = "io.containerd.runc.v2"
		      snapshotter = "$snapshotter"
		      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
		        BinaryName = "$RUNC"
		        SystemdCgroup = false
		        Root = "$DIR/runc"
		$(userns_handler_v3 "$snapshotter")
		  [plugins.'io.containerd.cri.v1.runtime'.cni]
		    bin_dirs = ["/usr/lib/cni", "$DIR/cni/bin"]
		    conf_dir = "$DIR/cni/net.d"
		    max_conf_num = 1

		[plugins.'io.containerd.grpc.v1.cri']
		  stream_server_address = "127.0.0.1"
		  stream_server_port = "0"
	EOF
}

# userns_handler_v3 SNAPSHOTTER: with SYNCPOD_CONTAINERD_USERNS_RUNC, the
# runc-userns handler (its runc, its own runc root, its pods' network from
# mk/cni-podnet.sh in a CNI directory of its own); else nothing.
userns_handler_v3() {
	[[ -n $USERNS_RUNC ]] || return 0
	mkdir -p "$DIR"/cni/bin "$DIR"/cni/userns.d
	cp "$(dirname "$0")"/cni-podnet.sh "$DIR"/cni/bin/syncpod-podnet
	cat >"$DIR"/cni/userns.d/10-syncpod-podnet.conflist <<-EOF
		{"cniVersion": "0.4.0", "name": "syncpod-podnet", "plugins": [{"type": "syncpod-podnet"}]}
	EOF
	cat <<-EOF
		    [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc-userns]
		      runtime_type = "io.containerd.runc.v2"
		      snapshotter = "$1"
		      cni_conf_dir = "$DIR/cni/userns.d"
		      cni_max_conf_num = 1
		      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc-userns.options]
		        BinaryName = "$USERNS_RUNC"
		        SystemdCgroup = false
		        Root = "$DIR/runc-userns"
	EOF
}

cmd_up() {
	local pause=$1 busybox=$2
	shift 2
	if [[ $(id -u) -ne 0 ]]; then
		loud "not root: not starting containerd; containerd tests will SKIP"
		return 0
	fi
	local missing
	missing=$(missing_files)
	if [[ -n $missing ]]; then
		[[ -n $BIN_DIR ]] && loud "missing $(echo $missing): run 'make containerd2-build' (and 'make containerd-deps' as root)" && return 1
		loud "missing $(echo $missing): run 'make containerd-deps' as root"
		return 1
	fi
	mkdir -p "$DIR"
	local pid
	if pid=$(pid_alive "$DIR"/containerd.pid containerd) && answers; then
		log "already running (pid $pid, $SOCK)"
	else
		if [[ -n ${pid:-} ]]; then
			log "pid $pid does not answer: restarting"
		fi
		cmd_down
		mkdir -p "$DIR"/{root,state,runc,runc-userns,certs.d}
		local snapshotter=${SYNCPOD_CONTAINERD_SNAPSHOTTER:-}
		if [[ -n $snapshotter ]]; then
			log "snapshotter $snapshotter (from SYNCPOD_CONTAINERD_SNAPSHOTTER)"
		elif overlay_works "$DIR"; then
			snapshotter=overlayfs
		else
			snapshotter=native
			log "overlayfs mounts fail under $DIR: using the native snapshotter"
		fi
		echo "$snapshotter" >"$DIR"/snapshotter
		write_config "$snapshotter" "$pause"
		# setsid: own session, so a Ctrl-C in make does not reach it. The
		# bash parent only waits, so containerd is reaped the moment it
		# exits instead of lingering as a zombie of PID 1.
		rm -f "$DIR"/containerd.pid
		setsid bash -c 'containerd --config "$1" & echo $! >"$2"; wait' _ "$DIR"/config.toml "$DIR"/containerd.pid \
			</dev/null >>"$DIR"/containerd.log 2>&1 9>&- &
		pid=$(await_start containerd "$DIR"/containerd.pid "$DIR"/containerd.log 0.1) || return 1
		log "started pid $pid, snapshotter $snapshotter, socket $SOCK, log $DIR/containerd.log"
	fi
	local snapshotter tar
	snapshotter=$(<"$DIR"/snapshotter)
	for tar in "$@"; do
		if ! ctr_ -n k8s.io images import --snapshotter "$snapshotter" "$tar" >"$DIR"/import.log 2>&1; then
			loud "importing $tar failed; log: $DIR/import.log, $DIR/containerd.log"
			cat "$DIR"/import.log >&2
			return 1
		fi
	done
	cat >"$DIR"/env <<-EOF
		# Source this to run the containerd tests by hand (written by mk/containerd.sh).
		export SYNCPOD_TEST_CONTAINERD_ENDPOINT=unix://$SOCK
		export SYNCPOD_TEST_PAUSE_IMAGE=$pause
		export SYNCPOD_TEST_BUSYBOX_IMAGE=$busybox
		export SYNCPOD_TEST_REQUIRE_CONTAINERD=1
		export CONTAINERD_ADDRESS=$SOCK
		export CONTAINERD_NAMESPACE=k8s.io
	EOF
}

# The /proc scans below use only bash builtins (see mk/daemon.sh).

# proc_cmdline PID: its command line, arguments joined by spaces and ended
# by one, in REPLY (as `tr '\0' ' '` would print it).
proc_cmdline() {
	local -a argv
	{ mapfile -d '' -t argv <"/proc/$1/cmdline"; } 2>/dev/null || return 1
	REPLY=
	((${#argv[@]})) && REPLY="${argv[*]} "
	return 0
}

# shim_pids: shims started by our containerd (their -address is our socket).
shim_pids() {
	local p
	for p in /proc/[0-9]*; do
		proc_cmdline "${p#/proc/}" || continue
		[[ $REPLY == *containerd-shim* && $REPLY == *"-address $SOCK "* ]] && echo "${p#/proc/}"
	done
	return 0
}

# stray_containerds: containerd processes running our config whose pid file
# was lost (an interrupted up, a deleted .tmp): found by command line.
stray_containerds() {
	local p
	for p in /proc/[0-9]*; do
		proc_cmdline "${p#/proc/}" || continue
		[[ $REPLY == "containerd --config $DIR/config.toml " ]] && echo "${p#/proc/}"
	done
	return 0
}

# containerd_zombies: exited containerd and shim processes not reaped yet.
containerd_zombies() {
	local p STAT_COMM
	local -a STAT
	for p in /proc/[0-9]*; do
		proc_stat "${p#/proc/}" || continue
		[[ $STAT_COMM == containerd* && ${STAT[0]} == Z ]] && echo "${p#/proc/}"
	done
	return 0
}

cmd_down() {
	[[ -d $DIR ]] || return 0
	if [[ $(id -u) -ne 0 ]]; then
		rm -rf --one-file-system "$DIR"
		return 0
	fi
	local pid gone=()
	# 1. While containerd answers, let it kill and delete every task: the
	#    shims then exit and runc removes the container cgroups.
	if pid=$(pid_alive "$DIR"/containerd.pid containerd) && [[ -S $SOCK ]] && ctr_ version >/dev/null 2>&1; then
		local ns id
		for ns in $(ctr_ namespaces ls -q 2>/dev/null); do
			for id in $(ctr_ -n "$ns" tasks ls -q 2>/dev/null); do
				ctr_ -n "$ns" tasks kill -a -s SIGKILL "$id" >/dev/null 2>&1 || true
			done
			for id in $(ctr_ -n "$ns" tasks ls -q 2>/dev/null); do
				ctr_ -n "$ns" tasks delete -f "$id" >/dev/null 2>&1 || true
			done
		done
	fi
	# Shims exit once their tasks are deleted; remember them to wait for.
	gone+=($(shim_pids))
	# 2. Stop containerd: SIGTERM, SIGKILL after a bound.
	if pid=$(pid_alive "$DIR"/containerd.pid containerd); then
		gone+=("$pid")
		stop_pid containerd "$pid"
	fi
	local strays
	strays=$(stray_containerds)
	if [[ -n $strays ]]; then
		log "killing containerd $(echo $strays) still running our config"
		kill -KILL $strays 2>/dev/null || true
		gone+=($strays)
	fi
	# 3. Whatever shims (and their containers) survived: kill the trees.
	local shims procs
	shims=$(shim_pids)
	if [[ -n $shims ]]; then
		procs=$(descendants $shims)
		log "killing leftover shims $(echo $shims) and processes ${procs:-none}"
		kill -KILL $procs $shims 2>/dev/null || true
		gone+=($procs $shims)
	fi
	# Exited shims are orphans that PID 1 reaps (here: about once a second);
	# wait, bounded, so nothing of ours is listed once down returns. A
	# zombie's command line is gone, so wait for every containerd zombie.
	gone+=($(containerd_zombies))
	local p deadline=$((SECONDS + 5))
	for p in "${gone[@]}"; do
		while [[ -e /proc/$p ]] && ((SECONDS < deadline)); do sleep 0.1; done
	done
	# Shim sockets live outside DIR: remove the ones our tasks used.
	local a
	for a in "$DIR"/state/io.containerd.runtime.v2.task/*/*/address; do
		[[ -f $a ]] || continue
		a=$(<"$a")
		a=${a#unix://}
		[[ $a == /run/containerd/s/* ]] && rm -f "$a"
	done
	# Containers killed without `runc delete` keep their (now empty) cgroups,
	# /<namespace>/<id> in each hierarchy with the cgroupfs driver: rmdir
	# them (rmdir only ever removes empty cgroups).
	local b ns id
	for b in "$DIR"/state/io.containerd.runtime.v2.task/*/*/; do
		[[ -d $b ]] || continue
		b=${b%/}
		id=${b##*/}
		ns=${b%/*}
		ns=${ns##*/}
		rmdir /sys/fs/cgroup/*/"$ns"/"$id" /sys/fs/cgroup/"$ns"/"$id" 2>/dev/null || true
	done
	# 4. Unmount everything under DIR, deepest first.
	unmount_under "$DIR" || return 1
	# 5. Remove the state; --one-file-system never follows into a mount.
	rm -rf --one-file-system "$DIR"
}

daemon_main containerd.sock "deps | up DIR PAUSE_IMAGE BUSYBOX_IMAGE TAR... | down DIR | status DIR" "$@"
