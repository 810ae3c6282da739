// Package bench measures how fast a node agent turns desired pods into
// running containers on a real CRI runtime, the same way for every agent:
// syncpod (through the planner's API or a manifest file), the kubelet
// (static pod files) and a raw CRI client doing RunPodSandbox, image
// status, CreateContainer and StartContainer itself (the floor).
//
// Times come from the runtime: a container's started and finished times
// as CRI ContainerStatus reports them, against the host clock read just
// before the pods were asked for. A wait for pods to start or stop looks
// at the runtime on each of its CRI events where it offers them
// (FollowEvents), and lists it every PollInterval where it does not.
// Results are JSON (Report, Result), so runs of different agents, one
// after the other on identical private runtimes or alternating round by
// round (Versus), are put side by side by Table, and written up with
// their plots by package bench/report (docs/benchmarks.md). Nothing here
// asserts timing: the numbers are printed.
//
// Many nodes under one control plane (NodeScale, make bench-scale): one
// side's nodes, upstream's hollow kubelet or syncpod nodes on crisim in
// simulated mode, loaded with pods bound round-robin through a
// kube-apiserver; pod startup from a watch, the nodes' requests from the
// API server's audit log (CountAudit), their CPU and memory from /proc
// (Usage), written up as the Scale section (report.ScaleTables).
//
// The driver is bench/cmd/syncpod-bench; bench/scripts/bench.sh starts the
// runtimes and the agents for the make targets (mk/bench.mk).
package bench
