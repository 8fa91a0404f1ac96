package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

func TestWithoutAKubeconfigItSaysWhy(t *testing.T) {
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), nil, &stdout, &stderr)
	if err == nil || !strings.Contains(err.Error(), "-kubeconfig is required") {
		t.Fatalf("got %v, want -kubeconfig is required", err)
	}
}

func TestABadFlagIsAnError(t *testing.T) {
	var stdout, stderr bytes.Buffer
	if err := run(context.Background(), []string{"-no-such-flag"}, &stdout, &stderr); err == nil {
		t.Fatal("a bad flag was accepted")
	}
}

func TestABadSlotCountIsRefused(t *testing.T) {
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{"-kubeconfig", "testdata/none", "-slots", "3"}, &stdout, &stderr)
	if err == nil {
		t.Fatal("3 slots were accepted")
	}
}
