package service

import (
	"context"

	"github.com/syncpod/syncpod/internal/errgrpc"
	"github.com/syncpod/syncpod/planner/store"
	"github.com/syncpod/syncpod/planner/validate"
	"github.com/syncpod/syncpod/proto/fielderr"
	plannerv1 "github.com/syncpod/syncpod/proto/syncpod/planner/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
	"github.com/syncpod/syncpod/proto/validation"
)

// ConfigStore is what the ConfigMap and Secret RPCs need; *store.Store
// implements it. Errors: store.ErrInvalid, ErrConfigNotFound,
// ErrImmutable, ErrUIDMismatch, ErrClosed.
type ConfigStore interface {
	ApplyConfigMap(ctx context.Context, c *syncpodv1.ConfigMap) (*syncpodv1.ConfigMap, plannerv1.ApplyResult, error)
	GetConfigMap(ctx context.Context, ns, name string) (*syncpodv1.ConfigMap, error)
	ListConfigMaps(ctx context.Context, ns string) ([]*syncpodv1.ConfigMap, error)
	DeleteConfigMap(ctx context.Context, ns, name string) error
	ApplySecret(ctx context.Context, s *syncpodv1.Secret) (*syncpodv1.Secret, plannerv1.ApplyResult, error)
	GetSecret(ctx context.Context, ns, name string) (*syncpodv1.Secret, error)
	ListSecrets(ctx context.Context, ns string) ([]*syncpodv1.Secret, error)
	DeleteSecret(ctx context.Context, ns, name string) error
}

// errNoConfigStore is the status of a call that needs the config
// object store when none is configured.
var errNoConfigStore = errgrpc.ToGRPC(errgrpc.New(errgrpc.ErrUnavailable, "the config object store is not configured"))

// configRef checks a ConfigObjectRef: name required, name and namespace
// well-formed.
func configRef(ref *plannerv1.ConfigObjectRef) error {
	var l fielderr.List
	if ref == nil {
		l.Add("ref", "required")
		return l.Err()
	}
	if ref.GetName() == "" {
		l.Add("ref.name", "required")
	} else if p := validation.NameProblem(ref.GetName()); p != "" {
		l.Add("ref.name", "%s", p)
	}
	if ns := ref.GetNamespace(); ns != "" {
		if p := validation.NamespaceProblem(ns); p != "" {
			l.Add("ref.namespace", "%s", p)
		}
	}
	return l.Err()
}

func namespaceFilter(ns string) error {
	if ns == "" {
		return nil
	}
	if p := validation.NamespaceProblem(ns); p != "" {
		return fielderr.Errors{{Path: "namespace", Message: p}}
	}
	return nil
}

// ApplyConfigMap stores a ConfigMap.
func (s *Service) ApplyConfigMap(ctx context.Context, req *plannerv1.ApplyConfigMapRequest) (*plannerv1.ApplyConfigMapResponse, error) {
	if s.config == nil {
		return nil, errNoConfigStore
	}
	if req.GetConfigMap() == nil {
		return nil, errgrpc.ToGRPCOp("ApplyConfigMap", fielderr.Errors{{Path: "config_map", Message: "required"}})
	}
	if err := validation.ConfigMap(req.GetConfigMap()); err != nil {
		return nil, errgrpc.ToGRPCOp("ApplyConfigMap", validate.As(err).Prefix("config_map"))
	}
	c, res, err := s.config.ApplyConfigMap(ctx, req.GetConfigMap())
	if err != nil {
		return nil, errgrpc.ToGRPCOp("ApplyConfigMap", err)
	}
	return &plannerv1.ApplyConfigMapResponse{ConfigMap: c, Result: res}, nil
}

// GetConfigMap returns one ConfigMap.
func (s *Service) GetConfigMap(ctx context.Context, req *plannerv1.GetConfigMapRequest) (*plannerv1.GetConfigMapResponse, error) {
	if s.config == nil {
		return nil, errNoConfigStore
	}
	if err := configRef(req.GetRef()); err != nil {
		return nil, errgrpc.ToGRPCOp("GetConfigMap", err)
	}
	c, err := s.config.GetConfigMap(ctx, req.GetRef().GetNamespace(), req.GetRef().GetName())
	if err != nil {
		return nil, errgrpc.ToGRPCOp("GetConfigMap", err)
	}
	return &plannerv1.GetConfigMapResponse{ConfigMap: c}, nil
}

