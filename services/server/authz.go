package server

import (
	"context"
	"crypto/x509"
	"fmt"
	"net"
	"slices"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/peer"
	reflectionv1 "google.golang.org/grpc/reflection/grpc_reflection_v1"
	reflectionv1alpha "google.golang.org/grpc/reflection/grpc_reflection_v1alpha"
	"google.golang.org/grpc/status"

	executorv1 "github.com/syncpod/syncpod/proto/syncpod/executor/v1"
	plannerv1 "github.com/syncpod/syncpod/proto/syncpod/planner/v1"
	plegv1 "github.com/syncpod/syncpod/proto/syncpod/pleg/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
	"github.com/syncpod/syncpod/services/server/access"
)

// Verb is the class of a gRPC method that the authorization policy grants
// as a whole, as the kubelet's authorizer separates reads (nodes/stats,
// nodes/log) from nodes/proxy (exec, attach, port-forward).
type Verb string

const (
	// VerbHealth is grpc.health.v1: any client with a verified
	// certificate may ask whether the service serves.
	VerbHealth Verb = "health"
	// VerbRead is get, list, watch, logs, stats, plans and reflection.
	VerbRead Verb = "read"
	// VerbWrite is apply, delete, and the executor's changes to pods.
	VerbWrite Verb = "write"
	// VerbExec is exec, attach and port-forward: commands and traffic
	// inside containers.
	VerbExec Verb = "exec"
)

// Verbs are the verb classes the policy grants, in the order of the
// --authz-* flags.
var Verbs = []Verb{VerbRead, VerbWrite, VerbExec}

// MethodVerbs maps every method the syncpod services serve to its verb
// class. A method not in the table is refused to every certificate
// identity (TestMethodVerbsCoverEveryService fails when a service gains a
// method the table lacks).
var MethodVerbs = map[string]Verb{
	healthpb.Health_Check_FullMethodName: VerbHealth,
	healthpb.Health_List_FullMethodName:  VerbHealth,
	healthpb.Health_Watch_FullMethodName: VerbHealth,

	reflectionv1.ServerReflection_ServerReflectionInfo_FullMethodName:      VerbRead,
	reflectionv1alpha.ServerReflection_ServerReflectionInfo_FullMethodName: VerbRead,
	syncpodv1.VersionService_GetVersion_FullMethodName:                     VerbRead,

	plannerv1.PlannerService_Plan_FullMethodName:            VerbRead,
	plannerv1.PlannerService_GetPod_FullMethodName:          VerbRead,
	plannerv1.PlannerService_ListPods_FullMethodName:        VerbRead,
	plannerv1.PlannerService_WatchPods_FullMethodName:       VerbRead,
	plannerv1.PlannerService_ContainerLogs_FullMethodName:   VerbRead,
	plannerv1.PlannerService_ListPodStats_FullMethodName:    VerbRead,
	plannerv1.PlannerService_GetConfigMap_FullMethodName:    VerbRead,
	plannerv1.PlannerService_ListConfigMaps_FullMethodName:  VerbRead,
	plannerv1.PlannerService_GetSecret_FullMethodName:       VerbRead,
	plannerv1.PlannerService_ListSecrets_FullMethodName:     VerbRead,
	plannerv1.PlannerService_ApplyPod_FullMethodName:        VerbWrite,
	plannerv1.PlannerService_DeletePod_FullMethodName:       VerbWrite,
	plannerv1.PlannerService_ApplyConfigMap_FullMethodName:  VerbWrite,
	plannerv1.PlannerService_DeleteConfigMap_FullMethodName: VerbWrite,
	plannerv1.PlannerService_ApplySecret_FullMethodName:     VerbWrite,
	plannerv1.PlannerService_DeleteSecret_FullMethodName:    VerbWrite,
	plannerv1.PlannerService_Exec_FullMethodName:            VerbExec,
	plannerv1.PlannerService_Attach_FullMethodName:          VerbExec,
	plannerv1.PlannerService_PortForward_FullMethodName:     VerbExec,
	// Ending every pod of the node is a write, as deleting them is.
	plannerv1.PlannerService_ShutdownNode_FullMethodName:      VerbWrite,
	plannerv1.PlannerService_GetNodeShutdown_FullMethodName:   VerbRead,
	plannerv1.PlannerService_GetNodeConditions_FullMethodName: VerbRead,

	executorv1.ExecutorService_ListBackoffs_FullMethodName:       VerbRead,
	executorv1.ExecutorService_ContainerLogs_FullMethodName:      VerbRead,
	executorv1.ExecutorService_ListPodStats_FullMethodName:       VerbRead,
	executorv1.ExecutorService_GetEmptyDirUsage_FullMethodName:   VerbRead,
	executorv1.ExecutorService_RemoveUnusedImages_FullMethodName: VerbWrite,
	executorv1.ExecutorService_ApplyActions_FullMethodName:       VerbWrite,
	executorv1.ExecutorService_RemoveResources_FullMethodName:    VerbWrite,
	executorv1.ExecutorService_ResetBackoff_FullMethodName:       VerbWrite,
	executorv1.ExecutorService_UpdatePodVolumes_FullMethodName:   VerbWrite,
	executorv1.ExecutorService_RemovePodVolumes_FullMethodName:   VerbWrite,
	executorv1.ExecutorService_ExecSync_FullMethodName:           VerbExec,
	executorv1.ExecutorService_Exec_FullMethodName:               VerbExec,
	executorv1.ExecutorService_Attach_FullMethodName:             VerbExec,
	executorv1.ExecutorService_PortForward_FullMethodName:        VerbExec,

	plegv1.PlegService_Watch_FullMethodName:           VerbRead,
	plegv1.PlegService_GetPodStatus_FullMethodName:    VerbRead,
	plegv1.PlegService_ListPodStatuses_FullMethodName: VerbRead,
}

