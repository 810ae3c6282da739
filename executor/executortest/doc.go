// Package executortest holds the fake ExecutorService that the tests of
// the executor's clients (the planner's service and sync loop, syncpodctl)
// talk to instead of a real executor: it runs nothing, records every
// request and answers from what the test set. Register it on a gRPC
// server (over bufconn), or call its methods in-process.
package executortest
