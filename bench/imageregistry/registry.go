// Package imageregistry serves OCI image-layout archives (the tar files
// `ctr images import` reads) as a read-only registry speaking the OCI
// distribution API over plain HTTP, so that a runtime asked to pull an
// image (pull policy Always) finds the very images it was given by import.
//
// The protocol is go-containerregistry's registry handler. The archives'
// blobs are not copied: each is served straight from its archive, read at
// its offset in the tar, so memory stays small whatever the images weigh.
// Every index entry of an archive that names an image (the
// io.containerd.image.name annotation, else org.opencontainers.image.ref.name,
// as a full reference such as localhost:5000/e2e-test-images/kitten:1.8)
// becomes a tag of that repository; the registry's host in the name is
// ignored, since the server answers for whichever name it is reached by.
// Loading checks that each manifest's digest matches its bytes and that
// every blob an image manifest names is in the archive.
//
// Once loaded, only GET and HEAD are served: nothing can be pushed,
// overwritten or deleted.
package imageregistry

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path"
	"slices"
	"strings"

	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// Annotation keys of an index entry that carry an image's name.
const (
	annotationContainerdName = "io.containerd.image.name"
	annotationRefName        = "org.opencontainers.image.ref.name"
)

// Media types of manifests and indexes, OCI and Docker.
const (
	mediaTypeOCIIndex       = "application/vnd.oci.image.index.v1+json"
	mediaTypeOCIManifest    = "application/vnd.oci.image.manifest.v1+json"
	mediaTypeDockerList     = "application/vnd.docker.distribution.manifest.list.v2+json"
	mediaTypeDockerManifest = "application/vnd.docker.distribution.manifest.v2+json"
)

// Registry is the loaded archives and the handler serving them.
type Registry struct {
	handler http.Handler
	blobs   *archiveBlobs
	images  []string
}

// Load reads every archive and returns a registry serving their images.
// Logs of the requests go to logger (at debug level). Close releases the
// archives' files.
func Load(archives []string, logger *slog.Logger) (*Registry, error) {
	if len(archives) == 0 {
		return nil, errors.New("no archive to serve")
	}
	blobs := &archiveBlobs{byDigest: map[string]blobAt{}}
	reg := &Registry{blobs: blobs}
	inner := registry.New(
		registry.WithBlobHandler(blobs),
		registry.Logger(slog.NewLogLogger(logger.Handler(), slog.LevelDebug)),
	)
	for _, a := range archives {
		names, err := loadArchive(inner, blobs, a)
		if err != nil {
			blobs.close()
			return nil, fmt.Errorf("%s: %w", a, err)
		}
		reg.images = append(reg.images, names...)
	}
	slices.Sort(reg.images)
	reg.handler = readOnly(inner)
	return reg, nil
}

// Images are the references served, sorted, as named in the archives.
func (r *Registry) Images() []string { return slices.Clone(r.images) }

// ServeHTTP answers the OCI distribution API's read requests.
func (r *Registry) ServeHTTP(w http.ResponseWriter, req *http.Request) { r.handler.ServeHTTP(w, req) }

// Close releases the archives' files; the registry serves no blob after.
func (r *Registry) Close() error { return r.blobs.close() }

// readOnly refuses every method but GET and HEAD with the distribution
// API's UNSUPPORTED error.
func readOnly(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.Method != http.MethodGet && req.Method != http.MethodHead {
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Allow", "GET, HEAD")
			w.WriteHeader(http.StatusMethodNotAllowed)
			fmt.Fprintf(w, `{"errors":[{"code":"UNSUPPORTED","message":"this registry is read-only: %s is not served"}]}`+"\n", req.Method)
			return
		}
		h.ServeHTTP(w, req)
	})
}

// descriptor is the part of an OCI content descriptor read here.
type descriptor struct {
	MediaType   string            `json:"mediaType"`
	Digest      string            `json:"digest"`
	Size        int64             `json:"size"`
	Annotations map[string]string `json:"annotations,omitempty"`
}

// index is an image index (index.json or a nested one).
type index struct {
	Manifests []descriptor `json:"manifests"`
}

// imageManifest is the part of an image manifest read here.
type imageManifest struct {
	Config descriptor   `json:"config"`
	Layers []descriptor `json:"layers"`
}

// loadArchive records the archive's blobs and tags its named images in
// the handler; it returns the names.
func loadArchive(h http.Handler, blobs *archiveBlobs, file string) ([]string, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	blobs.files = append(blobs.files, f)
	var idx []byte
	inArchive := map[string]blobAt{}
	tr := tar.NewReader(f)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("reading the archive: %w", err)
		}
		if hdr.Typeflag != tar.TypeReg {
			continue
		}
		name := path.Clean(strings.TrimPrefix(hdr.Name, "./"))
		switch {
		case name == "index.json":
			if idx, err = io.ReadAll(tr); err != nil {
				return nil, fmt.Errorf("reading index.json: %w", err)
			}
		case strings.HasPrefix(name, "blobs/"):
			// A blob's bytes are contiguous in the tar, starting where
			// the reader stands after its header: the file's offset
			// (the tar reader reads nothing ahead).
			off, err := f.Seek(0, io.SeekCurrent)
			if err != nil {
				return nil, err
			}
			alg, encoded, ok := strings.Cut(strings.TrimPrefix(name, "blobs/"), "/")
			if !ok || strings.Contains(encoded, "/") {
				continue
			}
			inArchive[alg+":"+encoded] = blobAt{file: f, off: off, size: hdr.Size}
		}
	}
	if idx == nil {
		return nil, errors.New("no index.json: not an OCI image layout archive")
	}
	var top index
	if err := json.Unmarshal(idx, &top); err != nil {
		return nil, fmt.Errorf("index.json: %w", err)
	}
	var names []string
	for _, d := range top.Manifests {
		ref := d.Annotations[annotationContainerdName]
		if ref == "" {
			ref = d.Annotations[annotationRefName]
		}
		if ref == "" {
			continue
		}
		repo, tag, err := splitReference(ref)
		if err != nil {
			return nil, err
		}
		if err := putManifest(h, inArchive, repo, tag, d, 0); err != nil {
			return nil, fmt.Errorf("%s: %w", ref, err)
		}
		names = append(names, ref)
	}
	if len(names) == 0 {
		return nil, fmt.Errorf("index.json names no image (no %s or %s annotation)", annotationContainerdName, annotationRefName)
	}
	for dg, b := range inArchive {
		if _, ok := blobs.byDigest[dg]; !ok {
			blobs.byDigest[dg] = b
		}
	}
	return names, nil
}

