#!/usr/bin/env bash
# mk/conformance.sh — the upstream Kubernetes [sig-node] [Conformance] specs
# (the e2e suite of the release mk/k8sbin.sh pins) against a one-node
# cluster, the node being syncpod (planner, executor, PLEG, syncpod-node)
# or, with CONFORMANCE_NODE=kubelet, the kubelet of the same release.
#
#   mk/conformance.sh all      up, run, down (what `make conformance` does)
#   mk/conformance.sh up       the cluster, left running
#   mk/conformance.sh run      the specs against a cluster that is up
#   mk/conformance.sh down     stop everything up started, remove the namespace
#   mk/conformance.sh status   what runs
#   mk/conformance.sh check-images  start each test image in the cluster's
#                              containerd and check what the specs rely on
#   mk/conformance.sh exec CMD...  CMD inside the cluster's namespaces
#
# The whole cluster lives in one private network namespace and one private
# mount namespace, held by a long-lived process: etcd, kube-apiserver
# (Node,RBAC authorization, NodeRestriction), kube-controller-manager,
# kube-scheduler, containerd with a CNI bridge and host-local IPAM (no
# masquerade, no port mapping: no iptables rule anywhere), the node, the
# pods and the suite, and a registry on 127.0.0.1:5000 serving the test
# images (syncpod-bench registry, read-only, plain HTTP) for the specs
# that pull them although they are imported (pull policy Always). /run,
# /var/lib/kubelet, /var/log and the sysctls the kubelet rewrites are
# private to the mount namespace. Nothing is reachable from outside; the
# host keeps its network, mounts and sysctls; every process is stopped by
# its pid.
#
# Knobs (environment):
#   CONFORMANCE_NODE     syncpod (default) or kubelet
#   CONFORMANCE_RUNTIME  containerd2 (2.4, default) or containerd (Debian's 1.6)
#   CONFORMANCE_FOCUS    ginkgo focus (default \[sig-node\].*\[Conformance\])
#   CONFORMANCE_FEATURE_FOCUS  specs beyond the focus, added to it with |
#                        (make conformance CONFORMANCE_FEATURES=1 sets it)
#   CONFORMANCE_SKIP     skip of the parallel pass (default \[Serial\]|\[Disruptive\])
#   CONFORMANCE_SERIAL   run the serial pass (the specs the parallel pass
#                        skips, alone) too: 1 (default) or 0
#   CONFORMANCE_SERIAL_FOCUS  its focus (default: [sig-node] ... [Conformance]
#                        specs tagged [Serial] or [Disruptive], either order)
#   CONFORMANCE_PROCS    ginkgo processes of the parallel pass (default 3)
#   CONFORMANCE_STRICT   1: exit 1 when a spec failed (default 0: the
#                        verdicts are in the reports, the run succeeds)
#   CONFORMANCE_DIR      state, logs and reports (default .tmp/conformance)
#   CONFORMANCE_IMAGES   the test images' directory (make sets it to a cache
#                        outside the clone; default .tmp/conformance-images)
# Reports: DIR/reports/NODE/{parallel,serial}.json (ginkgo's JSON report).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
# The static build's tags, as the Makefile reads them.
STATIC_TAGS=$(sed 's/#.*//' "$ROOT"/mk/static-tags | xargs | tr ' ' ',')
NODE_KIND=${CONFORMANCE_NODE:-syncpod}
RUNTIME=${CONFORMANCE_RUNTIME:-containerd2}
D=${CONFORMANCE_DIR:-$ROOT/.tmp/conformance}
IMAGES=${CONFORMANCE_IMAGES:-$ROOT/.tmp/conformance-images}
FOCUS=${CONFORMANCE_FOCUS:-'\[sig-node\].*\[Conformance\]'}
if [[ -n ${CONFORMANCE_FEATURE_FOCUS:-} ]]; then FOCUS="$FOCUS|$CONFORMANCE_FEATURE_FOCUS"; fi
SKIP=${CONFORMANCE_SKIP:-'\[Serial\]|\[Disruptive\]'}
SERIAL_FOCUS=${CONFORMANCE_SERIAL_FOCUS:-'\[sig-node\].*(\[Serial\]|\[Disruptive\]).*\[Conformance\]|\[sig-node\].*\[Conformance\].*(\[Serial\]|\[Disruptive\])'}
PROCS=${CONFORMANCE_PROCS:-3}
GO=${GO:-go}
NODE_NAME=conformance-node
NODE_IP=10.99.0.1
POD_SUBNET=10.244.0.0/24
API=https://127.0.0.1:6443
PAUSE=localhost:5000/k8s/pause:3.10.2
REGISTRY=localhost:5000
REGISTRY_LISTEN=127.0.0.1:5000
PIDS=$D/pids

