package validation_test

import (
	"testing"

	"github.com/syncpod/syncpod/proto/fielderr"
	"github.com/syncpod/syncpod/proto/validation"
)

// TestSourceGenerationIsNotNegative: a Kubernetes generation is never
// negative.
func TestSourceGenerationIsNotNegative(t *testing.T) {
	p := secPod()
	p.SourceGeneration = 3
	if err := validation.Pod(p); err != nil {
		t.Fatal(err)
	}
	p.SourceGeneration = -1
	fes := fielderr.As(validation.Pod(p))
	if len(fes) != 1 || fes[0].Path != "source_generation" {
		t.Errorf("errors %v, want one on source_generation", fes)
	}
}
