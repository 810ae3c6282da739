// Package critest holds test harnesses for the executor: an in-memory CRI
// runtime built on the cri-api testing fakes with containerd's behaviours
// the executor depends on (sandbox names are reserved, stops are recorded
// in order with their grace periods), and helpers for tests against a real
// containerd (the SYNCPOD_TEST_* environment contract) that read an
// ObservedPod back from CRI, standing in for the PLEG.
package critest
