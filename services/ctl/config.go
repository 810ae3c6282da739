package ctl

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/syncpod/syncpod/planner/manifest"
	plannerv1 "github.com/syncpod/syncpod/proto/syncpod/planner/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// ConfigMaps and Secrets in syncpodctl: apply -f takes their v1 YAML/JSON
// beside pods, get configmaps|secrets lists them (never a Secret's
// values), delete configmap|secret NAME removes them.

// sourcedConfig is a ConfigMap or Secret read from a file.
type sourcedConfig struct {
	source string
	obj    any // *syncpodv1.ConfigMap or *syncpodv1.Secret
}

// configKind is "configmap" or "secret" for a resource argument, "".
func configKind(resource string) string {
	switch strings.ToLower(resource) {
	case "configmap", "configmaps", "cm":
		return "configmap"
	case "secret", "secrets":
		return "secret"
	}
	return ""
}

// configArgs reads "configmap NAME..." or "configmap/NAME..." (one kind).
func configArgs(args []string) (kind string, names []string, ok bool) {
	if len(args) == 0 {
		return "", nil, false
	}
	if k := configKind(args[0]); k != "" {
		return k, args[1:], true
	}
	for _, a := range args {
		res, name, found := strings.Cut(a, "/")
		k := configKind(res)
		if !found || k == "" || (kind != "" && k != kind) {
			return "", nil, false
		}
		kind = k
		names = append(names, name)
	}
	return kind, names, true
}

// splitConfigObjects takes the v1 ConfigMap and Secret documents out of a
// YAML/JSON stream; the rest is returned for the pod decoder.
func splitConfigObjects(data []byte) ([]byte, []any, error) {
	var rest []string
	var objs []any
	for i, doc := range splitYAML(data) {
		js, err := yaml.YAMLToJSON(doc)
		if err != nil {
			rest = append(rest, string(doc))
			continue
		}
		var head struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
		}
		_ = json.Unmarshal(js, &head) // js is JSON: no second YAML pass
		if head.APIVersion != "v1" || (head.Kind != "ConfigMap" && head.Kind != "Secret") {
			rest = append(rest, string(doc))
			continue
		}
		parsed, _, err := manifest.ParseObjects(js)
		if err != nil {
			return nil, nil, fmt.Errorf("document %d: %w", i+1, err)
		}
		for _, c := range parsed.ConfigMaps {
			objs = append(objs, c)
		}
		for _, s := range parsed.Secrets {
			objs = append(objs, s)
		}
	}
	return []byte(strings.Join(rest, "\n---\n")), objs, nil
}

var applyVerb = map[plannerv1.ApplyResult]string{
	plannerv1.ApplyResult_APPLY_RESULT_CREATED:   "created",
	plannerv1.ApplyResult_APPLY_RESULT_UPDATED:   "configured",
	plannerv1.ApplyResult_APPLY_RESULT_UNCHANGED: "unchanged",
}

// applyConfigs stores the config objects; it reports each and returns the
// first error.
func applyConfigs(ctx context.Context, g *globals, client plannerv1.PlannerServiceClient, configs []sourcedConfig) error {
	var firstErr error
	for _, c := range configs {
		rctx, cancel := context.WithTimeout(ctx, g.requestTimeout)
		var (
			what string
			res  plannerv1.ApplyResult
			err  error
		)
		switch o := c.obj.(type) {
		case *syncpodv1.ConfigMap:
			if o.GetNamespace() == "" && g.namespace != "default" {
				o.Namespace = g.namespace
			}
			what = "configmap/" + o.GetName()
			var resp *plannerv1.ApplyConfigMapResponse
			if resp, err = client.ApplyConfigMap(rctx, &plannerv1.ApplyConfigMapRequest{ConfigMap: o}); err == nil {
				res = resp.GetResult()
			}
		case *syncpodv1.Secret:
			if o.GetNamespace() == "" && g.namespace != "default" {
				o.Namespace = g.namespace
			}
			what = "secret/" + o.GetName()
			var resp *plannerv1.ApplySecretResponse
			if resp, err = client.ApplySecret(rctx, &plannerv1.ApplySecretRequest{Secret: o}); err == nil {
				res = resp.GetResult()
			}
		}
		cancel()
		if err != nil {
			fmt.Fprintf(g.env.Stderr, "%s: %s: ", c.source, what)
			report(g.env.Stderr, err)
			firstErr = cmpErr(firstErr, err)
			continue
		}
		fmt.Fprintf(g.env.Stdout, "%s %s\n", what, applyVerb[res])
	}
	return firstErr
}

