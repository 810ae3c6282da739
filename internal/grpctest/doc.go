// Package grpctest serves gRPC services in memory for unit tests: a
// server on a bufconn listener and a client connection to it, both ended
// with the test. End-to-end tests use real sockets instead.
package grpctest
