// Package service is the ExecutorService gRPC adapter: it validates
// requests (InvalidArgument with field paths, every problem at once),
// forwards each RPC to the runner or the back-off store, and maps error
// classes to gRPC codes in one function, ToGRPC.
package service
