package runner

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// This file holds the per-pod files the kubelet makes on the node and
// mounts into containers: the managed /etc/hosts and the termination-log
// file of each container instance. They live in the pod's directory under
// the runner's: <PodDir>/<pod uid>/etc-hosts and
// <PodDir>/<pod uid>/<name>.<random id>.termination-log. (The kubelet
// puts the latter in containers/<name>/<random id>: two more directories
// for each pod, and on a file system where creating an inode is dear
// under load, as on ext4 without a journal, each costs 0.5 to 1.3 ms of
// CPU in a burst of pod starts. A container name has no '.', so the file
// names cannot collide.)

// DefaultTerminationMessagePath is where a container writes its
// termination message unless it says otherwise (the Kubernetes default).
const DefaultTerminationMessagePath = "/dev/termination-log"

// TerminationMessagePath is c's effective termination message path.
func TerminationMessagePath(c *syncpodv1.Container) string {
	if p := c.GetTerminationMessagePath(); p != "" {
		return p
	}
	return DefaultTerminationMessagePath
}

// HostsFile is the content of the pod's managed /etc/hosts, as the
// kubelet writes it: for a host-network pod the node's file (hostHosts)
// under a header; otherwise the localhost lines and one line per pod IP
// naming the pod's hostname; then the pod's host aliases.
func HostsFile(pod *syncpodv1.Pod, podIPs []string, hostHosts []byte) []byte {
	var b bytes.Buffer
	if pod.GetSpec().GetHostNetwork() {
		b.WriteString("# Kubernetes-managed hosts file (host network).\n")
		b.Write(hostHosts)
		if len(hostHosts) > 0 && !bytes.HasSuffix(hostHosts, []byte("\n")) {
			b.WriteByte('\n')
		}
	} else {
		b.WriteString("# Kubernetes-managed hosts file.\n")
		b.WriteString("127.0.0.1\tlocalhost\n")
		b.WriteString("::1\tlocalhost ip6-localhost ip6-loopback\n")
		b.WriteString("fe00::0\tip6-localnet\n")
		b.WriteString("fe00::0\tip6-mcastprefix\n")
		b.WriteString("fe00::1\tip6-allnodes\n")
		b.WriteString("fe00::2\tip6-allrouters\n")
		host := PodHostname(pod)
		for _, ip := range podIPs {
			fmt.Fprintf(&b, "%s\t%s\n", ip, host)
		}
	}
	if aliases := pod.GetSpec().GetHostAliases(); len(aliases) > 0 {
		b.WriteString("\n# Entries added by HostAliases.\n")
		for _, a := range aliases {
			fmt.Fprintf(&b, "%s\t%s\n", a.GetIp(), strings.Join(a.GetHostnames(), "\t"))
		}
	}
	return b.Bytes()
}

// podDir is the pod's directory under the runner's pod directory.
func (r *Runner) podDir(pod *syncpodv1.Pod) string {
	return filepath.Join(r.podRoot, pod.GetUid())
}

// writeHostsFile (re)writes the pod's managed hosts file and returns its
// path. The file is replaced by a rename, so running containers keep the
// content they were started with, as with the kubelet.
func (r *Runner) writeHostsFile(pod *syncpodv1.Pod, podIPs []string) (string, error) {
	var host []byte
	if pod.GetSpec().GetHostNetwork() {
		var err error
		if host, err = os.ReadFile(r.hostsFile); err != nil {
			return "", fmt.Errorf("read the node's hosts file: %w", err)
		}
	}
	dir := r.podDir(pod)
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return "", err
	}
	path := filepath.Join(dir, "etc-hosts")
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, HostsFile(pod, podIPs, host), 0o644); err != nil {
		return "", err
	}
	// WriteFile honours the umask; the kubelet's file is world-readable.
	if err := os.Chmod(tmp, 0o644); err != nil {
		return "", err
	}
	return path, os.Rename(tmp, path)
}

