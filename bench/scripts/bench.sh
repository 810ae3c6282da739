#!/usr/bin/env bash
# bench/scripts/bench.sh MODE — the side-by-side benchmark (see README,
# Performance). Run as root: it starts private containerds.
#
#   bench.sh syncpod      the raw-CRI floor, then syncpod, on one private containerd
#   bench.sh scale        only the many-pods rows (syncpod on crisim, simulated)
#   bench.sh kubelet      the kubelet v1.37.2 standalone (static pods), then syncpod,
#                         then the raw-CRI floor, each on a fresh, identical
#                         private containerd, one after the other; then the
#                         two agents side by side (versus below) for the starts
#                         and the 10-pod deletion, which the kubelet's own phase
#                         leaves out; one table; then the API-server path
#                         (kubelet-api below)
#   bench.sh kubelet-api
#                         only the API-server path: one private control plane
#                         (etcd, kube-apiserver on loopback, certificates made
#                         here); a real kubelet joined as node bench-kubelet
#                         and syncpod (syncpod-node) as node bench-syncpod at
#                         once, each on a fresh identical private containerd;
#                         the same host-network busybox pod created bound to
#                         each (spec.nodeName) → Running as a watch sees it,
#                         one pod on each a round, their order alternating,
#                         BENCH_API_RUNS rounds (default 20, after 2 warm-up)
#   bench.sh density      a whole node under many pods: one private control plane,
#                         the kubelet joined as node bench-kubelet and syncpod
#                         (syncpod-node) as bench-syncpod at once, each on its own
#                         identical private containerd; their turns alternate
#                         round by round: DENSITY_PODS pods created at DENSITY_RATE
#                         pods/s (the pod-startup SLI's percentiles), then each of
#                         DENSITY_BURSTS created at once (until all run, until all
#                         are deleted), idling at the first for the agents' CPU and
#                         memory; the document's Density section (only that)
#   bench.sh scale-nodes  many nodes under one control plane: upstream's hollow
#                         kubelet (kubemark), then syncpod nodes on crisim in
#                         simulated mode, loaded with pods bound round-robin
#                         (scale-nodes.sh says how; make bench-scale)
#   bench.sh versus       the kubelet and syncpod running at once, each on its own
#                         identical private containerd, their starts by manifest
#                         file (1 pod, 10 pods and their deletion) alternating
#                         round by round, so both see the same load
#
# Knobs (environment):
#   BENCH_RUNTIME   the runtime of every agent: containerd2 (default: 2.x built by
#                   mk/containerdbin.sh, CRI events, syncpod's PLEG evented) or
#                   containerd1.6 (Debian's, also spelt containerd: no CRI events,
#                   both agents relist, each at its default period)
#   BENCH_ARGS      extra flags for `syncpod-bench measure` (e.g. --runs 10 --big=false)
#   BENCH_SCALE     pods of the many-pods rows (default 2000; 0 skips them): syncpod
#                   on crisim in simulated mode (no processes), the PLEG relisting
#                   (--evented off) at its default period, every second at that size
#                   (a relist costs over 10 ms), idle for BENCH_SCALE_IDLE (30s)
#   BENCH_PROFILE   seconds of CPU profile to take of each syncpod service as its
#                   measures begin (in its own phase and side by side), into
#                   .tmp/bench/PHASE-SERVICE.pprof (go tool pprof -top FILE);
#                   the services run with --profiling (default: none)
#   DENSITY_PODS, DENSITY_RATE, DENSITY_BURSTS, DENSITY_ROUNDS, DENSITY_IDLE
#                   the density run's sizes (default 100 pods at 5/s, bursts
#                   110,250, 2 rounds, a 30s idle window); e.g. DENSITY_PODS=10
#                   DENSITY_BURSTS=20 DENSITY_ROUNDS=1 DENSITY_IDLE=5s for a quick run
#   DENSITY_CHURN, DENSITY_CHURN_RATE
#                   churn at density (default none): once the last burst runs,
#                   DENSITY_CHURN_RATE (10) pods/s created and as many deleted on
#                   top of it for DENSITY_CHURN (e.g. 5m), before its deletion
#   DENSITY_CHURN_WAIT
#                   after the churn, how long to wait at most for its pods to start and
#                   the deleted ones to be gone, then for the rest to be deleted
#                   (default 3m); a node not done by then is reported behind
#   DENSITY_QUIET   before each turn, how long to wait at most for the machine's
#                   cores to be less than half busy (default 2m; 0 skips)
#   DENSITY_MORE    reports of earlier density runs of other sizes (comma-separated
#                   JSON files, e.g. a churn run's .tmp/bench/density.json kept
#                   aside), each a table after this run's in the Density section
#   DENSITY_SYNCPOD how the syncpod node runs in the density run: services (default:
#                   node agent, planner, executor and PLEG each its own binary) or all
#                   (the four in one syncpod-all process)
#   DENSITY_SYNCPOD_NODE_ARGS
#                   extra flags for syncpod-node in the density run (e.g.
#                   --pod-status-qps 10 --pod-status-burst 20; default: none)
#   BENCH_SETTLE    seconds to wait at most, before each phase of the side-by-side
#                   runs, for the 1-minute load average to fall below the number of
#                   cores (default 120; 0 skips): the 50-pod rows leave a load of 30
#                   or more on 2 cores, which the next agent's phase would start under
#
# The host is left as found: everything lives under .tmp/bench; the kubelet
# runs in a private mount namespace with the sysctl files it rewrites,
# /var/lib/kubelet and /var/log/containers bind-mounted over; every process
# started here is stopped by pid, and each containerd's pods are stopped
# before it (mk/containerd.sh down). Tables go to stdout and .tmp/bench/;
# the run's sections, made from the same reports, into docs/benchmarks.md
# with their plots under docs/benchmarks/ (syncpod-bench report), the
# sections of other runs (the other runtime's, Density, Scale) kept.
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BIN=${BENCH_BIN:-$ROOT/bin} # the binaries (make build bench-build)
B=$ROOT/.tmp/bench
RUNTIME=${BENCH_RUNTIME:-containerd2}
PAUSE=localhost/syncpod/pause:3.10
BUSYBOX=localhost/syncpod/busybox:1.36
TARS=("$ROOT/.tmp/images/localhost_syncpod_pause_3.10.tar" "$ROOT/.tmp/images/localhost_syncpod_busybox_1.36.tar")
CD=$B/containerd
SOCK=$CD/containerd.sock
CD2=$B/containerd-b # versus: syncpod's runtime beside the kubelet's
# density: the ports of the two runtimes' metrics (loopback)
KUBELET_RT_METRICS=19361
SYNCPOD_RT_METRICS=19461
SOCK2=$CD2/containerd.sock
NODE=bench-node
read -r -a EXTRA <<<"${BENCH_ARGS:-}"
# Flags for `syncpod-bench versus`: 30 single starts a side by default (the
# 10-pod rows run half as many rounds), enough that the runtime's own
# spread (±10 ms of ~125 ms) does not hide a few ms of difference.
read -r -a VERSUS_ARGS <<<"${VERSUS_ARGS:---runs 30}"
read -r -a EXECUTOR_ARGS <<<"${BENCH_EXECUTOR_ARGS:-}" # extra flags for syncpod's executor (e.g. --max-parallel-pods 4)
read -r -a PLEG_ARGS <<<"${BENCH_PLEG_ARGS:-}"         # ... its PLEG (e.g. --evented off)
read -r -a PLANNER_ARGS <<<"${BENCH_PLANNER_ARGS:-}"   # ... its planner (e.g. --log-level info)
PROFILE=${BENCH_PROFILE:-}
PROFILING=()
if [[ -n $PROFILE ]]; then
	[[ $PROFILE =~ ^[1-9][0-9]*$ ]] || { echo "bench: BENCH_PROFILE=$PROFILE: want a number of seconds" >&2; exit 2; }
	PROFILING=(--profiling)