# The sysctls the kubelet writes when it starts, which the run keeps to
# copies of its own (namespace_up).
SYSCTL_COPIES=(vm/overcommit_memory kernel/panic kernel/panic_on_oops)

log() { echo "conformance: $*" >&2; }
die() { log "$*"; exit 1; }

[[ $(id -u) -eq 0 ]] || die "needs root (a network namespace, mounts, containerd)"

holder() { [[ -s $PIDS/holder ]] && alive "$(<"$PIDS"/holder)" && cat "$PIDS"/holder; }
# nsx CMD...: CMD in the cluster's network and mount namespaces.
nsx() {
	local h
	h=$(holder) || die "the cluster's namespace is not up (mk/conformance.sh up)"
	nsenter -t "$h" -m -n -- "$@"
}

# bg NAME CMD...: CMD in the namespaces, in the background, logging to
# DIR/logs/NAME.log; its pid (the command's own, nsenter execs it) in
# DIR/pids/NAME.
bg() {
	local name=$1 h
	shift
	h=$(holder) || die "the cluster's namespace is not up"
	nsenter -t "$h" -m -n -- "$@" >"$D/logs/$name.log" 2>&1 &
	echo $! >"$PIDS/$name"
}

# alive PID: the process runs (a zombie, exited but not yet reaped by this
# shell, does not).
alive() {
	local st
	st=$(cut -d' ' -f3 "/proc/$1/stat" 2>/dev/null) || return 1
	[[ -n $st && $st != Z ]]
}

# stop NAME...: SIGTERM, SIGKILL after 20 s, by the pids bg kept.
stop() {
	local n p
	for n in "$@"; do
		[[ -s $PIDS/$n ]] || continue
		p=$(<"$PIDS/$n")
		kill -TERM "$p" 2>/dev/null || true
	done
	for n in "$@"; do
		[[ -s $PIDS/$n ]] || continue
		p=$(<"$PIDS/$n")
		for _ in $(seq 200); do alive "$p" || break; sleep 0.1; done
		if alive "$p"; then
			log "$n (pid $p) still runs 20 s after SIGTERM: SIGKILL"
			kill -KILL "$p" 2>/dev/null || true
		fi
		rm -f "$PIDS/$n"
	done
}

# wait_for WHAT NAME SECONDS CMD...: until CMD succeeds in the namespaces,
# failing when process NAME exits.
wait_for() {
	local what=$1 name=$2 secs=$3
	shift 3
	for _ in $(seq $((secs * 5))); do
		nsx "$@" >/dev/null 2>&1 && return 0
		if [[ -n $name ]] && ! alive "$(<"$PIDS/$name")"; then
			log "$name exited; the end of $D/logs/$name.log:"
			tail -n 30 "$D/logs/$name.log" >&2
			return 1
		fi
		sleep 0.2
	done
	log "$what: not ready after $secs s"
	return 1
}

kbin() { "$ROOT"/mk/k8sbin.sh "$@"; }

# --- up ---------------------------------------------------------------------

