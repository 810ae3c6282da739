// Package plannerclient holds what every client of the PlannerService
// does the same way: carrying one connection through the planner's
// PortForward stream (syncpodctl port-forward, the node agent's streaming
// server). It uses only the generated client; it opens no connection of
// its own.
package plannerclient
