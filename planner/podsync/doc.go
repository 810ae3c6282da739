// Package podsync is one pod sync as a pure step: the kubelet's syncPod
// decisions, one level above plan.Compute, with every input an argument and
// every effect a field of the returned work order. It does no I/O, reads no
// clock and modifies none of its inputs; package syncer carries the work
// out (raft's RawNode beside its Node).
//
// A sync is at most two steps. Step is first called with the pod's stored
// record, the observed pod (a PLEG status newer than the last apply), the
// probe results and now. When the Work asks for an Apply, the caller hands
// the change set to the executor and calls Step again with the same input
// but for Applied, set to the executor's answer, now, the time it
// answered, and, when the call changed the runtime, Observed and Probes as
// read after it (the status stored is then the runtime's after the call).
// That second step never plans again, it only turns the answer into the
// sync's events, status and wake-up. A sync's Status, Events and
// LastActions are meant to be committed together (store.CommitSync).
//
// What it decides, following the kubelet:
//
//   - a running pod is planned with plan.Compute; its status (package
//     status) is computed once per step: before the plan (it says whether
//     the pod has finished, and is the status stored when there is
//     nothing to apply), or, after an apply, from the apply's step
//     results; an executor back-off becomes the
//     wake-up (a restart whose back-off expires is woken at that instant);
//   - a pod the caller found over an emptyDir sizeLimit (Input.Evicted)
//     fails with reason Evicted, as the kubelet's eviction manager fails
//     it, with one Warning Evicted event, and is then killed like any
//     terminal pod;
//   - a pod the node's graceful shutdown ends (Input.NodeShutdown) fails
//     with reason Terminated and is killed with the grace its
//     priority group gives it;
//   - a pod in a terminal phase (Succeeded, Failed) is not re-planned: only
//     what still runs of it is killed (the kubelet's computePodActions would
//     keep killing and re-creating the sandbox);
//   - a deleted pod is killed with its grace period (a kill with a failed
//     step is an error, retried with back-off, so a container that cannot
//     be stopped does not make it spin; a kill that succeeded asks to be
//     synced again at once); once nothing of it runs, its containers and
//     sandboxes are removed, then its volume directory, and only then is
//     it dropped from the store;
//   - the kill of a deleted or terminal pod lists the sidecars whose
//     instance runs, or has exited, in its ready sandbox: the executor
//     starts such a sidecar again, with its crash-loop back-off, when it
//     exits before its turn to stop (R-30; the kubelet leaves it down, as
//     Input.SidecarsStayDown asks); a restart that fails does not fail the
//     kill;
//   - a runtime pod with no record (an orphan, left over from a deletion
//     while the planner was down) is killed, and once stopped removed with
//     its volume directory; it has no record, so nothing is committed for
//     it;
//   - every sync of a pod that is not terminal, has a ready sandbox and
//     configMap, secret, projected or downwardAPI volumes asks for those to
//     be refreshed in place (RefreshVolumes; nothing restarts), whatever
//     else it did; ConfigReferences names the ConfigMaps and Secrets a pod
//     reads, which the caller sends with its change sets and refreshes;
//   - Garbage lists what a desired pod no longer needs: exited containers
//     beyond the newest of their name (every one of a name no longer in
//     the spec), stopped sandboxes beyond the newest.
//
// The scenarios in testdata/*.txt specify these lives as golden files
// (go test -rewrite rewrites their expected output).
package podsync