namespace_up() {
	mkdir -p "$D"/{logs,pids} "$D"/sysctl
	# The holder: a process in a new network namespace, unnamed (nothing
	# under /run/netns), with a mount namespace of its own whose mounts
	# never reach the host. Both end when it does.
	unshare --net --mount --propagation slave sleep infinity </dev/null >/dev/null 2>&1 &
	echo $! >"$PIDS"/holder
	sleep 0.2
	local f
	# The kubelet rewrites these at start: copies are mounted over them.
	for f in "${SYSCTL_COPIES[@]}"; do
		cat /proc/sys/$f >"$D/sysctl/${f##*/}"
		nsx mount --bind "$D/sysctl/${f##*/}" /proc/sys/$f
	done
	nsx mount -t tmpfs -o mode=0755 conformance-run /run
	nsx mount -t tmpfs -o mode=0755 conformance-var-log /var/log
	# /var/lib: the kubelet's /var/lib/kubelet, CNI's result cache.
	nsx mount -t tmpfs -o mode=0755 conformance-var-lib /var/lib
	nsx ip link set lo up
	nsx ip link add cnode0 type veth peer name cnode1
	nsx ip addr add "$NODE_IP"/24 dev cnode0
	nsx ip link set cnode0 up
	nsx ip link set cnode1 up
	log "namespaces up (holder pid $(<"$PIDS"/holder)), node IP $NODE_IP"
}

runtime_up() {
	local tars=() t
	[[ -s $IMAGES/images.list ]] || "$ROOT"/mk/conformance-images.sh "$IMAGES"
	while read -r t; do tars+=("$t"); done <"$IMAGES"/images.list
	cat >"$D"/bridge.conflist <<-EOF
		{"cniVersion": "0.4.0", "name": "conformance", "plugins": [
		  {"type": "bridge", "bridge": "cbr0", "isGateway": true, "ipMasq": false, "hairpinMode": true,
		   "ipam": {"type": "host-local", "dataDir": "$D/cni-ipam", "ranges": [[{"subnet": "$POD_SUBNET"}]], "routes": [{"dst": "0.0.0.0/0"}]}},
		  {"type": "loopback"}]}
	EOF
	local env=(SYNCPOD_CONTAINERD_CNI_CONFLIST="$D"/bridge.conflist)
	if [[ $RUNTIME == containerd2 ]]; then
		env+=(SYNCPOD_CONTAINERD_BIN="$("$ROOT"/mk/containerdbin.sh)")
		# The user-namespace feature specs need a runc with idmapped
		# mounts (Debian's 1.1 has none): the one mk/runcbin.sh builds
		# runs every pod of a feature run, on either node.
		if [[ -n ${CONFORMANCE_FEATURE_FOCUS:-} ]]; then
			env+=(SYNCPOD_CONTAINERD_RUNC="$("$ROOT"/mk/runcbin.sh)")
		fi
	fi
	nsx env "${env[@]}" "$ROOT"/mk/containerd.sh up "$D"/containerd "$PAUSE" "$PAUSE" "${tars[@]}"
}

control_plane_up() {
	local bin etcd
	bin=$(kbin kube-apiserver kube-controller-manager kube-scheduler kubectl)
	etcd=$(command -v etcd) || { "$ROOT"/mk/etcd-deps.sh; etcd=$(command -v etcd); }
	mkdir -p "$D"/etcd "$D"/bin
	# Static, as `make build` builds (its tags too): the packages the set-up compiled for
	# `make run` are reused, not compiled a third time (cgo on) beside the
	# tests' -race build.
	(cd "$ROOT"/bench && CGO_ENABLED=0 nice -n 19 $GO build -trimpath -tags "$STATIC_TAGS" -o "$D"/bin/syncpod-bench ./cmd/syncpod-bench)
	"$D"/bin/syncpod-bench pki "$D"/pki "$NODE_NAME" "$NODE_IP"
	local token
	token=$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')
	echo "$token,conformance-admin,conformance-admin,system:masters" >"$D"/pki/tokens.csv
	bg etcd "$etcd" --name=default --data-dir="$D"/etcd \
		--listen-client-urls=http://127.0.0.1:2379 --advertise-client-urls=http://127.0.0.1:2379 \
		--listen-peer-urls=http://127.0.0.1:2380 --initial-advertise-peer-urls=http://127.0.0.1:2380 \
		--initial-cluster=default=http://127.0.0.1:2380 --log-level=warn
	wait_for etcd etcd 60 curl -sf http://127.0.0.1:2379/health
	bg kube-apiserver "$bin"/kube-apiserver --etcd-servers=http://127.0.0.1:2379 \
		--bind-address=0.0.0.0 --advertise-address="$NODE_IP" --secure-port=6443 \
		--cert-dir="$D"/apiserver-certs \
		--tls-cert-file="$D"/pki/apiserver.crt --tls-private-key-file="$D"/pki/apiserver.key \
		--client-ca-file="$D"/pki/ca.crt --token-auth-file="$D"/pki/tokens.csv \
		--service-account-key-file="$D"/pki/sa.key --service-account-signing-key-file="$D"/pki/sa.key \
		--service-account-issuer=https://kubernetes.default.svc --service-cluster-ip-range=10.0.0.0/24 \
		--authorization-mode=Node,RBAC --enable-admission-plugins=NodeRestriction \
		--kubelet-client-certificate="$D"/pki/apiserver-kubelet-client.crt \
		--kubelet-client-key="$D"/pki/apiserver-kubelet-client.key \
		--kubelet-certificate-authority="$D"/pki/ca.crt \
		--kubelet-preferred-address-types=InternalIP \
		--allow-privileged=true --profiling=false --v=1
	wait_for kube-apiserver kube-apiserver 120 curl -sf --cacert "$D"/pki/ca.crt \
		-H "Authorization: Bearer $token" "$API"/readyz
	kubeconfig admin "$D"/kubeconfig "token: $token"
	kubeconfig node "$D"/node.kubeconfig "client-certificate: $D/pki/node.crt
    client-key: $D/pki/node.key"
	bg kube-scheduler "$bin"/kube-scheduler --kubeconfig="$D"/kubeconfig \
		--secure-port=0 --leader-elect=false --v=1
	log "API server up: $API (kubeconfig $D/kubeconfig)"
}

