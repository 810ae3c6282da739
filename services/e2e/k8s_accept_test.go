package e2e

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// TestKubernetesNodeRunsWhatTheAPIServerAccepts: pods the API server
// accepts, bound to one syncpod node, run there as a kubelet runs them,
// each behaviour seen as a user sees it through the API server: a pod
// name of 253 characters and spec.os.name linux run;
// an envFrom prefix that is not a C identifier and the
// kubernetes Service's variables are in the container's
// environment; subPathExpr picks the sub directory from the
// pod's name; the kube-api-access volume holds a token bound to
// the pod, the cluster's CA and the namespace;
// status.observedGeneration follows a spec update; a gRPC
// readiness probe makes the pod Ready and not Ready; an
// ephemeral container added through the ephemeralcontainers subresource
// runs and shows in ephemeralContainerStatuses; a patch of
// the resize subresource resizes the running container in place, and one
// that does not fit beside another pod is PodResizePending Deferred until
// that pod is gone. On
// crisim: a container is a host process, and its mounts are its paths
// rewritten to the volumes' host directories.
func TestKubernetesNodeRunsWhatTheAPIServerAccepts(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Kubernetes control plane")
	}
	t.Parallel()
	cp := startControlPlane(t)
	ctx := context.Background()
	n := startK8sNode(t, cp, "syncpod-e2e-accept")
	eventually(t, 60*time.Second, "node Ready", func() (bool, string) {
		nd, err := cp.client.CoreV1().Nodes().Get(ctx, n.name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return nodeReady(nd), fmt.Sprintf("%v", nd.Status.Conditions)
	})
	pods := cp.client.CoreV1().Pods(metav1.NamespaceDefault)
	grace := int64(2)
	// newPod is a host-network pod bound to the node (no scheduler runs)
	// with one container running script.
	newPod := func(name, script string) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: corev1.PodSpec{
				NodeName:                      n.name,
				HostNetwork:                   true,
				TerminationGracePeriodSeconds: &grace,
				Containers: []corev1.Container{{
					Name: "main", Image: "busybox:1.36",
					Command: []string{"sh", "-c", script},
				}},
			},
		}
	}
	create := func(t *testing.T, p *corev1.Pod) *corev1.Pod {
		t.Helper()
		got, err := pods.Create(ctx, p, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("creating pod %s: %v", p.Name, err)
		}
		return got
	}
	get := func(name string) (*corev1.Pod, string) {
		p, err := pods.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return nil, err.Error()
		}
		return p, podSummary(p) + " " + conditionSummary(p)
	}
	waitRunning := func(t *testing.T, name string) *corev1.Pod {
		t.Helper()
		var last *corev1.Pod
		eventually(t, 60*time.Second, name+" Running", func() (bool, string) {
			p, saw := get(name)
			last = p
			return p != nil && p.Status.Phase == corev1.PodRunning, saw
		})
		return last
	}
	logs := func(name string, args ...string) string {
		out, _ := cp.kubectl(append([]string{"logs", name}, args...)...)
		return out
	}
	waitLog := func(t *testing.T, name, what string, has func(string) bool, args ...string) string {
		t.Helper()
		var out string
		eventually(t, 30*time.Second, what, func() (bool, string) {
			out = logs(name, args...)
			return has(out), out
		})
		return out
	}
	const forever = "; while true; do sleep 1; done"

	t.Run("PodNameOf253CharactersAndOSLinux", func(t *testing.T) {
		t.Parallel()
		name := "long-" + strings.Repeat("n", 243) + ".name" // 253 characters, a DNS subdomain
		if len(name) != 253 {
			t.Fatalf("name of %d characters", len(name))
		}
		p := newPod(name, "echo started"+forever)
		p.Spec.OS = &corev1.PodOS{Name: corev1.Linux}
		created := create(t, p)
		waitRunning(t, name)
		// Its log directory's name is cut to fit; kubectl logs finds it.
		waitLog(t, name, "the long-named pod's log", func(s string) bool { return strings.Contains(s, "started\n") })
		// The runtime's labels carry the whole name.
		cs := n.criContainers(t, string(created.UID))
		if len(cs) != 1 || cs[0].GetLabels()["io.kubernetes.pod.name"] != name {
			t.Errorf("the runtime's containers of the pod: %s, labels %v", containerIDs(cs), labelsOf(cs))
		}
	})

	t.Run("EnvFromPrefixAndServiceVariables", func(t *testing.T) {
		t.Parallel()
		// The API server's kubernetes Service: its variables are every
		// container's.
		var svc *corev1.Service
		eventually(t, 30*time.Second, "Service kubernetes", func() (bool, string) {
			s, err := cp.client.CoreV1().Services(metav1.NamespaceDefault).Get(ctx, "kubernetes", metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			svc = s
			return true, ""
		})
		if _, err := cp.client.CoreV1().ConfigMaps(metav1.NamespaceDefault).Create(ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: "prefixed"},
			Data:       map[string]string{"data-1": "value-1", "data.2": "value-2"},
		}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		// env itself prints the environment: a shell would drop the
		// names that are not shell identifiers (dash and busybox sh do).
		p := newPod("env-prefix", "")
		p.Spec.Containers[0].Command = []string{"env"}
		p.Spec.RestartPolicy = corev1.RestartPolicyNever
		p.Spec.Containers[0].EnvFrom = []corev1.EnvFromSource{{
			Prefix:       "1-", // not a C identifier, accepted since 1.34
			ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "prefixed"}},
		}}
		create(t, p)
		eventually(t, 60*time.Second, p.Name+" Succeeded", func() (bool, string) {
			p, saw := get("env-prefix")
			return p != nil && p.Status.Phase == corev1.PodSucceeded, saw
		})
		want := []string{
			"1-data-1=value-1\n",
			"1-data.2=value-2\n",
			"KUBERNETES_SERVICE_HOST=" + svc.Spec.ClusterIP + "\n",
			fmt.Sprintf("KUBERNETES_SERVICE_PORT=%d\n", svc.Spec.Ports[0].Port),
			fmt.Sprintf("KUBERNETES_PORT=tcp://%s:%d\n", svc.Spec.ClusterIP, svc.Spec.Ports[0].Port),
		}
		waitLog(t, p.Name, "the prefixed keys and the kubernetes Service's variables in the environment", func(s string) bool {
			for _, w := range want {
				if !strings.Contains(s, w) {
					return false
				}
			}
			return true
		})
	})

	t.Run("SubPathExprFromThePodName", func(t *testing.T) {
		t.Parallel()
		// the writer mounts the emptyDir's sub directory named
		// after the pod; the reader mounts the whole volume and finds
		// the file there.
		p := newPod("subpath-expr", "echo written-through-subpath > /out/file"+forever)
		p.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
		p.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{
			FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}}}
		p.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/out", SubPathExpr: "$(POD_NAME)"}}
		p.Spec.Containers = append(p.Spec.Containers, corev1.Container{
			Name: "reader", Image: "busybox:1.36",
			Command:      []string{"sh", "-c", "while true; do echo seen=$(cat /all/subpath-expr/file 2>&1); sleep 0.5; done"},
			VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/all"}},
		})
		create(t, p)
		waitRunning(t, p.Name)
		waitLog(t, p.Name, "the file written through the expanded sub path, under the pod's name in the volume", func(s string) bool {
			return strings.Contains(s, "seen=written-through-subpath\n")
		}, "-c", "reader", "--tail=3")
	})

	t.Run("ServiceAccountTokenVolume", func(t *testing.T) {
		t.Parallel()
		const dir = "/var/run/secrets/kubernetes.io/serviceaccount"
		p := newPod("token-reader", "echo token=$(cat "+dir+"/token); echo namespace=$(cat "+dir+"/namespace); "+
			"echo mode=$(stat -L -c %a "+dir+"/token); cat "+dir+"/ca.crt"+forever)
		created := create(t, p)
		// The ServiceAccount admission added the volume and its mount.
		var volume string
		for _, v := range created.Spec.Volumes {
			if strings.HasPrefix(v.Name, "kube-api-access-") {
				volume = v.Name
			}
		}
		if volume == "" || len(created.Spec.Containers[0].VolumeMounts) == 0 || created.Spec.Containers[0].VolumeMounts[0].MountPath != dir {
			t.Fatalf("the API server added no kube-api-access volume mounted at %s: volumes %v, mounts %v", dir, created.Spec.Volumes, created.Spec.Containers[0].VolumeMounts)
		}
		waitRunning(t, p.Name)
		out := waitLog(t, p.Name, "token, namespace and ca.crt in the log", func(s string) bool {
			return strings.Contains(s, "-----END CERTIFICATE-----")
		})
		if ns := lineWith(out, "namespace="); ns != "namespace=default" {
			t.Errorf("namespace file: %q, want namespace=default\n%s", ns, out)
		}
		if mode := lineWith(out, "mode="); mode != "mode=644" {
			t.Errorf("token file: %q, want the volume's defaultMode 0644 (mode=644)\n%s", mode, out)
		}
		caPEM, err := os.ReadFile(filepath.Join(cp.dir, "ca.crt"))
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(out, strings.TrimSpace(string(caPEM))) {
			t.Errorf("ca.crt is not the cluster's CA:\n%s", out)
		}
		token := strings.TrimPrefix(lineWith(out, "token="), "token=")
		claims := jwtClaims(t, token)
		if claims.KubernetesIO.Pod.Name != p.Name || claims.KubernetesIO.Pod.UID != string(created.UID) ||
			claims.KubernetesIO.Namespace != "default" || claims.Subject != "system:serviceaccount:default:default" {
			t.Errorf("the token is not bound to pod default/%s (uid %s): claims %+v", p.Name, created.UID, claims)
		}
		// The API server itself takes the token as the pod's.
		review := fmt.Sprintf(`{"apiVersion":"authentication.k8s.io/v1","kind":"TokenReview","spec":{"token":%q}}`, token)
		rout, err := cp.kubectlStdin(review, "create", "-o", "json", "-f", "-")
		if err != nil {
			t.Fatalf("TokenReview: %v\n%s", err, rout)
		}
		var tr struct {
			Status struct {
				Authenticated bool
				Error         string
				User          struct {
					Username string
					Extra    map[string][]string
				}
			}
		}
		if err := json.Unmarshal([]byte(rout), &tr); err != nil {
			t.Fatalf("TokenReview answer: %v\n%s", err, rout)
		}
		if !tr.Status.Authenticated || tr.Status.User.Username != "system:serviceaccount:default:default" ||
			strings.Join(tr.Status.User.Extra["authentication.kubernetes.io/pod-name"], ",") != p.Name {
			t.Errorf("the API server does not take the token as pod %s's: %s", p.Name, rout)
		}
	})

	t.Run("ObservedGenerationFollowsAnUpdate", func(t *testing.T) {
		t.Parallel()
		p := create(t, newPod("generation", "echo up"+forever))
		if p.Generation != 1 {
			t.Fatalf("a new pod's generation is %d", p.Generation)
		}
		waitRunning(t, p.Name)
		observed := func(want int64) func() (bool, string) {
			return func() (bool, string) {
				p, saw := get("generation")
				if p == nil {
					return false, saw
				}
				ok := p.Generation == want && p.Status.ObservedGeneration == want
				for _, c := range p.Status.Conditions {
					ok = ok && c.ObservedGeneration == want
				}
				return ok, fmt.Sprintf("generation %d, observedGeneration %d; %s", p.Generation, p.Status.ObservedGeneration, saw)
			}
		}
		eventually(t, 30*time.Second, "observedGeneration 1", observed(1))
		// A spec change the API server allows on a running pod, which
		// restarts nothing.
		eventually(t, 10*time.Second, "activeDeadlineSeconds set", func() (bool, string) {
			cur, err := pods.Get(ctx, p.Name, metav1.GetOptions{})
			if err != nil {
				return false, err.Error()
			}
			deadline := int64(3600)
			cur.Spec.ActiveDeadlineSeconds = &deadline
			_, err = pods.Update(ctx, cur, metav1.UpdateOptions{})
			return err == nil, fmt.Sprint(err)
		})
		eventually(t, 30*time.Second, "observedGeneration 2 after the update", observed(2))
		if cur, _ := get(p.Name); cur.Status.ContainerStatuses[0].RestartCount != 0 {
			t.Errorf("the update restarted the container: %s", podSummary(cur))
		}
	})

	t.Run("GRPCReadinessProbe", func(t *testing.T) {
		t.Parallel()
		// The probe goes to the test's own gRPC health server: the pod is
		// on the host's network.
		lis, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		hs := health.NewServer()
		hs.SetServingStatus("app", healthpb.HealthCheckResponse_SERVING)
		srv := grpc.NewServer()
		healthpb.RegisterHealthServer(srv, hs)
		go func() { _ = srv.Serve(lis) }()
		t.Cleanup(srv.Stop)
		service := "app"
		p := newPod("grpc-probe", "echo up"+forever)
		p.Spec.Containers[0].ReadinessProbe = &corev1.Probe{
			ProbeHandler: corev1.ProbeHandler{GRPC: &corev1.GRPCAction{
				Port: int32(lis.Addr().(*net.TCPAddr).Port), Service: &service}},
			PeriodSeconds: 1, TimeoutSeconds: 2, FailureThreshold: 1,
		}
		create(t, p)
		ready := func(want bool) func() (bool, string) {
			return func() (bool, string) {
				p, saw := get("grpc-probe")
				if p == nil {
					return false, saw
				}
				return podReady(p) == want && len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].Ready == want, saw
			}
		}
		eventually(t, 60*time.Second, "Ready while the service is SERVING", ready(true))
		hs.SetServingStatus("app", healthpb.HealthCheckResponse_NOT_SERVING)
		eventually(t, 30*time.Second, "not Ready once it is NOT_SERVING", ready(false))
		hs.SetServingStatus("app", healthpb.HealthCheckResponse_SERVING)
		eventually(t, 30*time.Second, "Ready again once it is SERVING", ready(true))
	})

	t.Run("EphemeralContainerAdded", func(t *testing.T) {
		t.Parallel()
		p := newPod("with-debugger", "echo target-up"+forever)
		create(t, p)
		waitRunning(t, p.Name)
		patch := `{"spec":{"ephemeralContainers":[{"name":"debugger","image":"busybox:1.36","targetContainerName":"main",` +
			`"command":["sh","-c","echo debugger-here` + forever + `"]}]}}`
		cp.mustKubectl("patch", "pod", p.Name, "--subresource=ephemeralcontainers", "--type=strategic", "-p", patch)
		eventually(t, 60*time.Second, "the ephemeral container running in ephemeralContainerStatuses", func() (bool, string) {
			cur, saw := get(p.Name)
			if cur == nil {
				return false, saw
			}
			es := cur.Status.EphemeralContainerStatuses
			return len(es) == 1 && es[0].Name == "debugger" && es[0].State.Running != nil && es[0].ContainerID != "",
				fmt.Sprintf("%s ephemeral %+v", saw, es)
		})
		waitLog(t, p.Name, "the ephemeral container's log", func(s string) bool {
			return strings.Contains(s, "debugger-here\n")
		}, "-c", "debugger")
		if cur, _ := get(p.Name); cur.Status.ContainerStatuses[0].RestartCount != 0 || cur.Status.ContainerStatuses[0].State.Running == nil {
			t.Errorf("adding the ephemeral container disturbed the pod's container: %s", podSummary(cur))
		}
	})
	t.Run("ResizedThroughTheResizeSubresource", func(t *testing.T) {
		t.Parallel()
		p := newPod("resized", "echo up"+forever)
		p.Spec.Containers[0].Resources = corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("32Mi")},
			Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("200m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
		}
		create(t, p)
		id := waitRunning(t, p.Name).Status.ContainerStatuses[0].ContainerID
		// resizedTo: the status, accepted by the API server, says the
		// container runs with cpu and memory limits and was given the cpu
		// request reqCPU, nothing pending or
		// in progress, for the pod's generation.
		resizedTo := func(reqCPU, cpu, mem string) func() (bool, string) {
			return func() (bool, string) {
				cur, saw := get(p.Name)
				if cur == nil || len(cur.Status.ContainerStatuses) != 1 {
					return false, saw
				}
				cs := cur.Status.ContainerStatuses[0]
				done := cs.Resources != nil && cs.Resources.Limits.Cpu().Equal(resource.MustParse(cpu)) &&
					cs.Resources.Limits.Memory().Equal(resource.MustParse(mem)) && cs.AllocatedResources.Cpu().Equal(resource.MustParse(reqCPU)) &&
					cur.Status.ObservedGeneration == cur.Generation
				for _, c := range cur.Status.Conditions {
					done = done && c.Type != corev1.PodResizePending && c.Type != corev1.PodResizeInProgress
				}
				return done, fmt.Sprintf("%s resources %+v allocated %v gen %d/%d", saw, cs.Resources, cs.AllocatedResources, cur.Status.ObservedGeneration, cur.Generation)
			}
		}
		eventually(t, 60*time.Second, "the status resources of the new pod", resizedTo("100m", "200m", "64Mi"))
		patch := `{"spec":{"containers":[{"name":"main","resources":{"requests":{"cpu":"400m"},"limits":{"cpu":"400m","memory":"128Mi"}}}]}}`
		cp.mustKubectl("patch", "pod", p.Name, "--subresource=resize", "--type=strategic", "-p", patch)
		eventually(t, 60*time.Second, "the container resized in place (R-25.2)", resizedTo("400m", "400m", "128Mi"))
		cur, _ := get(p.Name)
		if cs := cur.Status.ContainerStatuses[0]; cs.ContainerID != id || cs.RestartCount != 0 {
			t.Errorf("the resize restarted the container: %s -> %s, %d restarts", id, cs.ContainerID, cs.RestartCount)
		}
		// The API server refuses a resize beyond the node's allocatable; one
		// that fits the node but not beside another pod waits, Deferred,
		// until that pod is gone.
		nd, err := cp.client.CoreV1().Nodes().Get(ctx, n.name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		capacity := nd.Status.Allocatable.Cpu().MilliValue()
		blocker := newPod("resize-blocker", "echo up"+forever)
		blocker.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: *resource.NewMilliQuantity(capacity/2, resource.DecimalSI)}
		create(t, blocker)
		waitRunning(t, blocker.Name)
		big := resource.NewMilliQuantity(capacity*3/4, resource.DecimalSI).String()
		patch = `{"spec":{"containers":[{"name":"main","resources":{"requests":{"cpu":"` + big + `"},"limits":{"cpu":"` + big + `"}}}]}}`
		cp.mustKubectl("patch", "pod", p.Name, "--subresource=resize", "--type=strategic", "-p", patch)
		eventually(t, 60*time.Second, "PodResizePending Deferred", func() (bool, string) {
			cur, saw := get(p.Name)
			for _, c := range cur.Status.Conditions {
				if c.Type == corev1.PodResizePending && c.Reason == "Deferred" && c.ObservedGeneration == cur.Generation &&
					strings.HasPrefix(c.Message, "Node didn't have enough resource: cpu") {
					return cur.Status.ContainerStatuses[0].Resources.Limits.Cpu().Equal(resource.MustParse("400m")), saw
				}
			}
			return false, saw
		})
		if err := pods.Delete(ctx, blocker.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
		eventually(t, 60*time.Second, "the deferred resize admitted once the other pod is gone", resizedTo(big, big, "128Mi"))
	})
}

