package store

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/syncpod/syncpod/internal/boltfile"
	"github.com/syncpod/syncpod/internal/clocktest"
	plannerv1 "github.com/syncpod/syncpod/proto/syncpod/planner/v1"
	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// fakeValidate accepts a pod with a name, a spec and named containers, and
// lists every problem at once.
func fakeValidate(p *syncpodv1.Pod) error {
	var errs []error
	if p.GetName() == "" {
		errs = append(errs, errors.New("name: required"))
	}
	if p.GetSpec() == nil {
		errs = append(errs, errors.New("spec: required"))
	}
	for i, c := range p.GetSpec().GetContainers() {
		if c.GetName() == "" {
			errs = append(errs, fmt.Errorf("spec.containers[%d].name: required", i))
		}
	}
	return errors.Join(errs...)
}

func openTest(t *testing.T, mod func(*Options)) (*Store, *clocktest.Clock, string) {
	t.Helper()
	clk := clocktest.New(t0)
	path := filepath.Join(t.TempDir(), "planner.db")
	opts := Options{Path: path, Now: clk.Now, Validate: fakeValidate}
	if mod != nil {
		mod(&opts)
	}
	s, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s, clk, path
}

func pod(name string, image string) *syncpodv1.Pod {
	return &syncpodv1.Pod{
		Name:   name,
		Labels: map[string]string{"app": name},
		Spec: &syncpodv1.PodSpec{Containers: []*syncpodv1.Container{
			{Name: "main", Image: image},
		}},
	}
}

func txID(t *testing.T, s *Store) int {
	t.Helper()
	var id int
	if err := s.db.View(func(tx *bolt.Tx) error { id = tx.ID(); return nil }); err != nil {
		t.Fatal(err)
	}
	return id
}

func TestOpenCreatesFile0600WithSchemaVersion(t *testing.T) {
	s, _, path := openTest(t, nil)
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := fi.Mode().Perm(); got != 0o600 {
		t.Errorf("mode = %o, want 600", got)
	}
	var v int
	_ = s.db.View(func(tx *bolt.Tx) error { v, err = readSchemaVersion(tx); return err })
	if v != SchemaVersion() {
		t.Errorf("schema version = %d, want %d", v, SchemaVersion())
	}
}

// fileWithSchemaVersion writes a bbolt file whose meta/schema_version is
// raw and returns its path.
func fileWithSchemaVersion(t *testing.T, raw []byte) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "planner.db")
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists(bucketMeta)
		if err != nil {
			return err
		}
		return b.Put(keySchema, raw)
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestOpenRefusesNewerSchema(t *testing.T) {
	_, err := Open(Options{Path: fileWithSchemaVersion(t, []byte("999")), Validate: fakeValidate})
	if !errors.Is(err, ErrSchemaTooNew) {
		t.Fatalf("Open = %v, want ErrSchemaTooNew", err)
	}
}

func TestOpenTimesOutWhenLocked(t *testing.T) {
	_, _, path := openTest(t, nil)
	_, err := Open(Options{Path: path, Validate: fakeValidate, OpenTimeout: 50 * time.Millisecond})
	if err == nil {
		t.Fatal("second Open of a locked file succeeded")
	}
}

// migrationTests holds one test per migration version. TestMigrations fails
// when a migration has none.
var migrationTests = map[int]func(t *testing.T){
	1: func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "m.db")
		db, err := bolt.Open(path, 0o600, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		if err := db.Update(func(tx *bolt.Tx) error { return migrate(tx, migrations()[:1]) }); err != nil {
			t.Fatal(err)
		}
		_ = db.View(func(tx *bolt.Tx) error {
			for _, b := range [][]byte{bucketMeta, bucketPods, bucketUIDs} {
				if tx.Bucket(b) == nil {
					t.Errorf("bucket %s missing after migration 1", b)
				}
			}
			if v, _ := readSchemaVersion(tx); v != 1 {
				t.Errorf("version = %d, want 1", v)
			}
			return nil
		})
		// Idempotent: running again on a migrated file changes nothing.
		if err := db.Update(func(tx *bolt.Tx) error { return migrate(tx, migrations()[:1]) }); err != nil {
			t.Fatal(err)
		}
	},
}

