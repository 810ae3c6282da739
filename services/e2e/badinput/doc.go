// Package badinput holds the bad-input suite (tests only): a
// table of malformed requests for every RPC of the planner, the executor
// and the PLEG, sent as protojson would build them and as raw wire bytes
// (truncated, invalid UTF-8, nested past protobuf's limit) to the real
// services behind the shared server bootstrap on a loopback socket. Each
// must come back InvalidArgument with a message naming the field, and
// nothing may be stored (planner), created, pulled or stopped (executor).
package badinput
