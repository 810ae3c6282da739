package ociimage

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// Media types and annotation keys written into the archive.
const (
	MediaTypeIndex    = "application/vnd.oci.image.index.v1+json"
	MediaTypeManifest = "application/vnd.oci.image.manifest.v1+json"
	MediaTypeConfig   = "application/vnd.oci.image.config.v1+json"
	MediaTypeLayer    = "application/vnd.oci.image.layer.v1.tar"

	// AnnotationRefName is the OCI reference-name annotation of an index entry.
	AnnotationRefName = "org.opencontainers.image.ref.name"
	// AnnotationContainerdName is the annotation containerd's importer uses
	// as the full image name.
	AnnotationContainerdName = "io.containerd.image.name"
)

// DefaultApplets returns the busybox applets linked into /bin: enough for
// shell scripts that sleep, trap signals, write files and print.
func DefaultApplets() []string {
	return []string{
		"[", "[[", "ash", "basename", "cat", "chmod", "cp", "cut", "date", "dirname",
		"echo", "env", "false", "grep", "head", "hostname", "id", "kill", "ln", "ls",
		"mkdir", "mv", "nproc", "pidof", "printf", "ps", "pwd", "readlink", "rm",
		"rmdir", "sed", "seq", "sh", "sleep", "sort", "stat", "sync", "tail", "tee",
		"test", "timeout", "top", "touch", "tr", "true", "uname", "usleep", "wc",
		"xargs", "yes",
	}
}

// epochSeconds is the modification time (Unix seconds) of every archive
// entry: a constant, so digests depend only on content.
const epochSeconds = 0

// Spec describes one image.
type Spec struct {
	// Name is the full reference containerd imports the image as, for
	// example "localhost/syncpod/busybox:1.36".
	Name string
	// Busybox is the content of a statically linked busybox binary.
	Busybox []byte
	// Applets are linked to /bin/busybox as /bin/<applet>. Empty means
	// DefaultApplets().
	Applets []string
	// Entrypoint and Cmd are the image config's, as in a Dockerfile.
	Entrypoint []string
	Cmd        []string
	// Env is the config's environment; empty means a PATH covering /bin.
	Env []string
	// OS and Architecture are the platform, e.g. "linux" and "amd64".
	OS           string
	Architecture string
	// Labels are the config's labels (optional).
	Labels map[string]string
	// User is the config's user (optional), e.g. "1234" or "1234:1234".
	User string
	// Root, when set, is a directory whose whole tree becomes the layer
	// instead of busybox and its applets (Busybox and Applets are then
	// unused): modes (setuid too), owners, symlinks and hard links as
	// they are on disk, times fixed.
	Root string
}

// Descriptor is an OCI content descriptor.
type Descriptor struct {
	MediaType   string            `json:"mediaType"`
	Digest      string            `json:"digest"`
	Size        int64             `json:"size"`
	Annotations map[string]string `json:"annotations,omitempty"`
	Platform    *Platform         `json:"platform,omitempty"`
}

// Platform is an OCI platform.
type Platform struct {
	Architecture string `json:"architecture"`
	OS           string `json:"os"`
}

// Index is an OCI image index (index.json).
type Index struct {
	SchemaVersion int          `json:"schemaVersion"`
	MediaType     string       `json:"mediaType"`
	Manifests     []Descriptor `json:"manifests"`
}

// Manifest is an OCI image manifest.
type Manifest struct {
	SchemaVersion int          `json:"schemaVersion"`
	MediaType     string       `json:"mediaType"`
	Config        Descriptor   `json:"config"`
	Layers        []Descriptor `json:"layers"`
}

// Config is the subset of the OCI image config this package writes.
type Config struct {
	Created      string        `json:"created"`
	Architecture string        `json:"architecture"`
	OS           string        `json:"os"`
	Config       RuntimeConfig `json:"config"`
	RootFS       RootFS        `json:"rootfs"`
}

