package store

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

func openConfigStore(t *testing.T, path string) *Store {
	t.Helper()
	s, err := Open(Options{Path: path, Validate: func(*syncpodv1.Pod) error { return nil }})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestConfigObjectsSurviveReopenAndSignalChanges(t *testing.T) {
	path := filepath.Join(t.TempDir(), "p.db")
	s := openConfigStore(t, path)
	ctx := context.Background()
	// A fresh file has no config buckets: reads see nothing, no error.
	if l, err := s.ListSecrets(ctx, ""); err != nil || len(l) != 0 {
		t.Fatalf("empty list %v %v", l, err)
	}
	if _, err := s.GetConfigMap(ctx, "", "x"); !errors.Is(err, ErrConfigNotFound) {
		t.Fatalf("get from empty: %v", err)
	}
	if _, _, err := s.ApplyConfigMap(ctx, &syncpodv1.ConfigMap{Name: "cfg", Data: map[string]string{"k": "v"}}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-s.ConfigChanged():
	default:
		t.Fatal("no change signal after an apply")
	}
	// Unchanged: no signal.
	if _, _, err := s.ApplyConfigMap(ctx, &syncpodv1.ConfigMap{Name: "cfg", Data: map[string]string{"k": "v"}}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-s.ConfigChanged():
		t.Fatal("signal for an unchanged apply")
	default:
	}
	if _, _, err := s.ApplySecret(ctx, &syncpodv1.Secret{Name: "sec", Data: map[string][]byte{"p": []byte("x")}}); err != nil {
		t.Fatal(err)
	}
	// Two changes before the reader wakes are one pending signal.
	if _, _, err := s.ApplySecret(ctx, &syncpodv1.Secret{Name: "sec2"}); err != nil {
		t.Fatal(err)
	}
	<-s.ConfigChanged()
	select {
	case <-s.ConfigChanged():
		t.Fatal("more than one pending signal")
	default:
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	s = openConfigStore(t, path)
	defer s.Close()
	cms, secs, err := s.ConfigFor(ctx, "", []string{"cfg", "absent", "cfg"}, []string{"sec"})
	if err != nil || len(cms) != 1 || cms[0].GetData()["k"] != "v" || len(secs) != 1 || string(secs[0].GetData()["p"]) != "x" {
		t.Fatalf("ConfigFor after reopen: %v %v %v", cms, secs, err)
	}
	if err := s.DeleteSecret(ctx, "default", "sec"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetSecret(ctx, "default", "sec"); !errors.Is(err, ErrConfigNotFound) {
		t.Fatalf("get after delete: %v", err)
	}
	// Invalid input is refused and nothing stored.
	if _, _, err := s.ApplyConfigMap(ctx, &syncpodv1.ConfigMap{Name: "a/b"}); !errors.Is(err, ErrInvalid) {
		t.Fatalf("slash in name: %v", err)
	}
}
