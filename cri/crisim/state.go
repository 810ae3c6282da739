package crisim

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// The state directory (Options.StateDir) holds everything crisim must not
// forget when it restarts:
//
//	<state dir>/
//	  LOCK                    flock'ed by the running crisim: one crisim per directory
//	  VERSION                 schema version, "1"
//	  BOOT_ID                 the kernel boot id the state was last opened under
//	  images.json             pulled image names
//	  sandboxes/<id>.json     one sandboxRecord per sandbox
//	  containers/<id>.json    one containerRecord per container, with the
//	                          identity of its live process
//	  exits/<id>.json         a container's exit, written by its shim
//	  exits/<id>.started.json its processes, written by its shim once started
//
// Every file is written whole to a temporary name and renamed into place,
// so a reader (and a crisim restarted after a SIGKILL at any instant) sees
// the old or the new record, never a torn one. A change is written before
// the CRI call that made it is answered. Files are not fsync'ed: the state
// survives crisim's own death at any instant; a host crash may lose the
// last changes, and kills every container process anyway.
const stateVersion = "1"

// ErrStateCorrupt: a state file cannot be read back. crisim refuses to
// start rather than start empty while container processes it started may
// still run.
var ErrStateCorrupt = errors.New("crisim state is corrupt")

// ErrStateLocked: another crisim holds the state directory.
var ErrStateLocked = errors.New("crisim state directory is in use")

// sandboxRecord is a sandbox on disk.
type sandboxRecord struct {
	ID          string            `json:"id"`
	Name        string            `json:"name"`
	Namespace   string            `json:"namespace"`
	UID         string            `json:"uid"`
	Attempt     uint32            `json:"attempt"`
	Labels      map[string]string `json:"labels,omitempty"`
	Annotations map[string]string `json:"annotations,omitempty"`
	LogDir      string            `json:"log_dir,omitempty"`
	HostNetwork bool              `json:"host_network,omitempty"`
	NetNS       int32             `json:"netns_mode"`
	PidNS       int32             `json:"pidns_mode"`
	IpcNS       int32             `json:"ipcns_mode"`
	NSTarget    string            `json:"ns_target_id,omitempty"`
	Handler     string            `json:"handler,omitempty"`
	IP          string            `json:"ip,omitempty"`
	State       int32             `json:"state"`
	CreatedAt   int64             `json:"created_at"`
}

// containerRecord is a container on disk.
type containerRecord struct {
	ID                 string            `json:"id"`
	SandboxID          string            `json:"sandbox_id"`
	Name               string            `json:"name"`
	Attempt            uint32            `json:"attempt"`
	Image              string            `json:"image"`
	ImageAnnotations   map[string]string `json:"image_annotations,omitempty"`
	UserSpecifiedImage string            `json:"user_specified_image,omitempty"`
	ImageRef           string            `json:"image_ref"`
	Command            []string          `json:"command,omitempty"`
	Args               []string          `json:"args,omitempty"`
	WorkingDir         string            `json:"working_dir,omitempty"`
	Env                []string          `json:"env,omitempty"`
	Labels             map[string]string `json:"labels,omitempty"`
	Annotations        map[string]string `json:"annotations,omitempty"`
	LogPath            string            `json:"log_path,omitempty"`
	StopSignal         int32             `json:"stop_signal,omitempty"`
	Resources          *resourcesRecord  `json:"resources,omitempty"`
	User               *processCred      `json:"user,omitempty"`
	State              int32             `json:"state"`
	CreatedAt          int64             `json:"created_at"`
	StartedAt          int64             `json:"started_at,omitempty"`
	FinishedAt         int64             `json:"finished_at,omitempty"`
	ExitCode           int32             `json:"exit_code"`
	Reason             string            `json:"reason,omitempty"`
	Message            string            `json:"message,omitempty"`
	Stdin              bool              `json:"stdin,omitempty"`
	StdinOnce          bool              `json:"stdin_once,omitempty"`
	TTY                bool              `json:"tty,omitempty"`
	// Proc identifies the live process of a RUNNING process-mode
	// container; nil for a simulated one.
	Proc *procRecord `json:"proc,omitempty"`
	// PathMap is the container's mount map (mounts.go).
	PathMap []pathMapping `json:"path_map,omitempty"`
}

// resourcesRecord is a container's Linux resources on disk.
type resourcesRecord struct {
	CPUShares   int64 `json:"cpu_shares,omitempty"`
	CPUPeriod   int64 `json:"cpu_period,omitempty"`
	CPUQuota    int64 `json:"cpu_quota,omitempty"`
	MemoryLimit int64 `json:"memory_limit_in_bytes,omitempty"`
}

