# bench/scripts/scale-nodes.sh — sourced by bench.sh for its scale-nodes
# mode (make bench-scale): many nodes under one control plane, upstream's
# hollow kubelet (kubemark) against syncpod nodes on crisim in simulated
# mode, one side after the other, each loaded by `syncpod-bench
# scale-nodes`.
#
#   BENCH_SCALE_NODES   node counts a side, run in turn (default "50")
#   BENCH_SCALE_PODS    pods a node (default 30: upstream's load test)
#   BENCH_SCALE_RATE    pods created, then deleted, a second (default 20)
#   BENCH_SCALE_IDLE    the idle window (default 60s)
#   BENCH_SCALE_SIDES   the sides, in order (default "kubemark syncpod")
#   BENCH_SCALE_TIMEOUT bound on the nodes turning Ready and on each wait for
#                       the pods (default 10m)
#   BENCH_SCALE_PROFILE_PORT where the one syncpod-all process of the default
#                       layout serves Go's pprof profiles on loopback (default
#                       19651): the driver profiles it under load, and
#                       http://127.0.0.1:PORT/debug/pprof/ serves the rest
#   BENCH_SCALE_SYNCPOD how the syncpod nodes are laid out in processes: all
#                       (default: every node in one syncpod-all process),
#                       node (one syncpod-all process a node) or services
#                       (each service its own binary: five processes a node)
#
# The control plane (apiserver_up) gets its own ports, the Node authorizer
# and NodeRestriction, one token a node (user system:node:NAME, group
# system:nodes) and an audit policy logging every request's metadata when
# it is received and when it is answered (the code) to $API/audit.log,
# which the driver counts by user.
# A hollow kubelet writes its root directory and its fake runtime's socket
# under /tmp: each runs in a private mount namespace with its own
# directory bound over /tmp, gone with it. Its kubeconfig is in that
# directory, read as /tmp/kubeconfig, and carries the CA itself: a clone
# under /tmp is hidden there. Its kubelet server listens on
# every address (kubemark has no flag for it) on a port of its own.

SCALE=$B/scale-nodes
HOLLOW_PORT=${BENCH_SCALE_PORT_BASE:-27100} # kubemark's kubelet ports: 2 a node from here
# Where syncpod-all serves Go's pprof profiles when every syncpod node runs
# in it (node 0's planner's metrics address, --profiling): the driver
# profiles that process under load and the report says where its CPU went.
PROFILE_PORT=${BENCH_SCALE_PROFILE_PORT:-19651}
SCALE_PROFILE=
declare -A NODE_TOKENS=()

# scale_tokens COUNT: a token for each node of both sides, for the token file.
scale_tokens() {
	local i n side
	API_EXTRA_TOKENS=""
	for side in kubemark syncpod; do
		for ((i = 0; i < $1; i++)); do
			n=$side-$i
			NODE_TOKENS[$n]=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
			API_EXTRA_TOKENS+="${NODE_TOKENS[$n]},system:node:$n,node-$n,system:nodes"$'\n'
		done
	done
}

# scale_apiserver_up COUNT: the control plane of the run, tokens for COUNT
# nodes a side, auditing.
scale_apiserver_up() {
	API=$SCALE/api
	API_PORT=${BENCH_SCALE_API_PORT:-19643}
	ETCD_PORT=${BENCH_SCALE_ETCD_PORT:-19679}
	API_AUTHZ=Node,RBAC
	mkdir -p "$SCALE"
	cat >"$SCALE"/audit-policy.yaml <<-YAML
		apiVersion: audit.k8s.io/v1
		kind: Policy
		omitStages: [ResponseStarted]
		rules:
		- level: Metadata
	YAML
	API_EXTRA_ARGS=(--enable-admission-plugins=NodeRestriction
		--audit-policy-file="$SCALE"/audit-policy.yaml --audit-log-path="$SCALE"/audit.log
		--audit-log-format=json --audit-log-mode=blocking --audit-log-maxsize=0)
	scale_tokens "$1"
	rm -f "$SCALE"/audit.log
	apiserver_up
}

