// Package plannerclient holds what every client of the PlannerService
// does the same way (syncpodctl, the node agent's streaming server):
// carrying one connection through the planner's PortForward stream, and
// opening an Exec or Attach session. It uses only the generated client;
// it opens no connection of its own.
package plannerclient