// procRecord identifies a container's processes safely across a crisim
// restart: a PID alone may have been reused, a PID with its start time
// (in clock ticks since boot) under the same boot id may not.
type procRecord struct {
	BootID     string `json:"boot_id"`
	PID        int    `json:"pid"`
	Start      uint64 `json:"start_ticks"`
	ShimPID    int    `json:"shim_pid"`
	ShimStart  uint64 `json:"shim_start_ticks"`
	StopSignal int32  `json:"stop_signal"`
	// StartedAt is set in a shim's started file only.
	StartedAt int64 `json:"started_at,omitempty"`
}

// exitRecord is what a shim writes when its container exits.
type exitRecord struct {
	ExitCode   int32 `json:"exit_code"`
	FinishedAt int64 `json:"finished_at"`
}

// store is the state directory of one running crisim.
type store struct {
	dir  string
	lock *os.File
	boot string // this boot's id
	// rebooted: the state was last opened under another boot, so no
	// process it names can still run.
	rebooted bool
}

// openStore creates or opens dir, takes its lock and checks its version.
func openStore(dir string) (*store, error) {
	for _, d := range []string{dir, filepath.Join(dir, "sandboxes"), filepath.Join(dir, "containers"), filepath.Join(dir, "exits")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, fmt.Errorf("state dir: %w", err)
		}
	}
	lock, err := os.OpenFile(filepath.Join(dir, "LOCK"), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("state dir: %w", err)
	}
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		b, _ := os.ReadFile(lock.Name())
		lock.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w: %s is locked by another syncpod-crisim (pid %s); stop it or give this one another --state-dir", ErrStateLocked, dir, strings.TrimSpace(string(b)))
		}
		return nil, fmt.Errorf("state dir: lock %s: %w", lock.Name(), err)
	}
	_ = lock.Truncate(0)
	_, _ = lock.WriteAt([]byte(fmt.Sprintf("%d\n", os.Getpid())), 0)
	s := &store{dir: dir, lock: lock, boot: bootID()}
	fail := func(err error) (*store, error) { s.close(); return nil, err }
	switch v, err := os.ReadFile(filepath.Join(dir, "VERSION")); {
	case errors.Is(err, os.ErrNotExist):
		if err := s.write("VERSION", []byte(stateVersion+"\n")); err != nil {
			return fail(err)
		}
	case err != nil:
		return fail(fmt.Errorf("state dir: %w", err))
	case strings.TrimSpace(string(v)) != stateVersion:
		return fail(fmt.Errorf("%w: %s holds state version %q; this syncpod-crisim reads version %s", ErrStateCorrupt, filepath.Join(dir, "VERSION"), strings.TrimSpace(string(v)), stateVersion))
	}
	if b, err := os.ReadFile(filepath.Join(dir, "BOOT_ID")); err == nil && strings.TrimSpace(string(b)) != s.boot {
		s.rebooted = true
	}
	if err := s.write("BOOT_ID", []byte(s.boot+"\n")); err != nil {
		return fail(err)
	}
	return s, nil
}

func (s *store) close() {
	if s.lock != nil {
		_ = s.lock.Close() // releases the flock
		s.lock = nil
	}
}

// write replaces dir/rel atomically.
func (s *store) write(rel string, data []byte) error {
	path := filepath.Join(s.dir, rel)
	if err := writeAtomic(path, data); err != nil {
		return fmt.Errorf("write state %s: %w", path, err)
	}
	return nil
}

func (s *store) remove(rel string) error {
	if err := os.Remove(filepath.Join(s.dir, rel)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove state %s: %w", filepath.Join(s.dir, rel), err)
	}
	return nil
}

func (s *store) putJSON(rel string, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	return s.write(rel, b)
}

func (s *store) exitFile(id string) string { return filepath.Join(s.dir, "exits", id+".json") }

func (s *store) startedFile(id string) string {
	return filepath.Join(s.dir, "exits", id+".started.json")
}

// attachSocket is where the container's shim serves its output to
// attach sessions (output.go).
func (s *store) attachSocket(id string) string {
	return filepath.Join(s.dir, "exits", id+".attach.sock")
}

// startLockFile is the container's start lock (see takeStartLock).
func (s *store) startLockFile(id string) string {
	return filepath.Join(s.dir, "exits", id+".start.lock")
}

