// Package plan is the planner's pure core: Compute is the kubelet's
// computePodActions, a function of the desired pod, the observed (CRI-level)
// pod and the current probe results that returns the change set
// (syncpodv1.PodActions) the executor carries out in SyncPod order.
//
// # Promises
//
//   - Pure: no I/O, clock, randomness, globals or logging; it imports only the
//     standard library and the generated protobuf types.
//   - Deterministic: the same inputs give a byte-identical result, whatever
//     order the observed sandboxes and containers arrive in. Observed lists
//     are sorted (on copies) newest first by created_at, ties broken by id
//     ascending; a missing created_at counts as the oldest.
//   - Inputs are never mutated, and the result shares no memory with them.
//   - Output order: init_containers_to_start and containers_to_start in spec
//     order, containers_to_kill by container name then id,
//     containers_to_reset in the kubelet's removal order.
//   - A pod that needs nothing gets an all-empty PodActions (IsEmpty is true
//     and no field is set, as PlanResponse documents); otherwise sandbox_id and
//     attempt are filled as the rules below say.
//   - Every start and kill carries a reason enum and a human message.
//
// # Rules implemented (docs/kubelet-behaviour.md, newest algorithm)
//
//   - R-2.2.1-5: sandbox (re)creation and attempt; SANDBOX_STATE_UNSPECIFIED
//     counts as not ready; an empty ip on a pod-network sandbox is "no IP".
//     Pods being mutable, a sandbox whose recorded config_hash differs from
//     the pod's SandboxHash is re-created too (SANDBOX_REASON_CONFIG_CHANGED,
//     sandbox_id kept so R-2.5's SandboxChanged is reported); one with no
//     recorded hash is kept. Every create carries sandbox_config_hash.
//   - R-2.4a-d: kill_pod = create_sandbox; the early exits when a sandbox
//     is (re)created (policy Never after attempt 0, nothing left to start,
//     first init container only, else the regular containers to start).
//   - kill_pod when an init container failed for good, or when no
//     regular container runs or is to be started (sidecars never keep a pod).
//   - R-4.3.1-3, R-4.4, R-4.5: regular containers by state, restart
//     policy, spec hash, liveness and startup probe results.
//   - R-5.1-R-5.7: init containers and sidecars (restartable init containers)
//     walked last to first over the active statuses (R-5.2: containers whose
//     sandbox_id is the newest sandbox's id; an empty sandbox_id is never
//     active), startup/liveness probes of sidecars, "pod initialised".
//   - Removed containers (no kubelet rule: pods are mutable here): a RUNNING
//     instance whose name is in no container list is killed with
//     KILL_REASON_REMOVED_FROM_SPEC and never restarted (the executor runs
//     its preStop hook from the instance's annotations, R-9.6).
//   - ephemeral containers with no instance in any sandbox are
//     listed in ephemeral_containers_to_start once the sandbox needs no
//     change, even while initialising; never restarted; never for a deleted
//     pod or one being killed; they keep no pod alive and are not removed.
//   - change detection by SpecHash (syncpod hashes every field that reaches
//     the CRI config, see SpecHash; an empty or different recorded hash means
//     "definition changed").
//   - R-12.1-3: container-level restart_policy and restart_policy_rules
//     (ContainerRestartRules is always on: the proto carries the fields).
//   - RestartAllContainers rules. When the newest instance of
//     an init or regular container exited with a code that matched such a
//     rule, the plan is containers_to_reset alone (every instance of every
//     init and regular container, in any sandbox), or, when the sandbox must
//     be replaced, the new sandbox with nothing started. The kubelet reads
//     the same fact from the pod's AllContainersRestarting condition; here
//     it comes from the observed pod, which holds the triggering instance
//     until the reset removes it last.
//
// Not modelled here: R-4.1 (a runtime-manager hook), R-2.5 and,
// R-5.9 (what SyncPod does with the actions: the executor's job) and
// in-place resize.
//
// # Probe results
//
// A ContainerProbeResults entry applies to the instance whose id equals its
// container_id. An entry with an empty container_id applies to whichever
// instance of that name Compute examines: the newest one for a regular
// container, the newest one in the current sandbox for an init container (an
// entry with a matching id wins over it). A result for a probe that the
// container spec does not define is ignored: the kubelet has no such result
// . PROBE_RESULT_UNSPECIFIED means "no result yet".
//
// # Deleted pods
//
// A pod with a deletion_time never (re)starts anything: no sandbox
// is created (the kill remains, as in R-2.4a), no init or regular container is
// started, a running container that must be killed is killed without a
// restart, and a failed init container then kills the pod.
// Running containers are otherwise kept: stopping a terminating pod with its
// grace period is the sync loop's job, not Compute's.
//
// The scenarios in testdata/scenarios/*.txt replay pods' lives through
// Compute as golden files (go test -rewrite rewrites their expected output).
package plan
