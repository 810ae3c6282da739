// Package status computes a pod's user-facing status, as the kubelet's
// status manager reports it, from what syncpod knows: the desired pod, the
// runtime state the PLEG observed, the step results of the last executor
// call, the probe results, and the previous status.
//
// It is a pure function (Compute): same input, same output; nothing is
// read from the clock or modified. What it reproduces:
//
//   - container states: running; terminated with reason Completed, Error
//     or the runtime's (OOMKilled); waiting ContainerCreating or, when the
//     pod has init containers, PodInitializing; waiting with the reason of
//     the last failed or skipped start (CrashLoopBackOff with the back-off
//     remaining, ImagePullBackOff, ErrImagePull, ErrImageNeverPull,
//     CreateContainerError, RunContainerError), the previous termination
//     then moving to last_termination_state;
//   - restart counts (the executor's count on the newest instance), ready
//     and started flags from the readiness and startup probes;
//   - the phase, following the kubelet's getPhase: Pending while
//     initialising or while any container waits for its first start,
//     Failed when an init container failed and may not restart, Running
//     while anything runs or will be restarted, Succeeded when every
//     container exited 0 and none restarts, Failed otherwise. Container
//     restart policies and restart rules are honoured per
//     container. A terminal phase (Succeeded, Failed) sticks for the same
//     pod generation, as the kubelet never leaves a terminal phase;
//   - conditions Initialized, ContainersReady and Ready with reasons
//     (ContainersNotInitialized, ContainersNotReady, PodCompleted) and
//     transition times carried over from the previous status while the
//     condition keeps its value;
//   - pod IP (newest ready pod-network sandbox), start time (first status).
package status
