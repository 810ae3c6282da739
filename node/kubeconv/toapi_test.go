package kubeconv

import (
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/known/timestamppb"
	"sigs.k8s.io/yaml"

	"github.com/syncpod/syncpod/node/kubeconv/kubeconvtest"
	"github.com/syncpod/syncpod/planner/manifest"
	plannerv1 "github.com/syncpod/syncpod/proto/syncpod/planner/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
	"github.com/syncpod/syncpod/proto/validation"
)

// repoRoot is the checkout's root, from this package's directory.
var repoRoot = filepath.Join("..", "..")

// roundTrip is what a user of `syncpodctl get pod -o yaml` and `apply -f`
// does to a stored pod: PodToAPI, YAML, and the manifest conversion
// again. Any warning is an error: a rendered field that the conversion
// ignores is a field lost.
func roundTrip(p *syncpodv1.Pod) (*syncpodv1.Pod, string, error) {
	y, err := yaml.Marshal(PodToAPI(&plannerv1.PodRecord{Pod: p}))
	if err != nil {
		return nil, "", err
	}
	pods, warns, err := manifest.Parse(y)
	switch {
	case err != nil:
		return nil, string(y), err
	case len(warns) > 0:
		return nil, string(y), fmt.Errorf("fields ignored: %v", warns)
	case len(pods) != 1:
		return nil, string(y), fmt.Errorf("%d pods, want 1", len(pods))
	}
	return pods[0], string(y), nil
}

// stored is p as the planner's store keeps it: the namespace defaulted
// (the one planner-set field a manifest's pod may lack that PodToAPI
// renders).
func stored(p *syncpodv1.Pod) *syncpodv1.Pod {
	out := proto.Clone(p).(*syncpodv1.Pod)
	out.Namespace = validation.NamespaceOrDefault(out.GetNamespace())
	return out
}

// checkRoundTrip fails t unless p comes back from roundTrip equal.
func checkRoundTrip(t *testing.T, name string, p *syncpodv1.Pod) {
	t.Helper()
	want := stored(p)
	back, y, err := roundTrip(want)
	if err != nil {
		t.Errorf("%s: the rendered pod does not convert back: %v\n%s", name, err, y)
		return
	}
	if !proto.Equal(back, want) {
		t.Errorf("%s: the round trip changed the pod:\n got %v\nwant %v\nyaml:\n%s", name, back, want, y)
	}
}

