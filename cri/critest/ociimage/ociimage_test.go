package ociimage

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"
)

func testSpec() Spec {
	return Spec{
		Name:         "localhost/syncpod/busybox:1.36",
		Busybox:      []byte("\x7fELF fake busybox"),
		Cmd:          []string{"sh"},
		OS:           "linux",
		Architecture: "amd64",
	}
}

// readArchive returns every entry of an OCI layout tar by name.
func readArchive(t *testing.T, data []byte) (files map[string][]byte, order []string) {
	t.Helper()
	files = map[string][]byte{}
	tr := tar.NewReader(bytes.NewReader(data))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return files, order
		}
		if err != nil {
			t.Fatalf("read archive: %v", err)
		}
		order = append(order, h.Name)
		if h.Typeflag != tar.TypeReg {
			continue
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatalf("read %s: %v", h.Name, err)
		}
		files[h.Name] = b
	}
}

func blob(t *testing.T, files map[string][]byte, d Descriptor) []byte {
	t.Helper()
	b, ok := files["blobs/sha256/"+strings.TrimPrefix(d.Digest, "sha256:")]
	if !ok {
		t.Fatalf("blob %s (%s) missing", d.Digest, d.MediaType)
	}
	if got := Digest(b); got != d.Digest {
		t.Fatalf("blob %s has content digest %s", d.Digest, got)
	}
	if int64(len(b)) != d.Size {
		t.Fatalf("blob %s: size %d, descriptor says %d", d.Digest, len(b), d.Size)
	}
	return b
}

func TestWriteToLayout(t *testing.T) {
	tests := []struct {
		name       string
		mutate     func(*Spec)
		entrypoint []string
		cmd        []string
		applets    []string // must be present as symlinks
	}{
		{
			name:    "busybox preset: Cmd sh, no entrypoint, default applets",
			cmd:     []string{"sh"},
			applets: []string{"sh", "sleep", "echo", "cat", "true", "false", "kill"},
		},
		{
			name: "pause preset: entrypoint only",
			mutate: func(s *Spec) {
				s.Name = "localhost/syncpod/pause:3.10"
				s.Cmd = nil
				s.Entrypoint = []string{"/bin/sh", "-c", "sleep 1"}
			},
			entrypoint: []string{"/bin/sh", "-c", "sleep 1"},
			applets:    []string{"sh", "sleep"},
		},
		{
			name:    "explicit applets, duplicates collapse",
			mutate:  func(s *Spec) { s.Applets = []string{"sh", "sleep", "sh"} },
			cmd:     []string{"sh"},
			applets: []string{"sh", "sleep"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			spec := testSpec()
			if tc.mutate != nil {
				tc.mutate(&spec)
			}
			img, err := Build(spec)
			if err != nil {
				t.Fatalf("Build: %v", err)
			}
			var buf bytes.Buffer
			n, err := img.WriteTo(&buf)
			if err != nil {
				t.Fatalf("WriteTo: %v", err)
			}
			if n != int64(buf.Len()) {
				t.Errorf("WriteTo returned %d, wrote %d", n, buf.Len())
			}
			files, _ := readArchive(t, buf.Bytes())

			if got := string(files["oci-layout"]); got != `{"imageLayoutVersion":"1.0.0"}` {
				t.Errorf("oci-layout = %q", got)
			}
			var idx Index
			if err := json.Unmarshal(files["index.json"], &idx); err != nil {
				t.Fatalf("index.json: %v", err)
			}
			if idx.SchemaVersion != 2 || idx.MediaType != MediaTypeIndex || len(idx.Manifests) != 1 {
				t.Fatalf("index = %+v", idx)
			}
			entry := idx.Manifests[0]
			if entry.MediaType != MediaTypeManifest {
				t.Errorf("index entry media type %q", entry.MediaType)
			}
			for _, key := range []string{AnnotationRefName, AnnotationContainerdName} {
				if got := entry.Annotations[key]; got != spec.Name {
					t.Errorf("annotation %s = %q, want %q", key, got, spec.Name)
				}
			}
			if entry.Platform == nil || entry.Platform.OS != "linux" || entry.Platform.Architecture != "amd64" {
				t.Errorf("index entry platform = %+v", entry.Platform)
			}

			var man Manifest
			if err := json.Unmarshal(blob(t, files, entry), &man); err != nil {
				t.Fatalf("manifest: %v", err)
			}
			if man.SchemaVersion != 2 || man.Config.MediaType != MediaTypeConfig || len(man.Layers) != 1 || man.Layers[0].MediaType != MediaTypeLayer {
				t.Fatalf("manifest = %+v", man)
			}
			var cfg Config
			if err := json.Unmarshal(blob(t, files, man.Config), &cfg); err != nil {
				t.Fatalf("config: %v", err)
			}
			layer := blob(t, files, man.Layers[0])
			if !slices.Equal(cfg.RootFS.DiffIDs, []string{Digest(layer)}) || cfg.RootFS.Type != "layers" {
				t.Errorf("rootfs = %+v, want the uncompressed layer digest %s", cfg.RootFS, Digest(layer))
			}
			if !slices.Equal(cfg.Config.Entrypoint, tc.entrypoint) || !slices.Equal(cfg.Config.Cmd, tc.cmd) {
				t.Errorf("entrypoint/cmd = %q/%q, want %q/%q", cfg.Config.Entrypoint, cfg.Config.Cmd, tc.entrypoint, tc.cmd)
			}
			if cfg.OS != "linux" || cfg.Architecture != "amd64" {
				t.Errorf("config platform = %s/%s", cfg.OS, cfg.Architecture)
			}
			if len(cfg.Config.Env) == 0 || !strings.Contains(cfg.Config.Env[0], ":/bin") {
				t.Errorf("config env = %q, want a PATH with /bin", cfg.Config.Env)
			}

			// The layer: busybox content and applet symlinks.
			links := map[string]string{}
			tr := tar.NewReader(bytes.NewReader(layer))
			var busybox []byte
			for {
				h, err := tr.Next()
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					t.Fatalf("layer: %v", err)
				}
				switch {
				case h.Typeflag == tar.TypeSymlink:
					links[h.Name] = h.Linkname
				case h.Name == "bin/busybox":
					if h.Mode&0o111 == 0 {
						t.Errorf("bin/busybox mode %o is not executable", h.Mode)
					}
					busybox, _ = io.ReadAll(tr)
				}
			}
			if !bytes.Equal(busybox, spec.Busybox) {
				t.Errorf("bin/busybox content differs")
			}
			for _, a := range tc.applets {
				if links["bin/"+a] != "busybox" {
					t.Errorf("bin/%s -> %q, want busybox", a, links["bin/"+a])
				}
			}
			if spec.Applets != nil && len(links) != len(tc.applets) {
				t.Errorf("got %d symlinks, want %d", len(links), len(tc.applets))
			}
		})
	}
}