func TestMigrations(t *testing.T) {
	prev := 0
	for _, m := range migrations() {
		if int(m.Version) != prev+1 {
			t.Errorf("migration %q has version %d, want %d (ordered, no gaps)", m.Name, m.Version, prev+1)
		}
		prev = int(m.Version)
		test, ok := migrationTests[prev]
		if !ok {
			t.Errorf("migration %d (%s) has no test in migrationTests", m.Version, m.Name)
			continue
		}
		t.Run(fmt.Sprintf("v%d", m.Version), test)
	}
}

var uuidV4 = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

func TestApply(t *testing.T) {
	ctx := context.Background()
	s, clk, _ := openTest(t, nil)

	in := pod("web", "nginx:1")
	inCopy := proto.Clone(in)
	got, res, err := s.Apply(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	if !proto.Equal(in, inCopy) {
		t.Error("Apply modified its input")
	}
	if res != plannerv1.ApplyResult_APPLY_RESULT_CREATED {
		t.Errorf("result = %v, want CREATED", res)
	}
	if !uuidV4.MatchString(got.GetUid()) {
		t.Errorf("uid %q is not a v4 UUID", got.GetUid())
	}
	if got.GetNamespace() != "default" || got.GetGeneration() != 1 || !got.GetCreationTime().AsTime().Equal(t0) {
		t.Errorf("stored pod = %v, want namespace default, generation 1, creation %v", got, t0)
	}
	uid := got.GetUid()

	t.Run("identical re-apply writes nothing", func(t *testing.T) {
		before := txID(t, s)
		again := pod("web", "nginx:1")
		again.Generation = 42 // planner-owned, ignored
		p, res, err := s.Apply(ctx, again)
		if err != nil || res != plannerv1.ApplyResult_APPLY_RESULT_UNCHANGED {
			t.Fatalf("Apply = %v, %v; want UNCHANGED", res, err)
		}
		if p.GetUid() != uid || p.GetGeneration() != 1 {
			t.Errorf("got uid %s gen %d", p.GetUid(), p.GetGeneration())
		}
		if after := txID(t, s); after != before {
			t.Errorf("a write transaction committed (tx id %d -> %d)", before, after)
		}
	})
	t.Run("changed spec bumps generation", func(t *testing.T) {
		clk.Advance(time.Minute)
		p, res, err := s.Apply(ctx, pod("web", "nginx:2"))
		if err != nil || res != plannerv1.ApplyResult_APPLY_RESULT_UPDATED {
			t.Fatalf("Apply = %v, %v; want UPDATED", res, err)
		}
		if p.GetGeneration() != 2 || p.GetUid() != uid || !p.GetCreationTime().AsTime().Equal(t0) {
			t.Errorf("got %v; want generation 2, same uid and creation time", p)
		}
	})
	t.Run("labels only keep generation", func(t *testing.T) {
		in := pod("web", "nginx:2")
		in.Labels["tier"] = "front"
		p, res, err := s.Apply(ctx, in)
		if err != nil || res != plannerv1.ApplyResult_APPLY_RESULT_UPDATED {
			t.Fatalf("Apply = %v, %v; want UPDATED", res, err)
		}
		if p.GetGeneration() != 2 {
			t.Errorf("generation = %d, want 2", p.GetGeneration())
		}
	})
	t.Run("service environment only is stored and keeps generation", func(t *testing.T) {
		// a changed Service is stored for the next container
		// start without counting as a spec change.
		in := pod("web", "nginx:2")
		in.Labels["tier"] = "front"
		in.ServiceEnvironment = map[string]string{"KUBERNETES_SERVICE_HOST": "10.0.0.1"}
		p, res, err := s.Apply(ctx, in)
		if err != nil || res != plannerv1.ApplyResult_APPLY_RESULT_UPDATED {
			t.Fatalf("Apply = %v, %v; want UPDATED", res, err)
		}
		if p.GetGeneration() != 2 || p.GetServiceEnvironment()["KUBERNETES_SERVICE_HOST"] != "10.0.0.1" {
			t.Errorf("got generation %d, service environment %v; want 2 and the new value", p.GetGeneration(), p.GetServiceEnvironment())
		}
	})
	t.Run("source generation alone is kept without a new generation", func(t *testing.T) {
		// the status computed for this spec is the status of the
		// new source generation too.
		in := pod("web", "nginx:2")
		in.Labels["tier"] = "front"
		in.ServiceEnvironment = map[string]string{"KUBERNETES_SERVICE_HOST": "10.0.0.1"}
		in.SourceGeneration = 5
		p, res, err := s.Apply(ctx, in)
		if err != nil || res != plannerv1.ApplyResult_APPLY_RESULT_UPDATED {
			t.Fatalf("Apply = %v, %v; want UPDATED", res, err)
		}
		if p.GetGeneration() != 2 || p.GetSourceGeneration() != 5 {
			t.Errorf("generation %d, source generation %d; want 2 and 5", p.GetGeneration(), p.GetSourceGeneration())
		}
		if _, res, _ := s.Apply(ctx, in); res != plannerv1.ApplyResult_APPLY_RESULT_UNCHANGED {
			t.Errorf("same source generation again: %v, want UNCHANGED", res)
		}
	})
	t.Run("another uid for an existing name", func(t *testing.T) {
		in := pod("web", "nginx:2")
		in.Uid = "other"
		if _, _, err := s.Apply(ctx, in); !errors.Is(err, ErrUIDMismatch) {
			t.Errorf("Apply = %v, want ErrUIDMismatch", err)
		}
	})
	t.Run("uid of another pod for a new name", func(t *testing.T) {
		in := pod("db", "pg")
		in.Uid = uid
		if _, _, err := s.Apply(ctx, in); !errors.Is(err, ErrUIDMismatch) {
			t.Errorf("Apply = %v, want ErrUIDMismatch", err)
		}
	})
	t.Run("given uid is kept", func(t *testing.T) {
		in := pod("db", "pg")
		in.Uid = "11111111-2222-4333-8444-555555555555"
		p, _, err := s.Apply(ctx, in)
		if err != nil || p.GetUid() != in.Uid {
			t.Errorf("Apply = %v, %v; want uid kept", p.GetUid(), err)
		}
	})
}

func TestApplyInvalidStoresNothing(t *testing.T) {
	ctx := context.Background()
	s, _, _ := openTest(t, nil)
	bad := &syncpodv1.Pod{Spec: &syncpodv1.PodSpec{Containers: []*syncpodv1.Container{{}, {}}}}
	_, _, err := s.Apply(ctx, bad)
	if !errors.Is(err, ErrInvalid) {
		t.Fatalf("Apply = %v, want ErrInvalid", err)
	}
	for _, want := range []string{"name: required", "spec.containers[0].name", "spec.containers[1].name"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q lacks %q", err, want)
		}
	}
	slash := pod("a/b", "img")
	slash.Namespace = "x/y"
	_, _, err = s.Apply(ctx, slash)
	if !errors.Is(err, ErrInvalid) || !strings.Contains(err.Error(), "name: must not contain") || !strings.Contains(err.Error(), "namespace: must not contain") {
		t.Errorf("Apply with slashes = %v, want both key errors", err)
	}
	if _, _, err := s.Apply(ctx, nil); !errors.Is(err, ErrInvalid) {
		t.Errorf("Apply(nil) = %v, want ErrInvalid", err)
	}
	recs, err := s.List(ctx, Filter{})
	if err != nil || len(recs) != 0 {
		t.Errorf("List = %d records, %v; want none", len(recs), err)
	}
}

