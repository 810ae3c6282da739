package volumes

import (
	"fmt"
	"testing"

	syncpodv1 "github.com/syncpod/syncpod/proto/syncpod/v1"
)

// BenchmarkUpdateUnchanged is the cost of the refresh every sync of a live
// pod asks for when nothing changed: a ConfigMap of 20 keys of 1 KiB
// compared with the files on disk, nothing written.
func BenchmarkUpdateUnchanged(b *testing.B) {
	m, err := New(Options{Root: b.TempDir(), NoTmpfs: true})
	if err != nil {
		b.Fatal(err)
	}
	data := map[string]string{}
	for i := range 20 {
		data[fmt.Sprintf("key-%02d", i)] = string(make([]byte, 1024))
	}
	src := NewSources([]*syncpodv1.ConfigMap{{Name: "cfg", Namespace: "shop", Data: data}}, nil)
	pod := testPod(cmVolume("config", "cfg"))
	if _, err := m.Setup(pod, src); err != nil {
		b.Fatal(err)
	}
	b.ResetTimer()
	for b.Loop() {
		if up, errs := m.Update(pod, src); len(up)+len(errs) != 0 {
			b.Fatalf("update %v %v", up, errs)
		}
	}
}

// BenchmarkUpdateChanged is an in-place update of the same ConfigMap: a
// new timestamped directory, the ..data swap, the old one removed.
func BenchmarkUpdateChanged(b *testing.B) {
	m, err := New(Options{Root: b.TempDir(), NoTmpfs: true})
	if err != nil {
		b.Fatal(err)
	}
	pod := testPod(cmVolume("config", "cfg"))
	mk := func(v int) Sources {
		data := map[string]string{}
		for i := range 20 {
			data[fmt.Sprintf("key-%02d", i)] = fmt.Sprintf("%d-%01024d", v, i)
		}
		return NewSources([]*syncpodv1.ConfigMap{{Name: "cfg", Namespace: "shop", Data: data}}, nil)
	}
	if _, err := m.Setup(pod, mk(0)); err != nil {
		b.Fatal(err)
	}
	n := 0
	b.ResetTimer()
	for b.Loop() {
		n++
		if up, errs := m.Update(pod, mk(n)); len(up) != 1 || len(errs) != 0 {
			b.Fatalf("update %v %v", up, errs)
		}
	}
}
