#!/usr/bin/env bash
# mk/k8sbin.sh COMPONENT... — build Kubernetes binaries (kubelet,
# kube-apiserver, kubectl, kube-scheduler, kube-controller-manager, and for
# the conformance run e2e.test and ginkgo) from the Go module proxy, once per
# version, into a cache outside the clone, and print the directory that holds
# them.
#
# k8s.io/kubernetes cannot be `go install`ed (it replaces its staging modules
# with local paths), so a throwaway module requires it and pins every staging
# module at the matching v0.x.y. The binaries are static (CGO_ENABLED=0) and
# carry the version, as the release builds do.
#
# e2e.test is the test binary of k8s.io/kubernetes/test/e2e (the upstream
# end-to-end suite). It is built in a module directory of its own, so that
# resolving its much larger import graph does not change the module the
# components are built from. ginkgo is the CLI that runs e2e.test in parallel
# processes, at the version that graph requires; agnhost is the suite's
# all-purpose test program (the heart of its test images), from the same graph.
# kubemark is the upstream hollow node (a kubelet on a fake runtime, as the
# scalability tests run many of them); only `make bench-scale` asks for it,
# and it is built in a module directory of its own too. Every build runs at
# nice 19: it only takes CPU nobody else wants.
#
#   K8S_VERSION        the Kubernetes release (default below)
#   SYNCPOD_K8S_CACHE  where builds are kept (default /var/cache/syncpod/k8s,
#                      or ~/.cache/syncpod/k8s when that is not writable)
#
# Concurrent callers wait on a lock and reuse one build. Progress goes to
# stderr; stdout is only the bin directory.
set -euo pipefail

K8S_VERSION=${K8S_VERSION:-v1.37.2}
GO=${GO:-go}
if [ $# -eq 0 ]; then
  echo "usage: $0 kubelet|kube-apiserver|kubectl|kube-scheduler|kube-controller-manager|kubemark|e2e.test|ginkgo|agnhost ..." >&2
  exit 2
fi
for c in "$@"; do
  case $c in
    kubelet|kube-apiserver|kubectl|kube-scheduler|kube-controller-manager|kubemark|e2e.test|ginkgo|agnhost) ;;
    *) echo "k8sbin: unknown component $c" >&2; exit 2 ;;
  esac
done

. "$(dirname "$0")/cachedir.sh"
cache=${SYNCPOD_K8S_CACHE:-$(cache_dir k8s)}
root=$cache/$K8S_VERSION
mkdir -p "$root/bin" "$root/src"

minor=${K8S_VERSION#v1.}; minor=${minor%%.*}
staging=v0.${K8S_VERSION#v1.}
ldflags="-s -w -X k8s.io/component-base/version.gitVersion=$K8S_VERSION -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor -X k8s.io/component-base/version.gitTreeState=clean"
gobuild() { GOWORK=off GOFLAGS=-mod=mod CGO_ENABLED=0 nice -n 19 "$GO" "$@"; }

# write_gomod DIR: the throwaway module requiring k8s.io/kubernetes, with
# every staging module it requires at v0.0.0 pinned at the release's v0.x.y.
write_gomod() {
  local modfile
  modfile=$(GOFLAGS=-mod=mod $GO mod download -json "k8s.io/kubernetes@$K8S_VERSION" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",$/\1/p')
  {
    echo "module kbuild"
    echo
    echo "go 1.26"
    echo
    echo "require k8s.io/kubernetes $K8S_VERSION"
    echo
    sed -n 's/^[[:space:]]*\(k8s\.io\/[a-z0-9.-]*\) v0\.0\.0$/\1/p' "$modfile" | sort -u |
      while read -r m; do echo "replace $m => $m $staging"; done
  } > "$1/go.mod"
}

# The test binary and its runner: own module directory, own lock (the build
# takes tens of CPU minutes and must not hold up the components).
e2e=(); comps=(); hollow=()
for c in "$@"; do
  case $c in e2e.test|ginkgo|agnhost) e2e+=("$c") ;; kubemark) hollow+=("$c") ;; *) comps+=("$c") ;; esac
done
e2e_missing=()
for c in "${e2e[@]}"; do
  [ -x "$root/bin/$c" ] || e2e_missing+=("$c")