// Default identities of the policy: a certificate is granted a verb when
// its CommonName or one of its Organizations is listed for it. syncpodctl
// certs issues certificates in these groups.
const (
	GroupViewers = access.GroupViewers // read
	GroupEditors = access.GroupEditors // read, write
	GroupAdmins  = access.GroupAdmins  // read, write, exec
	GroupNodes   = access.GroupNodes   // the services themselves: everything
)

// DefaultPolicy is the policy of the --authz-* flags' defaults.
var DefaultPolicy = Policy{
	VerbRead:  {GroupViewers, GroupEditors, GroupAdmins, GroupNodes},
	VerbWrite: {GroupEditors, GroupAdmins, GroupNodes},
	VerbExec:  {GroupAdmins, GroupNodes},
}

// Policy lists, for each verb, the identities (certificate CommonNames or
// Organizations) granted it. VerbHealth is granted to every verified
// certificate.
type Policy map[Verb][]string

// Identity is who a caller is: the subject of its verified client
// certificate, or the local peer of a unix socket.
type Identity struct {
	// CommonName and Organizations of the certificate's subject.
	CommonName    string
	Organizations []string
	// Local is a caller on a unix socket: trusted as far as the socket's
	// file mode lets it connect (owner and group). Peer names it by its
	// process's uid and pid (SO_PEERCRED), for the audit trail. A
	// service of the server's own process calling in-process (inproc.go)
	// is local too, named "in-process:uid=U,pid=P".
	Local bool
	Peer  string
}

func (id Identity) String() string {
	if id.Local {
		if id.Peer != "" {
			return id.Peer
		}
		return "unix-socket-peer"
	}
	s := "CN=" + id.CommonName
	if len(id.Organizations) > 0 {
		s += ",O=" + strings.Join(id.Organizations, "+")
	}
	return s
}

