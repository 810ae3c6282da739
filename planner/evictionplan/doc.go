// Package evictionplan is the kubelet's eviction manager as pure
// decisions: the thresholds of --eviction-hard, --eviction-soft,
// --eviction-soft-grace-period and --eviction-minimum-reclaim, which of
// them the node's signals meet, when a soft one has been met for its
// grace period, which pressure conditions hold, how the pods are ranked
// for a signal (memory, disk, PIDs), and the one pod a round evicts with
// the kubelet's message.
//
// It is pure: every input is an argument, the time included, and the
// state a round leaves is returned for the next one. The loop around it
// (planner/syncer) measures, evicts and remembers.
package evictionplan
