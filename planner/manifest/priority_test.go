package manifest

import (
	"strings"
	"testing"
)

// a manifest's spec.priority is kept (the graceful node shutdown
// orders pods by it); priorityClassName, which only the API server
// resolves, is still a warning.
func TestPriorityIsKept(t *testing.T) {
	for _, tc := range []struct {
		name string
		yaml string
		want *int32
	}{
		{name: "unset", yaml: "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  containers: [{name: c, image: busybox}]\n"},
		{name: "node critical", yaml: "apiVersion: v1\nkind: Pod\nmetadata: {name: p}\nspec:\n  priority: 2000001000\n  priorityClassName: system-node-critical\n  containers: [{name: c, image: busybox}]\n",
			want: new(int32(2000001000))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pods, warns, err := Parse([]byte(tc.yaml))
			if err != nil {
				t.Fatal(err)
			}
			got := pods[0].GetSpec().Priority
			if (got == nil) != (tc.want == nil) || got != nil && *got != *tc.want {
				t.Fatalf("priority %v, want %v", got, tc.want)
			}
			var names []string
			for _, w := range warns {
				names = append(names, w.Path)
			}
			if has := strings.Contains(strings.Join(names, " "), "spec.priorityClassName"); has != (tc.want != nil) {
				t.Fatalf("warnings %v", names)
			}
			if strings.Contains(strings.Join(names, " "), "spec.priority ") {
				t.Fatalf("spec.priority warned about: %v", names)
			}
		})
	}
}