fi

log() { echo "bench: $*" >&2; }

# The versions the reports do not carry, for the document: syncpod's
# (make passes its VERSION) and those of the Kubernetes components run.
declare -A VERSIONS=([syncpod]=${BENCH_VERSION:-$(git -C "$ROOT" describe --tags --always --dirty 2>/dev/null || echo unknown)})
version() { # NAME VERSION: log it and keep it for the document
	log "$1: $2"
	VERSIONS[$1]=$2
}

# document TITLE=FILE,FILE... ...: the run's sections of docs/benchmarks.md
# and their plots under docs/benchmarks/ (syncpod-bench report), one
# section per argument, each the reports of one table printed above, the
# document's other sections kept; the run's command is BENCH_COMMAND (make
# passes its target).
document() {
	local args=() s n
	for s in "$@"; do args+=(--section "$s"); done
	for n in $(printf '%s\n' "${!VERSIONS[@]}" | sort); do args+=(--component "$n=${VERSIONS[$n]}"); done
	"$BIN"/syncpod-bench report --out "$ROOT"/docs/benchmarks.md --command "${BENCH_COMMAND:-bench/scripts/bench.sh $MODE}" "${args[@]}"
	log "the document: $ROOT/docs/benchmarks.md, its plots under $ROOT/docs/benchmarks/"
}

if [[ $(id -u) -ne 0 ]]; then
	log "needs root (it runs private containerds)"
	exit 1
fi
# ON names the runtime in the document's section titles, so that a run on
# one runtime replaces its own sections and keeps the other's (report.Merge).
case $RUNTIME in
containerd2)
	SYNCPOD_CONTAINERD_BIN=$("$ROOT"/mk/containerdbin.sh)
	export SYNCPOD_CONTAINERD_BIN
	ON="on containerd 2.4"
	;;
containerd1.6 | containerd)
	# Debian's, from PATH (make containerd-deps installs it): one inherited
	# from the environment would make the run a 2.x one under the 1.6 name.
	unset SYNCPOD_CONTAINERD_BIN
	ON="on containerd 1.6"
	BENCH_COMMAND="${BENCH_COMMAND:-bench/scripts/bench.sh ${1:-}} BENCH_RUNTIME=$RUNTIME"
	;;
*)
	log "BENCH_RUNTIME=$RUNTIME: want containerd2 or containerd1.6"
	exit 2
	;;
esac

