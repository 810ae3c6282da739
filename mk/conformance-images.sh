#!/usr/bin/env bash
# mk/conformance-images.sh OUT — the test images the upstream sig-node
# conformance specs run, made offline (no registry is reachable here) as
# OCI image-layout tarballs in OUT, plus OUT/repo-list.yaml for the suite's
# KUBE_TEST_REPO_LIST: every registry the suite knows is remapped under
# localhost:5000/, the names the tarballs are imported as. mk/conformance.sh
# also serves the same tarballs at that name (syncpod-bench registry, plain
# HTTP on 127.0.0.1:5000 inside the cluster's network namespace), so a spec
# that pulls anyway (pull policy Always) gets these very images.
#
# What goes into each image, from this machine and the Kubernetes module:
#   busybox     busybox 1.37 built from source (mk/busyboxbin.sh: Debian's
#               1.35 sh drops environment names such as "data-1" that the
#               specs set and read back), every applet linked in /bin
#   agnhost     the suite's test program (mk/k8sbin.sh agnhost), busybox,
#               bash and curl with their libraries, the image's user and group,
#               /agnhost-2, /uploads, the porter test certificate, and the
#               /etc/os-release of the Alpine release the real image is built
#               on (3.21; a busybox userland here, named as the one it
#               stands in for); two tags with a different /VERSION
#   kitten      agnhost plus the kitten page at the root (/kitten.jpg,
#               /data.json), command test-webserver; the ImageVolume spec
#               mounts this image as a volume and reads /data.json (wants
#               "kitten.jpg") and /etc/os-release (wants "Alpine Linux")
#   pause       the module's build/pause/linux/pause.c, gcc -static
#   nginx       Debian's nginx (apt-get download, unpacked, not installed)
#               and its libraries, serving a page on port 80; two tags
#   nonewprivs  the module's test/images/nonewprivs, setuid root
#   nonroot     busybox with USER 1234
# Tarballs are kept and only missing ones built (rm OUT to rebuild).
set -euo pipefail

out=${1:?usage: conformance-images.sh OUT}
root=$(cd "$(dirname "$0")/.." && pwd)
GO=${GO:-go}
REG=localhost:5000
E2E=$REG/e2e-test-images
mkdir -p "$out"
out=$(cd "$out" && pwd)
work=$out/rootfs

log() { echo "conformance-images: $*" >&2; }

# complete: OUT has its list and every tarball on it (a finished build).
complete() {
	[[ -s $out/images.list && -s $out/repo-list.yaml ]] || return 1
	local t
	while read -r t; do [[ -s $t ]] || return 1; done <"$out"/images.list
}
if complete; then
	log "$(wc -l <"$out"/images.list) images in $out (made before)"
	exit 0
fi
# One build at a time in OUT (make test's lane and a make conformance may
# share a cached OUT); a waiter finds it complete.
exec 8>"$out"/.lock
flock 8
if complete; then
	log "$(wc -l <"$out"/images.list) images in $out (made meanwhile)"
	exit 0
fi