// ListConfigMaps lists ConfigMaps.
func (s *Service) ListConfigMaps(ctx context.Context, req *plannerv1.ListConfigMapsRequest) (*plannerv1.ListConfigMapsResponse, error) {
	if s.config == nil {
		return nil, errNoConfigStore
	}
	if err := namespaceFilter(req.GetNamespace()); err != nil {
		return nil, errgrpc.ToGRPCOp("ListConfigMaps", err)
	}
	list, err := s.config.ListConfigMaps(ctx, req.GetNamespace())
	if err != nil {
		return nil, errgrpc.ToGRPCOp("ListConfigMaps", err)
	}
	return &plannerv1.ListConfigMapsResponse{ConfigMaps: list}, nil
}

// DeleteConfigMap removes a ConfigMap.
func (s *Service) DeleteConfigMap(ctx context.Context, req *plannerv1.DeleteConfigMapRequest) (*plannerv1.DeleteConfigMapResponse, error) {
	if s.config == nil {
		return nil, errNoConfigStore
	}
	if err := configRef(req.GetRef()); err != nil {
		return nil, errgrpc.ToGRPCOp("DeleteConfigMap", err)
	}
	if err := s.config.DeleteConfigMap(ctx, req.GetRef().GetNamespace(), req.GetRef().GetName()); err != nil {
		return nil, errgrpc.ToGRPCOp("DeleteConfigMap", err)
	}
	return &plannerv1.DeleteConfigMapResponse{}, nil
}

// ApplySecret stores a Secret; the response carries sizes, not values.
func (s *Service) ApplySecret(ctx context.Context, req *plannerv1.ApplySecretRequest) (*plannerv1.ApplySecretResponse, error) {
	if s.config == nil {
		return nil, errNoConfigStore
	}
	if req.GetSecret() == nil {
		return nil, errgrpc.ToGRPCOp("ApplySecret", fielderr.Errors{{Path: "secret", Message: "required"}})
	}
	if err := validation.Secret(req.GetSecret()); err != nil {
		return nil, errgrpc.ToGRPCOp("ApplySecret", validate.As(err).Prefix("secret"))
	}
	x, res, err := s.config.ApplySecret(ctx, req.GetSecret())
	if err != nil {
		return nil, errgrpc.ToGRPCOp("ApplySecret", err)
	}
	return &plannerv1.ApplySecretResponse{Secret: store.Redacted(x), Result: res}, nil
}

// GetSecret returns one Secret, its values only when asked.
func (s *Service) GetSecret(ctx context.Context, req *plannerv1.GetSecretRequest) (*plannerv1.GetSecretResponse, error) {
	if s.config == nil {
		return nil, errNoConfigStore
	}
	if err := configRef(req.GetRef()); err != nil {
		return nil, errgrpc.ToGRPCOp("GetSecret", err)
	}
	x, err := s.config.GetSecret(ctx, req.GetRef().GetNamespace(), req.GetRef().GetName())
	if err != nil {
		return nil, errgrpc.ToGRPCOp("GetSecret", err)
	}
	if !req.GetReveal() {
		x = store.Redacted(x)
	}
	return &plannerv1.GetSecretResponse{Secret: x}, nil
}

// ListSecrets lists Secrets without their values.
func (s *Service) ListSecrets(ctx context.Context, req *plannerv1.ListSecretsRequest) (*plannerv1.ListSecretsResponse, error) {
	if s.config == nil {
		return nil, errNoConfigStore
	}
	if err := namespaceFilter(req.GetNamespace()); err != nil {
		return nil, errgrpc.ToGRPCOp("ListSecrets", err)
	}
	list, err := s.config.ListSecrets(ctx, req.GetNamespace())
	if err != nil {
		return nil, errgrpc.ToGRPCOp("ListSecrets", err)
	}
	out := make([]*syncpodv1.Secret, len(list))
	for i, x := range list {
		out[i] = store.Redacted(x)
	}
	return &plannerv1.ListSecretsResponse{Secrets: out}, nil
}

// DeleteSecret removes a Secret.
func (s *Service) DeleteSecret(ctx context.Context, req *plannerv1.DeleteSecretRequest) (*plannerv1.DeleteSecretResponse, error) {
	if s.config == nil {
		return nil, errNoConfigStore
	}
	if err := configRef(req.GetRef()); err != nil {
		return nil, errgrpc.ToGRPCOp("DeleteSecret", err)
	}
	if err := s.config.DeleteSecret(ctx, req.GetRef().GetNamespace(), req.GetRef().GetName()); err != nil {
		return nil, errgrpc.ToGRPCOp("DeleteSecret", err)
	}
	return &plannerv1.DeleteSecretResponse{}, nil
}
