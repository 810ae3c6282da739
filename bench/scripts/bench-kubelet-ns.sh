#!/usr/bin/env bash
# bench/scripts/bench-kubelet-ns.sh DIR KUBELET ARGS... — run by bench.sh
# under `unshare --mount --propagation slave`: in this private mount
# namespace, hide from the kubelet what it would change on the host, then
# exec it.
#   - the sysctls it rewrites at start (vm.overcommit_memory, kernel.panic,
#     kernel.panic_on_oops): files under DIR/sysctl bind-mounted over them;
#   - /var/lib (its hard-coded /var/lib/kubelet/device-plugins) and /var/log
#     (its /var/log/containers symlinks): private tmpfs mounts.
# The namespace, and everything mounted in it, ends with the kubelet.
set -euo pipefail
d=$1
shift
mount --bind "$d"/sysctl/overcommit_memory /proc/sys/vm/overcommit_memory
mount --bind "$d"/sysctl/panic /proc/sys/kernel/panic
mount --bind "$d"/sysctl/panic_on_oops /proc/sys/kernel/panic_on_oops
mount -t tmpfs -o mode=0755 bench-var-lib /var/lib
mount -t tmpfs -o mode=0755 bench-var-log /var/log
exec "$@"
