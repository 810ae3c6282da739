package crisim

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// bootID is the kernel's id of this boot ("" when unreadable): PIDs and
// start times only identify a process within one boot.
func bootID() string {
	b, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// procStart reads a process's start time (clock ticks after boot, field
// 22 of /proc/<pid>/stat) and whether it has ended (zombie or dead).
func procStart(pid int) (start uint64, ended bool, err error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, true, err
	}
	// The command name (field 2) is in parentheses and may hold spaces.
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, true, fmt.Errorf("/proc/%d/stat: no command name", pid)
	}
	f := strings.Fields(string(b[i+1:]))
	// f[0] is field 3 (state); field 22 is f[19].
	if len(f) < 20 {
		return 0, true, fmt.Errorf("/proc/%d/stat: %d fields", pid, len(f)+2)
	}
	start, err = strconv.ParseUint(f[19], 10, 64)
	if err != nil {
		return 0, true, fmt.Errorf("/proc/%d/stat: start time: %w", pid, err)
	}
	return start, f[0] == "Z" || f[0] == "X", nil
}

// sameProcess says whether pid is still the live process that started at
// start in boot recBoot; boot is the current boot's id.
func sameProcess(boot, recBoot string, pid int, start uint64) bool {
	if pid <= 0 || boot == "" || boot != recBoot {
		return false
	}
	s, ended, err := procStart(pid)
	return err == nil && !ended && s == start
}