# node_kubeconfig NODE FILE: a kubeconfig of the control plane with the node's token.
node_kubeconfig() {
	cat >"$2" <<-YAML
		apiVersion: v1
		kind: Config
		clusters:
		- name: bench
		  cluster: {server: "https://127.0.0.1:$API_PORT", certificate-authority-data: "$(base64 -w0 "$API"/pki/ca.crt)"}
		users:
		- name: $1
		  user: {token: "${NODE_TOKENS[$1]}"}
		contexts:
		- name: bench
		  context: {cluster: bench, user: $1}
		current-context: bench
	YAML
	chmod 600 "$2"
}

SCALE_VERSION=""
NODES_STARTED=""
SCALE_FILES=()

# start_kubemark COUNT NODESFILE: COUNT hollow kubelets, one process each.
start_kubemark() {
	local bin i n d
	bin=$("$ROOT"/mk/k8sbin.sh kubemark)
	SCALE_VERSION="kubemark $("$bin"/kubemark --version 2>/dev/null | awk '{print $2}')"
	: >"$2"
	NODES_STARTED=$(date +%s.%N)
	for ((i = 0; i < $1; i++)); do
		n=kubemark-$i d=$SCALE/kubemark/$n
		rm -rf "$d"
		mkdir -p "$d"/tmp
		node_kubeconfig "$n" "$d"/tmp/kubeconfig
		unshare --mount --propagation private sh -c 'mount --bind "$1" /tmp && shift && exec "$@"' sh "$d"/tmp \
			"$bin"/kubemark --morph=kubelet --name="$n" --kubeconfig=/tmp/kubeconfig \
			--kubelet-port=$((HOLLOW_PORT + 2 * i)) --kubelet-read-only-port=$((HOLLOW_PORT + 2 * i + 1)) \
			--use-host-image-service=false --node-labels=syncpod.io/scale-side=kubemark >"$d"/kubemark.log 2>&1 &
		procs+=($!)
		echo "$n kubemark=$!" >>"$2"
	done
}

# syncpod_node_services I: node syncpod-I's five services, one a line, as
# syncpod-all --file reads them (SERVICE:NAME FLAG...), its directory made.
syncpod_node_services() {
	local n=syncpod-$1 d=$SCALE/syncpod/syncpod-$1
	rm -rf "$d"
	mkdir -p "$d"/logs
	node_kubeconfig "$n" "$d"/kubeconfig
	cat <<-EOF
		crisim:$n/crisim --listen unix://$d/crisim.sock --metrics-listen= --mode simulated
		executor:$n/executor --listen unix://$d/executor.sock --metrics-listen= --cri-endpoint unix://$d/crisim.sock --data-dir $d/executor --log-dir $d/logs --cgroups-per-qos=false
		pleg:$n/pleg --listen unix://$d/pleg.sock --metrics-listen= --cri-endpoint unix://$d/crisim.sock
		planner:$n/planner --listen unix://$d/planner.sock $(profiling_flags "$1") --executor unix://$d/executor.sock --pleg unix://$d/pleg.sock --data-dir $d/planner --eviction-hard nodefs.available<1%,nodefs.inodesFree<1%,imagefs.available<1%,imagefs.inodesFree<1%
		node:$n/node --kubeconfig $d/kubeconfig --node-name $n --listen unix://$d/node.sock --metrics-listen= --planner unix://$d/planner.sock --cri-endpoint unix://$d/crisim.sock --node-ip 127.0.0.1 --root-dir $d --node-labels syncpod.io/scale-side=syncpod
	EOF
}

# profiling_flags I: node I's planner's metrics flags: node 0's serves the
# profiles on loopback when the nodes share one process (the profile is
# the process's, whichever service serves it), the others none.
profiling_flags() {
	if [[ $1 == 0 && ${BENCH_SCALE_SYNCPOD:-all} == all ]]; then
		echo "--metrics-listen=127.0.0.1:$PROFILE_PORT --profiling"
	else
		echo "--metrics-listen="
	fi
}