// newTerminationLog creates an empty, world-writable file for one
// container instance's termination message, as the kubelet does (any
// container user must be able to write it), and returns its path.
func (r *Runner) newTerminationLog(pod *syncpodv1.Pod, name string) (string, error) {
	dir := r.podDir(pod)
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return "", err
	}
	var id [8]byte
	if _, err := rand.Read(id[:]); err != nil {
		return "", err
	}
	path := filepath.Join(dir, name+"."+hex.EncodeToString(id[:])+".termination-log")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o666)
	if err != nil {
		return "", err
	}
	if err := f.Close(); err != nil {
		return "", err
	}
	return path, os.Chmod(path, 0o666)
}

// DefaultMounts are the kubelet's own mounts for a container: the pod's
// hosts file at /etc/hosts (when hostsPath is set and the container does
// not mount something there itself) and the termination log at its path.
func DefaultMounts(c *syncpodv1.Container, existing []*runtimeapi.Mount, hostsPath, termLog string) []*runtimeapi.Mount {
	taken := map[string]bool{}
	for _, m := range existing {
		taken[m.GetContainerPath()] = true
	}
	var out []*runtimeapi.Mount
	if hostsPath != "" && !taken["/etc/hosts"] {
		out = append(out, &runtimeapi.Mount{ContainerPath: "/etc/hosts", HostPath: hostsPath})
	}
	if termLog != "" && !taken[TerminationMessagePath(c)] {
		out = append(out, &runtimeapi.Mount{ContainerPath: TerminationMessagePath(c), HostPath: termLog})
	}
	return out
}

// DNSConfig is the sandbox DNS configuration the kubelet's GetPodDNS
// gives pod on a node without cluster DNS: for DNS_POLICY_NONE only the
// pod's dns_config; otherwise the node's resolv.conf (hostResolv) with the
// pod's dns_config merged in (nameservers and searches appended without
// duplicates, options overriding by name). Nil when the result is empty.
func DNSConfig(pod *syncpodv1.Pod, hostResolv []byte) *runtimeapi.DNSConfig {
	out := &runtimeapi.DNSConfig{}
	if pod.GetSpec().GetDnsPolicy() != syncpodv1.DNSPolicy_DNS_POLICY_NONE {
		out.Servers, out.Searches, out.Options = parseResolvConf(hostResolv)
	}
	pc := pod.GetSpec().GetDnsConfig()
	out.Servers = appendUnique(out.Servers, pc.GetNameservers()...)
	out.Searches = appendUnique(out.Searches, pc.GetSearches()...)
	for _, o := range pc.GetOptions() {
		opt := o.GetName()
		if o.Value != nil {
			opt += ":" + o.GetValue()
		}
		replaced := false
		for i, have := range out.Options {
			if strings.SplitN(have, ":", 2)[0] == o.GetName() {
				out.Options[i], replaced = opt, true
			}
		}
		if !replaced {
			out.Options = append(out.Options, opt)
		}
	}
	if len(out.Servers) == 0 && len(out.Searches) == 0 && len(out.Options) == 0 {
		return nil
	}
	return out
}

func appendUnique(list []string, add ...string) []string {
	for _, a := range add {
		dup := false
		for _, l := range list {
			dup = dup || l == a
		}
		if !dup {
			list = append(list, a)
		}
	}
	return list
}

// parseResolvConf reads nameserver, search (the last line wins) and
// options lines.
func parseResolvConf(b []byte) (servers, searches, options []string) {
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		line := sc.Text()
		if i := strings.IndexAny(line, "#;"); i >= 0 {
			line = line[:i]
		}
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		switch f[0] {
		case "nameserver":
			if len(f) > 1 {
				servers = append(servers, f[1])
			}
		case "search":
			searches = append([]string(nil), f[1:]...)
		case "options":
			options = append(options, f[1:]...)
		}
	}
	return servers, searches, options
}
