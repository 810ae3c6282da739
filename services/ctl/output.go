package ctl

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/util/jsonpath"
	"sigs.k8s.io/yaml"

	"github.com/syncpod/syncpod/node/kubeconv"
	plannerv1 "github.com/syncpod/syncpod/proto/syncpod/planner/v1"
	"github.com/syncpod/syncpod/services/ctl/cliargs"
)

// outputFormat is a parsed -o value.
type outputFormat struct {
	kind     string // "", wide, name, json, yaml, jsonpath, proto-json, proto-yaml
	jsonpath *jsonpath.JSONPath
}

const outputHelp = cliargs.OutputHelp

// parseOutput checks an -o value.
func parseOutput(v string) (outputFormat, error) {
	o, err := cliargs.ParseOutput(v)
	return outputFormat{kind: o.Kind, jsonpath: o.JSONPath}, err
}

// structured reports whether the format prints objects rather than a table.
func (o outputFormat) structured() bool { return o.kind != "" && o.kind != "wide" }

// printRecords prints records in a structured format. single is true when
// one pod was asked for by name: it prints as a Pod, not as a List.
func (o outputFormat) printRecords(w io.Writer, records []*plannerv1.PodRecord, single bool) error {
	switch o.kind {
	case "name":
		for _, r := range records {
			fmt.Fprintf(w, "pod/%s\n", r.GetPod().GetName())
		}
		return nil
	case "proto-json", "proto-yaml":
		if single && len(records) == 1 {
			return printMessage(w, records[0], strings.TrimPrefix(o.kind, "proto-"))
		}
		return printMessage(w, &plannerv1.ListPodsResponse{Records: records}, strings.TrimPrefix(o.kind, "proto-"))
	}
	var obj any
	if single && len(records) == 1 {
		obj = kubeconv.PodToAPI(records[0])
	} else {
		list := &corev1.PodList{}
		list.APIVersion, list.Kind = "v1", "List"
		for _, r := range records {
			list.Items = append(list.Items, *kubeconv.PodToAPI(r))
		}
		obj = list
	}
	js, err := json.Marshal(obj)
	if err != nil {
		return err
	}
	switch o.kind {
	case "json":
		var buf bytes.Buffer
		if err := json.Indent(&buf, js, "", "    "); err != nil {
			return err
		}
		buf.WriteByte('\n')
		_, err = w.Write(buf.Bytes())
		return err
	case "yaml":
		y, err := yaml.JSONToYAML(js)
		if err != nil {
			return err
		}
		_, err = w.Write(y)
		return err
	case "jsonpath":
		var data any
		if err := json.Unmarshal(js, &data); err != nil {
			return err
		}
		if err := o.jsonpath.Execute(w, data); err != nil {
			return fmt.Errorf("jsonpath: %w", err)
		}
		return nil
	}
	return fmt.Errorf("output %q cannot print pods", o.kind)
}
