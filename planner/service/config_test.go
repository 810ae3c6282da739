package service

import (
	"context"
	"os"
	"strings"
	"testing"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/syncpod/syncpod/planner/store"
	plannerv1 "github.com/syncpod/syncpod/proto/syncpod/planner/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

func setupConfig(t *testing.T) (plannerv1.PlannerServiceClient, *store.Store, string) {
	t.Helper()
	st, path := openStore(t)
	return serveService(t, Options{Pods: st, Config: st}), st, path
}

func fieldPaths(t *testing.T, err error) []string {
	t.Helper()
	if status.Code(err) != codes.InvalidArgument {
		t.Fatalf("code %v (%v), want InvalidArgument", status.Code(err), err)
	}
	var out []string
	for _, d := range status.Convert(err).Details() {
		if br, ok := d.(*errdetails.BadRequest); ok {
			for _, v := range br.GetFieldViolations() {
				out = append(out, v.GetField())
			}
		}
	}
	return out
}

func TestConfigMapRPCs(t *testing.T) {
	c, _, _ := setupConfig(t)
	ctx := context.Background()
	cm := &syncpodv1.ConfigMap{Name: "web-config", Data: map[string]string{"nginx.conf": "listen 80;"}}
	resp, err := c.ApplyConfigMap(ctx, &plannerv1.ApplyConfigMapRequest{ConfigMap: cm})
	if err != nil {
		t.Fatal(err)
	}
	got := resp.GetConfigMap()
	if resp.GetResult() != plannerv1.ApplyResult_APPLY_RESULT_CREATED || got.GetNamespace() != "default" || got.GetUid() == "" || got.GetGeneration() != 1 {
		t.Fatalf("created %v %v", resp.GetResult(), got)
	}
	if r, _ := c.ApplyConfigMap(ctx, &plannerv1.ApplyConfigMapRequest{ConfigMap: cm}); r.GetResult() != plannerv1.ApplyResult_APPLY_RESULT_UNCHANGED {
		t.Fatalf("re-apply: %v", r.GetResult())
	}
	cm.Data["nginx.conf"] = "listen 8080;"
	r, err := c.ApplyConfigMap(ctx, &plannerv1.ApplyConfigMapRequest{ConfigMap: cm})
	if err != nil || r.GetResult() != plannerv1.ApplyResult_APPLY_RESULT_UPDATED || r.GetConfigMap().GetGeneration() != 2 || r.GetConfigMap().GetUid() != got.GetUid() {
		t.Fatalf("update: %v %v", r, err)
	}
	g, err := c.GetConfigMap(ctx, &plannerv1.GetConfigMapRequest{Ref: &plannerv1.ConfigObjectRef{Name: "web-config"}})
	if err != nil || g.GetConfigMap().GetData()["nginx.conf"] != "listen 8080;" {
		t.Fatalf("get: %v %v", g, err)
	}
	if _, err := c.ApplyConfigMap(ctx, &plannerv1.ApplyConfigMapRequest{ConfigMap: &syncpodv1.ConfigMap{Name: "other", Namespace: "shop"}}); err != nil {
		t.Fatal(err)
	}
	l, err := c.ListConfigMaps(ctx, &plannerv1.ListConfigMapsRequest{})
	if err != nil || len(l.GetConfigMaps()) != 2 || l.GetConfigMaps()[0].GetName() != "web-config" || l.GetConfigMaps()[1].GetNamespace() != "shop" {
		t.Fatalf("list all: %v %v", l, err)
	}
	if l, _ := c.ListConfigMaps(ctx, &plannerv1.ListConfigMapsRequest{Namespace: "shop"}); len(l.GetConfigMaps()) != 1 {
		t.Fatalf("list shop: %v", l)
	}
	if _, err := c.DeleteConfigMap(ctx, &plannerv1.DeleteConfigMapRequest{Ref: &plannerv1.ConfigObjectRef{Name: "web-config"}}); err != nil {
		t.Fatal(err)
	}
	_, err = c.GetConfigMap(ctx, &plannerv1.GetConfigMapRequest{Ref: &plannerv1.ConfigObjectRef{Name: "web-config"}})
	wantCode(t, err, codes.NotFound, "configmap default/web-config")
	_, err = c.DeleteConfigMap(ctx, &plannerv1.DeleteConfigMapRequest{Ref: &plannerv1.ConfigObjectRef{Name: "web-config"}})
	wantCode(t, err, codes.NotFound)

	// Immutable: data cannot change; delete and re-create works.
	imm := &syncpodv1.ConfigMap{Name: "frozen", Immutable: true, Data: map[string]string{"a": "1"}}
	if _, err := c.ApplyConfigMap(ctx, &plannerv1.ApplyConfigMapRequest{ConfigMap: imm}); err != nil {
		t.Fatal(err)
	}
	imm.Data["a"] = "2"
	_, err = c.ApplyConfigMap(ctx, &plannerv1.ApplyConfigMapRequest{ConfigMap: imm})
	wantCode(t, err, codes.FailedPrecondition, "immutable")
}

func TestConfigObjectValidationReportsEveryFieldPath(t *testing.T) {
	c, st, _ := setupConfig(t)
	ctx := context.Background()
	_, err := c.ApplyConfigMap(ctx, &plannerv1.ApplyConfigMapRequest{ConfigMap: &syncpodv1.ConfigMap{
		Name: "Bad_Name", Namespace: "NS", Data: map[string]string{"ok": "1", "bad/key": "2", "..": "3"},
		BinaryData: map[string][]byte{"ok": {1}}, Labels: map[string]string{"a": "not ok!"}}})
	want := []string{"config_map.name", "config_map.namespace", `config_map.labels["a"]`, `config_map.data[".."]`, `config_map.data["bad/key"]`, `config_map.binary_data["ok"]`}
	if got := fieldPaths(t, err); strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("configmap paths %q, want %q", got, want)
	}
	_, err = c.ApplySecret(ctx, &plannerv1.ApplySecretRequest{Secret: &syncpodv1.Secret{Data: map[string][]byte{"x y": []byte("hidden-value")}}})
	if got := fieldPaths(t, err); strings.Join(got, " ") != `secret.name secret.data["x y"]` {
		t.Errorf("secret paths %q", got)
	}
	if strings.Contains(status.Convert(err).Message(), "hidden-value") {
		t.Error("a secret value in an error")
	}
	_, err = c.ApplyConfigMap(ctx, &plannerv1.ApplyConfigMapRequest{})
	if got := fieldPaths(t, err); strings.Join(got, " ") != "config_map" {
		t.Errorf("missing configmap paths %q", got)
	}
	_, err = c.GetSecret(ctx, &plannerv1.GetSecretRequest{Ref: &plannerv1.ConfigObjectRef{Namespace: "A"}})
	if got := fieldPaths(t, err); strings.Join(got, " ") != "ref.name ref.namespace" {
		t.Errorf("ref paths %q", got)
	}
	_, err = c.ListSecrets(ctx, &plannerv1.ListSecretsRequest{Namespace: "Bad"})
	if got := fieldPaths(t, err); strings.Join(got, " ") != "namespace" {
		t.Errorf("list paths %q", got)
	}
	// Nothing was stored.
	if l, _ := st.ListConfigMaps(ctx, ""); len(l) != 0 {
		t.Fatalf("stored after refusal: %v", l)
	}
}

