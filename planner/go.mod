module github.com/syncpod/syncpod/planner

go 1.26.0

require github.com/syncpod/syncpod/proto v0.0.0

replace github.com/syncpod/syncpod/proto => ../proto
