// Command syncpod-executor is the executor: it applies change sets to the CRI runtime in the kubelet's SyncPod order,
// with crash-loop back-off persisted in bbolt. See docs/design.md; flags: syncpod-executor --help.
//
// Executor flags (each also SYNCPOD_<NAME>):
//
//	--cri-endpoint       CRI socket (default unix:///run/containerd/containerd.sock)
//	--data-dir           directory of the back-off database executor.db
//	                     (default $XDG_STATE_HOME/syncpod/executor, else /var/lib/syncpod/executor)
//	--backoff-initial    first crash-loop delay (default 10s)
//	--backoff-max        largest crash-loop delay, 1s..300s (default 300s)
//	--backoff-reduced    use the reduced 1s/60s curve (explicit initial/max win)
//	--max-parallel-pods  pods created and started at once (default 64; stopping is not bounded)
//	--sandbox-start-spacing least time between two RunPodSandbox calls' starts (default 4ms; 0: all at once)
//	--cri-timeout        timeout of each CRI call (default 2m)
//	--image-pull-timeout timeout of an image pull (default 10m)
//	--log-dir            root of pod log directories (default /var/log/pods)
//	--pod-dir            per-pod directories <pod-dir>/<uid>: managed /etc/hosts,
//	                     termination logs, volumes (default <data-dir>/pods)
//	--seccomp-root       directory of Localhost seccomp profiles (default <data-dir>/seccomp)
//	--seccomp-default    RuntimeDefault seccomp for containers that set none
//	                     (the kubelet's seccompDefault; default false = Unconfined)
//	--cgroups-per-qos    the kubelet's pod and QoS cgroups (default true)
//	--cgroup-root        where the node cgroup <root>/kubepods goes (default /)
//	--cgroup-driver      cgroupfs or systemd, for a runtime that does not say
//	                     which it uses (default cgroupfs; the runtime's answer wins)
package main

import (
	"io"
	"os"

	"github.com/syncpod/syncpod/services/cmd/internal/daemon"
	"github.com/syncpod/syncpod/services/cmd/internal/daemon/executord"
)

func main() {
	os.Exit(run(os.Args[1:], os.Getenv, os.Stdout, os.Stderr))
}

// run is the binary: executord.Run until SIGINT or SIGTERM.
func run(args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	return daemon.MainArgs(executord.Run, args, getenv, stdout, stderr)
}