// RuntimeConfig is the "config" object of an image config.
type RuntimeConfig struct {
	Env        []string          `json:"Env,omitempty"`
	Entrypoint []string          `json:"Entrypoint,omitempty"`
	Cmd        []string          `json:"Cmd,omitempty"`
	User       string            `json:"User,omitempty"`
	WorkingDir string            `json:"WorkingDir,omitempty"`
	Labels     map[string]string `json:"Labels,omitempty"`
}

// RootFS lists the uncompressed layer digests of an image config.
type RootFS struct {
	Type    string   `json:"type"`
	DiffIDs []string `json:"diff_ids"`
}

// ErrInvalidSpec classifies a Spec that cannot produce an image.
var ErrInvalidSpec = errors.New("invalid image spec")

// Validate reports every problem of s at once.
func (s Spec) Validate() error {
	var problems []string
	if s.Name == "" {
		problems = append(problems, "name: must not be empty")
	} else if !strings.Contains(s.Name, ":") && !strings.Contains(s.Name, "@") {
		problems = append(problems, "name: must carry a tag (name:tag)")
	}
	if len(s.Busybox) == 0 && s.Root == "" {
		problems = append(problems, "busybox: must not be empty (or root: name a directory)")
	}
	if len(s.Entrypoint) == 0 && len(s.Cmd) == 0 {
		problems = append(problems, "entrypoint, cmd: at least one must be set")
	}
	if s.OS == "" {
		problems = append(problems, "os: must not be empty")
	}
	if s.Architecture == "" {
		problems = append(problems, "architecture: must not be empty")
	}
	for i, a := range s.Applets {
		if a == "" || strings.ContainsAny(a, "/\x00") || a == "." || a == ".." || a == "busybox" {
			problems = append(problems, fmt.Sprintf("applets[%d]: %q is not a plain applet name", i, a))
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("%w: %s", ErrInvalidSpec, strings.Join(problems, "; "))
	}
	return nil
}

// Image is a built image: its blobs and the descriptors that tie them.
type Image struct {
	Index    Index
	Manifest Descriptor
	Config   Descriptor
	Layer    Descriptor
	// Blobs maps a digest ("sha256:...") to its content.
	Blobs map[string][]byte
}

// Build assembles the image s describes.
func Build(s Spec) (*Image, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	var layer []byte
	var err error
	if s.Root != "" {
		layer, err = dirLayer(s.Root)
	} else {
		layer, err = buildLayer(s)
	}
	if err != nil {
		return nil, err
	}
	img := &Image{Blobs: map[string][]byte{}}
	img.Layer = img.add(MediaTypeLayer, layer)

	env := s.Env
	if len(env) == 0 {
		env = []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
	}
	cfg := Config{
		Created:      time.Unix(epochSeconds, 0).UTC().Format(time.RFC3339),
		Architecture: s.Architecture,
		OS:           s.OS,
		Config: RuntimeConfig{
			Env:        env,
			Entrypoint: s.Entrypoint,
			Cmd:        s.Cmd,
			User:       s.User,
			WorkingDir: "/",
			Labels:     s.Labels,
		},
		RootFS: RootFS{Type: "layers", DiffIDs: []string{img.Layer.Digest}},
	}
	cfgJSON, err := json.Marshal(cfg)
	if err != nil {
		return nil, fmt.Errorf("encode config: %w", err)
	}
	img.Config = img.add(MediaTypeConfig, cfgJSON)

	man := Manifest{
		SchemaVersion: 2,
		MediaType:     MediaTypeManifest,
		Config:        img.Config,
		Layers:        []Descriptor{img.Layer},
	}
	manJSON, err := json.Marshal(man)
	if err != nil {
		return nil, fmt.Errorf("encode manifest: %w", err)
	}
	img.Manifest = img.add(MediaTypeManifest, manJSON)

	entry := img.Manifest
	entry.Annotations = map[string]string{
		AnnotationRefName:        s.Name,
		AnnotationContainerdName: s.Name,
	}
	entry.Platform = &Platform{Architecture: s.Architecture, OS: s.OS}
	img.Index = Index{SchemaVersion: 2, MediaType: MediaTypeIndex, Manifests: []Descriptor{entry}}
	return img, nil
}

func (img *Image) add(mediaType string, content []byte) Descriptor {
	d := Digest(content)
	img.Blobs[d] = content
	return Descriptor{MediaType: mediaType, Digest: d, Size: int64(len(content))}
}

// Digest returns the OCI digest ("sha256:<hex>") of content.
func Digest(content []byte) string {
	sum := sha256.Sum256(content)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// WriteTo writes img as an OCI image-layout tar archive to w.
func (img *Image) WriteTo(w io.Writer) (int64, error) {
	cw := &countingWriter{w: w}
	tw := tar.NewWriter(cw)
	idx, err := json.Marshal(img.Index)
	if err != nil {
		return cw.n, fmt.Errorf("encode index: %w", err)
	}
	files := []struct {
		name string
		data []byte
	}{
		{"oci-layout", []byte(`{"imageLayoutVersion":"1.0.0"}`)},
		{"index.json", idx},
	}
	if err := writeDir(tw, "blobs/"); err != nil {
		return cw.n, err
	}
	if err := writeDir(tw, "blobs/sha256/"); err != nil {
		return cw.n, err
	}
	digests := make([]string, 0, len(img.Blobs))
	for d := range img.Blobs {
		digests = append(digests, d)
	}
	slices.Sort(digests)
	for _, d := range digests {
		files = append(files, struct {
			name string
			data []byte
		}{"blobs/sha256/" + strings.TrimPrefix(d, "sha256:"), img.Blobs[d]})
	}
	for _, f := range files {
		if err := writeFile(tw, f.name, 0o644, f.data); err != nil {
			return cw.n, err
		}
	}
	if err := tw.Close(); err != nil {
		return cw.n, fmt.Errorf("close archive: %w", err)
	}
	return cw.n, nil
}

// buildLayer returns the uncompressed root filesystem tar: the usual top-level
// directories, /bin/busybox, one symlink per applet, and minimal passwd/group
// files so user "root" resolves.
func buildLayer(s Spec) ([]byte, error) {
	applets := s.Applets
	if len(applets) == 0 {
		applets = DefaultApplets()
	}
	applets = slices.Clone(applets)
	slices.Sort(applets)
	applets = slices.Compact(applets)

	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, d := range []string{"bin/", "dev/", "etc/", "proc/", "root/", "run/", "sys/", "tmp/", "usr/", "usr/bin/", "var/"} {
		mode := int64(0o755)
		if d == "tmp/" {
			mode = 0o1777
		}
		if err := writeHeader(tw, &tar.Header{Typeflag: tar.TypeDir, Name: d, Mode: mode}); err != nil {
			return nil, err
		}
	}
	if err := writeFile(tw, "bin/busybox", 0o755, s.Busybox); err != nil {
		return nil, err
	}
	for _, a := range applets {
		if err := writeHeader(tw, &tar.Header{Typeflag: tar.TypeSymlink, Name: "bin/" + a, Linkname: "busybox", Mode: 0o777}); err != nil {
			return nil, err
		}
	}
	if err := writeFile(tw, "etc/group", 0o644, []byte("root:x:0:\nnogroup:x:65534:\n")); err != nil {
		return nil, err
	}
	if err := writeFile(tw, "etc/passwd", 0o644, []byte("root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n")); err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, fmt.Errorf("close layer: %w", err)
	}
	return buf.Bytes(), nil
}

func writeDir(tw *tar.Writer, name string) error {
	return writeHeader(tw, &tar.Header{Typeflag: tar.TypeDir, Name: name, Mode: 0o755})
}

func writeFile(tw *tar.Writer, name string, mode int64, data []byte) error {
	if err := writeHeader(tw, &tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: mode, Size: int64(len(data))}); err != nil {
		return err
	}
	if _, err := tw.Write(data); err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	return nil
}

func writeHeader(tw *tar.Writer, h *tar.Header) error {
	h.ModTime = time.Unix(epochSeconds, 0)
	h.Format = tar.FormatUSTAR
	h.Uname, h.Gname = "root", "root"
	if err := tw.WriteHeader(h); err != nil {
		return fmt.Errorf("write header %s: %w", h.Name, err)
	}
	return nil
}

type countingWriter struct {
	w io.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
