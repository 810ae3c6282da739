#!/usr/bin/env bash
# mk/k8sbin.sh COMPONENT... — build Kubernetes binaries (kubelet,
# kube-apiserver, kubectl, kube-scheduler, kube-controller-manager) from the
# Go module proxy, once per version, into a cache outside the clone, and print
# the directory that holds them.
#
# k8s.io/kubernetes cannot be `go install`ed (it replaces its staging modules
# with local paths), so a throwaway module requires it and pins every staging
# module at the matching v0.x.y. The binaries are static (CGO_ENABLED=0) and
# carry the version, as the release builds do.
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
  echo "usage: $0 kubelet|kube-apiserver|kubectl|kube-scheduler|kube-controller-manager ..." >&2
  exit 2
fi
for c in "$@"; do
  case $c in
    kubelet|kube-apiserver|kubectl|kube-scheduler|kube-controller-manager) ;;
    *) echo "k8sbin: unknown component $c" >&2; exit 2 ;;
  esac
done

. "$(dirname "$0")/cachedir.sh"
cache=${SYNCPOD_K8S_CACHE:-$(cache_dir k8s)}
root=$cache/$K8S_VERSION
mkdir -p "$root/bin" "$root/src"

exec 9>"$root/.lock"
flock 9

missing=()
for c in "$@"; do
  [ -x "$root/bin/$c" ] || missing+=("$c")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "$root/bin"
  exit 0
fi

minor=${K8S_VERSION#v1.}; minor=${minor%%.*}
staging=v0.${K8S_VERSION#v1.}
src=$root/src
start=$(date +%s)
if [ ! -f "$src/.tidy-done" ]; then
  echo "k8sbin: resolving k8s.io/kubernetes@$K8S_VERSION (once per version)" >&2
  modfile=$(GOFLAGS=-mod=mod $GO mod download -json "k8s.io/kubernetes@$K8S_VERSION" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",$/\1/p')
  {
    echo "module kbuild"
    echo
    echo "go 1.26"
    echo
    echo "require k8s.io/kubernetes $K8S_VERSION"
    echo
    # Every staging module k8s.io/kubernetes requires at v0.0.0.
    sed -n 's/^[[:space:]]*\(k8s\.io\/[a-z0-9.-]*\) v0\.0\.0$/\1/p' "$modfile" | sort -u |
      while read -r m; do echo "replace $m => $m $staging"; done
  } > "$src/go.mod"
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
  (cd "$src" && GOWORK=off GOFLAGS=-mod=mod $GO mod tidy >&2)
  touch "$src/.tidy-done"
fi

ldflags="-s -w -X k8s.io/component-base/version.gitVersion=$K8S_VERSION -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor -X k8s.io/component-base/version.gitTreeState=clean"
for c in "${missing[@]}"; do
  echo "k8sbin: building $c $K8S_VERSION into $root/bin (cached for later runs)" >&2
  (cd "$src" && GOWORK=off GOFLAGS=-mod=mod CGO_ENABLED=0 $GO build -trimpath -ldflags "$ldflags" \
    -o "$root/bin/$c.tmp" "k8s.io/kubernetes/cmd/$c" >&2)
  mv "$root/bin/$c.tmp" "$root/bin/$c"
done
echo "k8sbin: built ${missing[*]} in $(( $(date +%s) - start )) s" >&2
echo "$root/bin"
