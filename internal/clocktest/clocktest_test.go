package clocktest

import (
	"testing"
	"time"
)

func TestClockMovesOnlyWhenTold(t *testing.T) {
	c := New(Start)
	if !c.Now().Equal(Start) || !c.Now().Equal(Start) {
		t.Fatalf("Now = %v, want %v", c.Now(), Start)
	}
	c.Advance(3 * time.Second)
	if want := Start.Add(3 * time.Second); !c.Now().Equal(want) {
		t.Fatalf("after Advance: %v, want %v", c.Now(), want)
	}
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	c.Set(at)
	if !c.Now().Equal(at) {
		t.Fatalf("after Set: %v, want %v", c.Now(), at)
	}
}
