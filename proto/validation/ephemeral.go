package validation

import (
	"fmt"

	"google.golang.org/protobuf/proto"

	"github.com/syncpod/syncpod/proto/fielderr"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// ephemeralForbidden is what the API server says of a field an ephemeral
// container may not set.
const ephemeralForbidden = "cannot be set for an ephemeral container"

// ephemeral checks spec.ephemeral_containers as the API server does
// (validateEphemeralContainers, rule ): each is a container (name,
// image, env, security context, mounts), its name unique among all the
// pod's containers (names holds the init and regular ones, by path), its
// target an init or regular container, and none of the fields that would
// make it part of the workload: ports, probes, lifecycle hooks, resources,
// restart policy and rules, sub-path mounts.
func (l *list) ephemeral(s *syncpodv1.PodSpec, names map[string]string) {
	others := make(map[string]bool, len(names))
	for n := range names {
		others[n] = true
	}
	for i, c := range s.GetEphemeralContainers() {
		path := fmt.Sprintf("spec.ephemeral_containers[%d]", i)
		if c == nil {
			l.Add(path, "required")
			continue
		}
		target := c.GetTargetContainerName()
		// Checked as a regular container, minus the fields below, which
		// get the ephemeral message instead.
		bare := proto.CloneOf(c)
		bare.Ports, bare.Resources, bare.LivenessProbe, bare.ReadinessProbe, bare.StartupProbe = nil, nil, nil, nil, nil
		bare.RestartPolicy, bare.RestartPolicyRules, bare.TargetContainerName = syncpodv1.ContainerRestartPolicy_CONTAINER_RESTART_POLICY_UNSPECIFIED, nil, ""
		bare.ResizePolicy = nil
		l.container(path, bare, false, s.GetHostNetwork())
		if n := c.GetName(); n != "" {
			if prev, dup := names[n]; dup {
				l.Add(path+".name", "duplicate name %s (also %s.name)", fielderr.Quote(n), prev)
			} else {
				names[n] = path
			}
		}
		if target != "" && !others[target] {
			l.Add(path+".target_container_name", "%s is not an init or regular container of the pod", fielderr.Quote(target))
		}
		for _, f := range []struct {
			name string
			set  bool
		}{
			{"ports", len(c.GetPorts()) > 0},
			{"resources", proto.Size(c.GetResources()) > 0},
			{"liveness_probe", c.GetLivenessProbe() != nil},
			{"readiness_probe", c.GetReadinessProbe() != nil},
			{"startup_probe", c.GetStartupProbe() != nil},
			{"lifecycle", c.GetLifecycle() != nil},
			{"restart_policy", c.GetRestartPolicy() != syncpodv1.ContainerRestartPolicy_CONTAINER_RESTART_POLICY_UNSPECIFIED},
			{"restart_policy_rules", len(c.GetRestartPolicyRules()) > 0},
			{"resize_policy", len(c.GetResizePolicy()) > 0},
		} {
			if f.set {
				l.Add(path+"."+f.name, ephemeralForbidden)
			}
		}
		for j, m := range c.GetVolumeMounts() {
			if m.GetSubPath() != "" {
				l.Add(fmt.Sprintf("%s.volume_mounts[%d].sub_path", path, j), ephemeralForbidden)
			}
		}
	}
}
