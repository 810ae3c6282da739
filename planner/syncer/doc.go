// Package syncer keeps the desired pods running: it is the planner's sync
// loop, the goroutine-and-trigger wrapper around podsync.Step (raft's Node
// around its RawNode). Every decision is podsync's; this package owns the
// goroutines, triggers and streams, and carries each work order out
// through two small interfaces it declares, PLEG and Executor (GRPCPLEG
// and GRPCExecutor adapt the generated clients; tests pass in-process
// fakes, no gRPC server).
//
// Every desired pod has a worker (podworkers: one sync in flight, triggers
// coalesced, exact wake-ups, error back-off). A sync reads the pod from
// the store, waits for a PLEG status newer than its own last action
// (PLEG.PodStatus newer than), updates the probes, and steps: a change set
// goes to the executor and its answer is handed back to a second step; the
// sync's events, last actions and status are then committed in one store
// transaction (store.CommitSync); containers and sandboxes to remove are
// removed, and a deleted pod whose removal succeeded has its volume
// directory removed (Executor.RemovePodVolumes) and is dropped from the
// store. Syncs are triggered by desired changes (a store watch: new pods,
// spec, label, annotation or deletion changes — not the status writes of
// the syncs themselves), by PLEG lifecycle events (a Watch stream, reconnected with
// back-off and followed by a resync of everything), by each pod's own
// resync (ResyncPeriod, plus up to half as much at random, after its last
// sync: the kubelet's requeue, R-11.7, never every pod at once), by probe
// result changes and at the instant an executor back-off expires.
//
// ConfigMaps and Secrets (config.go): every change set carries the ones
// the pod references (podsync.ConfigReferences), read in one transaction,
// so the executor resolves volumes and env at container start; when a
// step asks for it (Work.RefreshVolumes: a running pod with configMap,
// secret, projected or downwardAPI volumes, on every sync) the executor
// refreshes them in place (Executor.UpdatePodVolumes: nothing restarts);
// a committed ConfigMap or Secret change syncs at once every pod that
// references one.
//
// Housekeeping, periodically: runtime pods labelled as syncpod's that are
// not desired are stepped as orphans (killed through the same apply path
// as any sync, removed with their volume directory once stopped), once a
// status read after the store was found without them still shows them
// (the PLEG's list lags the runtime, so a pod whose worker has just
// removed it is no orphan); what a desired pod no longer needs
// (podsync.Garbage) is removed.
//
// The eviction check (eviction.go), every EvictionCheckPeriod and off the
// sync path: the disk emptyDirs with a sizeLimit of every running pod are
// measured (EmptyDirMeter, the executor's du); a pod over a limit is
// marked evicted for its generation and synced at once, and podsync fails
// and kills it (the kubelet's eviction manager for local storage).
//
// The graceful node shutdown (shutdown.go, R-24) closes admission, stores
// the shutdown, then marks the pods of each priority group for
// termination with their grace and syncs them: podsync fails each with
// reason Terminated and kills it, and the group is waited for until a
// sync of each of its pods finds nothing running, or its budget is
// spent. Run first recovers from a stored shutdown.
package syncer
