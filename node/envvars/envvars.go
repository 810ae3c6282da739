package envvars

import (
	"maps"
	"net"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// MasterService is the API server's own Service in the default
// namespace, whose variables every pod gets.
const MasterService = "kubernetes"

// Var is one environment variable.
type Var struct {
	Name, Value string
}

// HasClusterIP reports whether s has a cluster IP: set and not "None"
// (headless). Only such Services have variables.
func HasClusterIP(s *corev1.Service) bool {
	ip := s.Spec.ClusterIP
	return ip != "" && ip != corev1.ClusterIPNone
}

// ForPod returns the Service environment of a pod in namespace ns, by
// variable name: the variables of the master Service of the
// default namespace always, and of every Service of ns when
// enableServiceLinks is true; a Service of ns with the master Service's
// name takes its place. Services without a cluster IP and of other
// namespaces are skipped; services may hold any Services. The map is
// empty, not nil, when no Service counts.
func ForPod(services []*corev1.Service, ns string, enableServiceLinks bool) map[string]string {
	if ns == "" {
		ns = metav1.NamespaceDefault
	}
	chosen := map[string]*corev1.Service{}
	for _, s := range services {
		if s == nil || !HasClusterIP(s) {
			continue
		}
		switch {
		case s.Namespace == metav1.NamespaceDefault && s.Name == MasterService:
			if _, taken := chosen[s.Name]; !taken {
				chosen[s.Name] = s
			}
		case s.Namespace == ns && enableServiceLinks:
			chosen[s.Name] = s
		}
	}
	// By name, so that two Services whose variables share a name give
	// the same value every time.
	out := make(map[string]string)
	for _, name := range slices.Sorted(maps.Keys(chosen)) {
		for _, v := range FromService(chosen[name]) {
			out[v.Name] = v.Value
		}
	}
	return out
}

// FromService returns the variables of one Service, in the kubelet's
// order: <P>_SERVICE_HOST, <P>_SERVICE_PORT (the first port),
// <P>_SERVICE_PORT_<NAME> for each named port, <P>_PORT (the first
// port's URL), then for each port <P>_PORT_<port>_<PROTO> and its _PROTO,
// _PORT and _ADDR, where <P> is the Service's name as a variable name.
// A Service without a cluster IP or without ports has none.
func FromService(s *corev1.Service) []Var {
	if s == nil || !HasClusterIP(s) || len(s.Spec.Ports) == 0 {
		return nil
	}
	ip := s.Spec.ClusterIP
	prefix := VariableName(s.Name)
	out := []Var{
		{prefix + "_SERVICE_HOST", ip},
		{prefix + "_SERVICE_PORT", strconv.Itoa(int(s.Spec.Ports[0].Port))},
	}
	for _, p := range s.Spec.Ports {
		if p.Name != "" {
			out = append(out, Var{prefix + "_SERVICE_PORT_" + VariableName(p.Name), strconv.Itoa(int(p.Port))})
		}
	}
	for i, p := range s.Spec.Ports {
		proto := string(p.Protocol)
		if proto == "" {
			proto = string(corev1.ProtocolTCP)
		}
		port := strconv.Itoa(int(p.Port))
		url := strings.ToLower(proto) + "://" + net.JoinHostPort(ip, port)
		if i == 0 {
			out = append(out, Var{prefix + "_PORT", url})
		}
		pp := prefix + "_PORT_" + port + "_" + strings.ToUpper(proto)
		out = append(out,
			Var{pp, url},
			Var{pp + "_PROTO", strings.ToLower(proto)},
			Var{pp + "_PORT", port},
			Var{pp + "_ADDR", ip},
		)
	}
	return out
}

// VariableName is a Service or port name as the kubelet puts it in a
// variable name: upper-cased, each '-' turned into '_'.
func VariableName(name string) string {
	return strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
}
