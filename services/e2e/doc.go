// Package e2e holds end-to-end tests that build the syncpod binaries and
// run them as real processes on loopback addresses and unix sockets.
//
// The lifecycle tests each start a whole node: syncpod-crisim in process
// mode on a unix socket in a short temporary directory, the executor (1 s /
// 4 s crash-loop back-off) and the PLEG on it, and the planner driving
// both, with a manifest directory and short resync and housekeeping
// periods. They talk to the planner through syncpodctl's package and the
// generated gRPC clients, and to crisim through a CRI client. At cleanup
// every process is stopped with SIGTERM in dependency order, and the test
// fails if a container process outlives crisim. Set SYNCPOD_E2E_LOG_DIR to
// keep every process's full log (<dir>/<test>/<binary>-<pid>.log); on
// failure the tail of each log is printed anyway.
//
// The fault, flood and crash-consistency suite attacks whole nodes and
// prints, per test, its counts (faults injected, requests,
// acknowledgements, lost = 0) and one "SUMMARY" line:
//   - crash consistency: planner, executor and PLEG SIGKILLed, singly and
//     all at once, under a churn client that logs every acknowledged
//     ApplyPod/DeletePod; the store is checked against that log after each
//     kill, and at the end the planner, the runtime (CRI list calls) and the
//     host (container processes by pid, start time and environment) must
//     agree with it: one READY sandbox and one running instance per
//     container, no orphan, no process left once the node stops;
//   - runtime faults: crisim and a private containerd SIGKILLed (by pid)
//     and restarted under churn, the PLEG's health flipping to NOT_SERVING
//     and back; a CRI proxy that hangs chosen calls past the executor's
//     --cri-timeout;
//   - floods: 100 concurrent clients, 30 pods of 64 containers in evented
//     mode with no CreateContainer answered AlreadyExists, a node of many
//     pods on crisim's simulated mode.
//
// Under `make test` the sizes are small; `make soak` (SYNCPOD_SOAK=1) runs
// the full sizes (68 SIGKILLs, 200 calls per client, 2,000 pods).
package e2e