func TestPodsSurviveReopen(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "planner.db")
	opts := Options{Path: path, Validate: fakeValidate, Now: func() time.Time { return t0 }}
	s, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	p, _, err := s.Apply(ctx, pod("web", "nginx"))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s, err = Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rec, err := s.Get(ctx, &plannerv1.PodRef{Uid: p.GetUid()})
	if err != nil || !proto.Equal(rec.GetPod(), p) {
		t.Errorf("after reopen Get = %v, %v; want %v", rec.GetPod(), err, p)
	}
}

func TestGet(t *testing.T) {
	ctx := context.Background()
	s, _, _ := openTest(t, nil)
	p, _, _ := s.Apply(ctx, pod("web", "nginx"))
	cases := []struct {
		name    string
		ref     *plannerv1.PodRef
		wantErr error
	}{
		{"by name, default namespace", &plannerv1.PodRef{Name: "web"}, nil},
		{"by namespace and name", &plannerv1.PodRef{Namespace: "default", Name: "web"}, nil},
		{"by uid", &plannerv1.PodRef{Uid: p.GetUid()}, nil},
		{"by name and matching uid", &plannerv1.PodRef{Name: "web", Uid: p.GetUid()}, nil},
		{"name with another uid", &plannerv1.PodRef{Name: "web", Uid: "x"}, ErrNotFound},
		{"unknown name", &plannerv1.PodRef{Name: "nope"}, ErrNotFound},
		{"other namespace", &plannerv1.PodRef{Namespace: "kube", Name: "web"}, ErrNotFound},
		{"unknown uid", &plannerv1.PodRef{Uid: "x"}, ErrNotFound},
		{"empty ref", &plannerv1.PodRef{}, ErrInvalid},
		{"nil ref", nil, ErrInvalid},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			rec, err := s.Get(ctx, tc.ref)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Errorf("Get = %v, want %v", err, tc.wantErr)
				}
				return
			}
			if err != nil || rec.GetPod().GetUid() != p.GetUid() {
				t.Errorf("Get = %v, %v", rec, err)
			}
		})
	}
}

