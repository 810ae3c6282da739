#!/usr/bin/env bash
# mk/fuzzcheck.sh TARGET... — fail when the fuzz targets of the tree and
# the Makefile's FUZZ_TARGETS (./pkg/dir:FuzzName:count, passed as
# arguments) differ: a `func Fuzz...` in a _test.go file that `make fuzz`
# would not run, or a listed target that no longer exists. Run by
# `make lint`.
set -euo pipefail
cd "$(dirname "$0")/.."

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# What the tree has: ./dir:FuzzName, from the tracked test files (or every
# test file, outside a git checkout).
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  git grep -n '^func Fuzz' -- '*_test.go'
else
  grep -rn --include='*_test.go' --exclude-dir=.tmp --exclude-dir=bin '^func Fuzz' .
fi | sed -E 's#^(\./)?(.*)/[^/]*_test\.go:[0-9]+:func (Fuzz[A-Za-z0-9_]*)\(.*#./\2:\3#' | sort -u > "$tmp/have"

# What make fuzz runs: the same, without the counts.
for t in "$@"; do
  echo "${t%:*}"
done | sort -u > "$tmp/listed"

rc=0
if missing=$(comm -23 "$tmp/have" "$tmp/listed") && [ -n "$missing" ]; then
  echo "fuzz targets that FUZZ_TARGETS in the Makefile does not list (add them, with a count of inputs):"
  sed 's/^/  /' <<<"$missing"
  rc=1
fi
if stale=$(comm -13 "$tmp/have" "$tmp/listed") && [ -n "$stale" ]; then
  echo "FUZZ_TARGETS lists fuzz targets that do not exist (moved or renamed?):"
  sed 's/^/  /' <<<"$stale"
  rc=1
fi
[ $rc -eq 0 ] && echo "fuzz targets: all $(wc -l < "$tmp/have") listed in FUZZ_TARGETS"
exit $rc
