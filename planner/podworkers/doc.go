// Package podworkers runs per-pod sync work the way the kubelet's pod
// workers do, minus their sharp edges: at most one sync is in flight per
// pod; a trigger that arrives while a sync runs is coalesced into exactly
// one follow-up sync; a sync may ask to be woken at an exact instant (a
// crash-loop back-off expiring) and a timer fires then; a failed sync is
// retried with a per-pod exponential back-off, so an erroring pod never
// spins; with Resync, each pod is synced again that long (plus up to half
// as much at random) after its last sync, as the kubelet requeues a pod
// after each sync, so periodic syncs of many pods spread out instead of
// coming all at once; and Forget drops a pod's state and timers. At most
// MaxConcurrent syncs run at once: each is handed its Slot, which it may
// release early to wait on something that does not load the node.
//
// The engine knows nothing about pods beyond their uid: the sync function
// reads whatever it needs. Time comes from the standard library's timers,
// so tests drive it with testing/synctest.
package podworkers
