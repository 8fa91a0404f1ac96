package controller

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kooperkit/kooper/kooper/log"
)

// oneObject is an objects holding one pod.
type oneObject struct{ obj runtime.Object }

func (o oneObject) get(string) (any, bool, error) { return o.obj, true, nil }
func (o oneObject) keys() []string                { return []string{"ns/p"} }
func (o oneObject) list() []any                   { return []any{o.obj} }

// BenchmarkProcess measures one handling through the loop (queue, cache
// read, copy, handler context, handler), for a handler that never waits on
// its context and for one that does (as any client-go call does).
//
//	cd kooper && go test -run '^$' -bench Process -benchmem ./controller
func BenchmarkProcess(b *testing.B) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}}
	for _, bc := range []struct {
		name    string
		handler HandlerFunc
	}{
		{"handler ignores ctx", func(context.Context, runtime.Object) error { return nil }},
		{"handler reads ctx.Done", func(ctx context.Context, _ runtime.Object) error {
			select {
			case <-ctx.Done():
			default:
			}
			return nil
		}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			c, err := New(Config{Name: "bench", Handler: bc.handler, Retriever: hungRetriever{}})
			if err != nil {
				b.Fatal(err)
			}
			q := c.newQueue()
			defer q.ShutDown()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			src := oneObject{pod}
			b.ReportAllocs()
			for b.Loop() {
				q.add("ns/p", priorityHigh, reasonChanged)
				key, _ := q.Get()
				c.process(ctx, log.Noop, key, src, q)
				q.Done(key)
			}
		})
	}
}
