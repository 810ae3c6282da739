package envvars

import (
	"maps"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func svc(ns, name, ip string, ports ...corev1.ServicePort) *corev1.Service {
	return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.ServiceSpec{ClusterIP: ip, Ports: ports}}
}

func port(name string, p int32, proto corev1.Protocol) corev1.ServicePort {
	return corev1.ServicePort{Name: name, Port: p, Protocol: proto}
}

// master is the API server's Service as a cluster has it.
var master = svc("default", "kubernetes", "10.96.0.1", port("https", 443, corev1.ProtocolTCP))

// masterVars are its variables.
var masterVars = map[string]string{
	"KUBERNETES_SERVICE_HOST":       "10.96.0.1",
	"KUBERNETES_SERVICE_PORT":       "443",
	"KUBERNETES_SERVICE_PORT_HTTPS": "443",
	"KUBERNETES_PORT":               "tcp://10.96.0.1:443",
	"KUBERNETES_PORT_443_TCP":       "tcp://10.96.0.1:443",
	"KUBERNETES_PORT_443_TCP_PROTO": "tcp",
	"KUBERNETES_PORT_443_TCP_PORT":  "443",
	"KUBERNETES_PORT_443_TCP_ADDR":  "10.96.0.1",
}

func with(base map[string]string, more map[string]string) map[string]string {
	out := maps.Clone(base)
	maps.Copy(out, more)
	return out
}

// the names and values of the kubelet's FromServices, in its order.
func TestFromServiceNamesAndOrder(t *testing.T) {
	for _, tc := range []struct {
		name string
		s    *corev1.Service
		want []Var
	}{
		{"one unnamed port, protocol defaulted to TCP", svc("shop", "redis-primary", "10.0.0.11", port("", 6379, "")), []Var{
			{"REDIS_PRIMARY_SERVICE_HOST", "10.0.0.11"},
			{"REDIS_PRIMARY_SERVICE_PORT", "6379"},
			{"REDIS_PRIMARY_PORT", "tcp://10.0.0.11:6379"},
			{"REDIS_PRIMARY_PORT_6379_TCP", "tcp://10.0.0.11:6379"},
			{"REDIS_PRIMARY_PORT_6379_TCP_PROTO", "tcp"},
			{"REDIS_PRIMARY_PORT_6379_TCP_PORT", "6379"},
			{"REDIS_PRIMARY_PORT_6379_TCP_ADDR", "10.0.0.11"},
		}},
		{"several named ports", svc("shop", "dns", "10.0.0.10",
			port("dns-udp", 53, corev1.ProtocolUDP), port("dns-tcp", 53, corev1.ProtocolTCP), port("metrics", 9153, corev1.ProtocolSCTP)), []Var{
			{"DNS_SERVICE_HOST", "10.0.0.10"},
			{"DNS_SERVICE_PORT", "53"},
			{"DNS_SERVICE_PORT_DNS_UDP", "53"},
			{"DNS_SERVICE_PORT_DNS_TCP", "53"},
			{"DNS_SERVICE_PORT_METRICS", "9153"},
			{"DNS_PORT", "udp://10.0.0.10:53"},
			{"DNS_PORT_53_UDP", "udp://10.0.0.10:53"},
			{"DNS_PORT_53_UDP_PROTO", "udp"},
			{"DNS_PORT_53_UDP_PORT", "53"},
			{"DNS_PORT_53_UDP_ADDR", "10.0.0.10"},
			{"DNS_PORT_53_TCP", "tcp://10.0.0.10:53"},
			{"DNS_PORT_53_TCP_PROTO", "tcp"},
			{"DNS_PORT_53_TCP_PORT", "53"},
			{"DNS_PORT_53_TCP_ADDR", "10.0.0.10"},
			{"DNS_PORT_9153_SCTP", "sctp://10.0.0.10:9153"},
			{"DNS_PORT_9153_SCTP_PROTO", "sctp"},
			{"DNS_PORT_9153_SCTP_PORT", "9153"},
			{"DNS_PORT_9153_SCTP_ADDR", "10.0.0.10"},
		}},
		{"IPv6 cluster IP bracketed in URLs", svc("shop", "web", "fd00::1", port("", 80, corev1.ProtocolTCP)), []Var{
			{"WEB_SERVICE_HOST", "fd00::1"},
			{"WEB_SERVICE_PORT", "80"},
			{"WEB_PORT", "tcp://[fd00::1]:80"},
			{"WEB_PORT_80_TCP", "tcp://[fd00::1]:80"},
			{"WEB_PORT_80_TCP_PROTO", "tcp"},
			{"WEB_PORT_80_TCP_PORT", "80"},
			{"WEB_PORT_80_TCP_ADDR", "fd00::1"},
		}},
		{"headless", svc("shop", "db", "None", port("", 5432, "")), nil},
		{"no cluster IP (ExternalName)", svc("shop", "ext", "", port("", 443, "")), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := FromService(tc.s); !slices.Equal(got, tc.want) {
				t.Errorf("FromService =\n%v\nwant\n%v", got, tc.want)
			}
		})
	}
}