# registry_up: the test images served under the names the suite asks
# for, inside the namespace, by syncpod-bench registry (built by
# control_plane_up): the same archives containerd imported, read-only, over
# plain HTTP. containerd is told that localhost:5000 speaks plain HTTP by a
# hosts.toml under its registry config_path (read at each pull), rather
# than left to guess: its versions differ in what they try first for a
# loopback registry.
registry_up() {
	local tars=() t
	while read -r t; do tars+=("$t"); done <"$IMAGES"/images.list
	bg registry "$D"/bin/syncpod-bench registry --listen "$REGISTRY_LISTEN" -v "${tars[@]}"
	wait_for registry registry 60 curl -sf "http://$REGISTRY_LISTEN/v2/"
	mkdir -p "$D/containerd/certs.d/$REGISTRY"
	cat >"$D/containerd/certs.d/$REGISTRY/hosts.toml" <<-EOF
		# Written by mk/conformance.sh: the test images' registry, plain HTTP.
		server = "http://$REGISTRY"
		[host."http://$REGISTRY"]
		  capabilities = ["pull", "resolve"]
	EOF
	log "registry up: http://$REGISTRY_LISTEN serves the ${#tars[@]} test images as $REGISTRY/..."
}

# controllers_up starts kube-controller-manager once the node is Ready: its
# node lifecycle controller taints a node it first sees not Ready, and
# syncpod-node writes its status with UpdateStatus of the Node it holds,
# which NodeRestriction refuses as a change of taints when that copy lacks
# the controller's taint (the kubelet patches the status instead).
controllers_up() {
	local bin
	bin=$(kbin kube-controller-manager)
	bg kube-controller-manager "$bin"/kube-controller-manager --kubeconfig="$D"/kubeconfig \
		--secure-port=0 --leader-elect=false \
		--service-account-private-key-file="$D"/pki/sa.key --root-ca-file="$D"/pki/ca.crt \
		--use-service-account-credentials=false --v=1
	local kubectl
	kubectl=$(kbin kubectl)/kubectl
	for _ in $(seq 300); do
		nsx "$kubectl" --kubeconfig "$D"/kubeconfig -n default get serviceaccount default >/dev/null 2>&1 &&
			nsx "$kubectl" --kubeconfig "$D"/kubeconfig -n kube-system get configmap kube-root-ca.crt >/dev/null 2>&1 && {
			log "controllers up"
			return 0
		}
		alive "$(<"$PIDS"/kube-controller-manager)" || { tail -n 30 "$D"/logs/kube-controller-manager.log >&2; return 1; }
		sleep 0.5
	done
	log "kube-controller-manager: no default ServiceAccount after 150 s"
	return 1
}

