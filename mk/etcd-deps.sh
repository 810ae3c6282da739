#!/usr/bin/env bash
# mk/etcd-deps.sh — install Debian's etcd-server (for the node-agent tests'
# private control plane) when etcd is missing, never letting the package
# start a system service. Not root: a loud message, nothing installed.
set -euo pipefail

loud() {
	echo "######################################################################" >&2
	echo "## etcd-deps: $*" >&2
	echo "######################################################################" >&2
}

command -v etcd >/dev/null && exit 0
if [[ $(id -u) -ne 0 ]]; then
	loud "etcd missing. Not root, so not installing: the Kubernetes node tests will SKIP. As root: apt-get install -y etcd-server"
	exit 0
fi
echo "etcd-deps: etcd missing; installing etcd-server" >&2
# No service may start from the package (policy-rc.d 101); the policy file
# goes away again only if we created it.
policy=/usr/sbin/policy-rc.d had_policy=0 rc=0
[[ -e $policy ]] && had_policy=1
if ((!had_policy)); then printf '#!/bin/sh\nexit 101\n' >"$policy"; chmod +x "$policy"; fi
export DEBIAN_FRONTEND=noninteractive
{ apt-get -o DPkg::Lock::Timeout=300 update -qq &&
	apt-get -o DPkg::Lock::Timeout=300 install -y -qq --no-install-recommends etcd-server >/dev/null; } || rc=$?
((had_policy)) || rm -f "$policy"
((rc == 0)) || exit $rc
command -v etcd >/dev/null || { loud "etcd still missing after apt-get install etcd-server"; exit 1; }