// which Services count for a pod.
func TestForPodChoosesTheServices(t *testing.T) {
	web := svc("shop", "web", "10.0.0.20", port("", 80, ""))
	webVars := map[string]string{
		"WEB_SERVICE_HOST": "10.0.0.20", "WEB_SERVICE_PORT": "80", "WEB_PORT": "tcp://10.0.0.20:80",
		"WEB_PORT_80_TCP": "tcp://10.0.0.20:80", "WEB_PORT_80_TCP_PROTO": "tcp", "WEB_PORT_80_TCP_PORT": "80",
		"WEB_PORT_80_TCP_ADDR": "10.0.0.20",
	}
	headless := svc("shop", "db", "None", port("", 5432, ""))
	elsewhere := svc("other", "cache", "10.0.0.30", port("", 11211, ""))
	defaultWeb := svc("default", "site", "10.0.0.40", port("", 8080, ""))
	ownMaster := svc("shop", "kubernetes", "10.0.0.50", port("", 6443, ""))
	all := []*corev1.Service{web, headless, elsewhere, defaultWeb, master}
	for _, tc := range []struct {
		name     string
		services []*corev1.Service
		ns       string
		links    bool
		want     map[string]string
	}{
		{"namespace Services and the master one", all, "shop", true, with(masterVars, webVars)},
		{"enableServiceLinks false keeps only the master Service", all, "shop", false, masterVars},
		{"headless and other namespaces skipped", []*corev1.Service{headless, elsewhere, master}, "shop", true, masterVars},
		{"a pod of default gets its namespace's Services", all, "default", true, with(masterVars, map[string]string{
			"SITE_SERVICE_HOST": "10.0.0.40", "SITE_SERVICE_PORT": "8080", "SITE_PORT": "tcp://10.0.0.40:8080",
			"SITE_PORT_8080_TCP": "tcp://10.0.0.40:8080", "SITE_PORT_8080_TCP_PROTO": "tcp", "SITE_PORT_8080_TCP_PORT": "8080",
			"SITE_PORT_8080_TCP_ADDR": "10.0.0.40",
		})},
		{"empty namespace is default", []*corev1.Service{defaultWeb}, "", false, map[string]string{}},
		{"the namespace's own kubernetes Service wins, in either order", []*corev1.Service{master, ownMaster}, "shop", true, map[string]string{
			"KUBERNETES_SERVICE_HOST": "10.0.0.50", "KUBERNETES_SERVICE_PORT": "6443", "KUBERNETES_PORT": "tcp://10.0.0.50:6443",
			"KUBERNETES_PORT_6443_TCP": "tcp://10.0.0.50:6443", "KUBERNETES_PORT_6443_TCP_PROTO": "tcp",
			"KUBERNETES_PORT_6443_TCP_PORT": "6443", "KUBERNETES_PORT_6443_TCP_ADDR": "10.0.0.50",
		}},
		{"no Services at all", nil, "shop", true, map[string]string{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := ForPod(tc.services, tc.ns, tc.links)
			if !maps.Equal(got, tc.want) {
				t.Errorf("ForPod =\n%v\nwant\n%v", got, tc.want)
			}
			rev := slices.Clone(tc.services)
			slices.Reverse(rev)
			if again := ForPod(rev, tc.ns, tc.links); !maps.Equal(again, got) {
				t.Errorf("Services in another order give\n%v", again)
			}
		})
	}
}
