// Package critest holds the CRI test harnesses of every syncpod module.
//
// Runtime is the one in-memory CRI runtime service: the cri-api fake with
// the real runtimes' behaviours syncpod depends on (sandbox names are
// reserved, a missing object is NotFound, lists are sorted), a record of
// stops in order with their grace periods for the executor's tests, and
// knobs for the PLEG's (failing lists, hanging inspections, a
// GetContainerEvents stream that can be held, released or failed).
//
// RequireContainerd is the environment contract of tests against a real
// containerd (SYNCPOD_TEST_*, set by mk/containerd.mk).
package critest
