#!/usr/bin/env bash
# mk/cni-podnet.sh — a CNI plugin (installed by mk/containerd.sh as
# syncpod-podnet) that gives a pod's network namespace the interface and
# address the CRI needs, and nothing outside it: a veth pair whose both
# ends stay in the pod's namespace, the pod's end (CNI_IFNAME) holding
# 192.0.2.2/24 (TEST-NET-1, documentation only). It routes nowhere: the
# tests that use it send no traffic. It touches no host interface, route,
# iptables rule or sysctl; the pair goes with the namespace.
#
# containerd's pods on their own network (hostNetwork false) fail to start
# without an address; the pods that must have one are those in user
# namespaces of their own, which may not share the node's network.
set -euo pipefail

cfg=$(cat)
ver=$(grep -Eo '"cniVersion"[[:space:]]*:[[:space:]]*"[^"]*"' <<<"$cfg" | head -n1 | grep -Eo '[0-9][0-9.]*' || echo 0.4.0)
fail() {
	printf '{"cniVersion":"%s","code":100,"msg":"syncpod-podnet: %s"}\n' "$ver" "$1"
	exit 1
}
peer=${CNI_IFNAME:-eth0}p
case ${CNI_COMMAND:-} in
ADD)
	[[ -n ${CNI_NETNS:-} && -n ${CNI_IFNAME:-} ]] || fail "CNI_NETNS and CNI_IFNAME are required"
	in_ns() { nsenter --net="$CNI_NETNS" "$@"; }
	in_ns ip link add "$CNI_IFNAME" type veth peer name "$peer" || fail "cannot add $CNI_IFNAME in $CNI_NETNS"
	in_ns ip addr add 192.0.2.2/24 dev "$CNI_IFNAME" || fail "cannot address $CNI_IFNAME"
	in_ns ip link set "$peer" up || fail "cannot set $peer up"
	in_ns ip link set "$CNI_IFNAME" up || fail "cannot set $CNI_IFNAME up"
	printf '{"cniVersion":"%s","interfaces":[{"name":"%s","sandbox":"%s"}],"ips":[{"version":"4","address":"192.0.2.2/24","interface":0}]}\n' \
		"$ver" "$CNI_IFNAME" "$CNI_NETNS"
	;;
DEL)
	# The namespace may be gone already, and the pair with it.
	if [[ -n ${CNI_NETNS:-} && -e $CNI_NETNS ]]; then
		nsenter --net="$CNI_NETNS" ip link del "${CNI_IFNAME:-eth0}" 2>/dev/null || true
	fi
	;;
CHECK) ;;
VERSION)
	printf '{"cniVersion":"%s","supportedVersions":["0.3.0","0.3.1","0.4.0"]}\n' "$ver"
	;;
*) fail "unknown CNI_COMMAND ${CNI_COMMAND:-}" ;;
esac
