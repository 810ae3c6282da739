package report

import (
	"bufio"
	"bytes"
	"io/fs"
	"strconv"
	"strings"
)

// Machine is what the document says of the machine a run measured on.
// Empty fields are unknown.
type Machine struct {
	// Cores is the number of CPUs the kernel offers; CPU is their model.
	Cores int
	CPU   string
	// MemoryBytes is the memory the kernel manages (MemTotal).
	MemoryBytes uint64
	// Kernel is the kernel's name and release (e.g. "Linux 6.12.48").
	Kernel string
	// OS is the distribution's name (os-release PRETTY_NAME).
	OS string
}

// ReadMachine reads the machine's facts from root, the host's file system
// (os.DirFS("/")): /proc/cpuinfo, /proc/meminfo,
// /proc/sys/kernel/{ostype,osrelease} and /etc/os-release. What it cannot
// read stays empty.
func ReadMachine(root fs.FS) Machine {
	var m Machine
	if b, err := fs.ReadFile(root, "proc/cpuinfo"); err == nil {
		sc := bufio.NewScanner(bytes.NewReader(b))
		for sc.Scan() {
			k, v, ok := strings.Cut(sc.Text(), ":")
			if !ok {
				continue
			}
			switch strings.TrimSpace(k) {
			case "processor":
				m.Cores++
			case "model name":
				if m.CPU == "" {
					m.CPU = strings.TrimSpace(v)
				}
			}
		}
	}
	if b, err := fs.ReadFile(root, "proc/meminfo"); err == nil {
		for line := range strings.Lines(string(b)) {
			if f := strings.Fields(line); len(f) >= 2 && f[0] == "MemTotal:" {
				if kb, err := strconv.ParseUint(f[1], 10, 64); err == nil {
					m.MemoryBytes = kb * 1024
				}
			}
		}
	}
	typ, _ := fs.ReadFile(root, "proc/sys/kernel/ostype")
	rel, _ := fs.ReadFile(root, "proc/sys/kernel/osrelease")
	m.Kernel = strings.TrimSpace(strings.TrimSpace(string(typ)) + " " + strings.TrimSpace(string(rel)))
	if b, err := fs.ReadFile(root, "etc/os-release"); err == nil {
		for line := range strings.Lines(string(b)) {
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), "PRETTY_NAME="); ok {
				if u, err := strconv.Unquote(v); err == nil {
					v = u
				}
				m.OS = v
			}
		}
	}
	return m
}