kubeconfig() { # USER FILE CREDENTIAL-YAML
	cat >"$2" <<-EOF
		apiVersion: v1
		kind: Config
		clusters:
		- name: conformance
		  cluster: {server: "$API", certificate-authority: "$D/pki/ca.crt"}
		users:
		- name: $1
		  user:
		    $3
		contexts:
		- name: conformance
		  context: {cluster: conformance, user: $1}
		current-context: conformance
	EOF
	chmod 600 "$2"
}

# Low disk thresholds (with the kubelet's memory one): build machines'
# disks run full, and a node under disk pressure would evict the specs'
# pods. The planner's eviction manager both evicts and reports the Node's
# pressure conditions by them.
EVICTION="memory.available<100Mi,nodefs.available<1%,nodefs.inodesFree<1%,imagefs.available<1%,imagefs.inodesFree<1%"

syncpod_up() {
	local s=$D/syncpod
	mkdir -p "$s"/logs
	(cd "$ROOT"/services && CGO_ENABLED=0 nice -n 19 $GO build -trimpath -tags "$STATIC_TAGS" -o "$D"/bin/ \
		./cmd/syncpod-planner ./cmd/syncpod-executor ./cmd/syncpod-pleg ./cmd/syncpod-node)
	local cri=unix://$D/containerd/containerd.sock
	# A cgroup root of the run's own, so that a kubelet on the same host
	# (a kubelet run beside this one) never takes these pods' cgroups for
	# orphans of its /kubepods and kills them.
	bg executor "$D"/bin/syncpod-executor --listen "unix://$s/executor.sock" --metrics-listen 127.0.0.1:19202 \
		--cri-endpoint "$cri" --data-dir "$s"/executor --cgroup-root "/$(basename "$D")"
	bg pleg "$D"/bin/syncpod-pleg --listen "unix://$s/pleg.sock" --metrics-listen 127.0.0.1:19203 \
		--cri-endpoint "$cri"
	wait_for executor executor 30 test -S "$s"/executor.sock
	wait_for pleg pleg 30 test -S "$s"/pleg.sock
	bg planner "$D"/bin/syncpod-planner --listen "unix://$s/planner.sock" --metrics-listen 127.0.0.1:19201 \
		--executor "unix://$s/executor.sock" --pleg "unix://$s/pleg.sock" --data-dir "$s"/planner \
		--eviction-hard "$EVICTION"
	wait_for planner planner 30 test -S "$s"/planner.sock
	bg node "$D"/bin/syncpod-node --kubeconfig "$D"/node.kubeconfig --node-name "$NODE_NAME" \
		--planner "unix://$s/planner.sock" --cri-endpoint "$cri" --node-ip "$NODE_IP" --root-dir "$s" \
		--listen "unix://$s/node.sock" --metrics-listen 127.0.0.1:19205 \
		--kubelet-listen 0.0.0.0:10250 --tls-cert-file "$D"/pki/kubelet.crt --tls-private-key-file "$D"/pki/kubelet.key \
		--client-ca-file "$D"/pki/ca.crt --kubelet-authorized-users kube-apiserver-kubelet-client
}

# kubelet_up: the kubelet keeps its per-QoS pod cgroups (/kubepods; without
# them v1.37.2 panics resizing a pod in place), removed again at teardown.
kubelet_up() {
	local bin k=$D/kubelet
	bin=$(kbin kubelet)
	mkdir -p "$k"/pki
	cat >"$k"/config.yaml <<-EOF
		apiVersion: kubelet.config.k8s.io/v1beta1
		kind: KubeletConfiguration
		containerRuntimeEndpoint: unix://$D/containerd/containerd.sock
		address: 0.0.0.0
		port: 10250
		readOnlyPort: 0
		healthzBindAddress: 127.0.0.1
		healthzPort: 10248
		tlsCertFile: $D/pki/kubelet.crt
		tlsPrivateKeyFile: $D/pki/kubelet.key
		authentication:
		  anonymous: {enabled: false}
		  webhook: {enabled: false}
		  x509: {clientCAFile: $D/pki/ca.crt}
		authorization: {mode: AlwaysAllow}
		cgroupDriver: cgroupfs
		failCgroupV1: false
		failSwapOn: false
		oomScoreAdj: 0
		makeIPTablesUtilChains: false
		volumePluginDir: $k/plugins
		evictionHard: {"nodefs.available": "1%", "imagefs.available": "1%", "nodefs.inodesFree": "1%", "imagefs.inodesFree": "1%"}
	EOF
	bg node "$bin"/kubelet --config "$k"/config.yaml --kubeconfig "$D"/node.kubeconfig \
		--cert-dir "$k"/pki --hostname-override "$NODE_NAME" --node-ip "$NODE_IP" --v=1
}