// Allows says whether the policy grants v to id. Local peers are granted
// everything; a method without a verb is granted to nobody else.
func (p Policy) Allows(id Identity, v Verb) bool {
	if id.Local {
		return true
	}
	switch v {
	case "":
		return false
	case VerbHealth:
		return true
	}
	for _, name := range p[v] {
		if name == id.CommonName || slices.Contains(id.Organizations, name) {
			return true
		}
	}
	return false
}

// peerIdentity is the identity of the caller of ctx: its verified TLS
// client certificate, or a local peer on a unix socket. ok is false for
// anything else (a plaintext TCP caller under --insecure-tcp).
func peerIdentity(ctx context.Context) (id Identity, ok bool) {
	p, found := peer.FromContext(ctx)
	if !found {
		return Identity{}, false
	}
	if ti, isTLS := p.AuthInfo.(credentials.TLSInfo); isTLS {
		chains := ti.State.VerifiedChains
		if len(chains) == 0 || len(chains[0]) == 0 {
			return Identity{}, false
		}
		return certIdentity(chains[0][0]), true
	}
	if up, isUnix := p.AuthInfo.(unixPeer); isUnix {
		return Identity{Local: true, Peer: up.String()}, true
	}
	if ip, isLocal := p.AuthInfo.(InProcessPeer); isLocal {
		// Another service of this process (inproc.go): local as a
		// caller on the socket is.
		name := inProcessName
		if ip != inProcessPeer {
			name = ip.String()
		}
		return Identity{Local: true, Peer: name}, true
	}
	if _, unix := p.Addr.(*net.UnixAddr); unix {
		return Identity{Local: true}, true
	}
	return Identity{}, false
}

func certIdentity(c *x509.Certificate) Identity {
	return Identity{CommonName: c.Subject.CommonName, Organizations: c.Subject.Organization}
}

// authorizer checks every call against the policy and writes the audit
// trail: every mutating and exec-class call at info with its caller
// (repeats counted: auditTrail).
type authorizer struct {
	policy Policy
	// insecure: plaintext TCP callers (--insecure-tcp) are let through
	// as "insecure-tcp-peer", unauthenticated.
	insecure bool
	audit    *auditTrail
	now      func() time.Time
}

func (a *authorizer) check(ctx context.Context, method string) error {
	verb := MethodVerbs[method]
	id, ok := peerIdentity(ctx)
	// who names the caller in an answer or the audit trail, which most
	// calls (reads) have no use for: it is spelled out only for those.
	who := func() string {
		if !ok {
			return "insecure-tcp-peer"
		}
		return id.String()
	}
	switch {
	case ok:
		if !a.policy.Allows(id, verb) {
			who := who()
			if verb == "" {
				return status.Errorf(codes.PermissionDenied, "%s: %s has no verb class in the authorization table; no certificate may call it", who, method)
			}
			return status.Errorf(codes.PermissionDenied, "%s may not %s: %s needs the %q verb (grant it with --authz-%s)", who, verb, method, verb, verb)
		}
	case a.insecure:
	default:
		return status.Errorf(codes.Unauthenticated, "%s: no verified client certificate", method)
	}
	if verb == VerbWrite || verb == VerbExec {
		a.audit.record(ctx, a.now(), who(), verb, method)
	}
	return nil
}

func (a *authorizer) unary() grpc.UnaryServerInterceptor {
	return func(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		if err := a.check(ctx, info.FullMethod); err != nil {
			return nil, err
		}
		return handler(ctx, req)
	}
}

func (a *authorizer) stream() grpc.StreamServerInterceptor {
	return func(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
		if err := a.check(ss.Context(), info.FullMethod); err != nil {
			return err
		}
		return handler(srv, ss)
	}
}

// ParsePolicyList turns a --authz-* value (comma-separated names) into
// its list; empty names are an error.
func ParsePolicyList(s string) ([]string, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var out []string
	for n := range strings.SplitSeq(s, ",") {
		n = strings.TrimSpace(n)
		if n == "" {
			return nil, fmt.Errorf("%q has an empty name", s)
		}
		out = append(out, n)
	}
	return out, nil
}
