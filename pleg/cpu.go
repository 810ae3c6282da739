package pleg

import (
	"syscall"
	"time"
)

// processCPU is the CPU time (user and system) the process has used so
// far, or zero when getrusage fails; one system call, cheap enough to
// take around every relist.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
