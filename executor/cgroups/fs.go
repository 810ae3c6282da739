package cgroups

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// DefaultFSRoot is where the cgroup filesystems are mounted.
const DefaultFSRoot = "/sys/fs/cgroup"

// hierarchy is the filesystem the cgroups live in: one cgroup2 tree, or
// the cgroup v1 trees (a directory per mounted hierarchy: cpu, memory,
// pids, the named systemd one ...).
type hierarchy struct {
	root string
	v2   bool
	// dirs are the v1 hierarchies' mount points (symlinks resolved, each
	// once), sorted; for v2, just root.
	dirs []string
	// hybrid is, on a v1 host, the cgroup2 tree mounted beside the v1
	// ones (/sys/fs/cgroup/unified), or "". Nothing is made or set there,
	// but runc makes the cgroup parent's directories in it too, so pod
	// cgroups are removed from it.
	hybrid string
}

// probe reads the layout under root: cgroup v2 when root itself is a
// cgroup2 tree (it has cgroup.controllers), else every directory under it
// that is a v1 hierarchy (has cgroup.procs and no cgroup.controllers; a
// hybrid host's cgroup2 tree is only cleaned, see hierarchy.hybrid).
func probe(root string) (hierarchy, error) {
	if _, err := os.Stat(filepath.Join(root, "cgroup.controllers")); err == nil {
		return hierarchy{root: root, v2: true, dirs: []string{root}}, nil
	}
	ents, err := os.ReadDir(root)
	if err != nil {
		return hierarchy{}, fmt.Errorf("cgroup filesystem: %w", err)
	}
	seen := map[string]bool{}
	h := hierarchy{root: root}
	for _, e := range ents {
		d := filepath.Join(root, e.Name())
		real, err := filepath.EvalSymlinks(d)
		if err != nil || seen[real] {
			continue
		}
		if fi, err := os.Stat(real); err != nil || !fi.IsDir() {
			continue
		}
		if !exists(filepath.Join(real, "cgroup.procs")) {
			continue
		}
		if exists(filepath.Join(real, "cgroup.controllers")) {
			seen[real] = true
			h.hybrid = real
			continue
		}
		seen[real] = true
		h.dirs = append(h.dirs, real)
	}
	if len(h.dirs) == 0 {
		return hierarchy{}, fmt.Errorf("no cgroup v1 or v2 hierarchy under %s", root)
	}
	slices.Sort(h.dirs)
	return h, nil
}

func exists(p string) bool {
	_, err := os.Lstat(p)
	return err == nil
}

// all are the trees pod cgroups are removed from: dirs and, on a hybrid
// host, the cgroup2 tree.
func (h hierarchy) all() []string {
	if h.hybrid == "" {
		return h.dirs
	}
	return append(slices.Clone(h.dirs), h.hybrid)
}

// controller is the v1 hierarchy directory that has a controller (the
// one whose mount point name lists it: "cpu", "cpu,cpuacct"), or "".
func (h hierarchy) controller(name string) string {
	if h.v2 {
		return h.root
	}
	for _, d := range h.dirs {
		for _, c := range strings.Split(filepath.Base(d), ",") {
			if c == name {
				return d
			}
		}
	}
	return ""
}

// v2Controllers are the controllers enabled for the children of every
// cgroup this package makes on v2 (those the parent offers).
var v2Controllers = []string{"cpu", "cpuset", "hugetlb", "io", "memory", "pids"}

// create makes the cgroup at rel (a driver path) in every hierarchy,
// parents included. A v1 cpuset cgroup gets its parent's CPUs and memory
// nodes (a new cpuset is empty and would admit no process); on v2 each
// new cgroup's parent enables the controllers it offers for its
// children.
func (h hierarchy) create(rel string) error {
	for _, d := range h.dirs {
		if err := h.mkdirs(d, rel); err != nil {
			return err
		}
	}
	return nil
}

