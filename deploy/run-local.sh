#!/usr/bin/env bash
# run-local.sh <bin dir> — start syncpod on this machine, no root and no
# containerd needed: syncpod-crisim first (process mode: containers are
# plain host processes with NO ISOLATION), then planner, executor and pleg
# wired to its CRI socket, all in the foreground with prefixed logs.
#
# Stopping: SIGINT (Ctrl-C), SIGTERM or SIGHUP — sent to this script, to
# its process group, or (under `make run`) to make — stops everything: the
# services first, crisim last (which kills every container process), waits
# for all of them, removes the socket directory and exits 0 when every
# binary stopped cleanly (1 otherwise). A signal sent to make itself ends
# make the way GNU make always ends on it (by that signal, after its
# recipe has stopped); see SYNCPOD_RUN_PARENT.
#
# Environment:
#   SYNCPOD_RUN_DIR      data dirs, manifests and container logs (default <repo>/.tmp/run)
#   SYNCPOD_RUN_SOCKETS  directory of the planner's, executor's and PLEG's
#                        unix sockets (default the services' own default:
#                        $XDG_RUNTIME_DIR/syncpod, else /run/syncpod for root,
#                        else ${TMPDIR:-/tmp}/syncpod-<uid>), where syncpodctl
#                        looks for them; mode 0660, so only this user (and its
#                        group) may call them
#   SYNCPOD_RUN_METRICS_PLANNER, ..._EXECUTOR, ..._PLEG, ..._CRISIM
#                        metrics addresses (default 127.0.0.1:9101 ... :9104)
#   SYNCPOD_RUN_PARENT   a pid to watch (the Makefile passes make's): when it
#                        exits, or stops catching SIGINT/SIGTERM/SIGHUP
#                        because it received one (GNU make resets its
#                        handler, then waits for its children without
#                        passing SIGINT on), everything is stopped.
#   SYNCPOD_LOG_LEVEL etc. are passed to every binary as usual.
set -euo pipefail

# A background job of a non-interactive shell starts with SIGINT ignored,
# and a shell cannot trap a signal that was ignored at its start: start
# over with the default dispositions, so a script's `kill -INT` works.
if [[ -z ${SYNCPOD_RUN_SIGNALS_RESET:-} ]] && env --default-signal=INT true 2>/dev/null; then
	SYNCPOD_RUN_SIGNALS_RESET=1 exec env --default-signal=INT,TERM,HUP "$0" "$@"
fi
unset SYNCPOD_RUN_SIGNALS_RESET

bin=${1:?usage: run-local.sh <bin dir>}
bin=$(cd "$bin" && pwd)
root=$(cd "$(dirname "$0")/.." && pwd)
run_dir=${SYNCPOD_RUN_DIR:-$root/.tmp/run}
if [[ -n ${SYNCPOD_RUN_SOCKETS:-} ]]; then
	sockets=$SYNCPOD_RUN_SOCKETS
elif [[ -n ${XDG_RUNTIME_DIR:-} ]]; then
	sockets=$XDG_RUNTIME_DIR/syncpod
elif ((EUID == 0)); then
	sockets=/run/syncpod
else
	sockets=${TMPDIR:-/tmp}/syncpod-$EUID
fi
planner_addr=unix://$sockets/planner.sock
executor_addr=unix://$sockets/executor.sock
pleg_addr=unix://$sockets/pleg.sock
declare -A metrics_addr=(
	[planner]=${SYNCPOD_RUN_METRICS_PLANNER:-127.0.0.1:9101}
	[executor]=${SYNCPOD_RUN_METRICS_EXECUTOR:-127.0.0.1:9102}
	[pleg]=${SYNCPOD_RUN_METRICS_PLEG:-127.0.0.1:9103}
	[crisim]=${SYNCPOD_RUN_METRICS_CRISIM:-127.0.0.1:9104}
)
declare -A grpc_addr=([planner]=$planner_addr [executor]=$executor_addr [pleg]=$pleg_addr)
parent=${SYNCPOD_RUN_PARENT:-}
mkdir -p "$run_dir/data/planner" "$run_dir/data/executor" "$run_dir/data/pleg" "$run_dir/data/crisim" "$run_dir/manifests"
run_dir=$(cd "$run_dir" && pwd)
# Unix socket paths are short-limited: keep the socket and log fifos in a
# short temporary directory.
sock_dir=$(mktemp -d "${TMPDIR:-/tmp}/syncpod-run.XXXXXX")
sock=$sock_dir/crisim.sock

crisim_pid=
service_pids=()
prefixer_pids=()
sleep_pid=
# Job control: every background job gets its own process group, so a
# Ctrl-C reaches this script only, the stop happens in order, and a stop
# reaches a binary's children too.
set -m

