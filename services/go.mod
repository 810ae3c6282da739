module github.com/syncpod/syncpod/services

go 1.26.0

require (
	github.com/syncpod/syncpod/executor v0.0.0
	github.com/syncpod/syncpod/planner v0.0.0
	github.com/syncpod/syncpod/pleg v0.0.0
	github.com/syncpod/syncpod/proto v0.0.0
)

replace (
	github.com/syncpod/syncpod/executor => ../executor
	github.com/syncpod/syncpod/planner => ../planner
	github.com/syncpod/syncpod/pleg => ../pleg
	github.com/syncpod/syncpod/proto => ../proto
)