// readStarted reads the started file a shim wrote for container id.
func (s *store) readStarted(id string) (*procRecord, bool) {
	var p procRecord
	b, err := os.ReadFile(s.startedFile(id))
	if err != nil || json.Unmarshal(b, &p) != nil || p.PID <= 0 {
		return nil, false
	}
	return &p, true
}

// loaded is what a state directory holds.
type loaded struct {
	sandboxes  []*sandboxRecord
	containers []*containerRecord
	images     []string
	// discarded names unreadable files set aside after a reboot.
	discarded []string
}

// load reads every record. An unreadable file fails the load, naming the
// file and what to do, unless the host rebooted since the state was
// written (then no process it names can run): the file is renamed
// <name>.corrupt and reported in discarded.
func (s *store) load() (*loaded, error) {
	out := &loaded{}
	var errs []error
	bad := func(path string, err error) {
		if s.rebooted {
			if rerr := os.Rename(path, path+".corrupt"); rerr == nil {
				out.discarded = append(out.discarded, path)
				return
			}
		}
		errs = append(errs, fmt.Errorf("%s: %w", path, err))
	}
	read := func(path string, v any) bool {
		b, err := os.ReadFile(path)
		if err != nil {
			bad(path, err)
			return false
		}
		if len(b) == 0 {
			bad(path, errors.New("empty file"))
			return false
		}
		if err := json.Unmarshal(b, v); err != nil {
			bad(path, err)
			return false
		}
		return true
	}
	if p := filepath.Join(s.dir, "images.json"); fileExists(p) {
		read(p, &out.images)
	}
	for _, kind := range []string{"sandboxes", "containers", "exits"} {
		entries, err := os.ReadDir(filepath.Join(s.dir, kind))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, e := range entries {
			name := e.Name()
			path := filepath.Join(s.dir, kind, name)
			if strings.HasPrefix(name, ".") && strings.HasSuffix(name, ".tmp") {
				if kind != "exits" { // a live shim may be writing there
					_ = os.Remove(path) // a write cut short: the old record stands
				}
				continue
			}
			if !strings.HasSuffix(name, ".json") || kind == "exits" {
				continue
			}
			id := strings.TrimSuffix(name, ".json")
			switch kind {
			case "sandboxes":
				var r sandboxRecord
				if read(path, &r) {
					if r.ID != id {
						bad(path, fmt.Errorf("holds sandbox %q", r.ID))
						continue
					}
					out.sandboxes = append(out.sandboxes, &r)
				}
			case "containers":
				var r containerRecord
				if read(path, &r) {
					if r.ID != id {
						bad(path, fmt.Errorf("holds container %q", r.ID))
						continue
					}
					out.containers = append(out.containers, &r)
				}
			}
		}
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("%w: %w\ncrisim will not start empty while container processes it started may still run. "+
			"Stop those processes (their PIDs are in %s/containers/*.json), then move the named files aside (losing those objects) or the whole state dir", ErrStateCorrupt, errors.Join(errs...), s.dir)
	}
	return out, nil
}

// readExit reads a container's exit file, if its shim wrote one.
func (s *store) readExit(id string) (exitRecord, bool) {
	var e exitRecord
	b, err := os.ReadFile(s.exitFile(id))
	if err != nil || json.Unmarshal(b, &e) != nil {
		return e, false
	}
	return e, true
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

func (sb *sandbox) record() *sandboxRecord {
	rec := &sandboxRecord{
		ID: sb.id, Name: sb.meta.GetName(), Namespace: sb.meta.GetNamespace(), UID: sb.meta.GetUid(), Attempt: sb.meta.GetAttempt(),
		Labels: sb.labels, Annotations: sb.annotations, LogDir: sb.logDir, HostNetwork: sb.hostNetwork,
		NetNS: int32(sb.nsOptions.GetNetwork()), PidNS: int32(sb.nsOptions.GetPid()), IpcNS: int32(sb.nsOptions.GetIpc()), NSTarget: sb.nsOptions.GetTargetId(),
		Handler: sb.handler, State: int32(sb.state), CreatedAt: sb.createdAt,
	}
	if sb.ip.IsValid() {
		rec.IP = sb.ip.String()
	}
	return rec
}

func sandboxFromRecord(rec *sandboxRecord) (*sandbox, error) {
	sb := &sandbox{
		id:          rec.ID,
		meta:        &runtimeapi.PodSandboxMetadata{Name: rec.Name, Namespace: rec.Namespace, Uid: rec.UID, Attempt: rec.Attempt},
		labels:      maps.Clone(rec.Labels),
		annotations: maps.Clone(rec.Annotations),
		logDir:      rec.LogDir,
		hostNetwork: rec.HostNetwork,
		nsOptions: &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode(rec.NetNS), Pid: runtimeapi.NamespaceMode(rec.PidNS),
			Ipc: runtimeapi.NamespaceMode(rec.IpcNS), TargetId: rec.NSTarget},
		handler:    rec.Handler,
		reservedAs: fmt.Sprintf("%s_%s_%s_%d", rec.Name, rec.Namespace, rec.UID, rec.Attempt),
		state:      runtimeapi.PodSandboxState(rec.State),
		createdAt:  rec.CreatedAt,
	}
	if rec.IP != "" {
		ip, err := netip.ParseAddr(rec.IP)
		if err != nil {
			return nil, fmt.Errorf("sandbox %s: ip: %w", rec.ID, err)
		}
		sb.ip = ip
	}
	return sb, nil
}

