// Package service is the PlannerService gRPC adapter: each RPC forwards to
// the planner's core packages (Plan → validate.Request + plan.Compute), and
// errors become gRPC statuses in one function, toStatus. RPCs whose logic has
// not landed yet answer Unimplemented naming what is missing.
package service