func labelsOf(cs []*runtimeapi.Container) []map[string]string {
	var out []map[string]string
	for _, c := range cs {
		out = append(out, c.GetLabels())
	}
	return out
}

func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func conditionSummary(p *corev1.Pod) string {
	var cs []string
	for _, c := range p.Status.Conditions {
		cs = append(cs, fmt.Sprintf("%s=%s(gen %d)", c.Type, c.Status, c.ObservedGeneration))
	}
	return "conditions [" + strings.Join(cs, " ") + "]"
}

// saTokenClaims are the claims of a bound service-account token that
// say whose it is.
type saTokenClaims struct {
	Subject      string `json:"sub"`
	KubernetesIO struct {
		Namespace string `json:"namespace"`
		Pod       struct {
			Name string `json:"name"`
			UID  string `json:"uid"`
		} `json:"pod"`
		ServiceAccount struct {
			Name string `json:"name"`
		} `json:"serviceaccount"`
	} `json:"kubernetes.io"`
}

// jwtClaims decodes a JWT's payload (the signature is the API server's to
// check: the TokenReview does).
func jwtClaims(t *testing.T, token string) saTokenClaims {
	t.Helper()
	parts := strings.Split(token, ".")
	if len(parts) != 3 {
		t.Fatalf("the token file does not hold a JWT: %q", token)
	}
	payload, err := base64.RawURLEncoding.DecodeString(parts[1])
	if err != nil {
		t.Fatalf("JWT payload: %v", err)
	}
	var c saTokenClaims
	if err := json.Unmarshal(payload, &c); err != nil {
		t.Fatalf("JWT claims: %v\n%s", err, payload)
	}
	return c
}
