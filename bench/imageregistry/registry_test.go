package imageregistry

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/syncpod/syncpod/cri/critest/ociimage"
)

// writeImage builds an image whose layer holds files (path → content)
// under name and writes it as an archive in dir.
func writeImage(t *testing.T, dir, name string, files map[string]string) (string, *ociimage.Image) {
	t.Helper()
	root := t.TempDir()
	for p, c := range files {
		full := filepath.Join(root, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	img, err := ociimage.Build(ociimage.Spec{Name: name, Root: root, OS: "linux", Architecture: "amd64", Cmd: []string{"sh"}})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if _, err := img.WriteTo(&buf); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, strings.NewReplacer("/", "_", ":", "_").Replace(name)+".tar")
	if err := os.WriteFile(file, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return file, img
}

// writeTar writes entries (name → content, in the order given) as a tar.
func writeTar(t *testing.T, file string, entries [][2]string) {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		if err := tw.WriteHeader(&tar.Header{Name: e[0], Mode: 0o644, Size: int64(len(e[1])), Typeflag: tar.TypeReg}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(e[1])); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

func digestOf(b []byte) string {
	s := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(s[:])
}

func get(t *testing.T, srv *httptest.Server, method, path string, header map[string]string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, srv.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp, body
}

func load(t *testing.T, archives ...string) *Registry {
	t.Helper()
	reg, err := Load(archives, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	t.Cleanup(func() { _ = reg.Close() })
	return reg
}

// An image pulled the way a runtime pulls it (resolve the tag, fetch the
// manifest by digest, then its config and layers) comes back byte for
// byte as the archive holds it, from whichever of several archives.
func TestPullServesTheArchivesImagesByteForByte(t *testing.T) {
	dir := t.TempDir()
	kittenTar, kitten := writeImage(t, dir, "localhost:5000/e2e-test-images/kitten:1.8",
		map[string]string{"data.json": `{"image": "kitten.jpg"}`, "etc/os-release": "NAME=\"Alpine Linux\"\n"})
	busyboxTar, busybox := writeImage(t, dir, "localhost:5000/e2e-test-images/busybox:1.37.0-2",
		map[string]string{"bin/sh": "#!"})
	reg := load(t, kittenTar, busyboxTar)
	if got, want := reg.Images(), []string{"localhost:5000/e2e-test-images/busybox:1.37.0-2", "localhost:5000/e2e-test-images/kitten:1.8"}; !slices.Equal(got, want) {
		t.Fatalf("Images() = %v, want %v", got, want)
	}
	srv := httptest.NewServer(reg)
	defer srv.Close()

	if resp, _ := get(t, srv, http.MethodGet, "/v2/", nil); resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /v2/: %d, want 200 (the API version check)", resp.StatusCode)
	}
	for _, c := range []struct {
		repo, tag string
		img       *ociimage.Image
	}{
		{"e2e-test-images/kitten", "1.8", kitten},
		{"e2e-test-images/busybox", "1.37.0-2", busybox},
	} {
		accept := map[string]string{"Accept": ociimage.MediaTypeManifest + ", " + ociimage.MediaTypeIndex}
		resp, _ := get(t, srv, http.MethodHead, "/v2/"+c.repo+"/manifests/"+c.tag, accept)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("HEAD %s:%s: %d, want 200", c.repo, c.tag, resp.StatusCode)
		}
		if got := resp.Header.Get("Docker-Content-Digest"); got != c.img.Manifest.Digest {
			t.Fatalf("%s:%s resolves to %s, want the archive's manifest %s", c.repo, c.tag, got, c.img.Manifest.Digest)
		}
		if got := resp.Header.Get("Content-Type"); got != ociimage.MediaTypeManifest {
			t.Fatalf("%s:%s Content-Type %q, want %q", c.repo, c.tag, got, ociimage.MediaTypeManifest)
		}
		resp, body := get(t, srv, http.MethodGet, "/v2/"+c.repo+"/manifests/"+c.img.Manifest.Digest, accept)
		if resp.StatusCode != http.StatusOK || !bytes.Equal(body, c.img.Blobs[c.img.Manifest.Digest]) {
			t.Fatalf("GET manifest by digest: %d, bytes equal %v", resp.StatusCode, bytes.Equal(body, c.img.Blobs[c.img.Manifest.Digest]))
		}
		var m ociimage.Manifest
		if err := json.Unmarshal(body, &m); err != nil {
			t.Fatal(err)
		}
		for _, d := range append([]ociimage.Descriptor{m.Config}, m.Layers...) {
			resp, blob := get(t, srv, http.MethodGet, "/v2/"+c.repo+"/blobs/"+d.Digest, nil)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("GET blob %s: %d", d.Digest, resp.StatusCode)
			}
			if digestOf(blob) != d.Digest || int64(len(blob)) != d.Size {
				t.Fatalf("blob %s: got %d bytes hashing to %s", d.Digest, len(blob), digestOf(blob))
			}
			resp, _ = get(t, srv, http.MethodHead, "/v2/"+c.repo+"/blobs/"+d.Digest, nil)
			if resp.StatusCode != http.StatusOK || resp.ContentLength != d.Size {
				t.Fatalf("HEAD blob %s: %d, length %d, want 200 and %d", d.Digest, resp.StatusCode, resp.ContentLength, d.Size)
			}
		}
	}

	// The layer holds the files the image was made of.
	layer := kitten.Blobs[kitten.Layer.Digest]
	tr := tar.NewReader(bytes.NewReader(layer))
	found := false
	for {
		h, err := tr.Next()
		if err != nil {
			break
		}
		if strings.TrimPrefix(h.Name, "./") == "etc/os-release" {
			found = true
		}
	}
	if !found {
		t.Fatal("the served layer has no etc/os-release")
	}
}

// A Range request gets those bytes of the blob, read from the archive.
func TestBlobRangeIsServedFromTheArchive(t *testing.T) {
	tarFile, img := writeImage(t, t.TempDir(), "localhost:5000/e2e-test-images/kitten:1.8", map[string]string{"data.json": "{}"})
	srv := httptest.NewServer(load(t, tarFile))
	defer srv.Close()
	cfg := img.Blobs[img.Config.Digest]
	resp, body := get(t, srv, http.MethodGet, "/v2/e2e-test-images/kitten/blobs/"+img.Config.Digest, map[string]string{"Range": "bytes=2-9"})
	if resp.StatusCode != http.StatusPartialContent {
		t.Fatalf("ranged GET: %d, want 206", resp.StatusCode)
	}
	if !bytes.Equal(body, cfg[2:10]) {
		t.Fatalf("ranged GET: %q, want %q", body, cfg[2:10])
	}
}

// What the archives do not hold is not found; what would change the
// registry is refused, and the images stay as loaded.
func TestUnknownNamesAreNotFoundAndWritesAreRefused(t *testing.T) {
	tarFile, img := writeImage(t, t.TempDir(), "localhost:5000/e2e-test-images/kitten:1.8", map[string]string{"data.json": "{}"})
	srv := httptest.NewServer(load(t, tarFile))
	defer srv.Close()
	for _, p := range []string{
		"/v2/e2e-test-images/kitten/manifests/1.9",
		"/v2/e2e-test-images/puppy/manifests/1.8",
		"/v2/e2e-test-images/kitten/blobs/" + digestOf([]byte("absent")),
	} {
		if resp, _ := get(t, srv, http.MethodGet, p, nil); resp.StatusCode != http.StatusNotFound {
			t.Errorf("GET %s: %d, want 404", p, resp.StatusCode)
		}
	}
	for _, c := range []struct{ method, path string }{
		{http.MethodPut, "/v2/e2e-test-images/kitten/manifests/1.8"},
		{http.MethodDelete, "/v2/e2e-test-images/kitten/manifests/1.8"},
		{http.MethodPost, "/v2/e2e-test-images/kitten/blobs/uploads/"},
	} {
		resp, body := get(t, srv, c.method, c.path, nil)
		if resp.StatusCode != http.StatusMethodNotAllowed || !strings.Contains(string(body), "UNSUPPORTED") {
			t.Errorf("%s %s: %d %s, want 405 UNSUPPORTED", c.method, c.path, resp.StatusCode, body)
		}
	}
	resp, _ := get(t, srv, http.MethodHead, "/v2/e2e-test-images/kitten/manifests/1.8", nil)
	if got := resp.Header.Get("Docker-Content-Digest"); got != img.Manifest.Digest {
		t.Fatalf("after the refused writes the tag resolves to %q, want %s", got, img.Manifest.Digest)
	}
}

// An archive that cannot be served whole is refused at load, with what
// is wrong, and nothing is served.
func TestLoadRefusesArchivesItCannotServe(t *testing.T) {
	dir := t.TempDir()
	manifest := `{"schemaVersion":2,"mediaType":"application/vnd.oci.image.manifest.v1+json",` +
		`"config":{"mediaType":"application/vnd.oci.image.config.v1+json","digest":"` + digestOf([]byte("cfg")) + `","size":3},"layers":[]}`
	md := digestOf([]byte(manifest))
	entry := func(name string) string {
		return `{"manifests":[{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"` + md +
			`","size":` + strconv.Itoa(len(manifest)) + `,"annotations":{"io.containerd.image.name":"` + name + `"}}]}`
	}
	blob := func(content string) [2]string {
		return [2]string{"blobs/sha256/" + strings.TrimPrefix(digestOf([]byte(content)), "sha256:"), content}
	}
	cases := []struct {
		name    string
		entries [][2]string
		want    string
	}{
		{"no index", [][2]string{blob("cfg")}, "no index.json"},
		{"no name", [][2]string{{"index.json", `{"manifests":[{"mediaType":"application/vnd.oci.image.manifest.v1+json","digest":"` + md + `"}]}`}, blob(manifest), blob("cfg")}, "names no image"},
		{"name without host", [][2]string{{"index.json", entry("kitten:1.8")}, blob(manifest), blob("cfg")}, "registry host"},
		{"name without tag", [][2]string{{"index.json", entry("localhost:5000/kitten")}, blob(manifest), blob("cfg")}, "no tag"},
		{"digest name", [][2]string{{"index.json", entry("localhost:5000/kitten@" + md)}, blob(manifest), blob("cfg")}, "digest reference"},
		{"missing config", [][2]string{{"index.json", entry("localhost:5000/kitten:1.8")}, blob(manifest)}, "not in the archive"},
		{"missing manifest", [][2]string{{"index.json", entry("localhost:5000/kitten:1.8")}, blob("cfg")}, "not in the archive"},
		{"manifest bytes changed", [][2]string{{"index.json", entry("localhost:5000/kitten:1.8")},
			{"blobs/sha256/" + strings.TrimPrefix(md, "sha256:"), manifest + " "}, blob("cfg")}, "hash to"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			file := filepath.Join(dir, strings.ReplaceAll(c.name, " ", "-")+".tar")
			writeTar(t, file, c.entries)
			reg, err := Load([]string{file}, slog.New(slog.NewTextHandler(io.Discard, nil)))
			if err == nil {
				_ = reg.Close()
				t.Fatalf("Load accepted it; want an error containing %q", c.want)
			}
			if !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), file) {
				t.Fatalf("Load: %v; want the archive's name and %q", err, c.want)
			}
		})
	}
	if _, err := Load(nil, slog.New(slog.NewTextHandler(io.Discard, nil))); err == nil {
		t.Fatal("Load of no archive: no error")
	}
}
