package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// fakeKubectl writes a kubectl that fails its first failures calls, each
// saying which it is, then succeeds.
func fakeKubectl(t *testing.T, failures int) kubectlCmd {
	t.Helper()
	dir := t.TempDir()
	script := `#!/bin/sh
n=$(cat "` + dir + `/calls" 2>/dev/null || echo 0)
n=$((n + 1))
echo "$n" > "` + dir + `/calls"
if [ "$n" -le ` + strconv.Itoa(failures) + ` ]; then
	echo "try $n: conversion webhook for example.com/v1alpha1 failed" >&2
	exit 1
fi
echo "try $n: widget.example.com/demo created"
`
	bin := filepath.Join(dir, "kubectl")
	if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	return kubectlCmd{bin: bin, kubeconfig: filepath.Join(dir, "kubeconfig")}
}

// make run applies an example until its operator's conversion webhook
// answers, and shows the last try only; past its wait, it fails.
func TestAnExampleIsAppliedOnceItsOperatorAnswers(t *testing.T) {
	var out bytes.Buffer
	kc := fakeKubectl(t, 2)
	kc.out = &out
	if err := kc.apply(context.Background(), "example.yaml", 30*time.Second); err != nil {
		t.Fatalf("apply: %v\n%s", err, out.String())
	}
	if got := strings.TrimSpace(out.String()); got != "try 3: widget.example.com/demo created" {
		t.Errorf("it shows %q, want the third try's output alone", got)
	}

	out.Reset()
	kc = fakeKubectl(t, 9)
	kc.out = &out
	if err := kc.apply(context.Background(), "example.yaml", 1500*time.Millisecond); err == nil {
		t.Fatal("apply succeeded, want kubectl's failure after the wait")
	}
	if got := out.String(); !strings.Contains(got, "conversion webhook for example.com/v1alpha1 failed") || strings.Count(got, "try ") != 1 {
		t.Errorf("it shows %q, want the last failed try alone", got)
	}
}