// manifestCorpus is every manifest the repository ships or tests with,
// by where it comes from: the example files, the manifest package's and
// this package's testdata, the YAML blocks of the README and docs, and
// the Go string literals of every test that hold a Pod document. Those
// that do not parse (the tests of refusals) are left out by the caller.
func manifestCorpus(t *testing.T) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	add := func(name string, data []byte) { out[name] = data }
	for _, dir := range []string{"examples", filepath.Join("planner", "manifest", "testdata"), filepath.Join("node", "kubeconv", "testdata")} {
		err := filepath.WalkDir(filepath.Join(repoRoot, dir), func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !slices.Contains([]string{".yaml", ".yml", ".json"}, filepath.Ext(p)) {
				return err
			}
			data, err := os.ReadFile(p)
			add(p, data)
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	docs, _ := filepath.Glob(filepath.Join(repoRoot, "docs", "*.md"))
	fence := regexp.MustCompile("(?ms)^```ya?ml\n(.*?)^```")
	for _, md := range append(docs, filepath.Join(repoRoot, "README.md")) {
		data, err := os.ReadFile(md)
		if err != nil {
			t.Fatal(err)
		}
		for i, m := range fence.FindAllSubmatch(data, -1) {
			add(md+" block "+strconv.Itoa(i), m[1])
		}
	}
	podDoc := regexp.MustCompile(`"?kind"?:\s*"?Pod"?`)
	err := filepath.WalkDir(repoRoot, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); p != repoRoot && (strings.HasPrefix(n, ".") || n == "bin" || n == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(p, "_test.go") {
			return nil
		}
		src, err := os.ReadFile(p)
		if err != nil || !podDoc.Match(src) {
			return err
		}
		fset := token.NewFileSet()
		f, err := parser.ParseFile(fset, p, src, 0)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
				if s, err := strconv.Unquote(lit.Value); err == nil && podDoc.MatchString(s) {
					add(fset.Position(lit.Pos()).String()+" (a literal)", []byte(s))
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestPodToAPIRoundTripsEveryManifest: every pod of every manifest the
// repository ships or tests with that the manifest conversion accepts,
// rendered by PodToAPI as `get -o yaml` prints it and converted again,
// is the pod the first conversion gave, field for field; and so is a pod
// from the API server as the node agent converts it.
func TestPodToAPIRoundTripsEveryManifest(t *testing.T) {
	pods := map[string]int{}
	for name, data := range manifestCorpus(t) {
		objs, _, err := manifest.ParseObjects(data)
		if err != nil {
			continue // a refusal's test case
		}
		for i, p := range objs.Pods {
			checkRoundTrip(t, name+" pod "+strconv.Itoa(i), p)
			pods[corpusKind(name)]++
		}
	}
	t.Logf("pods by source: %v", pods)
	// The corpus is what it claims to be: none of its sources is empty.
	for _, kind := range []string{"examples", "testdata", "test literals"} {
		if pods[kind] < 3 {
			t.Errorf("%d pods from %s, want the repository's (%v)", pods[kind], kind, pods)
		}
	}

	p, _, err := PodFromAPI(kubeconvtest.APIPod())
	if err != nil {
		t.Fatal(err)
	}
	// The source generation comes from metadata.generation, which the
	// manifest conversion leaves to the node agent.
	p.SourceGeneration = 0
	checkRoundTrip(t, "kubeconvtest.APIPod", p)
}

// corpusKind is where in the corpus a manifest is from.
func corpusKind(name string) string {
	switch {
	case strings.HasSuffix(name, "(a literal)"):
		return "test literals"
	case strings.Contains(name, "testdata"):
		return "testdata"
	case strings.Contains(name, "examples"):
		return "examples"
	}
	return "docs"
}

// notInManifests are the Pod proto's fields that no manifest sets, so
// neither PodToAPI renders them for `apply -f` nor does the fixture have
// them; each with why. Every other field of every message a Pod holds
// must be set by testdata/full-spec.yaml and come back from the round
// trip: a field added to the proto fails TestPodToAPIRendersEveryField
// until the manifest conversion fills it, the fixture sets it and
// PodToAPI renders it.
var notInManifests = map[protoreflect.FullName]string{
	"syncpod.v1.Pod.generation":                    "set by the planner's store on every spec change",
	"syncpod.v1.Pod.creation_time":                 "set by the planner's store (rendered as metadata.creationTimestamp, which a manifest may not set)",
	"syncpod.v1.Pod.deletion_time":                 "set by DeletePod (rendered as metadata.deletionTimestamp, which a manifest may not set)",
	"syncpod.v1.Pod.deletion_grace_period_seconds": "set by DeletePod (rendered as metadata.deletionGracePeriodSeconds, which a manifest may not set)",
	"syncpod.v1.Pod.service_environment":           "computed by the node agent from its cluster's Services, for no manifest",
	"syncpod.v1.Pod.source_generation":             "the node agent's copy of the API server's metadata.generation, which a manifest may not set",
}

// zeroNeverStored are the enums whose unspecified value the manifest
// conversion never stores (it refuses the manifest, or always names a
// value), so that PodToAPI need not render it.
var zeroNeverStored = map[protoreflect.FullName]string{
	"syncpod.v1.SeccompProfileType":         "a seccomp profile's type is required",
	"syncpod.v1.AppArmorProfileType":        "an AppArmor profile's type is required",
	"syncpod.v1.ContainerRestartRuleAction": "a restart rule's action is required",
	"syncpod.v1.ExitCodeOperator":           "a restart rule's operator is required",
	"syncpod.v1.ResizeRestartPolicy":        "a resize policy's restartPolicy is required",
}

// setFields are the fields set somewhere in m, by full name.
func setFields(m protoreflect.Message, into map[protoreflect.FullName]bool) {
	m.Range(func(fd protoreflect.FieldDescriptor, v protoreflect.Value) bool {
		into[fd.FullName()] = true
		switch {
		case fd.IsList() && fd.Message() != nil:
			for i := range v.List().Len() {
				setFields(v.List().Get(i).Message(), into)
			}
		case fd.IsMap() && fd.MapValue().Message() != nil:
			v.Map().Range(func(_ protoreflect.MapKey, e protoreflect.Value) bool {
				setFields(e.Message(), into)
				return true
			})
		case fd.Message() != nil && !fd.IsMap():
			setFields(v.Message(), into)
		}
		return true
	})
}

// allFields are the fields of md and of every message it holds, but
// those of notInManifests (and what only they hold).
func allFields(md protoreflect.MessageDescriptor, seen map[protoreflect.FullName]bool, into map[protoreflect.FullName]protoreflect.FieldDescriptor) {
	if seen[md.FullName()] {
		return
	}
	seen[md.FullName()] = true
	for i := range md.Fields().Len() {
		fd := md.Fields().Get(i)
		if _, skip := notInManifests[fd.FullName()]; skip {
			continue
		}
		into[fd.FullName()] = fd
		if fd.IsMap() {
			fd = fd.MapValue()
		}
		if fd.Message() != nil {
			allFields(fd.Message(), seen, into)
		}
	}
}

// fieldSite is a message of the fixture's pod that holds a field, where
// the field's values are tried.
type fieldSite struct {
	m  protoreflect.Message
	fd protoreflect.FieldDescriptor
}

// sites are, for each singular scalar field of the messages in m, the
// first message that holds it (set or not).
func sites(m protoreflect.Message, into map[protoreflect.FullName]fieldSite) {
	fields := m.Descriptor().Fields()
	for i := range fields.Len() {
		fd := fields.Get(i)
		if _, skip := notInManifests[fd.FullName()]; skip {
			continue
		}
		switch {
		case fd.IsList() && fd.Message() != nil:
			l := m.Get(fd).List()
			for j := range l.Len() {
				sites(l.Get(j).Message(), into)
			}
		case fd.IsMap():
		case fd.Message() != nil:
			if m.Has(fd) {
				sites(m.Get(fd).Message(), into)
			}
		case !fd.IsList():
			if _, ok := into[fd.FullName()]; !ok {
				into[fd.FullName()] = fieldSite{m, fd}
			}
		}
	}
}

// TestPodToAPIRendersEveryField: the fixture sets every field of the Pod
// proto a manifest can set (each oneof member, every optional field),
// and PodToAPI renders all of them back. Then every value of every enum
// field, and the zero value of every field with presence (an optional
// false or 0, which is not unset), is tried in its place: each comes back.
func TestPodToAPIRendersEveryField(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "full-spec.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	pods, warns, err := manifest.Parse(data)
	if err != nil || len(warns) > 0 || len(pods) != 1 {
		t.Fatalf("the fixture: %d pods, warnings %v, err %v", len(pods), warns, err)
	}
	pod := stored(pods[0])

	set := map[protoreflect.FullName]bool{}
	setFields(pod.ProtoReflect(), set)
	want := map[protoreflect.FullName]protoreflect.FieldDescriptor{}
	allFields(pod.ProtoReflect().Descriptor(), map[protoreflect.FullName]bool{}, want)
	for _, name := range sortedKeys(want) {
		if !set[name] {
			t.Errorf("the fixture does not set %s: set it in testdata/full-spec.yaml (and render it in PodToAPI), or list it in notInManifests with why", name)
		}
	}
	for name := range notInManifests {
		if pod.ProtoReflect().Descriptor().Fields().ByName(name.Name()) == nil {
			t.Errorf("notInManifests lists %s, no field of the Pod", name)
		}
		if set[name] {
			t.Errorf("notInManifests lists %s, which the manifest conversion sets", name)
		}
	}
	checkRoundTrip(t, "full-spec.yaml", pod)
	if t.Failed() {
		return
	}

	where := map[protoreflect.FullName]fieldSite{}
	sites(pod.ProtoReflect(), where)
	for _, name := range sortedKeys(want) {
		fd := want[name]
		if fd.IsList() || fd.IsMap() || fd.Message() != nil || (fd.Enum() == nil && !fd.HasPresence()) {
			continue
		}
		s, ok := where[name]
		if !ok {
			t.Errorf("no message of the fixture holds %s", name)
			continue
		}
		old, had := s.m.Get(fd), s.m.Has(fd)
		var values []protoreflect.Value
		if e := fd.Enum(); e != nil {
			for i := range e.Values().Len() {
				if n := e.Values().Get(i).Number(); n != 0 || zeroNeverStored[e.FullName()] == "" {
					values = append(values, protoreflect.ValueOfEnum(n))
				}
			}
		} else {
			values = append(values, fd.Default()) // the zero value, set
		}
		for _, v := range values {
			s.m.Set(fd, v)
			checkRoundTrip(t, string(name)+"="+v.String(), pod)
		}
		if had {
			s.m.Set(fd, old)
		} else {
			s.m.Clear(fd)
		}
	}
	if !proto.Equal(pod, stored(pods[0])) {
		t.Fatal("the tries did not restore the fixture")
	}
}

func sortedKeys[V any](m map[protoreflect.FullName]V) []protoreflect.FullName {
	out := make([]protoreflect.FullName, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// TestPodToAPIRendersPlannerFieldsForReading: what the planner sets is
// shown (creation and deletion times, the namespace defaulted) and what
// apply ignores of it is only that.
func TestPodToAPIRendersPlannerFieldsForReading(t *testing.T) {
	grace := int64(3)
	p := &syncpodv1.Pod{Name: "web", Uid: "u1", Generation: 4,
		CreationTime: timestamppb.New(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)), DeletionTime: timestamppb.New(time.Date(2026, 1, 2, 4, 0, 0, 0, time.UTC)),
		DeletionGracePeriodSeconds: &grace,
		Spec:                       &syncpodv1.PodSpec{Containers: []*syncpodv1.Container{{Name: "app", Image: "busybox"}}}}
	kp := PodToAPI(&plannerv1.PodRecord{Pod: p})
	if kp.Namespace != "default" || kp.CreationTimestamp.IsZero() || kp.DeletionTimestamp == nil || *kp.DeletionGracePeriodSeconds != 3 {
		t.Fatalf("metadata %+v", kp.ObjectMeta)
	}
	js, err := json.Marshal(kp)
	if err != nil {
		t.Fatal(err)
	}
	back, warns, err := ConvertManifest(js)
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range warns {
		if !strings.Contains(w, "set by the API server") {
			t.Errorf("warning %q, want only the planner's fields ignored", w)
		}
	}
	want := stored(p)
	want.Generation, want.CreationTime, want.DeletionTime, want.DeletionGracePeriodSeconds = 0, nil, nil, nil
	if !proto.Equal(back, want) {
		t.Errorf("got %v, want %v", back, want)
	}
}
