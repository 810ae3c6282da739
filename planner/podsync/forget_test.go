package podsync

import "testing"

// TestForgetOnlyForSafeIdentities: a runtime pod another tool labelled may
// carry any name; such a pod is removed without being forgotten (the
// executor would refuse the identity) rather than not at all.
func TestForgetOnlyForSafeIdentities(t *testing.T) {
	const uid = "6f1c2a3b-0d4e-4f5a-8b6c-7d8e9f0a1b2c"
	for _, tc := range []struct {
		name, uid, ns, pod string
		want               bool
	}{
		{"syncpod pod", uid, "default", "web", true},
		{"empty namespace is default", uid, "", "web", true},
		{"foreign uid", "uid-from-another-tool", "default", "web", false},
		{"name with a slash", uid, "default", "a/b", false},
		{"upper-case namespace", uid, "K8s_IO", "web", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := forget(tc.uid, tc.ns, tc.pod)
			if (got != nil) != tc.want {
				t.Fatalf("forget(%q, %q, %q) = %v, want set %v", tc.uid, tc.ns, tc.pod, got, tc.want)
			}
			if got != nil && got.Namespace == "" {
				t.Fatalf("namespace left empty: %v", got)
			}
		})
	}
}
