package main

import (
	"bytes"
	"context"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/kooperkit/kooper/operators/internal/e2etest"
)

func TestMain(m *testing.M) {
	e2etest.MainIfAsked(main)
	os.Exit(m.Run())
}

// The program as a shell sees it: exit statuses and what -h and mistakes
// print.
func TestTheCommandLine(t *testing.T) { e2etest.CheckCommandLine(t, "pod-terminator") }

func TestRun(t *testing.T) {
	tests := []struct {
		name       string
		args       []string
		wantOut    string // prefix of stdout
		wantErr    string // substring of the error; empty: none
		wantStderr string
	}{
		{name: "version", args: []string{"-version"}, wantOut: "pod-terminator dev"},
		{name: "an unknown flag", args: []string{"-no-such-flag"}, wantErr: "flag provided but not defined", wantStderr: "-kube-api-qps"},
		{name: "a wrong log format", args: []string{"-log-format", "xml"}, wantErr: `-log-format must be "text" or "json", got "xml"`},
		{name: "a wrong log level", args: []string{"-log-level", "loud"}, wantErr: "loud"},
		{name: "a missing kubeconfig", args: []string{"-kubeconfig", "/no/such/file"}, wantErr: "could not load the client config"},
		{name: "a protected namespace that cannot exist", args: []string{"-protected-namespaces", "payments,Team_B"}, wantErr: `-protected-namespaces: "Team_B" is not a namespace name`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			err := run(context.Background(), tt.args, &stdout, &stderr)
			if tt.wantErr == "" && err != nil {
				t.Fatalf("got error %v, want nil", err)
			}
			if tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("got error %v, want one saying %q", err, tt.wantErr)
			}
			if !strings.HasPrefix(stdout.String(), tt.wantOut) {
				t.Errorf("got stdout %q, want it to start with %q", stdout.String(), tt.wantOut)
			}
			if !strings.Contains(stderr.String(), tt.wantStderr) {
				t.Errorf("got stderr %q, want it to contain %q", stderr.String(), tt.wantStderr)
			}
		})
	}
}

func TestNamespaceList(t *testing.T) {
	tests := []struct {
		in      string
		want    []string
		wantErr string
	}{
		{in: "", want: nil},
		{in: "payments", want: []string{"payments"}},
		{in: " payments, billing ,,", want: []string{"payments", "billing"}},
		{in: "payments,kube_system", wantErr: `"kube_system" is not a namespace name`},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := namespaceList(tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("got error %v, want one saying %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || !slices.Equal(got, tt.want) {
				t.Errorf("got %q, %v, want %q", got, err, tt.want)
			}
		})
	}
}
