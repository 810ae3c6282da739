package crisim

import (
	"fmt"
	"slices"
	"testing"

	"github.com/syncpod/syncpod/proto/fielderr"
)

// TestSimSpecFieldErrors: every bad simulated-mode annotation is reported
// at once, each as a field error naming its annotation key.
func TestSimSpecFieldErrors(t *testing.T) {
	_, err := parseSimSpec(map[string]string{
		AnnotationExitAfter:     "soon",
		AnnotationExitCode:      "300",
		AnnotationIgnoreSIGTERM: "maybe",
	})
	var paths []string
	for _, fe := range fielderr.As(err) {
		paths = append(paths, fe.Path)
	}
	for _, key := range []string{AnnotationExitAfter, AnnotationExitCode, AnnotationIgnoreSIGTERM} {
		if want := fmt.Sprintf("config.annotations[%q]", key); !slices.Contains(paths, want) {
			t.Errorf("field errors %q lack %s", paths, want)
		}
	}
	if _, err := parseSimSpec(map[string]string{AnnotationExitCode: "3"}); err != nil {
		t.Errorf("a good annotation: %v", err)
	}
}
