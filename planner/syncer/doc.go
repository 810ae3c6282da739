// Package syncer keeps the desired pods running: it is the planner's sync
// loop, the kubelet's syncPod and housekeeping made of syncpod's parts.
//
// Every desired pod has a worker (podworkers: one sync in flight, triggers
// coalesced, exact wake-ups, error back-off). A sync reads the pod from
// the store, waits for a PLEG status newer than its own last action
// (GetPodStatus newer_than), runs the probes' results and plan.Compute,
// hands a non-empty change set to the executor, and writes the kubelet-
// style status, events and last actions back into the store. Syncs are
// triggered by desired changes (a store watch: new pods, spec or deletion
// changes — not the status writes of the syncs themselves), by PLEG
// lifecycle events (a Watch stream, reconnected with back-off and followed
// by a resync of everything), by a periodic resync, by probe result
// changes and at the instant an executor back-off expires.
//
// Terminal pods (Succeeded, Failed) are not re-planned: only anything
// still running in them is stopped. A deleted pod is killed with its grace
// period; once nothing of it runs, its containers and sandboxes are
// removed, then its volume directory (RemovePodVolumes), and only then is
// it dropped from the store.
//
// ConfigMaps and Secrets (config.go): every change set carries the ones
// the pod references, read in one transaction, so the executor resolves
// volumes and env at container start; every sync of a running pod with
// configMap, secret, projected or downwardAPI volumes asks the executor to
// refresh them in place (UpdatePodVolumes: nothing restarts); a committed
// ConfigMap or Secret change syncs at once every pod that references one.
//
// Housekeeping, periodically: runtime pods labelled as syncpod's that are
// not desired are killed and removed, once a status read after the store
// was found without them still shows them (the PLEG's list lags the
// runtime, so a pod whose worker has just removed it is no orphan);
// exited containers beyond the newest
// per container name, and stopped sandboxes beyond the newest, are
// removed.
package syncer