done
if [ ${#e2e_missing[@]} -gt 0 ]; then
  (
    exec 8>"$root/.lock-e2e"
    flock 8
    esrc=$root/src-e2e
    mkdir -p "$esrc"
    start=$(date +%s)
    if [ ! -f "$esrc/.tidy-done" ]; then
      echo "k8sbin: resolving k8s.io/kubernetes/test/e2e@$K8S_VERSION (once per version)" >&2
      write_gomod "$esrc"
      kdir=$(GOFLAGS=-mod=mod $GO mod download -json "k8s.io/kubernetes@$K8S_VERSION" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
      # go test -c compiles the package's test files, whose imports go mod
      # tidy does not record from a dependency: name each one here.
      {
        printf '//go:build tools\n\npackage kbuild\n\nimport (\n'
        printf '\t_ "k8s.io/kubernetes/test/e2e"\n\t_ "k8s.io/kubernetes/test/images/agnhost"\n'
        sed -n '/^import (/,/^)/p' "$kdir"/test/e2e/*_test.go |
          sed -n 's/^[[:space:]]*\([a-z0-9_]*[[:space:]]\)\{0,1\}"\([^"]*\)"$/\2/p' |
          grep '^[^/]*\.' | sort -u | sed 's/.*/\t_ "&"/'
        printf ')\n'
      } > "$esrc/tools.go"
      (cd "$esrc" && GOWORK=off GOFLAGS=-mod=mod nice -n 19 $GO mod tidy >&2)
      touch "$esrc/.tidy-done"
    fi
    for c in "${e2e_missing[@]}"; do
      [ -x "$root/bin/$c" ] && continue
      echo "k8sbin: building $c $K8S_VERSION into $root/bin at nice 19 (cached for later runs)" >&2
      case $c in
        e2e.test)
          (cd "$esrc" && gobuild test -c -trimpath -ldflags "$ldflags" \
            -o "$root/bin/e2e.test.tmp" k8s.io/kubernetes/test/e2e >&2) ;;
        agnhost)
          (cd "$esrc" && gobuild build -trimpath -ldflags "-s -w" \
            -o "$root/bin/agnhost.tmp" k8s.io/kubernetes/test/images/agnhost >&2) ;;
        ginkgo)
          gv=$(cd "$esrc" && GOWORK=off GOFLAGS=-mod=mod $GO list -m -f '{{.Version}}' github.com/onsi/ginkgo/v2)
          (cd "$esrc" && GOWORK=off CGO_ENABLED=0 GOBIN=$esrc/gobin nice -n 19 $GO install -trimpath "github.com/onsi/ginkgo/v2/ginkgo@$gv" >&2)
          cp "$esrc/gobin/ginkgo" "$root/bin/ginkgo.tmp" ;;
      esac
      mv "$root/bin/$c.tmp" "$root/bin/$c"
      echo "k8sbin: built $c in $(( $(date +%s) - start )) s" >&2
    done
  )
fi
# The hollow node: its own module directory and lock, like the test
# binary, so that its import graph (the kubelet's and kube-proxy's with
# fake runtimes) leaves the components' module as it is.
if [ ${#hollow[@]} -gt 0 ] && [ ! -x "$root/bin/kubemark" ]; then
  (
    exec 7>"$root/.lock-kubemark"
    flock 7
    [ -x "$root/bin/kubemark" ] && exit 0
    hsrc=$root/src-kubemark
    mkdir -p "$hsrc"
    start=$(date +%s)
    if [ ! -f "$hsrc/.tidy-done" ]; then
      echo "k8sbin: resolving k8s.io/kubernetes/cmd/kubemark@$K8S_VERSION (once per version)" >&2
      write_gomod "$hsrc"
      printf '//go:build tools\n\npackage kbuild\n\nimport _ "k8s.io/kubernetes/cmd/kubemark"\n' > "$hsrc/tools.go"
      (cd "$hsrc" && GOWORK=off GOFLAGS=-mod=mod nice -n 19 $GO mod tidy >&2)
      touch "$hsrc/.tidy-done"
    fi
    echo "k8sbin: building kubemark $K8S_VERSION into $root/bin at nice 19 (cached for later runs)" >&2
    (cd "$hsrc" && gobuild build -trimpath -ldflags "$ldflags" \
      -o "$root/bin/kubemark.tmp" k8s.io/kubernetes/cmd/kubemark >&2)
    mv "$root/bin/kubemark.tmp" "$root/bin/kubemark"
    echo "k8sbin: built kubemark in $(( $(date +%s) - start )) s" >&2
  )
fi
if [ ${#comps[@]} -eq 0 ]; then
  echo "$root/bin"
  exit 0
fi

exec 9>"$root/.lock"
flock 9

missing=()
for c in "${comps[@]}"; do
  [ -x "$root/bin/$c" ] || missing+=("$c")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "$root/bin"
  exit 0
fi

src=$root/src
start=$(date +%s)
if [ ! -f "$src/.tidy-done" ]; then
  echo "k8sbin: resolving k8s.io/kubernetes@$K8S_VERSION (once per version)" >&2
  write_gomod "$src"
  cat > "$src/tools.go" <<'EOF'
//go:build tools

package kbuild

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubectl"
	_ "k8s.io/kubernetes/cmd/kubelet"
)
EOF
  (cd "$src" && GOWORK=off GOFLAGS=-mod=mod nice -n 19 $GO mod tidy >&2)
  touch "$src/.tidy-done"
fi

for c in "${missing[@]}"; do
  echo "k8sbin: building $c $K8S_VERSION into $root/bin (cached for later runs)" >&2
  (cd "$src" && gobuild build -trimpath -ldflags "$ldflags" \
    -o "$root/bin/$c.tmp" "k8s.io/kubernetes/cmd/$c" >&2)
  mv "$root/bin/$c.tmp" "$root/bin/$c"
done
echo "k8sbin: built ${missing[*]} in $(( $(date +%s) - start )) s" >&2
echo "$root/bin"
