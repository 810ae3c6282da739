// Package runner is the executor's core: it carries out a planner's
// PodActions against a CRI runtime in the kubelet's SyncPod order (rule
// book section 8) and reports one StepResult per step:
//
//  1. kill the pod (every running container in parallel with its grace
//     period, sidecars after the main containers in reverse spec order,
//     then every sandbox; ..R-9.5) — or kill the listed containers one
//     by one, stopping at the first error;
//  2. prune old init container instances (R-5.9; all of them after a pod
//     kill for a new sandbox, R-2.5);
//  3. create the sandbox in the pod's cgroup, made first (cgroups.go,
//     package cgroups; R-23), reusing or replacing one left behind by an
//     interrupted earlier attempt (containerd: "name is reserved");
//  4. start the listed ephemeral containers, each on its own, in their
//     target's PID namespace when they name one;
//  5. start init containers in order (a regular one failing stops the
//     pass, a sidecar failing is skipped; );
//  6. start the listed containers.
//
// Every start first asks the crash-loop back-off store, then
// ensures the image by pull policy with its own pull back-off, then creates
// and starts the container, filled as the kubelet fills its CRI configs
// (security.go: seccomp, masked and read-only paths, OOM score by QoS,
// security context, the runAsNonRoot refusal; podfiles.go: the managed
// /etc/hosts and termination-log mounts under Config.PodDir, DNS). Before
// the create, the pod's volumes are set up (Config.Volumes, package
// volumes) and the container's environment (env sources, the downward
// API) and then its mounts (a subPathExpr expanded against that
// environment) resolved: a missing ConfigMap, Secret, key or volume
// source, or a sub path that does not expand to a relative path inside
// the volume, fails the start with CreateContainerConfigError. A
// container's postStart hook runs right after its start and its preStop
// hook before its stop, within the grace period (hooks.go), each reported
// as a hook step; an httpGet or tcpSocket hook without a host goes to the
// pod's IP, from the newest ready sandbox in a pass that only kills. Steps for one pod are serialized; different
// pods run in parallel up to a bound. A runtime that cannot be reached
// aborts the pass with cri.ErrUnavailable.
package runner
