module github.com/syncpod/syncpod/cri

go 1.26.0

replace github.com/syncpod/syncpod/proto => ../proto