func TestList(t *testing.T) {
	ctx := context.Background()
	s, _, _ := openTest(t, nil)
	for _, x := range []struct{ ns, name, app string }{
		{"b", "z", "web"}, {"a", "y", "db"}, {"a", "x", "web"}, {"b", "a", "web"},
	} {
		p := pod(x.name, "img")
		p.Namespace = x.ns
		p.Labels = map[string]string{"app": x.app}
		if _, _, err := s.Apply(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		name, ns, sel string
		want          []string
		wantErr       error
	}{
		{name: "all sorted by namespace then name", want: []string{"a/x", "a/y", "b/a", "b/z"}},
		{name: "namespace", ns: "b", want: []string{"b/a", "b/z"}},
		{name: "equality selector", sel: "app=web", want: []string{"a/x", "b/a", "b/z"}},
		{name: "inequality selector", sel: "app!=web", want: []string{"a/y"}},
		{name: "namespace and selector", ns: "a", sel: "app in (web)", want: []string{"a/x"}},
		{name: "no match", sel: "app=none", want: nil},
		{name: "bad selector", sel: "app==(", wantErr: ErrInvalid},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f, err := ParseFilter(tc.ns, tc.sel)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("ParseFilter = %v, want %v", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			recs, err := s.List(ctx, f)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, r := range recs {
				got = append(got, r.GetPod().GetNamespace()+"/"+r.GetPod().GetName())
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("List = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestMarkDeletedAndRemove(t *testing.T) {
	ctx := context.Background()
	s, clk, _ := openTest(t, nil)
	p := pod("web", "nginx")
	p.Spec.TerminationGracePeriodSeconds = proto.Int64(45)
	stored, _, _ := s.Apply(ctx, p)
	_, _, _ = s.Apply(ctx, pod("plain", "nginx"))
	ref := &plannerv1.PodRef{Name: "web"}

	if _, err := s.MarkDeleted(ctx, ref, proto.Int64(-1)); !errors.Is(err, ErrInvalid) {
		t.Errorf("negative grace: %v, want ErrInvalid", err)
	}
	if _, err := s.MarkDeleted(ctx, &plannerv1.PodRef{Name: "nope"}, nil); !errors.Is(err, ErrNotFound) {
		t.Errorf("unknown pod: %v, want ErrNotFound", err)
	}
	plain, err := s.MarkDeleted(ctx, &plannerv1.PodRef{Name: "plain"}, nil)
	if err != nil || plain.GetDeletionGracePeriodSeconds() != 30 {
		t.Errorf("default grace: %v, %v; want 30", plain.GetDeletionGracePeriodSeconds(), err)
	}

	clk.Advance(time.Second)
	got, err := s.MarkDeleted(ctx, ref, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got.GetDeletionGracePeriodSeconds() != 45 || !got.GetDeletionTime().AsTime().Equal(t0.Add(time.Second)) {
		t.Errorf("MarkDeleted = %v; want grace 45 (spec) at t0+1s", got)
	}
	clk.Advance(time.Second)
	if got, _ = s.MarkDeleted(ctx, ref, proto.Int64(60)); got.GetDeletionGracePeriodSeconds() != 45 {
		t.Errorf("longer grace accepted: %d", got.GetDeletionGracePeriodSeconds())
	}
	if got, _ = s.MarkDeleted(ctx, ref, proto.Int64(5)); got.GetDeletionGracePeriodSeconds() != 5 {
		t.Errorf("shorter grace refused: %d", got.GetDeletionGracePeriodSeconds())
	}
	if !got.GetDeletionTime().AsTime().Equal(t0.Add(time.Second)) {
		t.Errorf("deletion time moved to %v", got.GetDeletionTime().AsTime())
	}

	// a terminating pod is not restarted; changing it is refused.
	if _, _, err := s.Apply(ctx, pod("web", "nginx:2")); !errors.Is(err, ErrTerminating) {
		t.Errorf("Apply on terminating pod = %v, want ErrTerminating", err)
	}
	// Not even an identical apply: "unchanged" would hide that the pod is
	// about to be removed (a static manifest put back must be retried).
	if _, res, err := s.Apply(ctx, proto.Clone(stored).(*syncpodv1.Pod)); !errors.Is(err, ErrTerminating) {
		t.Errorf("identical Apply on terminating pod = %v, %v; want ErrTerminating", res, err)
	}

	if err := s.Remove(ctx, "nope"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Remove unknown = %v, want ErrNotFound", err)
	}
	if err := s.Remove(ctx, stored.GetUid()); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, ref); !errors.Is(err, ErrNotFound) {
		t.Errorf("Get after Remove = %v, want ErrNotFound", err)
	}
	if _, err := s.Get(ctx, &plannerv1.PodRef{Uid: stored.GetUid()}); !errors.Is(err, ErrNotFound) {
		t.Errorf("uid index survived Remove: %v", err)
	}
	// The name is free again, with a new uid.
	again, res, err := s.Apply(ctx, pod("web", "nginx"))
	if err != nil || res != plannerv1.ApplyResult_APPLY_RESULT_CREATED || again.GetUid() == stored.GetUid() {
		t.Errorf("re-create = %v %v %v", again.GetUid(), res, err)
	}
}

func TestStatusEventsActions(t *testing.T) {
	ctx := context.Background()
	s, _, _ := openTest(t, func(o *Options) { o.MaxEvents = 2 })
	p, _, _ := s.Apply(ctx, pod("web", "nginx"))
	uid := p.GetUid()

	st := &syncpodv1.PodStatus{Phase: syncpodv1.PodPhase_POD_PHASE_RUNNING, UpdatedAt: timestamppb.New(t0)}
	if changed, err := s.UpdateStatus(ctx, uid, st); err != nil || !changed {
		t.Fatalf("UpdateStatus = %v, %v", changed, err)
	}
	st2 := proto.Clone(st).(*syncpodv1.PodStatus)
	st2.UpdatedAt = timestamppb.New(t0.Add(time.Hour))
	before := txID(t, s)
	if changed, err := s.UpdateStatus(ctx, uid, st2); err != nil || changed {
		t.Errorf("same status but updated_at: changed=%v err=%v, want no write", changed, err)
	}
	if txID(t, s) != before {
		t.Error("an unchanged status was written")
	}
	if _, err := s.UpdateStatus(ctx, "nope", st); !errors.Is(err, ErrNotFound) {
		t.Errorf("UpdateStatus unknown = %v", err)
	}

	ev := func(reason string, at time.Time) *syncpodv1.Event {
		return &syncpodv1.Event{Type: syncpodv1.EventType_EVENT_TYPE_NORMAL, Reason: reason, Message: reason, LastTime: timestamppb.New(at)}
	}
	_ = s.AppendEvents(ctx, uid, []*syncpodv1.Event{ev("Pulled", t0), ev("Created", t0)})
	_ = s.AppendEvents(ctx, uid, []*syncpodv1.Event{ev("Pulled", t0.Add(time.Second)), ev("Started", t0.Add(2*time.Second))})
	rec, _ := s.Get(ctx, &plannerv1.PodRef{Uid: uid})
	evs := rec.GetEvents()
	if len(evs) != 2 || evs[0].GetReason() != "Pulled" || evs[0].GetCount() != 2 || evs[1].GetReason() != "Started" {
		t.Fatalf("events = %v; want [Pulled x2, Started] (Created dropped as oldest)", evs)
	}
	if evs[0].GetPodUid() != uid || evs[0].GetPodName() != "web" || evs[0].GetPodNamespace() != "default" {
		t.Errorf("event not stamped with the pod: %v", evs[0])
	}
	if !evs[0].GetFirstTime().AsTime().Equal(t0) || !evs[0].GetLastTime().AsTime().Equal(t0.Add(time.Second)) {
		t.Errorf("aggregated times = %v..%v", evs[0].GetFirstTime().AsTime(), evs[0].GetLastTime().AsTime())
	}

	acts := &syncpodv1.PodActions{CreateSandbox: true}
	if err := s.SetLastActions(ctx, uid, acts); err != nil {
		t.Fatal(err)
	}
	rec, _ = s.Get(ctx, &plannerv1.PodRef{Uid: uid})
	if !proto.Equal(rec.GetLastActions(), acts) || rec.GetStatus().GetPhase() != syncpodv1.PodPhase_POD_PHASE_RUNNING {
		t.Errorf("record = %v", rec)
	}
}

func TestConcurrentAppliesAreSerialised(t *testing.T) {
	ctx := context.Background()
	s, _, _ := openTest(t, nil)
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range 5 {
				if _, _, err := s.Apply(ctx, pod("web", fmt.Sprintf("img:%d-%d", i, j))); err != nil {
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	rec, err := s.Get(ctx, &plannerv1.PodRef{Name: "web"})
	if err != nil {
		t.Fatal(err)
	}
	if g := rec.GetPod().GetGeneration(); g != 40 {
		t.Errorf("generation = %d after 40 distinct applies, want 40", g)
	}
}

// TestMigrateIsAllOrNothing: the planner's migrations run through
// boltfile.Schema in Open's one transaction, so a later migration that
// fails leaves a fresh file without buckets or version, and an existing
// one at its old version.
func TestMigrateIsAllOrNothing(t *testing.T) {
	boom := errors.New("boom")
	failing := append(migrations(), boltfile.Migration{
		Version: uint64(SchemaVersion()) + 1, Name: "fails", Apply: func(*bolt.Tx) error { return boom },
	})
	db, err := bolt.Open(filepath.Join(t.TempDir(), "m.db"), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Update(func(tx *bolt.Tx) error { return migrate(tx, failing) }); !errors.Is(err, boom) {
		t.Fatalf("migrate = %v, want the failing migration's error", err)
	}
	_ = db.View(func(tx *bolt.Tx) error {
		for _, b := range [][]byte{bucketMeta, bucketPods, bucketUIDs} {
			if tx.Bucket(b) != nil {
				t.Errorf("bucket %s created by a rolled-back migration", b)
			}
		}
		return nil
	})
	if err := db.Update(func(tx *bolt.Tx) error { return migrate(tx, migrations()) }); err != nil {
		t.Fatal(err)
	}
	if err := db.Update(func(tx *bolt.Tx) error { return migrate(tx, failing) }); !errors.Is(err, boom) {
		t.Fatalf("migrate = %v, want the failing migration's error", err)
	}
	_ = db.View(func(tx *bolt.Tx) error {
		if got, want := string(tx.Bucket(bucketMeta).Get(keySchema)), strconv.Itoa(SchemaVersion()); got != want {
			t.Errorf("schema_version %q after a failed migration, want %q (decimal, unchanged)", got, want)
		}
		return nil
	})
}

// TestNewerSchemaIsTheSharedSentinel: the planner's and the executor's
// stores refuse a newer file with the one boltfile sentinel.
func TestNewerSchemaIsTheSharedSentinel(t *testing.T) {
	_, err := Open(Options{Path: fileWithSchemaVersion(t, []byte(strconv.Itoa(SchemaVersion()+1))), Validate: fakeValidate})
	if !errors.Is(err, boltfile.ErrSchemaTooNew) || !errors.Is(err, ErrSchemaTooNew) {
		t.Fatalf("Open of a newer file = %v, want boltfile.ErrSchemaTooNew", err)
	}
}