procs=()    # pids started here, stopped at exit
cp_procs=() # the control plane's (kubelet-api), stopped after the nodes
stop_pids() {
	local p
	for p in "$@"; do kill -TERM "$p" 2>/dev/null || true; done
	for p in "$@"; do
		for _ in $(seq 100); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
		kill -KILL "$p" 2>/dev/null || true
		wait "$p" 2>/dev/null || true
	done
}
stop_procs() {
	stop_pids "${procs[@]}"
	procs=()
}
logs=0 # containerd logs kept as $B/containerd-N.log (down removes $CD)
keep_log() {
	if [[ -f $CD/containerd.log ]]; then
		logs=$((logs + 1))
		cp "$CD"/containerd.log "$B"/containerd-$logs.log
	fi
}
runtime_up() {
	keep_log
	"$ROOT"/mk/containerd.sh down "$CD"
	"$ROOT"/mk/containerd.sh up "$CD" "$PAUSE" "$BUSYBOX" "${TARS[@]}"
}
runtime_down() {
	keep_log
	"$ROOT"/mk/containerd.sh down "$CD"
}
runtime2_up() {
	"$ROOT"/mk/containerd.sh down "$CD2"
	"$ROOT"/mk/containerd.sh up "$CD2" "$PAUSE" "$BUSYBOX" "${TARS[@]}"
}
runtime2_down() {
	if [[ -f $CD2/containerd.log ]]; then cp "$CD2"/containerd.log "$B"/containerd-b.log; fi
	"$ROOT"/mk/containerd.sh down "$CD2"
}
kubelet_cleanup() {
	# Only what this script made: the bind-mount sources live under $B.
	# Its log is kept beside the containerd logs, for a run that failed.
	if [[ -f $B/kubelet/kubelet.log ]]; then cp "$B"/kubelet/kubelet.log "$B"/kubelet.log; fi
	rm -rf "$B"/kubelet
}
cleanup() {
	stop_procs
	remove_new_kubelet_chains # scale-nodes.sh: a kubemark side cut short
	runtime_down || true
	runtime2_down || true
	stop_pids "${cp_procs[@]}"
	kubelet_cleanup
}
trap cleanup EXIT
trap 'exit 130' INT TERM

measure() { # AGENT OUT [flags]
	local agent=$1 out=$2
	shift 2
	"$BIN"/syncpod-bench measure --agent "$agent" --cri-endpoint "unix://$SOCK" --image "$BUSYBOX" \
		--log-dir "$B"/cri-logs --out "$out" "$@" "${EXTRA[@]}"
}

wait_socket() { # PATH PID NAME
	for _ in $(seq 300); do
		[[ -S $1 ]] && return 0
		kill -0 "$2" 2>/dev/null || { log "$3 exited; log: ${4:-}"; tail -n 20 "${4:-/dev/null}" >&2; return 1; }
		sleep 0.1
	done
	log "$3: no socket $1 after 30 s"
	return 1
}

# Every agent's hard eviction thresholds: 1 % where the kubelet's defaults
# are 10-15 %. The harness imports its images into each runtime and nothing
# can pull them again, so an eviction manager that finds the machine's
# disk under 15 % free removes them as unused and the next pods never
# start (the kubelet's 10 pods did not start within 2 minutes); and
# syncpod's planner evicts the pods it was asked for. The runs measure the
# agents, not a disk that other work filled. For the same reason the
# kubelets' image garbage collection never starts (kubelet_prepare): on
# containerd 1.6, which marks no image pinned, it removed the pause image
# once the disk was 85 % full, between two rounds that left no sandbox.
EVICTION_HARD_YAML='evictionHard: {"nodefs.available": "1%", "imagefs.available": "1%", "nodefs.inodesFree": "1%", "imagefs.inodesFree": "1%"}'
EVICTION_HARD_FLAG="nodefs.available<1%,nodefs.inodesFree<1%,imagefs.available<1%,imagefs.inodesFree<1%"

SYNCPOD_D=$B/syncpod
SYNCPOD_PIDS=""
start_syncpod() { # SOCK [DIR] [PORTS]: the three services on that runtime, in DIR
	# ($SYNCPOD_D), metrics on 127.0.0.1:PORTS01..03 (default 192: 19201-19203); sets SYNCPOD_PIDS
	local d=${2:-$SYNCPOD_D} mp=${3:-192} pids=()
	rm -rf "$d"
	mkdir -p "$d"/manifests "$d"/logs
	# No pod cgroups, as the kubelet of the comparison runs (cgroupsPerQOS: false).
	# The replacement row kills each container once: the kubelet restarts a
	# first exit at once, syncpod holds it for the back-off's first delay
	# (R-11.9), so here that delay is 1 ms and the row times what both do,
	# notice the exit and start the replacement.
	"$BIN"/syncpod-executor --listen "unix://$d/executor.sock" --metrics-listen 127.0.0.1:${mp}02 \
		--cri-endpoint "unix://$1" --data-dir "$d"/executor --log-dir "$d"/logs --cgroups-per-qos=false \
		--backoff-initial 1ms "${PROFILING[@]}" "${EXECUTOR_ARGS[@]}" >"$d"/executor.log 2>&1 &
	procs+=($!) pids+=($!)
	"$BIN"/syncpod-pleg --listen "unix://$d/pleg.sock" --metrics-listen 127.0.0.1:${mp}03 \
		--cri-endpoint "unix://$1" "${PROFILING[@]}" "${PLEG_ARGS[@]}" >"$d"/pleg.log 2>&1 &
	procs+=($!) pids+=($!)
	wait_socket "$d"/executor.sock "${pids[0]}" executor "$d"/executor.log
	wait_socket "$d"/pleg.sock "${pids[1]}" pleg "$d"/pleg.log
	"$BIN"/syncpod-planner --listen "unix://$d/planner.sock" --metrics-listen 127.0.0.1:${mp}01 \
		--executor "unix://$d/executor.sock" --pleg "unix://$d/pleg.sock" \
		--data-dir "$d"/planner --manifest-dir "$d"/manifests --log-level debug --eviction-hard "$EVICTION_HARD_FLAG" \
		"${PROFILING[@]}" "${PLANNER_ARGS[@]}" >"$d"/planner.log 2>&1 &
	procs+=($!) pids+=($!)
	wait_socket "$d"/planner.sock "${pids[2]}" planner "$d"/planner.log
	SYNCPOD_PIDS=$(IFS=,; echo "${pids[*]}")
	sleep 2 # the PLEG's event stream confirms evented mode within 1 s (or falls back to relisting at once on 1.6)
}