# start_syncpod_nodes COUNT NODESFILE: COUNT syncpod nodes, each its own
# crisim (simulated), executor, PLEG, planner and syncpod-node, in the
# processes BENCH_SCALE_SYNCPOD says.
start_syncpod_nodes() {
	local i pid
	SCALE_VERSION="syncpod ${VERSIONS[syncpod]}"
	mkdir -p "$SCALE"/syncpod
	: >"$2"
	case ${BENCH_SCALE_SYNCPOD:-all} in
	all)
		for ((i = 0; i < $1; i++)); do syncpod_node_services "$i"; done >"$SCALE"/syncpod/all.services
		NODES_STARTED=$(date +%s.%N)
		"$BIN"/syncpod-all --log-dir "$SCALE"/syncpod --file "$SCALE"/syncpod/all.services >"$SCALE"/syncpod/all.log 2>&1 &
		procs+=($!) pid=$!
		for ((i = 0; i < $1; i++)); do echo "syncpod-$i syncpod-all=$pid" >>"$2"; done
		SCALE_PROFILE=http://127.0.0.1:$PROFILE_PORT/debug/pprof/profile
		;;
	node)
		for ((i = 0; i < $1; i++)); do syncpod_node_services "$i" >"$SCALE"/syncpod/syncpod-$i.services; done
		NODES_STARTED=$(date +%s.%N)
		for ((i = 0; i < $1; i++)); do
			"$BIN"/syncpod-all --log-dir "$SCALE"/syncpod --file "$SCALE"/syncpod/syncpod-$i.services \
				>"$SCALE"/syncpod/syncpod-$i/all.log 2>&1 &
			procs+=($!)
			echo "syncpod-$i syncpod-all=$!" >>"$2"
		done
		;;
	services) start_syncpod_services "$1" "$2" ;;
	*)
		log "BENCH_SCALE_SYNCPOD: ${BENCH_SCALE_SYNCPOD} is not all, node or services"
		return 2
		;;
	esac
}

# start_syncpod_services COUNT NODESFILE: each service of each node its own
# binary, each started for every node before the next kind.
start_syncpod_services() {
	local i n d
	local -a crisim executor pleg planner agent
	NODES_STARTED=$(date +%s.%N)
	for ((i = 0; i < $1; i++)); do
		n=syncpod-$i d=$SCALE/syncpod/$n
		syncpod_node_services "$i" >/dev/null
		"$BIN"/syncpod-crisim --listen "unix://$d/crisim.sock" --metrics-listen "" --mode simulated >"$d"/crisim.log 2>&1 &
		procs+=($!) crisim+=($!)
	done
	for ((i = 0; i < $1; i++)); do
		d=$SCALE/syncpod/syncpod-$i
		wait_socket "$d"/crisim.sock "${crisim[i]}" crisim "$d"/crisim.log
		"$BIN"/syncpod-executor --listen "unix://$d/executor.sock" --metrics-listen "" \
			--cri-endpoint "unix://$d/crisim.sock" --data-dir "$d"/executor --log-dir "$d"/logs --cgroups-per-qos=false \
			>"$d"/executor.log 2>&1 &
		procs+=($!) executor+=($!)
		"$BIN"/syncpod-pleg --listen "unix://$d/pleg.sock" --metrics-listen "" \
			--cri-endpoint "unix://$d/crisim.sock" >"$d"/pleg.log 2>&1 &
		procs+=($!) pleg+=($!)
	done
	for ((i = 0; i < $1; i++)); do
		d=$SCALE/syncpod/syncpod-$i
		wait_socket "$d"/executor.sock "${executor[i]}" executor "$d"/executor.log
		wait_socket "$d"/pleg.sock "${pleg[i]}" pleg "$d"/pleg.log
		"$BIN"/syncpod-planner --listen "unix://$d/planner.sock" --metrics-listen "" \
			--executor "unix://$d/executor.sock" --pleg "unix://$d/pleg.sock" --data-dir "$d"/planner \
			--eviction-hard "nodefs.available<1%,nodefs.inodesFree<1%,imagefs.available<1%,imagefs.inodesFree<1%" \
			>"$d"/planner.log 2>&1 &
		procs+=($!) planner+=($!)
	done
	for ((i = 0; i < $1; i++)); do
		n=syncpod-$i d=$SCALE/syncpod/$n
		wait_socket "$d"/planner.sock "${planner[i]}" planner "$d"/planner.log
		"$BIN"/syncpod-node --kubeconfig "$d"/kubeconfig --node-name "$n" --listen "unix://$d/node.sock" --metrics-listen "" \
			--planner "unix://$d/planner.sock" --cri-endpoint "unix://$d/crisim.sock" --node-ip 127.0.0.1 \
			--root-dir "$d" --node-labels syncpod.io/scale-side=syncpod >"$d"/node.log 2>&1 &
		procs+=($!) agent+=($!)
		echo "$n crisim=${crisim[i]} executor=${executor[i]} pleg=${pleg[i]} planner=${planner[i]} node=${agent[i]}" >>"$2"
	done
}

