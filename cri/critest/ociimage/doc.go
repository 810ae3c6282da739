// Package ociimage writes tiny single-layer OCI images as image-layout tar
// archives, the format `ctr images import` reads. It exists because the test
// machines reach no registry: the containerd test harness builds its pause and
// busybox images locally from the host's statically linked busybox.
//
// An archive holds `oci-layout`, `index.json` and three blobs under
// `blobs/sha256/`: an uncompressed layer tar, the image config and the
// manifest. The index entry carries both `org.opencontainers.image.ref.name`
// and `io.containerd.image.name` set to the full image name, so containerd
// imports it under exactly that name.
//
// It promises: output is a pure function of the Spec and the busybox bytes
// (fixed timestamps, sorted entries), so the same input gives the same
// digests byte for byte; every blob is stored under the sha256 of its content.
package ociimage
