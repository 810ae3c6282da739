// Package diff is the PLEG's pure event computation: given the previous and
// the current record of one pod (its sandboxes and containers with their
// states), it returns the lifecycle events of the kubelet's state table
// (rule ). It does no I/O and reads no clock: the same records give
// the same events, in the same order.
//
// The scenarios in testdata/*.txt specify it as golden files: the whole state
// table, and sequences of listings of one pod (go test -rewrite rewrites
// their expected output).
package diff
