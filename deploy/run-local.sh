#!/usr/bin/env bash
# Starts every syncpod service in the foreground with prefixed logs; Ctrl-C
# (or SIGTERM) stops them all. Usage: deploy/run-local.sh BIN_DIR
set -euo pipefail
bin=${1:?usage: $0 BIN_DIR}
data=${SYNCPOD_RUN_DIR:-$PWD/.tmp/run}
mkdir -p "$data"

pids=()
stop() {
  trap - INT TERM EXIT
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  wait
  exit 0
}
trap stop INT TERM EXIT

run() {
  local name=$1; shift
  SYNCPOD_DATA_DIR="$data/$name" "$bin/syncpod-$name" "$@" > >(sed -u "s/^/[$name] /") 2>&1 &
  pids+=($!)
}

mkdir -p "$data/planner" "$data/executor"
run executor
run pleg
run planner
echo "syncpod: planner 127.0.0.1:7001, executor 127.0.0.1:7002, pleg 127.0.0.1:7003; Ctrl-C stops all" >&2
wait
