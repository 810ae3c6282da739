package crisuite

import (
	"slices"
	"testing"
)

func TestStopBeforeDelete(t *testing.T) {
	for _, tc := range []struct{ in, want []string }{
		// containerd 2.x: the removal was reported before the stop.
		{
			in:   []string{"sb:CREATED", "sb:STARTED", "CREATED", "STARTED", "DELETED", "STOPPED", "sb:STOPPED", "sb:DELETED"},
			want: []string{"sb:CREATED", "sb:STARTED", "CREATED", "STARTED", "STOPPED", "DELETED", "sb:STOPPED", "sb:DELETED"},
		},
		// In order already: unchanged.
		{
			in:   []string{"CREATED", "STARTED", "STOPPED", "DELETED"},
			want: []string{"CREATED", "STARTED", "STOPPED", "DELETED"},
		},
		// Any other disorder is left for the comparison to refuse.
		{
			in:   []string{"STARTED", "CREATED", "DELETED"},
			want: []string{"STARTED", "CREATED", "DELETED"},
		},
		{
			in:   []string{"CREATED", "STARTED", "DELETED", "sb:STOPPED", "STOPPED"},
			want: []string{"CREATED", "STARTED", "DELETED", "sb:STOPPED", "STOPPED"},
		},
	} {
		in := slices.Clone(tc.in)
		if got := stopBeforeDelete(in); !slices.Equal(got, tc.want) {
			t.Errorf("stopBeforeDelete(%v) = %v, want %v", tc.in, got, tc.want)
		}
		if !slices.Equal(in, tc.in) {
			t.Errorf("stopBeforeDelete changed its argument: %v", in)
		}
	}
}
