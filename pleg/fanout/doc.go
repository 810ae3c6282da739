// Package fanout delivers PLEG lifecycle events to any number of
// subscribers without letting any of them slow the PLEG or each other.
// Each subscriber has a bounded buffer; Publish never blocks. A subscriber
// whose buffer is full misses the events that follow until it has drained
// what it holds, and then receives exactly one RESYNC event telling it to
// re-read the statuses it cares about. Every dropped event and every
// resync is counted: nothing is dropped silently.
package fanout