node_ready() {
	local kubectl
	kubectl=$(kbin kubectl)/kubectl
	for _ in $(seq 600); do
		if nsx "$kubectl" --kubeconfig "$D"/kubeconfig get node "$NODE_NAME" \
			-o 'jsonpath={.status.conditions[?(@.type=="Ready")].status}' 2>/dev/null | grep -qx True; then
			log "node $NODE_NAME ($NODE_KIND) Ready"
			return 0
		fi
		alive "$(<"$PIDS"/node)" || { log "the node exited:"; tail -n 30 "$D"/logs/node.log >&2; return 1; }
		sleep 0.5
	done
	log "node $NODE_NAME not Ready after 300 s"
	return 1
}

cmd_up() {
	if holder >/dev/null; then die "already up (mk/conformance.sh down first)"; fi
	rm -rf "$D"
	mkdir -p "$D"
	echo "$NODE_KIND" >"$D"/node-kind
	echo "$RUNTIME" >"$D"/runtime
	namespace_up
	runtime_up
	control_plane_up
	registry_up
	case $NODE_KIND in
	syncpod) syncpod_up ;;
	kubelet) kubelet_up ;;
	*) die "CONFORMANCE_NODE=$NODE_KIND: syncpod or kubelet" ;;
	esac
	node_ready
	if [[ -n ${CONFORMANCE_FEATURE_FOCUS:-} ]]; then
		# A process in a user namespace may mount a proc of its own only
		# where no proc mount has files hidden under other mounts; the
		# copies hide three, and runc's mount of /proc fails (EPERM) for
		# every pod with hostUsers: false. The kubelet wrote them when it
		# started and does not again: the copies go before the specs run.
		local f
		for f in "${SYSCTL_COPIES[@]}"; do nsx umount /proc/sys/$f; done
	fi
	controllers_up
	log "cluster up in $SECONDS s"
}

# --- run --------------------------------------------------------------------

# ginkgo_pass NAME [ginkgo flags]: one ginkgo run of e2e.test, its JSON
# report in DIR/reports/KIND/NAME.json; a line every 30 s with the specs
# done of those that will run, and the time so far.
ginkgo_pass() {
	local name=$1 bin kind
	shift
	kind=$(<"$D"/node-kind)
	bin=$(kbin e2e.test ginkgo kubectl)
	local out=$D/reports/$kind
	# e2e.test writes its temporary files (kubectl's kuberc, manifests)
	# into TMPDIR: the run's own, not the host's /tmp.
	mkdir -p "$out" "$D"/tmp
	local logf=$D/logs/ginkgo-$kind-$name.log start=$SECONDS
	log "$kind: $name pass (log $logf)"
	set +e
	# nsenter execs env, env execs ginkgo: the pid is ginkgo's.
	nsenter -t "$(holder)" -m -n -- env KUBE_TEST_REPO_LIST="$IMAGES"/repo-list.yaml HOME="$D" TMPDIR="$D"/tmp \
		"$bin"/ginkgo --no-color --timeout=3h --json-report="$name.json" --output-dir="$out" \
		"$@" "$bin"/e2e.test -- \
		--provider=local --kubeconfig="$D"/kubeconfig --kubectl-path="$bin"/kubectl \
		--report-dir="$out" --disable-log-dump --dump-logs-on-failure=false \
		--node-schedulable-timeout=2m --system-pods-startup-timeout=2m \
		--minStartupPods=0 --allowed-not-ready-nodes=0 >"$logf" 2>&1 &
	local pid=$! total done_ failed tick=0
	echo $pid >"$PIDS"/ginkgo
	while kill -0 $pid 2>/dev/null; do
		sleep 1
		tick=$((tick + 1))
		((tick % 30 == 0)) || continue
		kill -0 $pid 2>/dev/null || break
		total=$(grep -o 'Will run [0-9]* of [0-9]* specs' "$logf" | head -n1 | awk '{print $3}')
		done_=$(grep -o '•' "$logf" | wc -l)
		failed=$(grep -c '^• \[FAILED\]' "$logf")
		log "$kind $name: ${done_}/${total:-?} specs done, $failed failed, $((SECONDS - start)) s"
	done
	wait $pid
	local rc=$?
	set -e
	grep -E '^(Ran|FAIL!|SUCCESS!|PASS|FAIL)' "$logf" >&2 || true
	log "$kind: $name pass ended ($rc) after $((SECONDS - start)) s; report $out/$name.json"
	((rc == 0)) || failed_passes+=("$name")
	return 0
}

