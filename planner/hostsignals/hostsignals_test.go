package hostsignals

import (
	"strings"
	"testing"
)

func TestReadSignalsFromThisHost(t *testing.T) {
	s, err := ReadSignals(t.TempDir(), "/").Signals()
	if err != nil {
		t.Fatal(err)
	}
	if s.MemoryCapacityBytes <= 0 || s.MemoryAvailableBytes <= 0 || s.MemoryAvailableBytes > s.MemoryCapacityBytes ||
		s.NodeFsCapacityBytes <= 0 || s.NodeFsAvailableBytes > s.NodeFsCapacityBytes || s.ImageFsCapacityBytes <= 0 ||
		s.PIDMax <= 0 || s.Processes <= 0 || s.Processes > s.PIDMax {
		t.Errorf("signals of this host look wrong: %+v", s)
	}
	if _, err := ReadSignals("/nonexistent/syncpod", "/").Signals(); err == nil || !strings.Contains(err.Error(), "/nonexistent/syncpod") {
		t.Errorf("an unreadable dir: %v, want an error naming it", err)
	}
}
