# mk/daemon.sh — sourced by mk/containerd.sh and mk/dockerd.sh: what both
# do the same way with the private daemon they run under DIR. The sourcing
# script sets HARNESS (its name in messages), START_TIMEOUT and
# STOP_TIMEOUT (seconds), defines `answers` (exit 0 when the daemon
# answers on its socket) and cmd_deps, cmd_up and cmd_down, and ends with
# daemon_main. Processes are found by pid, never by name.

log() { echo "$HARNESS: $*" >&2; }
loud() {
	echo "######################################################################" >&2
	echo "## $HARNESS: $*" >&2
	echo "######################################################################" >&2
}

# lock_dir: one up or down at a time per DIR, for as long as the script
# runs (file descriptor 9). The lock file sits beside DIR, since down
# removes DIR.
lock_dir() {
	mkdir -p "$(dirname "$DIR")"
	exec 9>"$DIR.lock"
	flock -w 120 9 || { loud "another up/down holds $DIR.lock for 120s"; exit 1; }
}

# running PID: the process exists and is not a zombie.
running() {
	local stat
	stat=$(cat /proc/"$1"/stat 2>/dev/null) || return 1
	stat=${stat##*) }
	[[ ${stat%% *} != Z ]]
}

# pid_alive PIDFILE COMM: the pid in PIDFILE, when that process runs and
# its command is COMM.
pid_alive() {
	local pid
	[[ -f $1 ]] || return 1
	pid=$(<"$1")
	[[ -n $pid ]] && running "$pid" || return 1
	[[ $(cat /proc/"$pid"/comm 2>/dev/null) == "$2" ]] || return 1
	echo "$pid"
}

# await_start NAME PIDFILE LOG POLL: waits, START_TIMEOUT in all, for the
# daemon just started in the background to write PIDFILE and then to
# answer (polling every POLL seconds), and prints its pid. A daemon that
# exits or stays silent is said loudly, with the tail of LOG, and fails.
await_start() {
	local name=$1 pidfile=$2 logfile=$3 poll=$4 pid
	local deadline=$((SECONDS + START_TIMEOUT))
	until [[ -s $pidfile ]]; do
		((SECONDS < deadline)) || { loud "$name did not start; log: $logfile"; return 1; }
		sleep 0.05
	done
	pid=$(<"$pidfile")
	until answers; do
		if ! running "$pid"; then
			loud "$name exited during start; log: $logfile"
			tail -n 30 "$logfile" >&2 || true
			return 1
		fi
		if ((SECONDS >= deadline)); then
			loud "$name did not answer within ${START_TIMEOUT}s; log: $logfile"
			tail -n 30 "$logfile" >&2 || true
			return 1
		fi
		sleep "$poll"
	done
	echo "$pid"
}

# stop_pid NAME PID: SIGTERM, then SIGKILL when it still runs after
# STOP_TIMEOUT seconds.
stop_pid() {
	local name=$1 pid=$2
	kill -TERM "$pid" 2>/dev/null || true
	local deadline=$((SECONDS + STOP_TIMEOUT))
	while running "$pid" && ((SECONDS < deadline)); do sleep 0.1; done
	if running "$pid"; then
		log "$name pid $pid ignored SIGTERM for ${STOP_TIMEOUT}s: SIGKILL"
		kill -KILL "$pid" 2>/dev/null || true
	fi
}

# The /proc scans below use only bash builtins: a busy test machine runs
# about a thousand processes, and a fork per process made one scan take
# tens of seconds under load.

# proc_stat PID: the fields of /proc/PID/stat after the command name
# (state, ppid, ...) in the array STAT; the name itself in STAT_COMM.
proc_stat() {
	local line
	{ read -r line <"/proc/$1/stat"; } 2>/dev/null || return 1
	STAT_COMM=${line#*(}
	STAT_COMM=${STAT_COMM%)*}
	read -r -a STAT <<<"${line##*) }"
}

# descendants PID...: every process below the given ones.
descendants() {
	local -A kids=()
	local p ppid STAT_COMM
	local -a STAT
	for p in /proc/[0-9]*; do
		proc_stat "${p#/proc/}" || continue
		ppid=${STAT[1]:-}
		[[ -n $ppid ]] && kids[$ppid]+=" ${p#/proc/}"
	done
	local queue=("$@") out=() c
	while ((${#queue[@]})); do
		p=${queue[0]}
		queue=("${queue[@]:1}")
		for c in ${kids[$p]:-}; do
			out+=("$c")
			queue+=("$c")
		done
	done
	echo "${out[@]:-}"
}

# unmount_under DIR: unmounts everything mounted below DIR, deepest first;
# fails, loudly, when mounts remain after a few rounds.
unmount_under() {
	local d=$1 m tries=0
	local -a mounts
	while :; do
		mapfile -t mounts < <(awk -v d="$d/" 'index($2, d) == 1 {print $2}' /proc/mounts | sort -r)
		((${#mounts[@]})) || return 0
		if ((tries++ >= 5)); then
			loud "cannot unmount: ${mounts[*]}; leaving $d in place"
			return 1
		fi
		for m in "${mounts[@]}"; do
			m=$(printf '%b' "${m//\\/\\0}") # /proc/mounts escapes spaces as \040
			umount "$m" 2>/dev/null || umount -l "$m" 2>/dev/null || true
		done
	done
}

# daemon_main SOCKET USAGE ARG...: the command line of a daemon script:
# `deps`, or `up|down|status DIR [ARG...]` with DIR absolute and SOCK set
# to DIR/SOCKET; up and down hold DIR's lock (lock_dir) and get the ARGs.
daemon_main() {
	local sock_name=$1 usage=$2
	shift 2
	local cmd=${1:-}
	shift || true
	case $cmd in
	deps) cmd_deps ;;
	up | down | status)
		DIR=${1:?DIR required}
		shift
		[[ $DIR == /* ]] || { log "DIR must be absolute: $DIR"; exit 2; }
		SOCK=$DIR/$sock_name
		if [[ $cmd == status ]]; then
			answers
			return
		fi
		lock_dir
		"cmd_$cmd" "$@"
		;;
	*)
		echo "usage: $0 $usage" >&2
		exit 2
		;;
	esac
}
