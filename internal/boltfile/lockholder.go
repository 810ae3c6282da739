package boltfile

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// lockHolder returns the pid holding a flock on path, from /proc/locks;
// 0 when it cannot tell.
func lockHolder(path string) int {
	fi, err := os.Stat(path)
	if err != nil {
		return 0
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0
	}
	f, err := os.Open("/proc/locks")
	if err != nil {
		return 0
	}
	defer f.Close()
	// "1: FLOCK  ADVISORY  WRITE 4242 fd:01:123456 0 EOF"; waiters have
	// "->" after the number and are skipped.
	dev := uint64(st.Dev)
	major := (dev>>8)&0xfff | (dev>>32)&^0xfff
	minor := dev&0xff | (dev>>12)&^0xff
	byDevice, byInode, inodeHits := 0, 0, 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 6 || fields[1] != "FLOCK" {
			continue
		}
		id := strings.Split(fields[5], ":")
		if len(id) != 3 || id[2] != strconv.FormatUint(st.Ino, 10) {
			continue
		}
		pid, err := strconv.Atoi(fields[4])
		if err != nil {
			continue
		}
		ma, err1 := strconv.ParseUint(id[0], 16, 32)
		mi, err2 := strconv.ParseUint(id[1], 16, 32)
		if err1 == nil && err2 == nil && ma == major && mi == minor {
			byDevice = pid
		}
		byInode = pid
		inodeHits++
	}
	if byDevice != 0 {
		return byDevice
	}
	if inodeHits == 1 { // overlay file systems report the lower device
		return byInode
	}
	return 0
}