func (c *container) record() *containerRecord {
	rec := &containerRecord{
		ID: c.id, SandboxID: c.sandboxID, Name: c.meta.GetName(), Attempt: c.meta.GetAttempt(),
		Image: c.image.GetImage(), ImageAnnotations: c.image.GetAnnotations(), UserSpecifiedImage: c.image.GetUserSpecifiedImage(), ImageRef: c.imageRef,
		Command: c.command, Args: c.args, WorkingDir: c.workingDir, Env: c.env,
		Stdin: c.stdin, StdinOnce: c.stdinOnce, TTY: c.tty,
		Labels: c.labels, Annotations: c.annotations, LogPath: c.logPath, StopSignal: int32(c.stopSignal), User: c.user,
		State: int32(c.state), CreatedAt: c.createdAt, StartedAt: c.startedAt, FinishedAt: c.finishedAt,
		ExitCode: c.exitCode, Reason: c.reason, Message: c.message, PathMap: c.pathMap,
	}
	if l := c.resources; l != nil {
		rec.Resources = &resourcesRecord{CPUShares: l.GetCpuShares(), CPUPeriod: l.GetCpuPeriod(),
			CPUQuota: l.GetCpuQuota(), MemoryLimit: l.GetMemoryLimitInBytes()}
	}
	if c.state == runtimeapi.ContainerState_CONTAINER_RUNNING {
		if p, ok := c.run.(interface{ proc() *procRecord }); ok {
			rec.Proc = p.proc()
		}
	}
	return rec
}

func containerFromRecord(rec *containerRecord) *container {
	return &container{
		id:        rec.ID,
		sandboxID: rec.SandboxID,
		meta:      &runtimeapi.ContainerMetadata{Name: rec.Name, Attempt: rec.Attempt},
		image: &runtimeapi.ImageSpec{Image: rec.Image, Annotations: maps.Clone(rec.ImageAnnotations),
			UserSpecifiedImage: rec.UserSpecifiedImage},
		imageRef:    rec.ImageRef,
		command:     slices.Clone(rec.Command),
		args:        slices.Clone(rec.Args),
		workingDir:  rec.WorkingDir,
		stdin:       rec.Stdin,
		stdinOnce:   rec.StdinOnce,
		tty:         rec.TTY,
		env:         slices.Clone(rec.Env),
		pathMap:     slices.Clone(rec.PathMap),
		labels:      maps.Clone(rec.Labels),
		annotations: maps.Clone(rec.Annotations),
		logPath:     rec.LogPath,
		stopSignal:  runtimeapi.Signal(rec.StopSignal),
		resources:   rec.Resources.linux(),
		user:        rec.User,
		reservedAs:  fmt.Sprintf("%s_%s_%d", rec.SandboxID, rec.Name, rec.Attempt),
		state:       runtimeapi.ContainerState(rec.State),
		createdAt:   rec.CreatedAt,
		startedAt:   rec.StartedAt,
		finishedAt:  rec.FinishedAt,
		exitCode:    rec.ExitCode,
		reason:      rec.Reason,
		message:     rec.Message,
	}
}

func (r *resourcesRecord) linux() *runtimeapi.LinuxContainerResources {
	if r == nil {
		return nil
	}
	return &runtimeapi.LinuxContainerResources{CpuShares: r.CPUShares, CpuPeriod: r.CPUPeriod,
		CpuQuota: r.CPUQuota, MemoryLimitInBytes: r.MemoryLimit}
}
