// Package service is the ExecutorService gRPC adapter: it validates
// requests (InvalidArgument with field paths, every problem at once),
// forwards each RPC to the runner or the back-off store, and maps errors
// to gRPC codes through errgrpc.ToGRPC: the runtime's and the back-off's
// sentinels carry their classes, and classify gives a back-off store
// failure its message.
package service
