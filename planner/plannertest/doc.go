// Package plannertest holds the fake PlannerService that the tests of the
// planner's clients (the node agent, syncpodctl) talk to instead of a
// real planner: desired pods, ConfigMaps and Secrets kept in memory, pod
// changes streamed to watchers, and every change, deletion and log
// request recorded, pod stats as set. Register it on a gRPC server (over
// bufconn). It has no plan, exec, attach or port-forward: a test that needs one
// embeds *Planner in its own type and adds the method with the behaviour
// it checks.
package plannertest