failed_passes=()
cmd_run() {
	holder >/dev/null || die "the cluster is not up"
	ginkgo_pass parallel -p --procs="$PROCS" --focus="$FOCUS" --skip="$SKIP"
	if [[ ${CONFORMANCE_SERIAL:-1} == 1 ]]; then
		# What the parallel pass skipped, one spec at a time.
		ginkgo_pass serial --focus="$SERIAL_FOCUS"
	fi
	if ((${#failed_passes[@]})) && [[ ${CONFORMANCE_STRICT:-0} == 1 ]]; then
		log "specs failed in the ${failed_passes[*]} pass (CONFORMANCE_STRICT=1); the failures:"
		grep -h -A3 '^• \[FAILED\]' "$D"/logs/ginkgo-*.log >&2 || true
		return 1
	fi
}

# --- down -------------------------------------------------------------------

cmd_down() {
	local h="" ns="" c=""
	h=$(holder) || true
	# The namespaces last as long as a process in them: when the holder is
	# gone (killed with the run that started it), containerd's own
	# process is the way in, so its pods still go before it.
	ns=$h
	[[ -s $D/containerd/containerd.pid ]] && c=$(<"$D"/containerd/containerd.pid)
	if [[ -z $ns && -n $c ]] && alive "$c"; then
		ns=$c
	fi
	# The node first, then its pods with containerd (containerd.sh down
	# deletes every task before it stops containerd), then the control
	# plane.
	stop ginkgo node planner executor pleg
	if [[ -n $ns ]]; then
		nsenter -t "$ns" -m -n -- "$ROOT"/mk/containerd.sh down "$D"/containerd || log "containerd down failed"
	fi
	# The node's empty per-QoS cgroup tree, deepest first: the kubelet's
	# /kubepods, or syncpod's under the run's own root.
	if [[ -s $D/node-kind && $(<"$D"/node-kind) == kubelet ]]; then
		find /sys/fs/cgroup/*/kubepods -depth -type d -exec rmdir {} + 2>/dev/null || true
	else
		find /sys/fs/cgroup/*/"$(basename "$D")" -depth -type d -exec rmdir {} + 2>/dev/null || true
	fi
	stop kube-scheduler kube-controller-manager kube-apiserver registry
	# etcd last: the API server removes its endpoint lease on the way out.
	stop etcd
	if [[ -n $h ]]; then
		kill -TERM "$h" 2>/dev/null || true
		for _ in $(seq 50); do alive "$h" || break; sleep 0.1; done
	fi
	rm -f "$PIDS"/holder
	log "down: processes stopped, namespaces gone with the holder"
}

# check_images: each test image starts in the cluster's containerd and
# holds what the specs rely on.
cmd_check_images() {
	holder >/dev/null || die "the cluster is not up"
	local ctr=(ctr --address "$D"/containerd/containerd.sock -n k8s.io) e=localhost:5000/e2e-test-images bad=0
	if [[ $(<"$D"/runtime) == containerd2 ]]; then ctr[0]=$("$ROOT"/mk/containerdbin.sh)/ctr; fi
	check() { # WANT IMAGE CMD...: CMD's output holds WANT
		local want=$1 img=$2 out
		shift 2
		out=$(nsx "${ctr[@]}" run --rm "$img" "check-$RANDOM" "$@" 2>&1 | grep -v DEPRECATION) || true
		if grep -qF -- "$want" <<<"$out"; then log "image ok: $img ($*)"; else
			log "image FAILED: $img ($*): want \"$want\", got: $out"
			bad=1
		fi
	}
	check /bin/sysctl "$e"/busybox:1.37.0-2 sh -c 'ls /bin/sysctl'
	check data-1=x "$e"/busybox:1.37.0-2 /bin/env -i data-1=x /bin/sh -c env
	check uid=1234 "$e"/nonroot:1.5 id
	check '[/agnhost-2 entrypoint-tester a]' "$e"/agnhost:2.66.1 /agnhost-2 entrypoint-tester a
	check 50000 "$e"/agnhost:2.66.1 sh -c 'cat /VERSION; curl --version; id user-defined-in-image; ls /localhost.crt /uploads'
	check 2.55 "$e"/agnhost:2.55 cat /VERSION
	check /kitten.jpg "$e"/kitten:1.8 ls /kitten.jpg /data.json
	check kitten.jpg "$e"/kitten:1.8 cat /data.json
	check 'Alpine Linux' "$e"/kitten:1.8 cat /etc/os-release
	check 'Effective uid: 0' "$e"/nonewprivs:1.4 nnp
	# Pulled from the cluster's registry, as a spec with pull policy Always
	# pulls it (the same bytes as the imported image: nothing changes).
	local out
	if out=$(nsx "${ctr[@]}" images pull --hosts-dir "$D"/containerd/certs.d "$e"/kitten:1.8 2>&1); then
		log "image ok: $e/kitten:1.8 pulls from the registry"
	else
		log "image FAILED: pulling $e/kitten:1.8 from the registry: $out"
		bad=1
	fi
	# Servers and pause: started in the cluster's network, asked over HTTP.
	local id
	nsx "${ctr[@]}" run -d --net-host "$e"/nginx:1.27.0-2 check-nginx >/dev/null 2>&1
	nsx "${ctr[@]}" run -d --net-host "$e"/kitten:1.8 check-kitten sh -c '/agnhost test-webserver --port 8081' >/dev/null 2>&1
	nsx "${ctr[@]}" run -d localhost:5000/k8s/pause:3.10.2 check-pause >/dev/null 2>&1
	sleep 2
	# Outputs are captured before grep -q reads them: grep leaving a pipe
	# early would fail the pipeline (pipefail) though the line was there.
	out=$(nsx curl -sf 127.0.0.1:80 || true)
	if grep -q nginx <<<"$out"; then log "image ok: nginx serves on 80"; else log "image FAILED: nginx on 80"; bad=1; fi
	if nsx curl -sf 127.0.0.1:8081/data.json >/dev/null; then log "image ok: kitten serves"; else log "image FAILED: kitten's test-webserver"; bad=1; fi
	out=$(nsx "${ctr[@]}" tasks ls 2>/dev/null || true)
	if grep -q 'check-pause .*RUNNING' <<<"$out"; then log "image ok: pause runs"; else log "image FAILED: pause"; bad=1; fi
	for id in check-nginx check-kitten check-pause; do nsx "${ctr[@]}" tasks kill -s KILL "$id" >/dev/null 2>&1 || true; done
	sleep 1
	for id in check-nginx check-kitten check-pause; do
		nsx "${ctr[@]}" tasks rm "$id" >/dev/null 2>&1 || true
		nsx "${ctr[@]}" containers rm "$id" >/dev/null 2>&1 || true
	done
	return $bad
}

cmd_status() {
	local n
	if ! holder >/dev/null; then
		echo "down"
		return 0
	fi
	echo "up: holder $(holder), node $(<"$D"/node-kind)"
	for n in "$PIDS"/*; do
		[[ -e $n ]] || continue
		if alive "$(<"$n")"; then echo "  ${n##*/}: pid $(<"$n")"; else echo "  ${n##*/}: exited"; fi
	done
}

case ${1:-} in
all)
	trap cmd_down EXIT
	trap 'exit 130' INT TERM
	cmd_up
	cmd_run
	;;
up) cmd_up ;;
run) cmd_run ;;
down) cmd_down ;;
status) cmd_status ;;
check-images) cmd_check_images ;;
exec)
	shift
	nsx "$@"
	;;
*)
	sed -n '2,14p' "$0" >&2
	exit 2
	;;
esac
