package node

import (
	"log/slog"
	"slices"
	"sort"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/ptr"

	"github.com/syncpod/syncpod/planner/plannertest"
)

func clusterService(ns, name, ip string, port int32) *corev1.Service {
	return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.ServiceSpec{ClusterIP: ip, Ports: []corev1.ServicePort{{Port: port, Protocol: corev1.ProtocolTCP}}}}
}

// serviceTestAgent is an agent with listers over pods and services and a
// fake planner, enough for syncPod and the Service event handler.
func serviceTestAgent(t *testing.T, pods []*corev1.Pod, services []*corev1.Service) (*Agent, *plannertest.Planner) {
	t.Helper()
	m, err := newMetrics(nil)
	if err != nil {
		t.Fatal(err)
	}
	f := &plannertest.Planner{}
	a := &Agent{o: Options{Planner: plannerClient(t, f), Logger: slog.New(slog.DiscardHandler), NodeName: "n1"}, m: m,
		pressure: &pressureState{}}
	a.cfg = newConfigs(t.Context(), a)
	podIdx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	for _, p := range pods {
		if err := podIdx.Add(p); err != nil {
			t.Fatal(err)
		}
	}
	a.lister = corelisters.NewPodLister(podIdx)
	svcIdx := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	for _, s := range services {
		if err := svcIdx.Add(s); err != nil {
			t.Fatal(err)
		}
	}
	a.services = corelisters.NewServiceLister(svcIdx)
	a.podQueue = workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]())
	t.Cleanup(a.podQueue.ShutDown)
	return a, f
}

// the pod handed to the planner carries the variables of its
// namespace's Services and of the master Service, not of another
// namespace's; with enableServiceLinks false, only the master's.
func TestSyncPodCarriesTheServiceEnvironment(t *testing.T) {
	services := []*corev1.Service{
		clusterService("default", "kubernetes", "10.96.0.1", 443),
		clusterService("team", "redis", "10.96.0.7", 6379),
		clusterService("other", "cache", "10.96.0.9", 11211),
	}
	for _, tc := range []struct {
		name  string
		links *bool
		want  []string
	}{
		{"service links on", ptr.To(true), []string{"KUBERNETES_SERVICE_HOST=10.96.0.1", "REDIS_SERVICE_HOST=10.96.0.7"}},
		{"service links unset means on", nil, []string{"KUBERNETES_SERVICE_HOST=10.96.0.1", "REDIS_SERVICE_HOST=10.96.0.7"}},
		{"service links off", ptr.To(false), []string{"KUBERNETES_SERVICE_HOST=10.96.0.1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kp := tokenlessAPIPod()
			kp.Spec.EnableServiceLinks = tc.links
			a, f := serviceTestAgent(t, []*corev1.Pod{kp}, services)
			if err := a.syncPod(t.Context(), "team/web"); err != nil {
				t.Fatal(err)
			}
			applied := f.Applied()
			if len(applied) != 1 {
				t.Fatalf("%d pods applied, want 1", len(applied))
			}
			env := applied[0].GetPod().GetServiceEnvironment()
			var hosts []string
			for k, v := range env {
				if len(k) > len("_SERVICE_HOST") && k[len(k)-len("_SERVICE_HOST"):] == "_SERVICE_HOST" {
					hosts = append(hosts, k+"="+v)
				}
			}
			sort.Strings(hosts)
			if !slices.Equal(hosts, tc.want) {
				t.Errorf("service hosts %v, want %v (all: %v)", hosts, tc.want, env)
			}
			if env["KUBERNETES_PORT_443_TCP"] != "tcp://10.96.0.1:443" {
				t.Errorf("KUBERNETES_PORT_443_TCP = %q", env["KUBERNETES_PORT_443_TCP"])
			}
			for _, c := range applied[0].GetPod().GetSpec().GetContainers() {
				for _, e := range c.GetEnv() {
					if e.GetName() == "KUBERNETES_SERVICE_HOST" {
						t.Error("the Service variables were put in a container's env (its spec hash)")
					}
				}
			}
		})
	}
}

// a Service event requeues the pods whose variables it changes:
// those of its namespace, every pod for the master Service; an update
// that leaves the variables as they were (labels, status) requeues none.
func TestServiceEventsRequeueTheirPods(t *testing.T) {
	pod := func(ns, name string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	}
	pods := []*corev1.Pod{pod("team", "web"), pod("team", "worker"), pod("other", "db")}
	redis := clusterService("team", "redis", "10.96.0.7", 6379)
	relabelled := redis.DeepCopy()
	relabelled.Labels = map[string]string{"tier": "cache"}
	moved := redis.DeepCopy()
	moved.Spec.Ports[0].Port = 6380
	master := clusterService("default", "kubernetes", "10.96.0.1", 443)
	for _, tc := range []struct {
		name string
		fire func(h cache.ResourceEventHandler)
		want []string
	}{
		{"added", func(h cache.ResourceEventHandler) { h.OnAdd(redis, false) }, []string{"team/web", "team/worker"}},
		{"port changed", func(h cache.ResourceEventHandler) { h.OnUpdate(redis, moved) }, []string{"team/web", "team/worker"}},
		{"labels changed", func(h cache.ResourceEventHandler) { h.OnUpdate(redis, relabelled) }, nil},
		{"deleted, seen late", func(h cache.ResourceEventHandler) {
			h.OnDelete(cache.DeletedFinalStateUnknown{Key: "team/redis", Obj: redis})
		}, []string{"team/web", "team/worker"}},
		{"master Service", func(h cache.ResourceEventHandler) { h.OnAdd(master, false) }, []string{"other/db", "team/web", "team/worker"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, _ := serviceTestAgent(t, pods, nil)
			tc.fire(a.serviceHandler())
			var got []string
			for a.podQueue.Len() > 0 {
				k, _ := a.podQueue.Get()
				got = append(got, k)
				a.podQueue.Done(k)
			}
			sort.Strings(got)
			if !slices.Equal(got, tc.want) {
				t.Errorf("requeued %v, want %v", got, tc.want)
			}
		})
	}
}
