// Package service is the PlegService gRPC adapter: each RPC validates its
// request (InvalidArgument naming every bad field at once) and forwards to
// the PLEG core (package pleg). Errors are mapped to gRPC codes by
// errgrpc.ToGRPC, after classify gives the core's own errors (a deadline
// passed, a subscription closed) the PLEG's messages.
package service
