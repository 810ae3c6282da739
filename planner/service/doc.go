// Package service is the PlannerService gRPC adapter: each RPC forwards to
// the planner's core packages (Plan → validate.Request + plan.Compute), and
// errors become gRPC statuses through errgrpc.ToGRPCOp, the RPC's name
// prefixing the message (the store's sentinels carry their classes); a
// status the executor returned is passed on by errgrpc.Relay, saying it
// came from the executor. RPCs whose logic has not landed yet answer
// Unimplemented naming what is missing.
package service
