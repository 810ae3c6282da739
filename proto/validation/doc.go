// Package validation holds the rules for syncpod's shared wire types
// (syncpod.v1.Pod and ObservedPod), so that every service judges them
// alike: the planner before it plans or stores a pod, the executor before
// it creates anything for one. Every function returns all problems at once
// as a fielderr.Errors (errors.Is(err, fielderr.ErrInvalid) holds), with
// proto field paths relative to the value checked ("spec.containers[1].name",
// "containers[0].restart_count").
//
// Besides Kubernetes' syntax rules (DNS-1123 names, qualified label and
// annotation keys, label values, RFC 4122 uids, quantities), every string
// and every list has a bound (limits.go): argv and environment as the Linux
// kernel bounds them, annotations as the API server does, and generous
// bounds for the rest. Messages never echo a large input (fielderr.Quote).
//
// It is pure: no I/O, no state, the same input gives the same output.
package validation