kbin=$("$root"/mk/k8sbin.sh agnhost)
kdir=$(cd /tmp && GOFLAGS=-mod=mod $GO mod download -json "k8s.io/kubernetes@${K8S_VERSION:-v1.37.2}" |
	sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
mkimage=$out/syncpod-mkimage
(cd "$root"/services && CGO_ENABLED=0 nice -n 19 $GO build -trimpath -o "$mkimage" ./cmd/syncpod-mkimage)

# add_bin ROOTFS FILE [NAME]: FILE (as /NAME, default its own path) and the
# shared libraries it loads.
add_bin() {
	local r=$1 f=$2 dst=${3:-$2} lib
	install -D -m 0755 "$f" "$r$dst"
	for lib in $(ldd "$f" 2>/dev/null | awk '$2 == "=>" && $3 ~ /^\// {print $3} $1 ~ /^\// {print $1}'); do
		[[ -e $r$lib ]] || install -D -m 0755 "$(readlink -f "$lib")" "$r$lib"
	done
}

# base ROOTFS: directories, /etc files, busybox with every applet in /bin
# (its sh is /bin/sh, as in the upstream images).
busybox=$("$root"/mk/busyboxbin.sh)
# Tarballs made with another busybox (or before it was built from source),
# or by an older revision of the recipes below (the last word), are stale:
# every image but pause and nginx starts from base.
recipe="busybox $(basename "$(dirname "$busybox")") os-release"
if [[ $(cat "$out"/.recipe 2>/dev/null) != "$recipe" ]]; then
	rm -f "$out"/*.tar
	echo "$recipe" >"$out"/.recipe
fi
base() {
	local r=$1 a
	rm -rf "$r"
	mkdir -p "$r"/{bin,dev,etc,proc,root,run,sys,tmp,usr/bin,usr/sbin,var/tmp}
	chmod 1777 "$r"/tmp "$r"/var/tmp
	install -m 0755 "$busybox" "$r"/bin/busybox
	for a in $("$busybox" --list); do
		[[ $a == busybox ]] || ln -sf busybox "$r/bin/$a"
	done
	printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n' >"$r"/etc/passwd
	printf 'root:x:0:\nnogroup:x:65534:\n' >"$r"/etc/group
	printf 'hosts: files dns\n' >"$r"/etc/nsswitch.conf
}

# image NAME:TAG ROOTFS [mkimage flags]: the tarball, unless already made.
built=()
image() {
	local ref=$1 r=$2 tar
	shift 2
	tar=$out/$(echo "$ref" | tr '/:' '__').tar
	built+=("$tar")
	[[ -s $tar ]] && return 0
	log "building $ref"
	"$mkimage" -kind dir -root "$r" -name "$ref" -out "$tar" "$@"
}

done_mark() { [[ -s $out/$(echo "$1" | tr '/:' '__').tar ]]; }

# busybox, nonroot
if ! done_mark "$E2E/busybox:1.37.0-2" || ! done_mark "$E2E/nonroot:1.5"; then
	base "$work"/busybox
fi
image "$E2E/busybox:1.37.0-2" "$work"/busybox -cmd '["sh"]'
image "$E2E/nonroot:1.5" "$work"/busybox -cmd '["sh"]' -user 1234

# agnhost (two versions), kitten
agnhost_root() { # ROOTFS VERSION
	local r=$1
	base "$r"
	install -m 0755 "$kbin"/agnhost "$r"/agnhost
	ln -s agnhost "$r"/agnhost-2
	mkdir -p "$r"/uploads
	cp "$kdir"/test/images/agnhost/porter/localhost.crt "$kdir"/test/images/agnhost/porter/localhost.key "$r"/
	echo "$2" >"$r"/VERSION
	add_bin "$r" /bin/bash
	add_bin "$r" /usr/bin/curl
	mkdir -p "$r"/etc/ssl/certs
	[[ -f /etc/ssl/certs/ca-certificates.crt ]] && cp /etc/ssl/certs/ca-certificates.crt "$r"/etc/ssl/certs/
	echo 'user-defined-in-image:x:1000:1000::/home/user-defined-in-image:/bin/sh' >>"$r"/etc/passwd
	printf 'user-defined-in-image:x:1000:\ngroup-defined-in-image:x:50000:user-defined-in-image\n' >>"$r"/etc/group
	mkdir -p "$r"/home/user-defined-in-image
	chown 1000:1000 "$r"/home/user-defined-in-image
	cat >"$r"/etc/os-release <<-'EOF'
		# Made by mk/conformance-images.sh in place of the Alpine-based upstream image.
		NAME="Alpine Linux"
		ID=alpine
		VERSION_ID=3.21
		PRETTY_NAME="Alpine Linux v3.21"
	EOF
}
for v in 2.66.1 2.55; do
	if ! done_mark "$E2E/agnhost:$v"; then agnhost_root "$work/agnhost-$v" "$v"; fi
	image "$E2E/agnhost:$v" "$work/agnhost-$v" -entrypoint '["/agnhost"]' -cmd '["pause"]'
done
if ! done_mark "$E2E/kitten:1.8"; then
	agnhost_root "$work"/kitten 2.66.1
	cp "$kdir"/test/images/kitten/html/* "$work"/kitten/
fi
image "$E2E/kitten:1.8" "$work"/kitten -entrypoint '["/agnhost"]' -cmd '["test-webserver"]'

# pause
if ! done_mark "$REG/k8s/pause:3.10.2"; then
	rm -rf "$work"/pause
	mkdir -p "$work"/pause
	gcc -Os -static -o "$work"/pause/pause "$kdir"/build/pause/linux/pause.c
	strip "$work"/pause/pause
fi
image "$REG/k8s/pause:3.10.2" "$work"/pause -entrypoint '["/pause"]'

# nonewprivs: setuid root, run as a user by the spec
if ! done_mark "$E2E/nonewprivs:1.4"; then
	base "$work"/nonewprivs
	mkdir -p "$work"/nonewprivs/usr/local/bin
	esrc=$(dirname "$kbin")/src-e2e
	(cd "$esrc" && GOWORK=off GOFLAGS=-mod=mod CGO_ENABLED=0 nice -n 19 $GO build -trimpath \
		-o "$work"/nonewprivs/usr/local/bin/nnp k8s.io/kubernetes/test/images/nonewprivs)
	chmod 4755 "$work"/nonewprivs/usr/local/bin/nnp
fi
image "$E2E/nonewprivs:1.4" "$work"/nonewprivs -cmd '["nnp"]'

# nginx (two tags, one binary)
nginx_root() {
	local r=$1 d=$out/nginx-deb
	base "$r"
	if [[ ! -x $d/usr/sbin/nginx ]]; then
		rm -rf "$d"
		mkdir -p "$d"/debs
		(cd "$d"/debs && apt-get download nginx nginx-common >&2)
		for deb in "$d"/debs/*.deb; do dpkg-deb -x "$deb" "$d"; done
	fi
	add_bin "$r" "$d"/usr/sbin/nginx /usr/sbin/nginx
	mkdir -p "$r"/etc/nginx "$r"/var/log/nginx "$r"/var/lib/nginx "$r"/var/cache/nginx "$r"/usr/share/nginx/html "$r"/run
	cp "$d"/etc/nginx/mime.types "$r"/etc/nginx/
	cat >"$r"/etc/nginx/nginx.conf <<-'EOF'
		user root;
		worker_processes 1;
		pid /run/nginx.pid;
		error_log /dev/stderr;
		events { worker_connections 256; }
		http {
		    include /etc/nginx/mime.types;
		    access_log /dev/stdout;
		    server {
		        listen 80;
		        root /usr/share/nginx/html;
		        location / { index index.html; }
		    }
		}
	EOF
	printf '<html><body><h1>Welcome to nginx!</h1></body></html>\n' >"$r"/usr/share/nginx/html/index.html
	echo 'www-data:x:33:33:www-data:/var/www:/bin/false' >>"$r"/etc/passwd
}
if ! done_mark "$E2E/nginx:1.27.0-2" || ! done_mark "$E2E/nginx:1.28.0-2"; then nginx_root "$work"/nginx; fi
for v in 1.27.0-2 1.28.0-2; do
	image "$E2E/nginx:$v" "$work"/nginx -entrypoint '["/usr/sbin/nginx"]' -cmd '["-g","daemon off;"]'
done

cat >"$out"/repo-list.yaml <<-EOF
	promoterE2eRegistry: $E2E
	buildImageRegistry: $REG/build-image
	invalidRegistry: $REG/invalid
	gcEtcdRegistry: $REG/k8s
	gcRegistry: $REG/k8s
	sigStorageRegistry: $REG/sig-storage
	privateRegistry: $REG/private
	dockerLibraryRegistry: $REG/library
	cloudProviderGcpRegistry: $REG/cloud-provider-gcp
EOF
printf '%s\n' "${built[@]}" >"$out"/images.list
rm -rf "$work"
log "$(wc -l <"$out"/images.list) images in $out; KUBE_TEST_REPO_LIST=$out/repo-list.yaml"
