package main

import (
	"archive/tar"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/syncpod/syncpod/cri/critest/ociimage"
)

func TestRun(t *testing.T) {
	dir := t.TempDir()
	busybox := filepath.Join(dir, "busybox")
	if err := os.WriteFile(busybox, []byte("\x7fELF fake"), 0o755); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name           string
		args           []string
		wantErr        string
		wantEntrypoint []string
		wantCmd        []string
	}{
		{
			name:           "pause preset traps SIGTERM",
			args:           []string{"-kind", "pause", "-name", "localhost/syncpod/pause:3.10"},
			wantEntrypoint: []string{"/bin/sh", "-c", pauseScript},
		},
		{
			name:    "busybox preset has only Cmd sh",
			args:    []string{"-kind", "busybox", "-name", "localhost/syncpod/busybox:1.36"},
			wantCmd: []string{"sh"},
		},
		{
			name:           "dir kind takes the tree, entrypoint and cmd",
			args:           []string{"-kind", "dir", "-root", dir, "-entrypoint", `["/agnhost"]`, "-cmd", `["pause"]`, "-name", "localhost/e2e/agnhost:2.66.1"},
			wantEntrypoint: []string{"/agnhost"},
			wantCmd:        []string{"pause"},
		},
		{name: "dir kind without a root", args: []string{"-kind", "dir", "-cmd", `["x"]`, "-name", "x:1"}, wantErr: "-root"},
		{name: "dir kind with a cmd that is no JSON array", args: []string{"-kind", "dir", "-root", dir, "-cmd", "pause", "-name", "x:1"}, wantErr: "-cmd"},
		{name: "unknown kind", args: []string{"-kind", "nginx", "-name", "x:1"}, wantErr: "-kind"},
		{name: "missing name", args: []string{"-kind", "busybox"}, wantErr: "-name and -out are required"},
		{name: "missing busybox binary", args: []string{"-kind", "busybox", "-name", "x:1", "-busybox", filepath.Join(dir, "nope")}, wantErr: "busybox-static"},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out := filepath.Join(dir, "out", string(rune('a'+i))+".tar")
			if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
				t.Fatal(err)
			}
			args := append([]string{"-out", out}, tc.args...)
			if !slices.Contains(args, "-busybox") {
				args = append(args, "-busybox", busybox)
			}
			err := run(args)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("run = %v, want an error containing %q", err, tc.wantErr)
				}
				if _, statErr := os.Stat(out); !errors.Is(statErr, os.ErrNotExist) {
					t.Errorf("failed run left %s behind", out)
				}
				return
			}
			if err != nil {
				t.Fatalf("run: %v", err)
			}
			cfg := readConfig(t, out)
			if !slices.Equal(cfg.Config.Entrypoint, tc.wantEntrypoint) || !slices.Equal(cfg.Config.Cmd, tc.wantCmd) {
				t.Errorf("entrypoint/cmd = %q/%q, want %q/%q", cfg.Config.Entrypoint, cfg.Config.Cmd, tc.wantEntrypoint, tc.wantCmd)
			}
			st, err := os.Stat(out)
			if err != nil {
				t.Fatal(err)
			}
			if st.Mode().Perm() != 0o644 {
				t.Errorf("archive mode %v, want 0644", st.Mode().Perm())
			}
			leftovers, _ := filepath.Glob(out + ".*.tmp")
			if len(leftovers) > 0 {
				t.Errorf("temporary files left: %v", leftovers)
			}
		})
	}
}

// readConfig follows index.json -> manifest -> config inside the archive.
func readConfig(t *testing.T, path string) ociimage.Config {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	files := map[string][]byte{}
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(tr)
		files[h.Name] = b
	}
	blob := func(d ociimage.Descriptor) []byte {
		return files["blobs/sha256/"+strings.TrimPrefix(d.Digest, "sha256:")]
	}
	var idx ociimage.Index
	var man ociimage.Manifest
	var cfg ociimage.Config
	if err := json.Unmarshal(files["index.json"], &idx); err != nil || len(idx.Manifests) != 1 {
		t.Fatalf("index.json: %v (%d manifests)", err, len(idx.Manifests))
	}
	if err := json.Unmarshal(blob(idx.Manifests[0]), &man); err != nil {
		t.Fatalf("manifest: %v", err)
	}
	if err := json.Unmarshal(blob(man.Config), &cfg); err != nil {
		t.Fatalf("config: %v", err)
	}
	return cfg
}
