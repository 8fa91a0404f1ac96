package faults_test

import (
	"slices"
	"testing"

	"github.com/kooperkit/kooper/faults"
)

func TestParseKinds(t *testing.T) {
	tests := []struct {
		list    string
		want    []string
		wantErr bool
	}{
		{list: "", want: names(faults.Faults)},
		{list: "latency,etcd-restart", want: []string{"latency", "etcd-restart"}},
		{list: "latency,flood", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.list, func(t *testing.T) {
			got, err := faults.ParseKinds(tt.list)
			if (err != nil) != tt.wantErr {
				t.Fatalf("ParseKinds(%q) error %v, want an error: %v", tt.list, err, tt.wantErr)
			}
			if g := names(got); !tt.wantErr && !slices.Equal(g, tt.want) {
				t.Errorf("ParseKinds(%q) = %v, want %v", tt.list, g, tt.want)
			}
		})
	}
}

func names(fs []faults.Fault) []string {
	out := make([]string, len(fs))
	for i, f := range fs {
		out[i] = f.Name
	}
	return out
}
