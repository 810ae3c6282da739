package volumes

import (
	"strings"
	"testing"

	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

func envOf(t *testing.T, pod *syncpodv1.Pod, c *syncpodv1.Container, src Sources) map[string]string {
	t.Helper()
	kvs, err := Env(pod, c, src, PodInfo{NodeName: "node-1", PodIP: "10.0.0.7", HostIP: "192.168.1.2"})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, kv := range kvs {
		out[kv.GetKey()] = string(kv.GetValue())
	}
	return out
}

func fieldEnv(name, path string) *syncpodv1.EnvVar {
	return &syncpodv1.EnvVar{Name: name, ValueFrom: &syncpodv1.EnvVarSource{Source: &syncpodv1.EnvVarSource_FieldRef{
		FieldRef: &syncpodv1.ObjectFieldSelector{FieldPath: path}}}}
}

func TestEnvDownwardAPIFields(t *testing.T) {
	pod := testPod()
	c := pod.GetSpec().GetContainers()[0]
	c.Env = []*syncpodv1.EnvVar{
		fieldEnv("NAME", "metadata.name"), fieldEnv("NS", "metadata.namespace"), fieldEnv("UID", "metadata.uid"),
		fieldEnv("APP", "metadata.labels['app']"), fieldEnv("NOTE", "metadata.annotations['note']"),
		fieldEnv("MISSING", "metadata.labels['nope']"),
		fieldEnv("NODE", "spec.nodeName"), fieldEnv("POD_IP", "status.podIP"), fieldEnv("HOST_IP", "status.hostIP"),
		{Name: "CPU", ValueFrom: &syncpodv1.EnvVarSource{Source: &syncpodv1.EnvVarSource_ResourceFieldRef{ResourceFieldRef: &syncpodv1.ResourceFieldSelector{Resource: "limits.cpu", Divisor: "1m"}}}},
		{Name: "CPU_CORES", ValueFrom: &syncpodv1.EnvVarSource{Source: &syncpodv1.EnvVarSource_ResourceFieldRef{ResourceFieldRef: &syncpodv1.ResourceFieldSelector{Resource: "limits.cpu"}}}},
		{Name: "MEM", ValueFrom: &syncpodv1.EnvVarSource{Source: &syncpodv1.EnvVarSource_ResourceFieldRef{ResourceFieldRef: &syncpodv1.ResourceFieldSelector{Resource: "limits.memory", Divisor: "1Mi"}}}},
		{Name: "REQ_MEM", ValueFrom: &syncpodv1.EnvVarSource{Source: &syncpodv1.EnvVarSource_ResourceFieldRef{ResourceFieldRef: &syncpodv1.ResourceFieldSelector{Resource: "requests.memory"}}}},
	}
	got := envOf(t, pod, c, Sources{})
	want := map[string]string{
		"NAME": "web", "NS": "shop", "UID": pod.GetUid(), "APP": "web", "NOTE": `say "hi"`, "MISSING": "",
		"NODE": "node-1", "POD_IP": "10.0.0.7", "HOST_IP": "192.168.1.2",
		"CPU": "250", "CPU_CORES": "1", "MEM": "64", "REQ_MEM": "67108864",
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
}

func TestEnvFromAndKeyRefs(t *testing.T) {
	pod := testPod()
	c := pod.GetSpec().GetContainers()[0]
	c.EnvFrom = []*syncpodv1.EnvFromSource{
		{ConfigMapRef: &syncpodv1.ConfigMapEnvSource{Name: "cfg"}},
		{Prefix: "DB_", SecretRef: &syncpodv1.SecretEnvSource{Name: "creds"}},
		{SecretRef: &syncpodv1.SecretEnvSource{Name: "absent", Optional: true}},
	}
	c.Env = []*syncpodv1.EnvVar{
		{Name: "mode", Value: "overridden"},
		{Name: "PASSWORD", ValueFrom: &syncpodv1.EnvVarSource{Source: &syncpodv1.EnvVarSource_SecretKeyRef{SecretKeyRef: &syncpodv1.SecretKeySelector{Name: "creds", Key: "password"}}}},
		{Name: "CONF", ValueFrom: &syncpodv1.EnvVarSource{Source: &syncpodv1.EnvVarSource_ConfigMapKeyRef{ConfigMapKeyRef: &syncpodv1.ConfigMapKeySelector{Name: "cfg", Key: "app.conf"}}}},
		{Name: "OPT", ValueFrom: &syncpodv1.EnvVarSource{Source: &syncpodv1.EnvVarSource_ConfigMapKeyRef{ConfigMapKeyRef: &syncpodv1.ConfigMapKeySelector{Name: "cfg", Key: "nope", Optional: true}}}},
	}
	kvs, err := Env(pod, c, sources(), PodInfo{})
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	got := map[string]string{}
	for _, kv := range kvs {
		order = append(order, kv.GetKey())
		got[kv.GetKey()] = string(kv.GetValue())
	}
	// envFrom first (keys sorted, each prefixed), then env; a later name replaces
	// an earlier one in place; optional missing ones are unset.
	if strings.Join(order, ",") != "app.conf,blob,mode,DB_password,DB_user,PASSWORD,CONF" {
		t.Errorf("order %v", order)
	}
	if got["mode"] != "overridden" || got["DB_password"] != "s3cret" || got["PASSWORD"] != "s3cret" || got["CONF"] != "port=80\n" {
		t.Errorf("env %v", got)
	}
	if _, ok := got["OPT"]; ok {
		t.Error("optional missing key was set")
	}
}

func TestEnvMissingSourcesAreTheKubeletsErrors(t *testing.T) {
	for _, tc := range []struct {
		name string
		c    *syncpodv1.Container
		want string
	}{
		{"configmap", &syncpodv1.Container{Env: []*syncpodv1.EnvVar{{Name: "X", ValueFrom: &syncpodv1.EnvVarSource{Source: &syncpodv1.EnvVarSource_ConfigMapKeyRef{ConfigMapKeyRef: &syncpodv1.ConfigMapKeySelector{Name: "nope", Key: "k"}}}}}}, `configmap "nope" not found`},
		{"configmap key", &syncpodv1.Container{Env: []*syncpodv1.EnvVar{{Name: "X", ValueFrom: &syncpodv1.EnvVarSource{Source: &syncpodv1.EnvVarSource_ConfigMapKeyRef{ConfigMapKeyRef: &syncpodv1.ConfigMapKeySelector{Name: "cfg", Key: "k"}}}}}}, "couldn't find key k in ConfigMap shop/cfg"},
		{"secret", &syncpodv1.Container{Env: []*syncpodv1.EnvVar{{Name: "X", ValueFrom: &syncpodv1.EnvVarSource{Source: &syncpodv1.EnvVarSource_SecretKeyRef{SecretKeyRef: &syncpodv1.SecretKeySelector{Name: "nope", Key: "k"}}}}}}, `secret "nope" not found`},
		{"secret key", &syncpodv1.Container{Env: []*syncpodv1.EnvVar{{Name: "X", ValueFrom: &syncpodv1.EnvVarSource{Source: &syncpodv1.EnvVarSource_SecretKeyRef{SecretKeyRef: &syncpodv1.SecretKeySelector{Name: "creds", Key: "k"}}}}}}, "couldn't find key k in Secret shop/creds"},
		{"envFrom", &syncpodv1.Container{EnvFrom: []*syncpodv1.EnvFromSource{{ConfigMapRef: &syncpodv1.ConfigMapEnvSource{Name: "nope"}}}}, `configmap "nope" not found`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Env(testPod(), tc.c, sources(), PodInfo{})
			if err == nil || err.Error() != tc.want {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
			// The message never carries a secret value.
			if err != nil && strings.Contains(err.Error(), "s3cret") {
				t.Fatal("secret value in an error")
			}
		})
	}
}

// TestEnvExpandsReferencesToEarlierVariables: a plain env value's $(VAR)
// sees the envFrom variables and the env entries before it (a valueFrom
// one included), not later ones; $$ escapes; an undefined reference stays
// literal; valueFrom values are never expanded.
func TestEnvExpandsReferencesToEarlierVariables(t *testing.T) {
	pod := testPod()
	c := pod.GetSpec().GetContainers()[0]
	c.EnvFrom = []*syncpodv1.EnvFromSource{{ConfigMapRef: &syncpodv1.ConfigMapEnvSource{Name: "cfg"}}}
	c.Env = []*syncpodv1.EnvVar{
		{Name: "FROM_ENVFROM", Value: "mode=$(mode)"},
		fieldEnv("POD", "metadata.name"),
		{Name: "URL", Value: "http://$(POD).$(NS):80/$(LATER)"},
		{Name: "NS", Value: "shop"},
		{Name: "LATER", Value: "x"},
		{Name: "ESCAPED", Value: "$$(POD) costs $$5"},
		{Name: "SELF", Value: "[$(SELF)]"},
		{Name: "SECRET_REF", ValueFrom: &syncpodv1.EnvVarSource{Source: &syncpodv1.EnvVarSource_ConfigMapKeyRef{
			ConfigMapKeyRef: &syncpodv1.ConfigMapKeySelector{Name: "cfg", Key: "ref"}}}},
	}
	src := NewSources([]*syncpodv1.ConfigMap{{Name: "cfg", Namespace: "shop", Data: map[string]string{"mode": "prod", "ref": "$(POD)"}}}, nil)
	got := envOf(t, pod, c, src)
	want := map[string]string{
		"FROM_ENVFROM": "mode=prod",
		"URL":          "http://web.$(NS):80/$(LATER)",
		"ESCAPED":      "$(POD) costs $5",
		"SELF":         "[$(SELF)]",
		"SECRET_REF":   "$(POD)",
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
}

// envFrom prefixes as the API server allows them (a digit first,
// '$', '#', '@', '!') make variables of every key, as with the kubelet;
// only a name that could not be one NAME=value string is left out.
func TestEnvFromPrefixesTheAPIServerAllows(t *testing.T) {
	pod := testPod()
	c := pod.GetSpec().GetContainers()[0]
	for _, p := range []string{"1-", "$_-", "#@!", "ABC_", "bad=", ""} {
		c.EnvFrom = append(c.EnvFrom, &syncpodv1.EnvFromSource{Prefix: p, ConfigMapRef: &syncpodv1.ConfigMapEnvSource{Name: "cfg"}})
	}
	got := envOf(t, pod, c, sources())
	for _, k := range []string{"1-mode", "$_-mode", "#@!mode", "ABC_mode", "mode", "1-app.conf", "#@!blob"} {
		if _, ok := got[k]; !ok {
			t.Errorf("%s missing from %v", k, got)
		}
	}
	if got["1-mode"] != "prod" {
		t.Errorf("1-mode = %q", got["1-mode"])
	}
	for k := range got {
		if strings.Contains(k, "=") {
			t.Errorf("variable %q has '=' in its name", k)
		}
	}
}

// TestEnvServiceVariablesBelowTheContainersOwn: the pod's Service
// variables are added after the container's own, which win on a shared
// name whether they come from env or envFrom; $(VAR) in an env value
// falls back to them.
func TestEnvServiceVariablesBelowTheContainersOwn(t *testing.T) {
	pod := testPod()
	pod.ServiceEnvironment = map[string]string{
		"KUBERNETES_SERVICE_HOST": "10.0.0.1",
		"KUBERNETES_SERVICE_PORT": "443",
		"REDIS_SERVICE_HOST":      "10.0.0.9",
		"mode":                    "from-service",
	}
	c := pod.GetSpec().GetContainers()[0]
	c.EnvFrom = []*syncpodv1.EnvFromSource{{ConfigMapRef: &syncpodv1.ConfigMapEnvSource{Name: "cfg"}}}
	c.Env = []*syncpodv1.EnvVar{
		{Name: "REDIS_SERVICE_HOST", Value: "redis.local"},
		{Name: "API", Value: "https://$(KUBERNETES_SERVICE_HOST):$(KUBERNETES_SERVICE_PORT)"},
		{Name: "REDIS", Value: "$(REDIS_SERVICE_HOST)"},
		{Name: "MODE", Value: "$(mode)"},
	}
	src := NewSources([]*syncpodv1.ConfigMap{{Name: "cfg", Namespace: "shop", Data: map[string]string{"mode": "prod"}}}, nil)
	kvs, err := Env(pod, c, src, PodInfo{})
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	got := map[string]string{}
	for _, kv := range kvs {
		if _, dup := got[kv.GetKey()]; dup {
			t.Errorf("%s set twice", kv.GetKey())
		}
		order = append(order, kv.GetKey())
		got[kv.GetKey()] = string(kv.GetValue())
	}
	want := map[string]string{
		"mode":                    "prod",
		"REDIS_SERVICE_HOST":      "redis.local",
		"API":                     "https://10.0.0.1:443",
		"REDIS":                   "redis.local",
		"MODE":                    "prod",
		"KUBERNETES_SERVICE_HOST": "10.0.0.1",
		"KUBERNETES_SERVICE_PORT": "443",
	}
	if len(got) != len(want) {
		t.Errorf("env %v, want %v", got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %q, want %q", k, got[k], v)
		}
	}
	if s := strings.Join(order, ","); s != "mode,REDIS_SERVICE_HOST,API,REDIS,MODE,KUBERNETES_SERVICE_HOST,KUBERNETES_SERVICE_PORT" {
		t.Errorf("order %s: the Service variables come after the container's own", s)
	}
}
