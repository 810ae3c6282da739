#!/usr/bin/env bash
# run-local.sh <bin dir> — start syncpod on this machine, no root and no
# containerd needed: syncpod-crisim first (process mode: containers are
# plain host processes with NO ISOLATION), then planner, executor and pleg
# wired to its CRI socket, all in the foreground with prefixed logs.
# Ctrl-C or SIGTERM stops everything (the services first, crisim last,
# which kills every container process) and waits for all of them.
#
# Environment: SYNCPOD_RUN_DIR (default <repo>/.tmp/run) holds the data
# dirs; SYNCPOD_LOG_LEVEL is passed to every binary as usual.
set -euo pipefail

bin=${1:?usage: run-local.sh <bin dir>}
bin=$(cd "$bin" && pwd)
root=$(cd "$(dirname "$0")/.." && pwd)
run_dir=${SYNCPOD_RUN_DIR:-$root/.tmp/run}
mkdir -p "$run_dir/data/planner" "$run_dir/data/executor" "$run_dir/data/pleg" "$run_dir/data/crisim" "$run_dir/manifests"
run_dir=$(cd "$run_dir" && pwd)
# Unix socket paths are short-limited: keep the socket and log fifos in a
# short temporary directory.
sock_dir=$(mktemp -d "${TMPDIR:-/tmp}/syncpod-run.XXXXXX")
sock=$sock_dir/crisim.sock

crisim_pid=
service_pids=()
prefixer_pids=()
# Job control: every background job gets its own process group, so a stop
# reaches a binary's children too.
set -m

stop_all() {
	trap - INT TERM EXIT
	if ((${#service_pids[@]})); then
		for p in "${service_pids[@]}"; do kill -TERM -- "-$p" 2>/dev/null || true; done
		for p in "${service_pids[@]}"; do wait "$p" 2>/dev/null || true; done
	fi
	if [[ -n $crisim_pid ]]; then
		kill -TERM -- "-$crisim_pid" 2>/dev/null || true
		wait "$crisim_pid" 2>/dev/null || true
	fi
	if ((${#prefixer_pids[@]})); then
		kill "${prefixer_pids[@]}" 2>/dev/null || true
	fi
	wait 2>/dev/null || true
	rm -rf "$sock_dir"
	echo "run-local: stopped"
}
trap stop_all EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# start <name> <command...>: run in the background, each output line
# prefixed with [name]; sets started_pid.
start() {
	local name=$1
	shift
	local fifo=$sock_dir/$name.log
	mkfifo "$fifo"
	(while IFS= read -r line || [[ -n $line ]]; do printf '[%s] %s\n' "$name" "$line"; done <"$fifo") &
	prefixer_pids+=($!)
	"$@" >"$fifo" 2>&1 &
	started_pid=$!
}

# crisim keeps its state under the run dir (a restart re-adopts running
# containers); Ctrl-C stops the containers with it (--kill-on-exit).
start crisim "$bin/syncpod-crisim" --mode process --listen "unix://$sock" --data-dir "$run_dir/data/crisim" --kill-on-exit
crisim_pid=$started_pid
for _ in $(seq 100); do
	[[ -S $sock ]] && break
	kill -0 "$crisim_pid" 2>/dev/null || { echo "run-local: syncpod-crisim exited before serving" >&2; exit 1; }
	sleep 0.1
done
[[ -S $sock ]] || { echo "run-local: no CRI socket at $sock after 10s" >&2; exit 1; }
echo "run-local: CRI endpoint unix://$sock; data under $run_dir"

export SYNCPOD_CRI_ENDPOINT="unix://$sock"
# Container logs stay under the run dir, so no root is needed; syncpodctl
# logs reads the same variable.
export SYNCPOD_LOG_DIR="$run_dir/logs"
mkdir -p "$SYNCPOD_LOG_DIR"
for svc in pleg executor planner; do
	SYNCPOD_DATA_DIR="$run_dir/data/$svc" SYNCPOD_MANIFEST_DIR="$run_dir/manifests" \
		start "$svc" "$bin/syncpod-$svc"
	service_pids+=("$started_pid")
done
echo "run-local: planner 127.0.0.1:7001, executor 127.0.0.1:7002, pleg 127.0.0.1:7003; Ctrl-C stops everything"
echo "run-local: container logs: SYNCPOD_LOG_DIR=$SYNCPOD_LOG_DIR bin/syncpodctl logs POD CONTAINER"

# Exit (and stop the rest) as soon as any binary exits. (A polling loop
# rather than `wait -n`, which macOS's bash 3.2 lacks.)
while :; do
	for p in "$crisim_pid" "${service_pids[@]}"; do
		if ! kill -0 "$p" 2>/dev/null; then
			set +e
			wait "$p"
			rc=$?
			echo "run-local: process $p exited (status $rc); stopping the rest" >&2
			exit "$rc"
		fi
	done
	sleep 1
done
