package controller

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	metadatafake "k8s.io/client-go/metadata/fake"
)

// client-go's messages about a cache ("failed to list ...") name what its
// Retriever retrieves, not "<unspecified>".
func TestInformerMessagesNameWhatIsRetrieved(t *testing.T) {
	client := fake.NewClientset()
	pods := client.CoreV1().Pods("")
	md := metadatafake.NewSimpleMetadataClient(runtime.NewScheme())
	tests := []struct {
		name string
		r    Retriever
		want string
	}{
		{name: "a typed client's", r: NewRetriever(pods.List, pods.Watch), want: "*v1.Pod"},
		{name: "metadata only", r: NewMetadataRetriever(md, corev1.SchemeGroupVersion.WithResource("pods"), ""), want: "pods (metadata)"},
		{name: "decorated", r: WithWatchIdleTimeout(WithoutWatchList(NewRetriever(pods.List, pods.Watch)), time.Minute), want: "*v1.Pod"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := describe(tt.r); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}
