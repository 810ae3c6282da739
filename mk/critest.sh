#!/usr/bin/env bash
# mk/critest.sh CRITEST CRISIM BUSYBOX OUTDIR [critest args...] — run
# critest against syncpod-crisim inside a throwaway root filesystem.
#
# crisim runs containers as host processes, and critest's specs change the
# system they run on (hostnames, mounts, sysctls, files under /var/lib):
# never on the host. Here both run in new mount, PID, network, UTS and IPC
# namespaces, chrooted into a tmpfs holding busybox (the images' commands:
# crisim ignores images, so `top` or `sh` is whatever the root has), the
# two binaries, and a private /proc, /sys, /dev and /dev/pts. When the run
# ends the namespaces end with it: every process is gone (the PID
# namespace's init is this script's inner half) and the tmpfs with every
# file written is unmounted; nothing is left on the host but OUTDIR
# (critest's output and its JUnit report, critest.xml). Needs root.
#
# The exit code is critest's.
set -euo pipefail

if [ "${1:-}" = --inside ]; then
  # In the new namespaces: build the root and run.
  shift
  critest=$1 crisim=$2 busybox=$3 out=$4 mnt=$5
  shift 5
  mount --make-rprivate /
  mount -t tmpfs -o size=512m,mode=0755 critest-root "$mnt"
  mkdir -p "$mnt"/{bin,sbin,usr/bin,usr/sbin,usr/local/bin,proc,sys,dev,tmp,etc,root,run,var/log,var/lib,out}
  chmod 1777 "$mnt/tmp"
  cp "$busybox" "$mnt/bin/busybox"
  cp "$critest" "$crisim" "$mnt/usr/local/bin/"
  chroot "$mnt" /bin/busybox --install -s
  # busybox-static has no pgrep, which critest's specs call.
  cat > "$mnt/usr/bin/pgrep" <<'PGREP'
#!/bin/sh
# pgrep NAME: the pids of the processes whose name contains NAME.
rc=1
for d in /proc/[0-9]*; do
  read -r comm < "$d/comm" 2>/dev/null || continue
  case $comm in *"$1"*) echo "${d#/proc/}"; rc=0 ;; esac
done
exit $rc
PGREP
  chmod 755 "$mnt/usr/bin/pgrep"
  printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/false\n' > "$mnt/etc/passwd"
  printf 'root:x:0:\nnogroup:x:65534:\n' > "$mnt/etc/group"
  printf '127.0.0.1 localhost\n' > "$mnt/etc/hosts"
  mount -t proc proc "$mnt/proc"
  # The private network namespace's sysfs, as a host has one: what a
  # container may do to the network (brctl) is then up to its privileges,
  # not to a missing /sys.
  mount -t sysfs sysfs "$mnt/sys"
  mount -t tmpfs -o mode=0755 dev "$mnt/dev"
  for d in null zero random urandom tty full; do
    touch "$mnt/dev/$d"
    mount --bind "/dev/$d" "$mnt/dev/$d"
  done
  mkdir -p "$mnt/dev/pts" "$mnt/dev/shm"
  mount -t devpts -o newinstance,ptmxmode=0666,mode=0620 devpts "$mnt/dev/pts"
  ln -s pts/ptmx "$mnt/dev/ptmx"
  mount --bind "$out" "$mnt/out"
  hostname critest-root
  exec chroot "$mnt" /bin/sh -c '
    set -e
    ip link set lo up
    cd /root
    syncpod-crisim --listen unix:///run/crisim.sock --metrics-listen 127.0.0.1:0 \
      --data-dir /var/lib/crisim --cgroup-driver cgroupfs --log-level debug \
      > /out/crisim.out 2> /out/crisim.log &
    i=0; while [ ! -S /run/crisim.sock ]; do
      i=$((i+1)); [ $i -lt 300 ] || { echo "critest.sh: crisim did not start (see crisim.log)" >&2; exit 1; }
      sleep 0.1
    done
    rc=0
    critest --runtime-endpoint unix:///run/crisim.sock --image-endpoint unix:///run/crisim.sock \
      --ginkgo.no-color --ginkgo.junit-report /out/critest.xml "$@" || rc=$?
    exit $rc' critest "$@"
fi

critest=$(realpath "${1:?usage: critest.sh CRITEST CRISIM BUSYBOX OUTDIR [critest args...]}")
crisim=$(realpath "${2:?crisim binary}")
busybox=$(realpath "${3:?busybox-static}")
out=${4:?output directory}
shift 4
[ "$(id -u)" = 0 ] || { echo "critest.sh: needs root (namespaces, a tmpfs root)" >&2; exit 1; }
mkdir -p "$out"
out=$(realpath "$out")
mnt=$(mktemp -d "${TMPDIR:-/tmp}/critest-root.XXXXXX")
trap 'rmdir "$mnt"' EXIT
rc=0
unshare --mount --pid --net --uts --ipc --fork --kill-child \
  "$0" --inside "$critest" "$crisim" "$busybox" "$out" "$mnt" "$@" || rc=$?
exit $rc
