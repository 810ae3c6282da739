#!/usr/bin/env bash
# buf.sh OUT VERSION INTEGRITY — install the pinned buf as OUT.
#
# The fast way: the prebuilt binary that buf publishes on the npm registry
# (@bufbuild/buf-linux-x64), fetched with `npm pack` and checked against
# the sha512 integrity pinned in the Makefile before it is used. Seconds,
# instead of ~13 minutes compiling buf from source on two cores. Without
# npm, or on another platform, it falls back to `go install` of the same
# version.
set -euo pipefail

out=${1:?usage: buf.sh OUT VERSION INTEGRITY}
version=${2:?version}
integrity=${3:?integrity}
pkg=@bufbuild/buf-linux-x64@${version#v}

log() { echo "buf.sh: $*" >&2; }

go_install() {
	log "$1: go install github.com/bufbuild/buf/cmd/buf@$version (slow: builds from source)"
	GOBIN=$(dirname "$out") ${GO:-go} install "github.com/bufbuild/buf/cmd/buf@$version"
}

if [[ $(uname -s)/$(uname -m) != Linux/x86_64 ]]; then
	go_install "no pinned prebuilt binary for $(uname -s)/$(uname -m)"
	exit 0
fi
if ! command -v npm >/dev/null || ! command -v node >/dev/null; then
	go_install "npm not found"
	exit 0
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && npm pack --silent "$pkg" >"$tmp/name" 2>"$tmp/npm.log") || {
	cat "$tmp/npm.log" >&2
	go_install "npm pack $pkg failed"
	exit 0
}
tgz=$tmp/$(tail -n 1 "$tmp/name")
# npm's integrity string: "sha512-" + base64 of the tarball's SHA-512.
got=$(node -e 'const c=require("crypto"),f=require("fs");process.stdout.write("sha512-"+c.createHash("sha512").update(f.readFileSync(process.argv[1])).digest("base64"))' "$tgz")
if [[ $got != "$integrity" ]]; then
	log "integrity mismatch for $pkg: got $got, pinned $integrity; refusing it"
	exit 1
fi
tar -xzf "$tgz" -C "$tmp" package/bin/buf
mkdir -p "$(dirname "$out")"
install -m 0755 "$tmp/package/bin/buf" "$out.tmp"
have=$("$out.tmp" --version)
if [[ $have != "${version#v}" ]]; then
	rm -f "$out.tmp"
	log "$pkg contains buf $have, want ${version#v}"
	exit 1
fi
mv "$out.tmp" "$out"
log "installed buf $have from npm ($pkg, integrity checked)"