PROFILE_PIDS=()
profile_syncpod() { # PREFIX: with BENCH_PROFILE, CPU profiles of the three services (metrics on 1920x) begin, in the background
	[[ -n $PROFILE ]] || return 0
	local svc
	for svc in 01:planner 02:executor 03:pleg; do
		curl -s -o "$B/$1-${svc#*:}.pprof" "http://127.0.0.1:192${svc%%:*}/debug/pprof/profile?seconds=$PROFILE" &
		PROFILE_PIDS+=($!)
	done
	log "profiling syncpod's services for $PROFILE s into $B/$1-{planner,executor,pleg}.pprof"
}

profiles_done() { # the profiles begun by profile_syncpod are written (they end on their own)
	[[ ${#PROFILE_PIDS[@]} -gt 0 ]] || return 0
	wait "${PROFILE_PIDS[@]}" || log "a profile was not written (a service gone before its end?)"
	PROFILE_PIDS=()
}

collect_syncpod() { # [PREFIX]: where syncpod's syncs spent their time, for the record, in $B/PREFIX-*
	local p=$B/${1:-syncpod}
	curl -s 127.0.0.1:19201/metrics | grep -E '^syncpod_planner_sync_(stage_duration_seconds|trigger_lag_seconds)_(sum|count)' >"$p"-stages.txt || true
	curl -s 127.0.0.1:19203/metrics | grep -E '^syncpod_pleg_mode' >>"$p"-stages.txt || true
	# Every sync's timeline (debug log); the restarts after a kill, by trigger.
	grep 'msg="pod sync timeline"' "$SYNCPOD_D"/planner.log >"$p"-timelines.log || true
	grep -c . "$p"-timelines.log >&2 || true
	grep 'trigger=pleg:CONTAINER_DIED' "$p"-timelines.log | grep 'cri:create_container' | tail -n 5 >&2 || true
}

run_syncpod() { # OUT
	start_syncpod "$SOCK"
	profile_syncpod syncpod
	measure syncpod "$1" --planner "unix://$SYNCPOD_D/planner.sock" --manifest-dir "$SYNCPOD_D"/manifests \
		--syncpodctl "$BIN"/syncpodctl --pids "$SYNCPOD_PIDS"
	collect_syncpod
	profiles_done
	stop_procs
}

run_scale() { # OUT
	local d=$B/scale pids=() n=${BENCH_SCALE:-2000}
	rm -rf "$d"
	mkdir -p "$d"/logs
	"$BIN"/syncpod-crisim --listen "unix://$d/crisim.sock" --metrics-listen 127.0.0.1:19204 --mode simulated \
		--data-dir "$d"/crisim >"$d"/crisim.log 2>&1 &
	procs+=($!)
	wait_socket "$d"/crisim.sock "$!" crisim "$d"/crisim.log
	"$BIN"/syncpod-executor --listen "unix://$d/executor.sock" --metrics-listen 127.0.0.1:19202 \
		--cri-endpoint "unix://$d/crisim.sock" --data-dir "$d"/executor --log-dir "$d"/logs >"$d"/executor.log 2>&1 &
	procs+=($!) pids+=($!)
	"$BIN"/syncpod-pleg --listen "unix://$d/pleg.sock" --metrics-listen 127.0.0.1:19203 \
		--cri-endpoint "unix://$d/crisim.sock" --evented off >"$d"/pleg.log 2>&1 &
	procs+=($!) pids+=($!)
	wait_socket "$d"/executor.sock "${pids[0]}" executor "$d"/executor.log
	wait_socket "$d"/pleg.sock "${pids[1]}" pleg "$d"/pleg.log
	"$BIN"/syncpod-planner --listen "unix://$d/planner.sock" --metrics-listen 127.0.0.1:19201 \
		--executor "unix://$d/executor.sock" --pleg "unix://$d/pleg.sock" --data-dir "$d"/planner >"$d"/planner.log 2>&1 &
	procs+=($!) pids+=($!)
	wait_socket "$d"/planner.sock "${pids[2]}" planner "$d"/planner.log
	"$BIN"/syncpod-bench measure --agent syncpod --cri-endpoint "unix://$d/crisim.sock" --image "$BUSYBOX" \
		--planner "unix://$d/planner.sock" --pids "$(IFS=,; echo "${pids[*]}")" --paired=false --label "syncpod on crisim" \
		--scale "$n" --pleg-metrics http://127.0.0.1:19203/metrics --idle "${BENCH_SCALE_IDLE:-30s}" --timeout 10m --out "$1"
	stop_procs
}

KUBELET_D=$B/kubelet
KUBELET_PID=""
kubelet_prepare() { # DIR SOCK PORT HEALTHZ_PORT [YAML]: copy the sysctls the kubelet rewrites (bench-kubelet-ns.sh mounts the copies over them) and write DIR/config.yaml, with YAML's lines added
	local d=$1 f
	for f in vm/overcommit_memory kernel/panic kernel/panic_on_oops; do cat /proc/sys/$f >"$d/sysctl/${f##*/}"; done
	cat >"$d"/config.yaml <<-YAML
		apiVersion: kubelet.config.k8s.io/v1beta1
		kind: KubeletConfiguration
		containerRuntimeEndpoint: unix://$2
		podLogsDir: $d/pod-logs
		address: 127.0.0.1
		port: $3
		readOnlyPort: 0
		healthzBindAddress: 127.0.0.1
		healthzPort: $4
		authentication:
		  anonymous: {enabled: true}
		  webhook: {enabled: false}
		authorization: {mode: AlwaysAllow}
		cgroupDriver: cgroupfs
		failCgroupV1: false
		failSwapOn: false
		cgroupsPerQOS: false
		enforceNodeAllocatable: []
		oomScoreAdj: 0
		makeIPTablesUtilChains: false
		volumePluginDir: $d/plugins
		imageGCHighThresholdPercent: 100
		imageGCLowThresholdPercent: 99
	YAML
	if [[ -n ${5:-} ]]; then printf '%s\n' "$5" >>"$d"/config.yaml; fi
}

start_kubelet() { # SOCK: the kubelet on that runtime, healthy; sets KUBELET_PID
	local bin d=$KUBELET_D
	bin=$("$ROOT"/mk/k8sbin.sh kubelet)
	rm -rf "$d"
	mkdir -p "$d"/{manifests,root,pki,pod-logs,plugins,sysctl,varlibkubelet,varlogcontainers}
	kubelet_prepare "$d" "$1" 19250 19248 "staticPodPath: $d/manifests"$'\n'"$EVICTION_HARD_YAML"
	version kubelet "$("$bin"/kubelet --version)"
	unshare --mount --propagation slave "$ROOT"/bench/scripts/bench-kubelet-ns.sh "$d" "$bin"/kubelet \
		--config "$d"/config.yaml --root-dir "$d"/root --cert-dir "$d"/pki --hostname-override "$NODE" \
		>"$d"/kubelet.log 2>&1 &
	procs+=($!)
	local pid=$!
	for _ in $(seq 600); do
		curl -sf 127.0.0.1:19248/healthz >/dev/null 2>&1 && break
		kill -0 "$pid" 2>/dev/null || { log "kubelet exited; log $d/kubelet.log"; tail -n 30 "$d"/kubelet.log >&2; return 1; }
		sleep 0.1
	done
	# The kubelet's pid is the one exec'd inside the namespace script.
	KUBELET_PID=$pid
}

run_kubelet() { # OUT
	start_kubelet "$SOCK"
	# No paired rows: the kubelet stops and removes the sandboxes on its
	# runtime that it did not create, so the raw-CRI floor cannot share it
	# (its containers vanished mid-measure: "namespace path ... no such
	# file"). The floor has its own phase below.
	# Nor the single start, the 10 pods and their deletion: those are
	# measured side by side (run_versus), where both agents see the same
	# load; one phase here against another minutes later compared five
	# samples each under whatever load each met (a 2-3 ms difference in a
	# ~125 ms start came out either way).
	measure kubelet "$1" --manifest-dir "$KUBELET_D"/manifests --node "$NODE" --pids "$KUBELET_PID" --paired=false \
		--only 50,container,idle
	rm -f "$KUBELET_D"/manifests/*.yaml
	stop_procs
}

run_versus() { # KUBELET_OUT SYNCPOD_OUT
	runtime_up
	runtime2_up
	start_kubelet "$SOCK"
	start_syncpod "$SOCK2"
	profile_syncpod versus-syncpod
	"$BIN"/syncpod-bench versus --kubelet-cri-endpoint "unix://$SOCK" --kubelet-manifest-dir "$KUBELET_D"/manifests \
		--node "$NODE" --syncpod-cri-endpoint "unix://$SOCK2" --syncpod-manifest-dir "$SYNCPOD_D"/manifests \
		--planner "unix://$SYNCPOD_D/planner.sock" --image "$BUSYBOX" --out-kubelet "$1" --out-syncpod "$2" \
		--kubelet-pids "$KUBELET_PID" --syncpod-pids "$SYNCPOD_PIDS" "${VERSUS_ARGS[@]}"
	collect_syncpod versus-syncpod
	profiles_done
	rm -f "$KUBELET_D"/manifests/*.yaml
	stop_procs
	runtime_down
	runtime2_down
}


# The API-server path (kubelet-api): one control plane for both nodes.
API=$B/api
API_PORT=19443
ETCD_PORT=19379 # and the next one, its peer port
API_TOKEN=
API_AUTHZ=RBAC
API_EXTRA_ARGS=() # more kube-apiserver flags (scale-nodes: the audit log)
API_EXTRA_TOKENS="" # more lines of its token file
apiserver_up() {
	local bin etcd
	bin=$("$ROOT"/mk/k8sbin.sh kube-apiserver kubelet)
	etcd=$(command -v etcd || true)
	if [[ -z $etcd ]]; then
		"$ROOT"/mk/etcd-deps.sh
		etcd=$(command -v etcd)
	fi
	rm -rf "$API"
	mkdir -p "$API"/etcd
	"$BIN"/syncpod-bench pki "$API"/pki
	API_TOKEN=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
	echo "$API_TOKEN,bench-admin,bench-admin,system:masters" >"$API"/pki/tokens.csv
	printf '%s' "$API_EXTRA_TOKENS" >>"$API"/pki/tokens.csv
	local peer=$((ETCD_PORT + 1))
	"$etcd" --name=default --data-dir="$API"/etcd \
		--listen-client-urls=http://127.0.0.1:$ETCD_PORT --advertise-client-urls=http://127.0.0.1:$ETCD_PORT \
		--listen-peer-urls=http://127.0.0.1:$peer --initial-advertise-peer-urls=http://127.0.0.1:$peer \
		--initial-cluster=default=http://127.0.0.1:$peer --log-level=warn >"$API"/etcd.log 2>&1 &
	cp_procs+=($!)
	version kube-apiserver "$("$bin"/kube-apiserver --version)"
	"$bin"/kube-apiserver --etcd-servers=http://127.0.0.1:$ETCD_PORT \
		--bind-address=127.0.0.1 --advertise-address=127.0.0.1 --secure-port=$API_PORT \
		--cert-dir="$API"/apiserver-certs \
		--tls-cert-file="$API"/pki/apiserver.crt --tls-private-key-file="$API"/pki/apiserver.key \
		--service-account-key-file="$API"/pki/sa.key --service-account-signing-key-file="$API"/pki/sa.key \
		--service-account-issuer=https://kubernetes.default.svc --service-cluster-ip-range=10.0.0.0/24 \
		--authorization-mode=$API_AUTHZ --token-auth-file="$API"/pki/tokens.csv \
		--endpoint-reconciler-type=none --enable-priority-and-fairness=false --profiling=false \
		"${API_EXTRA_ARGS[@]}" >"$API"/kube-apiserver.log 2>&1 &
	cp_procs+=($!)
	local pid=$!
	for _ in $(seq 600); do
		curl -sf --cacert "$API"/pki/ca.crt -H "Authorization: Bearer $API_TOKEN" \
			https://127.0.0.1:$API_PORT/readyz >/dev/null 2>&1 && break
		kill -0 "$pid" 2>/dev/null || { log "kube-apiserver exited; log $API/kube-apiserver.log"; tail -n 30 "$API"/kube-apiserver.log >&2; return 1; }
		sleep 0.1
	done
	cat >"$API"/kubeconfig <<-YAML
		apiVersion: v1
		kind: Config
		clusters:
		- name: bench
		  cluster: {server: "https://127.0.0.1:$API_PORT", certificate-authority: "$API/pki/ca.crt"}
		users:
		- name: admin
		  user: {token: "$API_TOKEN"}
		contexts:
		- name: bench
		  context: {cluster: bench, user: admin}
		current-context: bench
	YAML
	chmod 600 "$API"/kubeconfig
}

start_kubelet_api() { # SOCK NODE [YAML]: a real kubelet on that runtime, joined as NODE; sets KUBELET_PID
	local bin d=$B/kubelet
	bin=$("$ROOT"/mk/k8sbin.sh kubelet)
	rm -rf "$d"
	mkdir -p "$d"/{root,pki,pod-logs,plugins,sysctl}
	local yaml=$EVICTION_HARD_YAML
	if [[ -n ${3:-} ]]; then yaml+=$'\n'$3; fi
	kubelet_prepare "$d" "$1" 19350 19348 "$yaml"
	version kubelet "$("$bin"/kubelet --version)"
	unshare --mount --propagation slave "$ROOT"/bench/scripts/bench-kubelet-ns.sh "$d" "$bin"/kubelet \
		--config "$d"/config.yaml --kubeconfig "$API"/kubeconfig --root-dir "$d"/root --cert-dir "$d"/pki \
		--hostname-override "$2" >"$d"/kubelet.log 2>&1 &
	procs+=($!)
	KUBELET_PID=$!
}

start_syncpod_api() { # SOCK DIR PORTS NODE [FLAGS...]: syncpod's services and syncpod-node on that runtime, joined as NODE; sets SYNCPOD_PIDS (all four)
	local sock=$1 d=$2 mp=$3 node=$4
	shift 4
	start_syncpod "$sock" "$d" "$mp" # with the kubelet's eviction thresholds (EVICTION_HARD_FLAG)
	"$BIN"/syncpod-node --kubeconfig "$API"/kubeconfig --node-name "$node" \
		--listen "unix://$d/node.sock" --metrics-listen 127.0.0.1:${mp}05 \
		--planner "unix://$d/planner.sock" --cri-endpoint "unix://$sock" --node-ip 127.0.0.1 --root-dir "$d" \
		"$@" >"$d"/node.log 2>&1 &
	procs+=($!)
	SYNCPOD_PIDS+=,$!
}

start_syncpod_api_all() { # SOCK DIR PORTS NODE [FLAGS...]: as start_syncpod_api, the four services in one syncpod-all process; sets SYNCPOD_PIDS (its pid)
	local sock=$1 d=$2 mp=$3 node=$4 pid
	shift 4
	rm -rf "$d"
	mkdir -p "$d"/manifests "$d"/logs
	"$BIN"/syncpod-all --log-dir "$d" \
		executor:executor --listen "unix://$d/executor.sock" --metrics-listen 127.0.0.1:${mp}02 \
		--cri-endpoint "unix://$sock" --data-dir "$d"/executor --log-dir "$d"/logs --cgroups-per-qos=false \
		--backoff-initial 1ms "${PROFILING[@]}" "${EXECUTOR_ARGS[@]}" \
		-- pleg:pleg --listen "unix://$d/pleg.sock" --metrics-listen 127.0.0.1:${mp}03 \
		--cri-endpoint "unix://$sock" "${PROFILING[@]}" "${PLEG_ARGS[@]}" \
		-- planner:planner --listen "unix://$d/planner.sock" --metrics-listen 127.0.0.1:${mp}01 \
		--executor "unix://$d/executor.sock" --pleg "unix://$d/pleg.sock" \
		--data-dir "$d"/planner --manifest-dir "$d"/manifests --log-level debug "${PROFILING[@]}" "${PLANNER_ARGS[@]}" \
		--eviction-hard "$EVICTION_HARD_FLAG" \
		-- node:node --kubeconfig "$API"/kubeconfig --node-name "$node" \
		--listen "unix://$d/node.sock" --metrics-listen 127.0.0.1:${mp}05 \
		--planner "unix://$d/planner.sock" --cri-endpoint "unix://$sock" --node-ip 127.0.0.1 --root-dir "$d" \
		"$@" >"$d"/all.log 2>&1 &
	pid=$!
	procs+=($pid)
	wait_socket "$d"/node.sock "$pid" syncpod-all "$d"/all.log
	SYNCPOD_PIDS=$pid
	sleep 2 # as start_syncpod: the PLEG settles on its mode
}

# bench_density: both nodes of one control plane at once, each on its own
# runtime, the density rows alternating (syncpod-bench measure-density);
# then the document's Density section.
bench_density() {
	local bursts=${DENSITY_BURSTS:-110,250} maxpods=110 n d=$B/syncpod-density churn=${DENSITY_CHURN:-0} rate=${DENSITY_CHURN_RATE:-10}
	for n in ${bursts//,/ }; do ((n + 10 > maxpods)) && maxpods=$((n + 10)); done
	# A churn adds pods on top of the last burst's while as many are being
	# deleted: the kubelet counts a deleted pod until its sync loop has
	# taken the deletion in, and refused churned pods (OutOfpods) with room
	# for 10 more. Room for 30 s of created pods on both nodes.
	if [[ $churn != 0 && $churn != 0s ]]; then
		n=${bursts##*,}
		n=$((n + 10 + $(awk -v r="$rate" 'BEGIN { printf "%d", r * 30 + 0.999 }')))
		((n > maxpods)) && maxpods=$n
	fi
	apiserver_up
	# Each runtime serves its own metrics on loopback: the CRI calls each
	# agent made in a burst, and what each cost the runtime.
	SYNCPOD_CONTAINERD_METRICS_ADDRESS=127.0.0.1:$KUBELET_RT_METRICS runtime_up
	SYNCPOD_CONTAINERD_METRICS_ADDRESS=127.0.0.1:$SYNCPOD_RT_METRICS runtime2_up
	settle "the density run"
	start_kubelet_api "$SOCK" bench-kubelet "maxPods: $maxpods"
	# The planner at info, as the kubelet logs at its default verbosity
	# (start_syncpod's debug log of every sync costs CPU at hundreds of pods).
	PLANNER_ARGS+=(--log-level info)
	local node_args
	read -r -a node_args <<<"${DENSITY_SYNCPOD_NODE_ARGS:-}"
	case ${DENSITY_SYNCPOD:-services} in
	services) start_syncpod_api "$SOCK2" "$d" 194 bench-syncpod --max-pods "$maxpods" "${node_args[@]}" ;;
	all) start_syncpod_api_all "$SOCK2" "$d" 194 bench-syncpod --max-pods "$maxpods" "${node_args[@]}" ;;
	*) log "DENSITY_SYNCPOD: $DENSITY_SYNCPOD is not services or all"; return 2 ;;
	esac
	log "kubelet pid $KUBELET_PID, syncpod pids $SYNCPOD_PIDS, --max-pods $maxpods on both"
	"$BIN"/syncpod-bench measure-density --server https://127.0.0.1:$API_PORT --ca "$API"/pki/ca.crt --token "$API_TOKEN" \
		--image "$BUSYBOX" --kubelet-node bench-kubelet --kubelet-cri-endpoint "unix://$SOCK" --kubelet-pids "$KUBELET_PID" \
		--syncpod-node bench-syncpod --syncpod-cri-endpoint "unix://$SOCK2" --syncpod-pids "$SYNCPOD_PIDS" \
		--pods "${DENSITY_PODS:-100}" --rate "${DENSITY_RATE:-5}" --bursts "$bursts" --rounds "${DENSITY_ROUNDS:-2}" \
		--idle "${DENSITY_IDLE:-30s}" --churn "$churn" --churn-rate "$rate" --churn-wait "${DENSITY_CHURN_WAIT:-3m}" --quiet "${DENSITY_QUIET:-2m}" --out "$B"/density.json \
		--kubelet-metrics https://127.0.0.1:19350/metrics --syncpod-pleg-metrics http://127.0.0.1:19403/metrics \
		--kubelet-runtime-pids "$(cat "$CD"/containerd.pid)" --syncpod-runtime-pids "$(cat "$CD2"/containerd.pid)" \
		--kubelet-runtime-metrics http://127.0.0.1:$KUBELET_RT_METRICS/v1/metrics \
		--syncpod-runtime-metrics http://127.0.0.1:$SYNCPOD_RT_METRICS/v1/metrics ||
		{ log "logs: $B/kubelet/kubelet.log, $d/node.log"; tail -n 20 "$B"/kubelet/kubelet.log "$d"/node.log >&2; return 1; }
	stop_procs
	runtime_down
	runtime2_down
	stop_pids "${cp_procs[@]}"
	cp_procs=()
	"$BIN"/syncpod-bench report --out "$ROOT"/docs/benchmarks.md --density "$B/density.json${DENSITY_MORE:+,$DENSITY_MORE}" \
		--command "${BENCH_COMMAND:-bench/scripts/bench.sh density}" \
		--component "kubelet=${VERSIONS[kubelet]:-unknown}" --component "kube-apiserver=${VERSIONS[kube-apiserver]:-unknown}" \
		--component "syncpod=${VERSIONS[syncpod]}"
	log "the document's Density section: $ROOT/docs/benchmarks.md, its plots $ROOT/docs/benchmarks/density-*.svg"
}

# settle waits (up to BENCH_SETTLE seconds) for the 1-minute load average
# to fall below the number of cores before the phase WHAT, and says how
# long it waited and at what load the phase starts.
settle() { # WHAT
	local max=${BENCH_SETTLE:-120} cores waited=0 load
	cores=$(nproc)
	while :; do
		load=$(cut -d' ' -f1 /proc/loadavg)
		if awk -v l="$load" -v c="$cores" 'BEGIN { exit !(l < c) }' || ((waited >= max)); then
			break
		fi
		sleep 5
		waited=$((waited + 5))
	done
	log "$1 starts after ${waited} s of settling, at a load average of $load"
}

bench_api() {
	# Both nodes joined at once, each on its own fresh identical runtime,
	# their rounds alternating (the kubelet first in even rounds, syncpod
	# in odd ones), as the side-by-side rows: a load that changes over the
	# run weighs on both alike.
	local d=$B/syncpod-api
	apiserver_up
	runtime_up
	runtime2_up
	settle "the API-server path"
	start_kubelet_api "$SOCK" bench-kubelet
	start_syncpod_api "$SOCK2" "$d" 193 bench-syncpod
	"$BIN"/syncpod-bench measure-apiserver --server https://127.0.0.1:$API_PORT --ca "$API"/pki/ca.crt \
		--token "$API_TOKEN" --image "$BUSYBOX" --runs "${BENCH_API_RUNS:-20}" \
		--node bench-kubelet --label kubelet --cri-endpoint "unix://$SOCK" --out "$B"/kubelet-api.json \
		--versus-node bench-syncpod --versus-label syncpod --versus-cri-endpoint "unix://$SOCK2" --versus-out "$B"/syncpod-api.json ||
		{ log "logs: $B/kubelet/kubelet.log, $d/node.log"; tail -n 20 "$B"/kubelet/kubelet.log "$d"/node.log >&2; return 1; }
	grep 'msg="pod sync timeline"' "$d"/planner.log >"$B"/syncpod-api-timelines.log || true
	stop_procs
	runtime_down
	runtime2_down
	stop_pids "${cp_procs[@]}"
	cp_procs=()
	echo
	"$BIN"/syncpod-bench table "$B"/kubelet-api.json "$B"/syncpod-api.json | tee "$B"/table-kubelet-api.md
}

# k8s_built builds the Kubernetes binaries the phases need (once per
# version), so that the build's load is over before the first phase waits
# for the machine to settle, not left to the phase that first asks for them.
k8s_built() {
	"$ROOT"/mk/k8sbin.sh kube-apiserver kubelet >/dev/null
}

# The scale-nodes mode's functions.
. "$ROOT"/bench/scripts/scale-nodes.sh

mkdir -p "$B"
rm -f "$B"/containerd-*.log
MODE=${1:-}
case $MODE in
syncpod)
	settle "the floor's phase"
	runtime_up
	measure cri "$B"/cri.json --only desired,10,50 --idle 0
	settle "syncpod's phase" # the floor's 50 pods leave a load of 30 or more
	runtime_up # a fresh, identical runtime for syncpod
	run_syncpod "$B"/syncpod.json
	runtime_down
	scale=()
	if [[ ${BENCH_SCALE:-2000} -gt 0 ]]; then
		settle "the many-pods rows"
		run_scale "$B"/scale.json
		scale=("$B"/scale.json)
	fi
	echo
	"$BIN"/syncpod-bench table "$B"/cri.json "$B"/syncpod.json "${scale[@]}" | tee "$B"/table-syncpod.md
	files=$B/cri.json,$B/syncpod.json
	[[ ${#scale[@]} -eq 0 ]] || files+=,${scale[0]}
	document "The raw-CRI floor and syncpod $ON=$files"
	;;
scale)
	run_scale "$B"/scale.json
	echo
	"$BIN"/syncpod-bench table "$B"/scale.json | tee "$B"/table-scale.md
	document "Many pods on crisim=$B/scale.json"
	;;
kubelet)
	k8s_built
	settle "the kubelet's phase"
	runtime_up
	run_kubelet "$B"/kubelet.json
	settle "syncpod's phase"
	runtime_up
	run_syncpod "$B"/syncpod.json
	settle "the floor's phase"
	runtime_up
	measure cri "$B"/cri.json --only desired,10,50 --idle 0
	runtime_down
	settle "the side-by-side phase"
	run_versus "$B"/versus-kubelet.json "$B"/versus-syncpod.json
	echo
	"$BIN"/syncpod-bench table "$B"/kubelet.json "$B"/syncpod.json "$B"/cri.json \
		"$B"/versus-kubelet.json "$B"/versus-syncpod.json | tee "$B"/table-kubelet.md
	bench_api
	document "The kubelet, syncpod and the raw-CRI floor $ON=$B/kubelet.json,$B/syncpod.json,$B/cri.json,$B/versus-kubelet.json,$B/versus-syncpod.json" \
		"The API-server path $ON=$B/kubelet-api.json,$B/syncpod-api.json"
	;;
kubelet-api)
	k8s_built
	bench_api
	document "The API-server path $ON=$B/kubelet-api.json,$B/syncpod-api.json"
	;;
density)
	k8s_built
	bench_density
	;;
versus)
	k8s_built
	run_versus "$B"/versus-kubelet.json "$B"/versus-syncpod.json
	echo
	"$BIN"/syncpod-bench table "$B"/versus-kubelet.json "$B"/versus-syncpod.json | tee "$B"/table-versus.md
	document "The kubelet and syncpod side by side $ON=$B/versus-kubelet.json,$B/versus-syncpod.json"
	;;
scale-nodes)
	bench_scale_nodes
	scale_document
	;;
*)
	echo "usage: $0 syncpod|scale|kubelet|kubelet-api|density|versus|scale-nodes" >&2
	exit 2
	;;
esac
