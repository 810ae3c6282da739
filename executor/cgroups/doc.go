// Package cgroups is the kubelet's pod and QoS cgroup hierarchy, made by
// the executor: a node cgroup (<cgroup-root>/kubepods) holding the
// Guaranteed pods, its burstable and besteffort children for the other
// two classes, and one pod<uid> cgroup per pod, which the runtime is given
// as the sandbox's cgroup_parent.
//
// names.go spells a cgroup for the cgroupfs and the systemd drivers;
// config.go computes, as pure functions, the values the kubelet writes
// (the pod cgroup's CPU shares, quota and memory limit; the QoS cgroups'
// reservations); fs.go writes them into cgroup v1 or v2 files under a
// filesystem root (/sys/fs/cgroup, or a temporary directory in tests);
// manager.go creates, updates and removes cgroups through it.
package cgroups
