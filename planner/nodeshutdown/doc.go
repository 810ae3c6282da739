// Package nodeshutdown is the kubelet's graceful node shutdown as
// decisions: which grace periods a node's shutdown configuration
// gives each pod priority, which group each pod falls in and how long it
// is given to stop, and the words the kubelet uses for a pod it ends, a
// pod it refuses and the node while it shuts down.
//
// It is pure: it imports no gRPC, clock or I/O, and the same input gives
// the same output. The loop that carries a shutdown out (the logind
// inhibitor, the waits between groups, the store) lives in
// planner/syncer and planner/logind.
package nodeshutdown
