package node

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/syncpod/syncpod/node/envvars"
)

// newServiceInformer follows every namespace's Services that have a
// cluster IP, as the kubelet's Service informer does: headless ones never
// give variables, so they are not listed at all. The node's credentials
// may list and watch Services cluster-wide (the Node authorizer's static
// rules, the system:node role).
func (a *Agent) newServiceInformer() cache.SharedIndexInformer {
	notHeadless := fields.OneTermNotEqualSelector("spec.clusterIP", corev1.ClusterIPNone).String()
	services := a.o.Client.CoreV1().Services(metav1.NamespaceAll)
	return newInformer(fieldSelected[*corev1.ServiceList](services, notHeadless), &corev1.Service{}, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
}

// serviceHandler requeues the pods whose Service environment a Service
// event changes: the planner then stores their new variables for the
// containers started afterwards, restarting nothing.
func (a *Agent) serviceHandler() cache.ResourceEventHandler {
	return cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { a.requeueForService(serviceOf(obj)) },
		UpdateFunc: func(old, cur any) {
			o, c := serviceOf(old), serviceOf(cur)
			if serviceVarsChanged(o, c) {
				a.requeueForService(o)
				a.requeueForService(c)
			}
		},
		DeleteFunc: func(obj any) { a.requeueForService(serviceOf(obj)) },
	}
}

// serviceOf is the Service of an informer event (also from a tombstone).
func serviceOf(obj any) *corev1.Service {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	s, _ := obj.(*corev1.Service)
	return s
}

// serviceVarsChanged says whether an update of a Service changes the
// variables it gives: its cluster IP and ports, not its labels
// or status.
func serviceVarsChanged(old, cur *corev1.Service) bool {
	if old == nil || cur == nil {
		return old != cur
	}
	return old.Namespace != cur.Namespace || old.Name != cur.Name ||
		!slices.Equal(envvars.FromService(old), envvars.FromService(cur))
}

// requeueForService queues the bound pods whose variables s may give: the
// pods of its namespace, or every pod for the master Service.
func (a *Agent) requeueForService(s *corev1.Service) {
	if s == nil || a.lister == nil {
		return
	}
	var pods []*corev1.Pod
	var err error
	if s.Namespace == metav1.NamespaceDefault && s.Name == envvars.MasterService {
		pods, err = a.lister.List(labels.Everything())
	} else {
		pods, err = a.lister.Pods(s.Namespace).List(labels.Everything())
	}
	if err != nil {
		return
	}
	for _, p := range pods {
		a.podQueue.Add(p.Namespace + "/" + p.Name)
	}
}

// serviceEnvironment is the Service environment of API pod kp:
// the variables of its namespace's Services (when enableServiceLinks is
// true, the API default) and of the master Service.
func serviceEnvironment(services corelisters.ServiceLister, kp *corev1.Pod) (map[string]string, error) {
	ns := kp.Namespace
	if ns == "" {
		ns = metav1.NamespaceDefault
	}
	list, err := services.Services(ns).List(labels.Everything())
	if err != nil {
		return nil, err
	}
	if ns != metav1.NamespaceDefault {
		if m, err := services.Services(metav1.NamespaceDefault).Get(envvars.MasterService); err == nil {
			list = append(list, m)
		}
	}
	links := kp.Spec.EnableServiceLinks == nil || *kp.Spec.EnableServiceLinks
	return envvars.ForPod(list, ns, links), nil
}
