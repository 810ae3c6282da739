// Package termination reads an exited container's termination message the
// way the kubelet does: the end of the file mounted at its
// terminationMessagePath or, with FallbackToLogsOnError, the tail of its
// log. Unlike the pure CRI translation in cri/observe it reads files,
// through the TailReader it is given.
package termination