# stop_children PID...: SIGTERM to each of them that is still this
# shell's child (a pid already reaped and taken by another program is left
# alone: with hundreds of processes started, reuse is likely), up to 15 s
# for all to end, then SIGKILL to those left; reaps them.
stop_children() {
	local p left deadline=$((SECONDS + 15))
	for p in "$@"; do mine "$p" && kill -TERM "$p" 2>/dev/null; done
	while ((SECONDS < deadline)); do
		left=0
		for p in "$@"; do
			if mine "$p" && [[ $(cut -d' ' -f3 "/proc/$p/stat" 2>/dev/null) != Z ]]; then
				left=1
				break
			fi
		done
		((left)) || break
		sleep 0.2
	done
	for p in "$@"; do mine "$p" && kill -KILL "$p" 2>/dev/null; done
	for p in "$@"; do wait "$p" 2>/dev/null || true; done
}

# mine PID: the process is this shell's child (its command has no space,
# so the fourth field of its stat is its parent).
mine() {
	[[ $(cut -d' ' -f4 "/proc/$1/stat" 2>/dev/null) == "$$" ]]
}

# The hollow kubelet makes the kubelet's iptables utility chains in the
# host's tables (its configuration leaves makeIPTablesUtilChains at the
# default and kubemark has no flag for it; it shares the host's network to
# reach the API server on loopback). KUBELET_CHAINS are those chains;
# kubelet_chains_present lists the ones there now (FAMILY:TABLE:CHAIN),
# and remove_new_kubelet_chains removes those that were not there before
# the kubemark side started (KUBELET_CHAINS_BEFORE, set then), the rules
# jumping to them first, once its processes are gone.
KUBELET_CHAINS="filter:KUBE-FIREWALL filter:KUBE-KUBELET-CANARY nat:KUBE-KUBELET-CANARY mangle:KUBE-KUBELET-CANARY mangle:KUBE-IPTABLES-HINT"
KUBELET_CHAINS_BEFORE=
kubelet_chains_present() {
	local ipt tc
	for ipt in iptables ip6tables; do
		command -v "$ipt" >/dev/null || continue
		for tc in $KUBELET_CHAINS; do
			"$ipt" -w -t "${tc%%:*}" -S "${tc#*:}" >/dev/null 2>&1 && echo "$ipt:$tc"
		done
	done
	return 0
}
remove_new_kubelet_chains() {
	[[ -n $KUBELET_CHAINS_BEFORE ]] || return 0
	local c ipt rest t chain rule new=()
	for c in $(kubelet_chains_present); do
		[[ " $KUBELET_CHAINS_BEFORE " == *" $c "* ]] || new+=("$c")
	done
	for c in "${new[@]}"; do
		ipt=${c%%:*} rest=${c#*:} t=${rest%%:*} chain=${rest#*:}
		while read -r rule; do
			eval "$ipt -w -t $t ${rule/#-A/-D}" || log "could not delete $ipt -t $t: $rule"
		done < <("$ipt" -w -t "$t" -S | awk -v c="$chain" '$1 == "-A" { for (i = 1; i < NF; i++) if ($i == "-j" && $(i + 1) == c) { print; break } }')
		"$ipt" -w -t "$t" -F "$chain"
	done
	for c in "${new[@]}"; do
		ipt=${c%%:*} rest=${c#*:} t=${rest%%:*} chain=${rest#*:}
		"$ipt" -w -t "$t" -X "$chain" || log "could not delete the chain $chain of $ipt -t $t"
	done
	KUBELET_CHAINS_BEFORE=
}

# delete_side_nodes SIDE: the side's Node objects, once its processes are gone.
delete_side_nodes() {
	curl -sf -o /dev/null --cacert "$API"/pki/ca.crt -H "Authorization: Bearer $API_TOKEN" -X DELETE \
		"https://127.0.0.1:$API_PORT/api/v1/nodes?labelSelector=syncpod.io%2Fscale-side%3D$1" ||
		log "could not delete the $1 nodes"
}

# run_scale_side SIDE COUNT OUT
run_scale_side() {
	local side=$1 count=$2 nodes=$SCALE/$1-$2.nodes profile=()
	SCALE_PROFILE=
	case $side in
	kubemark)
		KUBELET_CHAINS_BEFORE="none $(kubelet_chains_present | tr '\n' ' ')"
		start_kubemark "$count" "$nodes"
		;;
	syncpod) start_syncpod_nodes "$count" "$nodes" ;;
	*) log "BENCH_SCALE_SIDES: $side is not kubemark or syncpod"; return 2 ;;
	esac
	log "$side: $count nodes started; loading them"
	[[ -z $SCALE_PROFILE ]] || profile=(--profile "$SCALE_PROFILE" --profile-out "$SCALE/$side-$count.pprof")
	local rc=0
	"$BIN"/syncpod-bench scale-nodes --server https://127.0.0.1:$API_PORT --ca "$API"/pki/ca.crt --token "$API_TOKEN" \
		--nodes "$nodes" --side "$side" --version "$SCALE_VERSION" --nodes-started "$NODES_STARTED" \
		--pods-per-node "${BENCH_SCALE_PODS:-30}" --rate "${BENCH_SCALE_RATE:-20}" --idle "${BENCH_SCALE_IDLE:-60s}" \
		--timeout "${BENCH_SCALE_TIMEOUT:-10m}" --audit-log "$SCALE"/audit.log "${profile[@]}" --out "$3" || rc=$?
	stop_children "${procs[@]}"
	procs=()
	remove_new_kubelet_chains
	log "$side: nodes stopped"
	delete_side_nodes "$side"
	return $rc
}

