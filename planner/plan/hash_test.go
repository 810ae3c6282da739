package plan_test

import (
	"testing"

	"google.golang.org/protobuf/proto"

	"github.com/syncpod/syncpod/planner/plan"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// hashFixtures are containers whose spec hashes are pinned below. Changing a
// pinned value restarts every running container on upgrade: do it only with a
// new specHashVersion and a release note, or, as when resources left the
// hash, with the older hash still accepted (TestOlderHashKeepsContainers).
func hashFixtures() map[string]*syncpodv1.Container {
	return map[string]*syncpodv1.Container{
		"nil":     nil,
		"empty":   {},
		"minimal": {Name: "web", Image: "busybox:1.36"},
		"full": {
			Name: "web", Image: "registry.local/web:2.1", Command: []string{"/bin/web", "--serve"}, Args: []string{"-v", ""},
			WorkingDir: "/srv",
			Env:        []*syncpodv1.EnvVar{{Name: "A", Value: "1"}, {Name: "B", Value: ""}},
			Ports: []*syncpodv1.ContainerPort{{Name: "http", ContainerPort: 8080, HostPort: 18080, HostIp: "127.0.0.1"},
				{ContainerPort: 53, Protocol: syncpodv1.Protocol_PROTOCOL_UDP}},
			Resources: &syncpodv1.ResourceRequirements{
				Requests: &syncpodv1.ResourceList{Cpu: "250m", Memory: "64Mi"},
				Limits:   &syncpodv1.ResourceList{Cpu: "1", Memory: "128Mi"},
			},
		},
		"sidecar": {Name: "proxy", Image: "envoy:1.30", Args: []string{"-c", "/etc/envoy.yaml"}},
	}
}

func TestSpecHashGolden(t *testing.T) {
	want := map[string]string{
		"nil":     "1ee2b27c823d381d",
		"empty":   "1ee2b27c823d381d",
		"minimal": "efeddae5dcf14140",
		"full":    "4792d74b16e8b1a2",
		"sidecar": "c9f1117adfe7882e",
	}
	for name, c := range hashFixtures() {
		if got := plan.SpecHash(c); got != want[name] {
			t.Errorf("SpecHash(%s) = %q, want %q (pinned: a change restarts every container)", name, got, want[name])
		}
	}
}

func TestSpecHashCoversCRIFields(t *testing.T) {
	base := hashFixtures()["full"]
	baseHash := plan.SpecHash(base)
	changes := map[string]func(c *syncpodv1.Container){
		"name":         func(c *syncpodv1.Container) { c.Name = "web2" },
		"image":        func(c *syncpodv1.Container) { c.Image = "registry.local/web:2.2" },
		"command":      func(c *syncpodv1.Container) { c.Command = c.Command[:1] },
		"command→args": func(c *syncpodv1.Container) { c.Args = append(c.Command[1:], c.Args...); c.Command = c.Command[:1] },
		"args split":   func(c *syncpodv1.Container) { c.Args = []string{"-v"} },
		"working_dir":  func(c *syncpodv1.Container) { c.WorkingDir = "/" },
		"appArmor": func(c *syncpodv1.Container) {
			c.SecurityContext = &syncpodv1.SecurityContext{AppArmorProfile: &syncpodv1.AppArmorProfile{Type: syncpodv1.AppArmorProfileType_APP_ARMOR_PROFILE_TYPE_UNCONFINED}}
		},
		"seLinux": func(c *syncpodv1.Container) {
			c.SecurityContext = &syncpodv1.SecurityContext{SeLinuxOptions: &syncpodv1.SELinuxOptions{Level: "s0:c1"}}
		},
		"env value":      func(c *syncpodv1.Container) { c.Env[1].Value = "x" },
		"env order":      func(c *syncpodv1.Container) { c.Env[0], c.Env[1] = c.Env[1], c.Env[0] },
		"env name/value": func(c *syncpodv1.Container) { c.Env[0].Name, c.Env[0].Value = "A1", "" },
		"port":           func(c *syncpodv1.Container) { c.Ports[0].ContainerPort = 8081 },
		"host port":      func(c *syncpodv1.Container) { c.Ports[0].HostPort = 0 },
		"host ip":        func(c *syncpodv1.Container) { c.Ports[0].HostIp = "" },
		"port name":      func(c *syncpodv1.Container) { c.Ports[0].Name = "" },
		"protocol":       func(c *syncpodv1.Container) { c.Ports[1].Protocol = syncpodv1.Protocol_PROTOCOL_SCTP },
		"ports dropped":  func(c *syncpodv1.Container) { c.Ports = nil },
		"run_as_user": func(c *syncpodv1.Container) {
			u := int64(1000)
			c.SecurityContext = &syncpodv1.SecurityContext{RunAsUser: &u}
		},
		"capabilities": func(c *syncpodv1.Container) {
			c.SecurityContext = &syncpodv1.SecurityContext{Capabilities: &syncpodv1.Capabilities{Drop: []string{"ALL"}}}
		},
		"empty security context": func(c *syncpodv1.Container) { c.SecurityContext = &syncpodv1.SecurityContext{} },
		"seccomp": func(c *syncpodv1.Container) {
			c.SecurityContext = &syncpodv1.SecurityContext{SeccompProfile: &syncpodv1.SeccompProfile{Type: syncpodv1.SeccompProfileType_SECCOMP_PROFILE_TYPE_UNCONFINED}}
		},
		"termination_message_path": func(c *syncpodv1.Container) { c.TerminationMessagePath = "/tmp/m" },
		"termination_message_policy": func(c *syncpodv1.Container) {
			c.TerminationMessagePolicy = syncpodv1.TerminationMessagePolicy_TERMINATION_MESSAGE_POLICY_FILE
		},
		"stdin":      func(c *syncpodv1.Container) { c.Stdin = true },
		"tty":        func(c *syncpodv1.Container) { c.Tty = true },
		"stdin_once": func(c *syncpodv1.Container) { c.Stdin, c.StdinOnce = true, true },
		// the stop signal is in the CRI config.
		"stop_signal": func(c *syncpodv1.Container) { c.Lifecycle = &syncpodv1.Lifecycle{StopSignal: "SIGUSR1"} },
	}
	for name, change := range changes {
		t.Run("R-10.1 changes with "+name, func(t *testing.T) {
			c := hashFixtures()["full"]
			change(c)
			if plan.SpecHash(c) == baseHash {
				t.Errorf("hash unchanged after changing %s", name)
			}
		})
	}
	same := map[string]func(c *syncpodv1.Container){
		// resources resize in place.
		"cpu request":      func(c *syncpodv1.Container) { c.Resources.Requests.Cpu = "500m" },
		"memory request":   func(c *syncpodv1.Container) { c.Resources.Requests.Memory = "" },
		"cpu limit":        func(c *syncpodv1.Container) { c.Resources.Limits.Cpu = "2" },
		"memory limit":     func(c *syncpodv1.Container) { c.Resources.Limits.Memory = "1Gi" },
		"resources absent": func(c *syncpodv1.Container) { c.Resources = nil },
		"resize_policy": func(c *syncpodv1.Container) {
			c.ResizePolicy = []*syncpodv1.ContainerResizePolicy{{ResourceName: "cpu", RestartPolicy: syncpodv1.ResizeRestartPolicy_RESIZE_RESTART_POLICY_RESTART_CONTAINER}}
		},
		"image_pull_policy":    func(c *syncpodv1.Container) { c.ImagePullPolicy = syncpodv1.ImagePullPolicy_IMAGE_PULL_POLICY_NEVER },
		"restart_policy":       func(c *syncpodv1.Container) { c.RestartPolicy = cOnFailure },
		"restart_policy_rules": withRule(syncpodv1.ExitCodeOperator_EXIT_CODE_OPERATOR_IN, 1),
		"probes": func(c *syncpodv1.Container) {
			c.LivenessProbe, c.ReadinessProbe, c.StartupProbe = execProbe(), execProbe(), execProbe()
		},
		"explicit TCP": func(c *syncpodv1.Container) { c.Ports[0].Protocol = syncpodv1.Protocol_PROTOCOL_TCP },
		"lifecycle": func(c *syncpodv1.Container) {
			c.Lifecycle = &syncpodv1.Lifecycle{PreStop: &syncpodv1.LifecycleHandler{Action: &syncpodv1.LifecycleHandler_Sleep{Sleep: &syncpodv1.SleepAction{Seconds: 1}}}}
		},
		"empty resources": func(c *syncpodv1.Container) {},
	}
	for name, change := range same {
		t.Run("R-10.1 ignores "+name, func(t *testing.T) {
			c := hashFixtures()["full"]
			change(c)
			if got := plan.SpecHash(c); got != baseHash {
				t.Errorf("hash changed after changing %s: %s != %s", name, got, baseHash)
			}
		})
	}
	stdinOnly, ttyOnly := hashFixtures()["full"], hashFixtures()["full"]
	stdinOnly.Stdin, ttyOnly.Tty = true, true
	if plan.SpecHash(stdinOnly) == plan.SpecHash(ttyOnly) {
		t.Error("stdin and tty hash alike")
	}
	a := &syncpodv1.Container{Name: "x"}
	b := &syncpodv1.Container{Name: "x", Resources: &syncpodv1.ResourceRequirements{}}
	if plan.SpecHash(a) != plan.SpecHash(b) {
		t.Error("absent and empty resources hash differently")
	}
}

func TestSpecHashCoversMountsAndEnvSourcesOnlyWhenSet(t *testing.T) {
	base := &syncpodv1.Container{Name: "web", Image: "nginx", Env: []*syncpodv1.EnvVar{{Name: "A", Value: "1"}}}
	h0 := plan.SpecHash(base)
	same := proto.Clone(base).(*syncpodv1.Container)
	same.VolumeMounts, same.EnvFrom = []*syncpodv1.VolumeMount{}, nil
	if plan.SpecHash(same) != h0 {
		t.Fatal("empty new fields changed the hash")
	}
	variants := map[string]func(c *syncpodv1.Container){
		"mount": func(c *syncpodv1.Container) { c.VolumeMounts = []*syncpodv1.VolumeMount{{Name: "v", MountPath: "/v"}} },
		"mount readonly": func(c *syncpodv1.Container) {
			c.VolumeMounts = []*syncpodv1.VolumeMount{{Name: "v", MountPath: "/v", ReadOnly: true}}
		},
		"R-18.1 mount subPathExpr": func(c *syncpodv1.Container) {
			c.VolumeMounts = []*syncpodv1.VolumeMount{{Name: "v", MountPath: "/v", SubPathExpr: "$(A)"}}
		},
		"R-18.1 mount another subPathExpr": func(c *syncpodv1.Container) {
			c.VolumeMounts = []*syncpodv1.VolumeMount{{Name: "v", MountPath: "/v", SubPathExpr: "$(A)/x"}}
		},
		"envFrom": func(c *syncpodv1.Container) {
			c.EnvFrom = []*syncpodv1.EnvFromSource{{ConfigMapRef: &syncpodv1.ConfigMapEnvSource{Name: "c"}}}
		},
		"valueFrom": func(c *syncpodv1.Container) {
			c.Env[0].ValueFrom = &syncpodv1.EnvVarSource{Source: &syncpodv1.EnvVarSource_FieldRef{FieldRef: &syncpodv1.ObjectFieldSelector{FieldPath: "metadata.name"}}}
		},
		"valueFrom secret": func(c *syncpodv1.Container) {
			c.Env[0].ValueFrom = &syncpodv1.EnvVarSource{Source: &syncpodv1.EnvVarSource_SecretKeyRef{SecretKeyRef: &syncpodv1.SecretKeySelector{Name: "s", Key: "k"}}}
		},
		"R-22.4 valueFrom fileKeyRef": func(c *syncpodv1.Container) {
			c.Env[0].ValueFrom = &syncpodv1.EnvVarSource{Source: &syncpodv1.EnvVarSource_FileKeyRef{FileKeyRef: &syncpodv1.FileKeySelector{VolumeName: "s", Path: "f", Key: "k"}}}
		},
		"R-22.4 valueFrom fileKeyRef other key": func(c *syncpodv1.Container) {
			c.Env[0].ValueFrom = &syncpodv1.EnvVarSource{Source: &syncpodv1.EnvVarSource_FileKeyRef{FileKeyRef: &syncpodv1.FileKeySelector{VolumeName: "s", Path: "f", Key: "k2"}}}
		},
	}
	seen := map[string]string{h0: "base"}
	for name, mutate := range variants {
		c := proto.Clone(base).(*syncpodv1.Container)
		mutate(c)
		h := plan.SpecHash(c)
		if prev, dup := seen[h]; dup {
			t.Errorf("%s hashes like %s", name, prev)
		}
		seen[h] = name
	}
}
