// Package crisuite is a CRI behaviour suite: one set of tests that any CRI
// runtime reachable through the kubelet's client (k8s.io/cri-client) must
// pass — crisim in both modes, and real containerd where the assertions
// hold. Run takes a factory of the "runtime under test"; Caps says which
// behaviours differ between runtimes, so each test asserts exactly what
// that runtime promises and logs (never silently skips) what it leaves
// out.
//
// Containers are specified so that the same test means the same thing
// everywhere: a command for runtimes that run processes (busybox on
// containerd, the host's sh on crisim's process mode) together with the
// crisim simulated-mode annotations that produce the same outcome without
// a process. Sandboxes use the host network unless a test is about fake
// pod IPs (crisim only); nothing ever contacts a pod IP.
package crisuite
