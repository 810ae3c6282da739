package ociimage

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// A directory tree becomes the image's one layer: setuid bits, symlinks
// and hard links survive, times are fixed, and the config carries User.
func TestBuildFromDirectoryKeepsModesLinksAndUser(t *testing.T) {
	root := t.TempDir()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.MkdirAll(filepath.Join(root, "bin"), 0o755))
	must(os.WriteFile(filepath.Join(root, "bin", "prog"), []byte("program"), 0o755))
	must(os.Chmod(filepath.Join(root, "bin", "prog"), os.ModeSetuid|0o755))
	must(os.Link(filepath.Join(root, "bin", "prog"), filepath.Join(root, "bin", "alias")))
	must(os.Symlink("prog", filepath.Join(root, "bin", "sh")))

	s := Spec{Name: "localhost/e2e/x:1", Root: root, Entrypoint: []string{"/bin/prog"}, User: "1234", OS: "linux", Architecture: "amd64"}
	img, err := Build(s)
	if err != nil {
		t.Fatal(err)
	}
	var cfg Config
	must(json.Unmarshal(img.Blobs[img.Config.Digest], &cfg))
	if cfg.Config.User != "1234" {
		t.Errorf("config user %q, want 1234", cfg.Config.User)
	}
	type entry struct {
		typ  byte
		mode int64
		link string
	}
	got := map[string]entry{}
	tr := tar.NewReader(bytes.NewReader(img.Blobs[img.Layer.Digest]))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		must(err)
		if h.ModTime.Unix() != epochSeconds {
			t.Errorf("%s: mtime %v, want the fixed epoch", h.Name, h.ModTime)
		}
		got[h.Name] = entry{h.Typeflag, h.Mode, h.Linkname}
	}
	// Walked in lexical order, alias comes first and holds the content.
	if e := got["bin/alias"]; e.typ != tar.TypeReg || e.mode&0o4000 == 0 {
		t.Errorf("bin/alias: %+v, want a setuid regular file", e)
	}
	if e := got["bin/prog"]; e.typ != tar.TypeLink || e.link != "bin/alias" {
		t.Errorf("bin/prog: %+v, want a hard link to bin/alias", e)
	}
	if e := got["bin/sh"]; e.typ != tar.TypeSymlink || e.link != "prog" {
		t.Errorf("bin/sh: %+v, want a symlink to prog", e)
	}
	if _, ok := got["bin/"]; !ok {
		t.Errorf("no bin/ directory entry: %v", got)
	}
	again, err := Build(s)
	must(err)
	if again.Manifest.Digest != img.Manifest.Digest {
		t.Errorf("two builds of one tree differ: %s, %s", img.Manifest.Digest, again.Manifest.Digest)
	}
}