func TestBuildIsDeterministic(t *testing.T) {
	var out [2]bytes.Buffer
	for i := range out {
		img, err := Build(testSpec())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := img.WriteTo(&out[i]); err != nil {
			t.Fatal(err)
		}
	}
	if !bytes.Equal(out[0].Bytes(), out[1].Bytes()) {
		t.Fatal("two builds of the same spec differ")
	}
	other := testSpec()
	other.Cmd = []string{"sh", "-c", "true"}
	a, _ := Build(testSpec())
	b, _ := Build(other)
	if a.Manifest.Digest == b.Manifest.Digest {
		t.Error("different Cmd gave the same manifest digest")
	}
}

func TestValidate(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*Spec)
		want   []string // substrings of the error; nil means valid
	}{
		{name: "valid", mutate: func(*Spec) {}},
		{
			name: "every problem at once",
			mutate: func(s *Spec) {
				*s = Spec{Applets: []string{"ok", "../x", ""}}
			},
			want: []string{"name:", "busybox:", "entrypoint, cmd:", "os:", "architecture:", "applets[1]", "applets[2]"},
		},
		{name: "untagged name", mutate: func(s *Spec) { s.Name = "localhost/x" }, want: []string{"name: must carry a tag"}},
		{name: "applet named busybox would overwrite the binary", mutate: func(s *Spec) { s.Applets = []string{"busybox"} }, want: []string{"applets[0]"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := testSpec()
			tc.mutate(&s)
			err := s.Validate()
			if tc.want == nil {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			if !errors.Is(err, ErrInvalidSpec) {
				t.Fatalf("Validate = %v, want ErrInvalidSpec", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			if _, err := Build(s); !errors.Is(err, ErrInvalidSpec) {
				t.Errorf("Build = %v, want ErrInvalidSpec", err)
			}
		})
	}
}