// runGetConfig lists ConfigMaps (NAME DATA AGE) or Secrets (NAME TYPE
// DATA AGE), optionally only the names given.
func runGetConfig(ctx context.Context, g *globals, kind string, names []string, allNamespaces bool) error {
	client, closer, err := g.planner()
	if err != nil {
		return err
	}
	defer closer.Close()
	ns := g.namespace
	if allNamespaces {
		ns = ""
	}
	ctx, cancel := context.WithTimeout(ctx, g.requestTimeout)
	defer cancel()
	want := map[string]bool{}
	for _, n := range names {
		want[n] = true
	}
	now := g.env.Now()
	var rows [][]string
	header := []string{"NAME", "DATA", "AGE"}
	if kind == "secret" {
		header = []string{"NAME", "TYPE", "DATA", "AGE"}
	}
	if allNamespaces {
		header = append([]string{"NAMESPACE"}, header...)
	}
	add := func(namespace, name string, row []string) {
		if len(want) > 0 && !want[name] {
			return
		}
		delete(want, name)
		if allNamespaces {
			row = append([]string{namespace}, row...)
		}
		rows = append(rows, row)
	}
	if kind == "configmap" {
		resp, err := client.ListConfigMaps(ctx, &plannerv1.ListConfigMapsRequest{Namespace: ns})
		if err != nil {
			return err
		}
		for _, c := range resp.GetConfigMaps() {
			a := "<unknown>"
			if c.GetCreationTime() != nil {
				a = humanDuration(now.Sub(c.GetCreationTime().AsTime()))
			}
			add(c.GetNamespace(), c.GetName(), []string{c.GetName(), strconv.Itoa(len(c.GetData()) + len(c.GetBinaryData())), a})
		}
	} else {
		resp, err := client.ListSecrets(ctx, &plannerv1.ListSecretsRequest{Namespace: ns})
		if err != nil {
			return err
		}
		for _, s := range resp.GetSecrets() {
			a := "<unknown>"
			if s.GetCreationTime() != nil {
				a = humanDuration(now.Sub(s.GetCreationTime().AsTime()))
			}
			add(s.GetNamespace(), s.GetName(), []string{s.GetName(), s.GetType(), strconv.Itoa(len(s.GetDataSizes())), a})
		}
	}
	for _, n := range names {
		if want[n] {
			return notFound("%ss %q not found", kind, n)
		}
	}
	if len(rows) == 0 {
		fmt.Fprintf(g.env.Stderr, "No resources found in %s namespace.\n", nsOrAll(ns))
		return nil
	}
	fmt.Fprint(g.env.Stdout, table(append([][]string{header}, rows...)))
	return nil
}

func nsOrAll(ns string) string {
	if ns == "" {
		return "any"
	}
	return ns
}

// runDeleteConfig deletes ConfigMaps or Secrets by name.
func runDeleteConfig(ctx context.Context, g *globals, kind string, names []string) error {
	if len(names) == 0 {
		return usagef("a %s name is required", kind)
	}
	client, closer, err := g.planner()
	if err != nil {
		return err
	}
	defer closer.Close()
	var firstErr error
	for _, n := range names {
		ref := &plannerv1.ConfigObjectRef{Namespace: g.namespace, Name: n}
		rctx, cancel := context.WithTimeout(ctx, g.requestTimeout)
		if kind == "configmap" {
			_, err = client.DeleteConfigMap(rctx, &plannerv1.DeleteConfigMapRequest{Ref: ref})
		} else {
			_, err = client.DeleteSecret(rctx, &plannerv1.DeleteSecretRequest{Ref: ref})
		}
		cancel()
		if err != nil {
			report(g.env.Stderr, err)
			firstErr = cmpErr(firstErr, err)
			continue
		}
		fmt.Fprintf(g.env.Stdout, "%s \"%s\" deleted\n", kind, n)
	}
	if firstErr != nil {
		return silent{firstErr}
	}
	return nil
}
