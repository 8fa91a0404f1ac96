package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"strings"
	"testing"
)

// The migration itself is tested on real API servers
// (operators/pod-terminator/integration); this is the command line.
func TestACommandLineThatCannotBeActedOnSaysWhy(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want error
		says string
	}{
		{name: "no CRD", args: nil, want: errUsage, says: "name at least one CRD, <plural>.<group>"},
		{name: "a flag it does not know", args: []string{"-force", "things.example.com"}, want: errUsage, says: "flag provided but not defined: -force"},
		{name: "help", args: []string{"-h"}, want: flag.ErrHelp, says: "usage: migrate [-kubeconfig FILE] [-rewrite] [-timeout D] CRD..."},
		{name: "a kubeconfig that is not there", args: []string{"-kubeconfig", "/nonexistent/kubeconfig", "things.example.com"}, says: "could not load the client config"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			err := run(context.Background(), tt.args, &stdout, &stderr)
			if err == nil || (tt.want != nil && !errors.Is(err, tt.want)) {
				t.Fatalf("got %v, want %v", err, tt.want)
			}
			if got := stderr.String() + err.Error(); !strings.Contains(got, tt.says) {
				t.Errorf("it says %q, want it to say %q", got, tt.says)
			}
			if stdout.Len() > 0 {
				t.Errorf("wrote %q to stdout, want nothing", stdout.String())
			}
		})
	}
}
