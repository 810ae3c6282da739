package crisim

import (
	"testing"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func TestMountMapRewritesWholeContainerPaths(t *testing.T) {
	m := mountMap([]*runtimeapi.Mount{
		{ContainerPath: "/etc/config", HostPath: "/h/cfg"},
		{ContainerPath: "/etc/config/special/", HostPath: "/h/special"},
		{ContainerPath: "/cache", HostPath: "/h/cache"},
		{ContainerPath: "", HostPath: "/ignored"},
	})
	for _, tc := range []struct{ name, in, want string }{
		{"exact", "/cache", "/h/cache"},
		{"below", "/etc/config/app.conf", "/h/cfg/app.conf"},
		{"longest mount wins", "/etc/config/special/x", "/h/special/x"},
		{"inside a shell script", `cat /etc/config/a && echo hi > /cache/f; ls "/cache"`, `cat /h/cfg/a && echo hi > /h/cache/f; ls "/h/cache"`},
		{"after =", "--config=/etc/config/a", "--config=/h/cfg/a"},
		{"prefix of a longer name is not a match", "/cachex /etc/configs", "/cachex /etc/configs"},
		{"inside another path is not a match", "/var/cache/x", "/var/cache/x"},
		{"no paths", "echo hello", "echo hello"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := mapPaths(tc.in, m); got != tc.want {
				t.Errorf("mapPaths(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
	env := mapEnv([]string{"CONF=/etc/config/a", "PLAIN=x", "EMPTY="}, m)
	if env[0] != "CONF=/h/cfg/a" || env[1] != "PLAIN=x" || env[2] != "EMPTY=" {
		t.Errorf("mapEnv = %q", env)
	}
}