# caught_fatal PID: the mask of SIGHUP, SIGINT and SIGTERM among the
# signals PID catches (bits 0, 1 and 14 of SigCgt), or nothing.
caught_fatal() {
	local line
	line=$(grep '^SigCgt:' /proc/"$1"/status 2>/dev/null) || return 0
	echo $((0x${line##*[[:space:]]} & 0x4003))
}
parent_caught=
if [[ -n $parent ]]; then
	parent_caught=$(caught_fatal "$parent")
fi

# parent_stopping: the watched parent is gone, or received a stop signal.
parent_stopping() {
	[[ -n $parent ]] || return 1
	kill -0 "$parent" 2>/dev/null || return 0
	[[ -n $parent_caught ]] || return 1
	[[ $(caught_fatal "$parent") != "$parent_caught" ]]
}

# stop_pid PID: SIGTERM to its process group, wait; 0 when it exited 0.
stop_pid() {
	local rc=0
	kill -TERM -- "-$1" 2>/dev/null || true
	wait "$1" 2>/dev/null || rc=$?
	return $rc
}

stopped=0
stop_all() {
	local rc=${1:-0} p
	((stopped)) && return 0
	stopped=1
	trap '' INT TERM HUP
	[[ -n $sleep_pid ]] && kill "$sleep_pid" 2>/dev/null || true
	for p in "${service_pids[@]}"; do kill -TERM -- "-$p" 2>/dev/null || true; done
	for p in "${service_pids[@]}"; do
		wait "$p" 2>/dev/null || { s=$?; ((s == 127)) || rc=1; }
	done
	if [[ -n $crisim_pid ]]; then
		stop_pid "$crisim_pid" || { s=$?; ((s == 127)) || rc=1; }
	fi
	# The prefixers end when the binaries close the fifos; wait for them so
	# the last lines are printed.
	for p in "${prefixer_pids[@]}"; do wait "$p" 2>/dev/null || true; done
	rm -rf "$sock_dir"
	echo "run-local: stopped"
	return $rc
}
trap 'stop_all 1 || true' EXIT
on_signal() {
	echo "run-local: $1: stopping" >&2
	rc=0
	stop_all 0 || rc=$?
	trap - EXIT
	exit $rc
}
trap 'on_signal SIGINT' INT
trap 'on_signal SIGTERM' TERM
trap 'on_signal SIGHUP' HUP

# start <name> <command...>: run in the background, each output line
# prefixed with [name]; sets started_pid.
start() {
	local name=$1
	shift
	local fifo=$sock_dir/$name.log
	mkfifo "$fifo"
	(
		trap '' INT TERM HUP
		while IFS= read -r line || [[ -n $line ]]; do printf '[%s] %s\n' "$name" "$line"; done <"$fifo"
	) &
	prefixer_pids+=($!)
	"$@" >"$fifo" 2>&1 &
	started_pid=$!
}

# pause: sleep a little in a way a signal interrupts at once (a trap runs
# only after a foreground command ends; `wait` returns on a signal).
pause() {
	sleep "$1" &
	sleep_pid=$!
	wait "$sleep_pid" 2>/dev/null || true
	sleep_pid=
}

# crisim keeps its state under the run dir (a restart re-adopts running
# containers); Ctrl-C stops the containers with it (--kill-on-exit).
SYNCPOD_METRICS_LISTEN=${metrics_addr[crisim]} start crisim "$bin/syncpod-crisim" --mode process --listen "unix://$sock" --data-dir "$run_dir/data/crisim" --kill-on-exit
crisim_pid=$started_pid
for _ in $(seq 100); do
	[[ -S $sock ]] && break
	kill -0 "$crisim_pid" 2>/dev/null || { echo "run-local: syncpod-crisim exited before serving" >&2; exit 1; }
	pause 0.1
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
		SYNCPOD_LISTEN=${grpc_addr[$svc]} SYNCPOD_METRICS_LISTEN=${metrics_addr[$svc]} \
		SYNCPOD_EXECUTOR=$executor_addr SYNCPOD_PLEG=$pleg_addr \
		start "$svc" "$bin/syncpod-$svc"
	service_pids+=("$started_pid")
done
echo "run-local: planner, executor and pleg on unix sockets in $sockets (for the README's grpcurl lines: export SOCKETS=$sockets); Ctrl-C stops everything"
echo "run-local: container logs: SYNCPOD_LOG_DIR=$SYNCPOD_LOG_DIR bin/syncpodctl logs POD CONTAINER"

# Exit (and stop the rest) as soon as any binary exits, or the watched
# parent stops. (A polling loop rather than `wait -n`, which macOS's bash
# 3.2 lacks.)
while :; do
	for p in "$crisim_pid" "${service_pids[@]}"; do
		if ! kill -0 "$p" 2>/dev/null; then
			set +e
			wait "$p"
			rc=$?
			echo "run-local: process $p exited (status $rc); stopping the rest" >&2
			((rc)) || rc=1
			exit "$rc"
		fi
	done
	if parent_stopping; then
		on_signal "parent $parent is stopping"
	fi
	pause 0.2
done
