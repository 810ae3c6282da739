// Command syncpod-mkimage writes a one-layer OCI image-layout tar built from
// the host's statically linked busybox (Debian's busybox-static), for
// `ctr -n k8s.io images import`. No registry is involved.
//
// Two presets, and any directory tree:
//
//	-kind pause    Entrypoint sh -c: trap TERM/INT and exit 0, else sleep forever
//	-kind busybox  no Entrypoint, Cmd ["sh"]
//	-kind dir      the tree under -root as the layer, with -entrypoint, -cmd
//	               and -user (JSON arrays for the first two)
//
// Usage:
//
//	syncpod-mkimage -kind busybox -name localhost/syncpod/busybox:1.36 -out busybox.tar
//	syncpod-mkimage -kind dir -root rootfs -entrypoint '["/agnhost"]' -cmd '["pause"]' -name localhost/e2e/agnhost:2.66.1 -out agnhost.tar
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"

	"github.com/syncpod/syncpod/cri/critest/ociimage"
)

// pauseScript sleeps forever and exits 0 on SIGTERM or SIGINT: as PID 1 of
// its PID namespace, a bare `sleep` would ignore SIGTERM.
const pauseScript = `trap 'exit 0' TERM INT; while :; do sleep 3600 & wait $!; done`

func main() {
	if err := run(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "syncpod-mkimage:", err)
		os.Exit(1)
	}
}

func run(args []string) error {
	fs := flag.NewFlagSet("syncpod-mkimage", flag.ContinueOnError)
	kind := fs.String("kind", "", `image preset: "pause", "busybox" or "dir"`)
	name := fs.String("name", "", "full image name with tag, e.g. localhost/syncpod/busybox:1.36")
	out := fs.String("out", "", "output tar path")
	busybox := fs.String("busybox", "/bin/busybox", "statically linked busybox binary")
	arch := fs.String("arch", runtime.GOARCH, "image architecture")
	root := fs.String("root", "", `-kind dir: the directory tree that becomes the image`)
	entrypoint := fs.String("entrypoint", "", `-kind dir: the entrypoint, a JSON array such as '["/agnhost"]'`)
	cmd := fs.String("cmd", "", `-kind dir: the command, a JSON array such as '["pause"]'`)
	user := fs.String("user", "", `-kind dir: the user, e.g. 1234`)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *name == "" || *out == "" {
		return errors.New("-name and -out are required")
	}
	spec := ociimage.Spec{
		Name:         *name,
		OS:           "linux",
		Architecture: *arch,
		Labels:       map[string]string{"io.syncpod.image.kind": *kind},
	}
	if *kind == "dir" {
		if *root == "" {
			return errors.New("-kind dir: -root must name the directory tree")
		}
		spec.Root, spec.User = *root, *user
		for _, f := range []struct {
			flag, val string
			to        *[]string
		}{{"-entrypoint", *entrypoint, &spec.Entrypoint}, {"-cmd", *cmd, &spec.Cmd}} {
			if f.val == "" {
				continue
			}
			if err := json.Unmarshal([]byte(f.val), f.to); err != nil {
				return fmt.Errorf(`%s: %q is not a JSON array of strings (e.g. '["/bin/sh","-c"]'): %w`, f.flag, f.val, err)
			}
		}
		img, err := ociimage.Build(spec)
		if err != nil {
			return err
		}
		return writeAtomic(*out, img)
	}
	bb, err := os.ReadFile(*busybox)
	if err != nil {
		return fmt.Errorf("read busybox (install busybox-static): %w", err)
	}
	spec.Busybox = bb
	switch *kind {
	case "pause":
		spec.Entrypoint = []string{"/bin/sh", "-c", pauseScript}
	case "busybox":
		spec.Cmd = []string{"sh"}
	default:
		return fmt.Errorf(`-kind: %q is not "pause", "busybox" or "dir"`, *kind)
	}
	img, err := ociimage.Build(spec)
	if err != nil {
		return err
	}
	return writeAtomic(*out, img)
}

// writeAtomic writes the archive next to path and renames it into place, so
// an interrupted run never leaves a truncated tar that make would trust.
func writeAtomic(path string, img *ociimage.Image) error {
	f, err := os.CreateTemp(filepath.Dir(path), filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name()) // no-op after a successful rename
	if err := f.Chmod(0o644); err != nil {
		f.Close()
		return err
	}
	w := bufio.NewWriter(f)
	if _, err := img.WriteTo(w); err != nil {
		f.Close()
		return err
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}
