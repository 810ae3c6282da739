package static

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// A ConfigMap in the manifest directory reaches the store with the scan
// that finds it (before the pods of that scan), and leaves it with its
// file.
func TestApplyCarriesManifestConfigMapsIntoTheStore(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	path := filepath.Join(e.dir, "cfg.yaml")
	y := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg}\ndata: {k: v1}\n"
	if err := os.WriteFile(path, []byte(y), 0o600); err != nil {
		t.Fatal(err)
	}
	e.write(t, "web.yaml", "web")
	d, err := e.src.Scan()
	if err != nil {
		t.Fatal(err)
	}
	if retry := e.r.Apply(ctx, d); len(retry) != 0 {
		t.Fatalf("retry %v, want none", retry)
	}
	cm, err := e.store.GetConfigMap(ctx, "default", "cfg")
	if err != nil || cm.GetData()["k"] != "v1" {
		t.Fatalf("stored config map %v, err %v; want k=v1", cm, err)
	}
	e.get(t, "web")
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if d, err = e.src.Scan(); err != nil {
		t.Fatal(err)
	}
	e.r.Apply(ctx, d)
	if cm, err := e.store.GetConfigMap(ctx, "default", "cfg"); err == nil {
		t.Fatalf("config map %v still stored after its file was removed", cm)
	}
}