// splitReference splits a full image reference, host first, into the
// repository path under the host and the tag.
func splitReference(ref string) (repo, tag string, err error) {
	if strings.Contains(ref, "@") {
		return "", "", fmt.Errorf("image name %q: a digest reference names no tag to serve", ref)
	}
	host, rest, ok := strings.Cut(ref, "/")
	if !ok || !(strings.ContainsAny(host, ".:") || host == "localhost") {
		return "", "", fmt.Errorf("image name %q: want a full reference with its registry host, such as localhost:5000/repo/name:tag", ref)
	}
	i := strings.LastIndex(rest, ":")
	if i <= 0 || i == len(rest)-1 {
		return "", "", fmt.Errorf("image name %q: no tag", ref)
	}
	return rest[:i], rest[i+1:], nil
}

// maxNesting bounds how deep indexes may nest in an archive.
const maxNesting = 4

// putManifest stores the manifest d describes under ref in repo, after
// the manifests it lists when it is an index (each under its digest).
func putManifest(h http.Handler, inArchive map[string]blobAt, repo, ref string, d descriptor, depth int) error {
	b, ok := inArchive[d.Digest]
	if !ok {
		return fmt.Errorf("manifest %s is not in the archive", d.Digest)
	}
	content, err := io.ReadAll(io.NewSectionReader(b.file, b.off, b.size))
	if err != nil {
		return err
	}
	sum := sha256.Sum256(content)
	if got := "sha256:" + hex.EncodeToString(sum[:]); got != d.Digest {
		return fmt.Errorf("manifest %s: its bytes hash to %s", d.Digest, got)
	}
	switch d.MediaType {
	case mediaTypeOCIIndex, mediaTypeDockerList:
		if depth >= maxNesting {
			return fmt.Errorf("indexes nested deeper than %d", maxNesting)
		}
		var child index
		if err := json.Unmarshal(content, &child); err != nil {
			return fmt.Errorf("index %s: %w", d.Digest, err)
		}
		for _, c := range child.Manifests {
			if err := putManifest(h, inArchive, repo, c.Digest, c, depth+1); err != nil {
				return err
			}
		}
	case mediaTypeOCIManifest, mediaTypeDockerManifest:
		var m imageManifest
		if err := json.Unmarshal(content, &m); err != nil {
			return fmt.Errorf("manifest %s: %w", d.Digest, err)
		}
		for _, l := range append([]descriptor{m.Config}, m.Layers...) {
			if _, ok := inArchive[l.Digest]; !ok {
				return fmt.Errorf("manifest %s names blob %s, which is not in the archive", d.Digest, l.Digest)
			}
		}
	default:
		return fmt.Errorf("manifest %s: media type %q is neither an image manifest nor an index", d.Digest, d.MediaType)
	}
	req := httptest.NewRequestWithContext(context.Background(), http.MethodPut, "/v2/"+repo+"/manifests/"+ref, bytes.NewReader(content))
	req.Header.Set("Content-Type", d.MediaType)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	if rec.Code != http.StatusCreated {
		return fmt.Errorf("storing manifest %s as %s:%s: %d %s", d.Digest, repo, ref, rec.Code, strings.TrimSpace(rec.Body.String()))
	}
	return nil
}

// blobAt is where a blob's bytes are: a range of an archive.
type blobAt struct {
	file *os.File
	off  int64
	size int64
}

// archiveBlobs serves blobs from the archives they were found in, by
// digest, whatever the repository asked (identical bytes).
type archiveBlobs struct {
	files    []*os.File
	byDigest map[string]blobAt
}

var (
	_ registry.BlobHandler     = (*archiveBlobs)(nil)
	_ registry.BlobStatHandler = (*archiveBlobs)(nil)
)

func (a *archiveBlobs) Stat(_ context.Context, _ string, h v1.Hash) (int64, error) {
	b, ok := a.byDigest[h.String()]
	if !ok {
		return 0, registry.ErrNotFound
	}
	return b.size, nil
}

func (a *archiveBlobs) Get(_ context.Context, _ string, h v1.Hash) (io.ReadCloser, error) {
	b, ok := a.byDigest[h.String()]
	if !ok {
		return nil, registry.ErrNotFound
	}
	return sectionCloser{io.NewSectionReader(b.file, b.off, b.size)}, nil
}

func (a *archiveBlobs) close() error {
	var errs []error
	for _, f := range a.files {
		errs = append(errs, f.Close())
	}
	a.files = nil
	return errors.Join(errs...)
}

// sectionCloser is a blob's range: the handler serves Range requests
// from it as an io.ReaderAt. Closing leaves the archive open.
type sectionCloser struct{ *io.SectionReader }

func (sectionCloser) Close() error { return nil }
