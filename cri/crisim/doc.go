// Package crisim is syncpod's own CRI runtime: a server of the real CRI
// gRPC API (runtime.v1 RuntimeService and ImageService from
// k8s.io/cri-api) whose sandboxes and containers live in memory, so the
// executor and the PLEG can run on any laptop with no root and no
// containerd. Clients talk to it over a unix socket with the kubelet's own
// client (k8s.io/cri-client) or crictl, and can tell it from containerd
// only by the runtime name "syncpod-crisim" in Version.
//
// # NO ISOLATION
//
// In the default ModeProcess a container is a plain host process running
// as the user who started crisim: its command and args are exec'd directly
// on the host (the image is ignored: there is no root filesystem, no
// namespaces, no cgroups, no resource limits, no user switching). It can
// read and write everything that user can. Only run pods you would run in
// your own shell.
//
// # Modes
//
// ModeProcess: CreateContainer records the config; StartContainer execs
// command+args (an empty command fails the start with FailedPrecondition,
// since there is no image entrypoint to fall back to) in its own process
// group, with the container's working directory (crisim's own when empty)
// and env (PATH is inherited from crisim when the config does not set it).
// stdout and stderr go to <sandbox log_directory>/<container log_path> in
// the CRI log format "<RFC3339Nano> stdout|stderr F|P <line>". When the
// first process exits, the rest of its process group is killed (as a
// container's PID namespace would be) and the exit is recorded: exit code
// as reported by the process, 128+n for a death by signal n, reason
// "Completed" for 0 and "Error" otherwise. StopContainer sends the stop
// signal (SIGTERM unless the config names another) to the process group
// and SIGKILL after the timeout. ExecSync runs the command as a host
// process with the container's working dir and env. A container created
// with stdin gets a standard input crisim keeps open (a pipe; with tty, a
// terminal that is also its stdout and stderr, a session leader): attach
// writes to it. Attach shows any process container's live output, as
// the process writes it, log path or none: its shim (or crisim) fans the
// output out to the log and every attach session (attach.go, output.go).
// stdinOnce closes the input when the first attach ends.
//
// ModeSimulated: no processes at all, for scale tests with thousands of
// containers. A started container runs until stopped, or exits on its own
// as its annotations say:
//
//	io.syncpod.crisim/exit-after     Go duration ("1.5s"); the container exits this long after it starts
//	io.syncpod.crisim/exit-code      decimal exit code for exit-after (default 0)
//	io.syncpod.crisim/ignore-sigterm "true": StopContainer waits the whole timeout, then the container dies of SIGKILL (137)
//
// A stopped simulated container dies of SIGTERM (exit code 143) unless it
// ignores it. ExecSync answers exit code 0 with no output. Log files are
// created empty.
//
// # CRI behaviour
//
//   - Sandbox metadata (name, namespace, uid, attempt) is reserved from
//     RunPodSandbox to RemovePodSandbox: running the same metadata twice
//     fails with AlreadyExists and a "name ... is reserved" message, as
//     containerd does. Container metadata (name, attempt) is reserved per
//     sandbox the same way.
//   - Unknown ids answer NotFound, except StopContainer, StopPodSandbox,
//     RemoveContainer and RemovePodSandbox, which are idempotent as CRI
//     requires (as on containerd 2.x: nothing is left to stop or remove).
//   - StopContainer and StopPodSandbox may be called any number of times.
//     A container is sent its stop signal once: a StopContainer that comes
//     while an earlier one's grace period runs (a client that restarted
//     and asks again) sends none, waits for the same exit, and brings the
//     kill forward if its own timeout ends sooner; the kill at the end of
//     the grace period happens even when the caller that asked has gone.
//     (A crisim restart forgets a stop in flight: the next one signals
//     again.)
//   - RemoveContainer of a running container kills it at once and removes
//     it, as CRI asks and containerd does.
//   - StopPodSandbox kills the sandbox's running containers at once;
//     RemovePodSandbox stops then removes them.
//   - CreateContainer needs a READY sandbox and a pulled image.
//   - Labels and annotations are kept exactly as given; timestamps are
//     nanoseconds since the Unix epoch.
//   - Sandboxes with network namespace mode NODE (host network) report no
//     IP. Every other sandbox gets a FAKE IP from 10.88.0.0/16: nothing
//     listens on it and no traffic is ever routed to it; it exists only so
//     the kubelet's "sandbox has no IP" rules see a normal pod.
//   - GetContainerEvents streams CONTAINER_CREATED/STARTED/STOPPED/DELETED
//     events for containers and, as containerd does, for sandboxes (with
//     the sandbox id as container_id). Every event carries the sandbox's
//     status and the status of the one container it is about (none for a
//     sandbox event or a DELETED container: it is gone), never the whole
//     sandbox's: a consumer merges statuses by container id, and an event
//     costs the same in a sandbox of 3,000 containers as in one of a
//     single container (the kubelet's evented PLEG expects every status
//     of the sandbox; containerd sends them, which grows with the square
//     of the sandbox's size). Every subscriber gets
//     every event in the order the changes happened; each has a bounded
//     buffer, and a subscriber that falls behind has its stream closed with
//     ResourceExhausted (counted in a metric), never a silent drop.
//   - Images are names: PullImage succeeds at once unless the name matches
//     Options.Unpullable; the image id is "sha256:" + sha256(name).
//
// # In process
//
// Services returns the runtime's CRI services as Register serves them;
// called directly they are its in-process face, which cri/critest drives
// in simulated mode as the in-memory runtime of every module's unit
// tests. SeedSandbox, SeedContainer and Forget put objects in, change
// them or drop them behind the CRI's back (no call, no event), as a
// restart finds them in the state directory.
//
// # State and restarts
//
// Without Options.StateDir all state is in memory and is lost when crisim
// stops, and Shutdown kills every process group crisim started.
//
// With a StateDir (syncpod-crisim's --data-dir; in process mode by default
// the socket path with ".state"; in simulated mode only when given, since
// each change costs a file write, about 0.8 ms on a loaded machine against
// microseconds in memory) crisim is a runtime that does not lose its
// containers, as containerd with its shims does:
//
//   - Sandboxes, containers (state, exit code, reason, timestamps,
//     attempt, labels and annotations, hence the restart count; log path)
//     and images are written to the directory, one file per object
//     replaced atomically, before the call that changed them is answered.
//     One crisim per directory (a lock file).
//   - In ModeProcess a container runs under a shim (Options.Shim: the
//     crisim binary run again as "syncpod-crisim crisim-shim"), a process
//     in its own session that owns the container's output pipes and log
//     file and writes its exit code to the directory. A container thus
//     outlives crisim (killed, crashed or stopped) with its log still
//     written and its exit code still known.
//   - On start crisim loads the directory. A RUNNING container whose shim
//     still runs (same PID, same start time, same boot id: a reused PID is
//     never mistaken for it) is re-adopted: it stays RUNNING with the same
//     id and crisim sees its exit through a pidfd. One whose shim ended
//     while crisim was down is EXITED with the code the shim recorded, or
//     with exit code 255 and reason "Unknown" (containerd's words for an
//     exit it did not see) if the shim itself died; any process it left
//     is killed. Names stay reserved, so nothing is created twice. A
//     CREATED container that a shim of the crashed crisim was still
//     starting (its start lock, held from before the spawn until the shim
//     ends, is taken) is waited for until the shim records the start, and
//     then re-adopted, so nothing is started twice either.
//     Simulated containers keep running; exit-after counts from their
//     original start.
//   - Shutdown leaves the containers running, recorded, for the next
//     crisim, unless Options.KillOnShutdown (--kill-on-exit): then it
//     kills them and records their exits.
//   - A state file that cannot be read back (corrupt, truncated, empty)
//     stops crisim from starting with an error naming the file: starting
//     empty while container processes it started may still run would
//     create every container twice. The operator stops those processes
//     (their PIDs are in the container files) and moves the file or the
//     directory aside. After a reboot no such process can exist, so an
//     unreadable file is renamed *.corrupt with a warning instead.
//   - Files are not fsync'ed: the state survives crisim's own death at
//     any instant; a host crash may lose the last changes, and ends every
//     container anyway.
package crisim
