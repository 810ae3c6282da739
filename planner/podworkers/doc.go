// Package podworkers runs per-pod sync work the way the kubelet's pod
// workers do, minus their sharp edges: at most one sync is in flight per
// pod; a trigger that arrives while a sync runs is coalesced into exactly
// one follow-up sync; a sync may ask to be woken at an exact instant (a
// crash-loop back-off expiring) and a timer fires then; a failed sync is
// retried with a per-pod exponential back-off, so an erroring pod never
// spins; and Forget drops a pod's state and timers.
//
// The engine knows nothing about pods beyond their uid: the sync function
// reads whatever it needs. Time comes from the standard library's timers,
// so tests drive it with testing/synctest.
package podworkers
