// Package bench measures how fast a node agent turns desired pods into
// running containers on a real CRI runtime, the same way for every agent:
// syncpod (through the planner's API or a manifest file), the kubelet
// (static pod files) and a raw CRI client doing RunPodSandbox, image
// status, CreateContainer and StartContainer itself (the floor).
//
// Times come from the runtime: a container's started and finished times
// as CRI ContainerStatus reports them, against the host clock read just
// before the pods were asked for. Only sandbox stops are seen by polling
// (every PollInterval). Results are JSON (Result), so runs of different
// agents, one after the other on identical private runtimes, are put side
// by side by Table. Nothing here asserts timing: the numbers are printed.
package bench