func TestSecretsAreNeverListedInClear(t *testing.T) {
	c, _, path := setupConfig(t)
	ctx := context.Background()
	resp, err := c.ApplySecret(ctx, &plannerv1.ApplySecretRequest{Secret: &syncpodv1.Secret{Name: "creds",
		Data: map[string][]byte{"password": []byte("hunter2-very-secret")}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.GetSecret().GetData()) != 0 || resp.GetSecret().GetDataSizes()["password"] != 19 || resp.GetSecret().GetType() != "Opaque" {
		t.Fatalf("apply response %v", resp.GetSecret())
	}
	l, err := c.ListSecrets(ctx, &plannerv1.ListSecretsRequest{})
	if err != nil || len(l.GetSecrets()) != 1 || len(l.GetSecrets()[0].GetData()) != 0 || l.GetSecrets()[0].GetDataSizes()["password"] != 19 {
		t.Fatalf("list %v %v", l, err)
	}
	g, err := c.GetSecret(ctx, &plannerv1.GetSecretRequest{Ref: &plannerv1.ConfigObjectRef{Name: "creds"}})
	if err != nil || len(g.GetSecret().GetData()) != 0 {
		t.Fatalf("get without reveal %v %v", g, err)
	}
	g, err = c.GetSecret(ctx, &plannerv1.GetSecretRequest{Ref: &plannerv1.ConfigObjectRef{Name: "creds"}, Reveal: true})
	if err != nil || string(g.GetSecret().GetData()["password"]) != "hunter2-very-secret" {
		t.Fatalf("get with reveal %v %v", g, err)
	}
	// The data file is the planner's alone.
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("database mode %v %v, want 0600", fi.Mode(), err)
	}
}

func TestConfigRPCsWithoutAStoreAreUnavailable(t *testing.T) {
	s := New(Options{})
	_, err := s.ListConfigMaps(context.Background(), &plannerv1.ListConfigMapsRequest{})
	wantCode(t, err, codes.Unavailable)
	_, err = s.ApplySecret(context.Background(), &plannerv1.ApplySecretRequest{})
	wantCode(t, err, codes.Unavailable)
}
