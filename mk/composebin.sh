#!/usr/bin/env bash
# mk/composebin.sh — build the current Docker Compose (the `docker compose`
# CLI plugin, github.com/docker/compose/v5) from the Go module proxy, once
# per version, into a cache outside the clone, and print the path of the
# binary. Debian 12 ships only docker-compose 1.29.2; the compose test
# brings deploy/compose.yaml up with both.
#
# The module has `exclude` directives, so `go install pkg@version` refuses
# it: a throwaway module requires it and carries the same excludes.
#
#   DOCKER_COMPOSE_VERSION   the release (default below; v5.7.0 needs
#                            go 1.26.10 and a docker/cli the proxy does not
#                            serve)
#   SYNCPOD_COMPOSE_CACHE    where builds are kept (default
#                            /var/cache/syncpod/compose, or
#                            ~/.cache/syncpod/compose when not writable)
#   --cached                 print the path only when the build is already
#                            there (exit 1 otherwise), never build
#
# The binary runs standalone (`docker-compose -f ... up`, as the test uses
# it) or as a plugin of the docker CLI: link it as
# ~/.docker/cli-plugins/docker-compose and `docker compose` works.
#
# Concurrent callers wait on a lock and reuse one build. Progress goes to
# stderr; stdout is only the binary's path.
set -euo pipefail

VERSION=${DOCKER_COMPOSE_VERSION:-v5.6.0}
GO=${GO:-go}
cached_only=0
if [ "${1:-}" = --cached ]; then cached_only=1; fi

. "$(dirname "$0")/cachedir.sh"
cache=${SYNCPOD_COMPOSE_CACHE:-$(cache_dir compose)}
root=$cache/$VERSION
bin=$root/bin/docker-compose

if [ -x "$bin" ]; then
  echo "$bin"
  exit 0
fi
if [ $cached_only = 1 ]; then
  echo "composebin: Docker Compose $VERSION not built yet (make compose-build)" >&2
  exit 1
fi

mkdir -p "$root/bin" "$root/src"
exec 9>"$root/.lock"
flock 9
if [ -x "$bin" ]; then
  echo "$bin"
  exit 0
fi

start=$(date +%s)
src=$root/src
major=${VERSION%%.*}
mod=github.com/docker/compose/$major
if [ ! -f "$src/.tidy-done" ]; then
  echo "composebin: resolving $mod@$VERSION (once per version)" >&2
  upstream=$(cd "$root" && GOWORK=off GOFLAGS=-mod=mod $GO mod download -json "$mod@$VERSION" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",$/\1/p')
  {
    echo "module composebuild"
    echo
    sed -n 's/^go \(.*\)$/go \1/p' "$upstream"
    echo
    echo "require $mod $VERSION"
    echo
    # The release's own exclude block (versions its dependencies' graph
    # must not select), comments and all.
    sed -n '/^exclude (/,/^)/p' "$upstream"
  } > "$src/go.mod"
  printf '//go:build tools\n\npackage composebuild\n\nimport _ "%s/cmd"\n' "$mod" > "$src/tools.go"
  (cd "$src" && GOWORK=off GOFLAGS=-mod=mod GOTOOLCHAIN=local $GO mod tidy >&2)
  touch "$src/.tidy-done"
fi

echo "composebin: building Docker Compose $VERSION (cached in $root for later runs)" >&2
# Static, so it runs on any of these machines; the version string is what
# `docker-compose version` reports.
(cd "$src" && GOWORK=off GOFLAGS=-mod=mod GOTOOLCHAIN=local CGO_ENABLED=0 $GO build -trimpath \
  -ldflags "-s -w -X $mod/internal.Version=$VERSION" -o "$bin.tmp" "$mod/cmd" >&2)
mv "$bin.tmp" "$bin"
echo "composebin: built Docker Compose $VERSION in $(( $(date +%s) - start )) s" >&2
echo "$bin"