bench_scale_nodes() {
	local counts=${BENCH_SCALE_NODES:-50} sides=${BENCH_SCALE_SIDES:-kubemark syncpod} max=0 c side files=()
	for c in $counts; do ((c > max)) && max=$c; done
	"$ROOT"/mk/k8sbin.sh kube-apiserver kubemark >/dev/null
	scale_apiserver_up "$max"
	for c in $counts; do
		for side in $sides; do
			settle "$side with $c nodes"
			run_scale_side "$side" "$c" "$SCALE/$side-$c.json" || log "$side with $c nodes failed (its report keeps what it measured)"
			[[ -f $SCALE/$side-$c.json ]] && files+=("$SCALE/$side-$c.json")
		done
	done
	stop_pids "${cp_procs[@]}"
	cp_procs=()
	log "control plane stopped"
	echo
	"$BIN"/syncpod-bench scale-table "${files[@]}" | tee "$SCALE"/table.md
	SCALE_FILES=("${files[@]}")
}

# scale_document: the run's section put into docs/benchmarks.md in place
# of the last one (syncpod-bench report-scale); the other targets'
# sections and plots stay.
scale_document() {
	local args=() n
	for n in $(printf '%s\n' "${!VERSIONS[@]}" | sort); do args+=(--component "$n=${VERSIONS[$n]}"); done
	"$BIN"/syncpod-bench report-scale --doc "$ROOT"/docs/benchmarks.md --command "${BENCH_COMMAND:-bench/scripts/bench.sh $MODE}" \
		"${args[@]}" "${SCALE_FILES[@]}"
	log "the Scale section: $ROOT/docs/benchmarks.md"
}