func (h hierarchy) mkdirs(base, rel string) error {
	parts := strings.Split(strings.Trim(rel, "/"), "/")
	cur := base
	for _, p := range parts {
		parent := cur
		cur = filepath.Join(cur, p)
		if exists(cur) {
			continue
		}
		if h.v2 {
			if err := enableControllers(parent); err != nil {
				return err
			}
		}
		if err := os.Mkdir(cur, 0o755); err != nil && !errors.Is(err, fs.ErrExist) {
			return fmt.Errorf("create cgroup %s: %w", cur, err)
		}
		if !h.v2 && strings.Contains(filepath.Base(base), "cpuset") {
			for _, f := range []string{"cpuset.cpus", "cpuset.mems"} {
				if err := inherit(parent, cur, f); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// enableControllers writes "+c" to dir's cgroup.subtree_control for each
// wanted controller dir offers (a missing list, as in a bare test tree,
// enables nothing).
func enableControllers(dir string) error {
	b, err := os.ReadFile(filepath.Join(dir, "cgroup.controllers"))
	if err != nil {
		return nil
	}
	var want []string
	for _, c := range strings.Fields(string(b)) {
		if slices.Contains(v2Controllers, c) {
			want = append(want, "+"+c)
		}
	}
	if len(want) == 0 {
		return nil
	}
	return writeFile(dir, "cgroup.subtree_control", strings.Join(want, " "))
}

// inherit copies a v1 cpuset file from parent into child when the child's
// is empty.
func inherit(parent, child, name string) error {
	cur, err := os.ReadFile(filepath.Join(child, name))
	if err == nil && strings.TrimSpace(string(cur)) != "" {
		return nil
	}
	val, err := os.ReadFile(filepath.Join(parent, name))
	if err != nil {
		return nil // nothing to inherit (a test tree)
	}
	return writeFile(child, name, strings.TrimSpace(string(val)))
}

// writeFile writes one cgroup control file. Creating it is allowed so a
// plain directory tree stands in for cgroupfs in tests; on a real cgroup
// filesystem every control file exists already.
func writeFile(dir, name, val string) error {
	f, err := os.OpenFile(filepath.Join(dir, name), os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("cgroup %s: %w", dir, err)
	}
	if _, err := f.WriteString(val); err != nil {
		f.Close()
		return fmt.Errorf("cgroup %s: write %s=%q: %w", dir, name, val, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("cgroup %s: write %s=%q: %w", dir, name, val, err)
	}
	return nil
}

// file is one control file write.
type file struct {
	controller, name, value string
}

// files are the writes of c, in the order they must happen, for v1 or v2.
func files(c Config, v2 bool) []file {
	var out []file
	u := func(v uint64) string { return strconv.FormatUint(v, 10) }
	i := func(v int64) string { return strconv.FormatInt(v, 10) }
	if !v2 {
		if c.CPUShares != nil && *c.CPUShares != 0 {
			out = append(out, file{"cpu", "cpu.shares", u(*c.CPUShares)})
		}
		if c.CPUPeriod != nil && *c.CPUPeriod != 0 {
			out = append(out, file{"cpu", "cpu.cfs_period_us", u(*c.CPUPeriod)})
		}
		if c.CPUQuota != nil && *c.CPUQuota != 0 {
			out = append(out, file{"cpu", "cpu.cfs_quota_us", i(*c.CPUQuota)})
		}
		if c.Memory != nil && *c.Memory != 0 {
			out = append(out, file{"memory", "memory.limit_in_bytes", i(*c.Memory)})
		}
		return append(out, pids(c)...)
	}
	if c.CPUShares != nil && *c.CPUShares != 0 {
		out = append(out, file{"cpu", "cpu.weight", u(SharesToWeight(*c.CPUShares))})
	}
	var quota int64
	var period uint64
	if c.CPUQuota != nil {
		quota = *c.CPUQuota
	}
	if c.CPUPeriod != nil {
		period = *c.CPUPeriod
	}
	if quota != 0 || period != 0 {
		v := "max"
		if quota > 0 {
			v = i(quota)
		}
		if period == 0 {
			period = QuotaPeriod
		}
		out = append(out, file{"cpu", "cpu.max", v + " " + u(period)})
	}
	if c.Memory != nil && *c.Memory != 0 {
		v := i(*c.Memory)
		if *c.Memory < 0 {
			v = "max"
		}
		out = append(out, file{"memory", "memory.max", v})
	}
	out = append(out, pids(c)...)
	keys := make([]string, 0, len(c.Unified))
	for k := range c.Unified {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		out = append(out, file{"memory", k, c.Unified[k]})
	}
	return out
}

// pids is pids.max, the same file in both versions ("max": no limit).
func pids(c Config) []file {
	if c.PidsLimit == nil || *c.PidsLimit == 0 {
		return nil
	}
	v := strconv.FormatInt(*c.PidsLimit, 10)
	if *c.PidsLimit < 0 {
		v = "max"
	}
	return []file{{"pids", "pids.max", v}}
}

// set writes c into the cgroup at rel.
func (h hierarchy) set(rel string, c Config) error {
	for _, f := range files(c, h.v2) {
		d := h.controller(f.controller)
		if d == "" {
			continue // the host does not mount that controller
		}
		if err := writeFile(filepath.Join(d, rel), f.name, f.value); err != nil {
			return err
		}
	}
	return nil
}

// remove deletes the cgroup at rel from every hierarchy, the cgroups the
// runtime left under it first (rmdir removes only a cgroup with no
// process in it). A cgroup already gone counts as removed.
func (h hierarchy) remove(rel string) error {
	var errs []error
	for _, d := range h.all() {
		if err := rmTree(filepath.Join(d, rel)); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// rmTree removes dir and the directories under it, deepest first. On
// cgroupfs a directory's control files vanish with it; in a plain test
// tree they are files and are removed first.
func rmTree(dir string) error {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("remove cgroup %s: %w", dir, err)
	}
	for _, e := range ents {
		if e.IsDir() {
			if err := rmTree(filepath.Join(dir, e.Name())); err != nil {
				return err
			}
		}
	}
	err = os.Remove(dir)
	if err != nil && !errors.Is(err, fs.ErrNotExist) && !isCgroupFS(dir) {
		// A plain directory (tests): its files go, then the directory.
		for _, e := range ents {
			if !e.IsDir() {
				_ = os.Remove(filepath.Join(dir, e.Name()))
			}
		}
		err = os.Remove(dir)
	}
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove cgroup %s: %w", dir, err)
	}
	return nil
}

// isCgroupFS reports whether dir is on a cgroup filesystem.
func isCgroupFS(dir string) bool { return statfsCgroup(filepath.Dir(dir)) }

// list returns the names of the directories directly under rel in any
// hierarchy, sorted.
func (h hierarchy) list(rel string) ([]string, error) {
	var out []string
	seen := map[string]bool{}
	for _, d := range h.all() {
		ents, err := os.ReadDir(filepath.Join(d, rel))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		for _, e := range ents {
			if e.IsDir() && !seen[e.Name()] {
				seen[e.Name()] = true
				out = append(out, e.Name())
			}
		}
	}
	slices.Sort(out)
	return out, nil
}

// has reports whether the cgroup at rel exists in every hierarchy.
func (h hierarchy) has(rel string) bool {
	for _, d := range h.dirs {
		if !exists(filepath.Join(d, rel)) {
			return false
		}
	}
	return true
}
