package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// region: demo-test

func TestTheDemoLogsPodsAndServesMetrics(t *testing.T) {
	defer goleak.VerifyNone(t)
	var out, errOut bytes.Buffer
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"-metrics-addr", "127.0.0.1:18089", "-duration", "3s"}, &out, &errOut)
	}()

	time.Sleep(2 * time.Second)
	resp, err := http.Get("http://127.0.0.1:18089/metrics")
	if err != nil {
		t.Fatalf("could not scrape the metrics: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err := <-done; err != nil {
		t.Fatalf("got run error %v, want nil; stderr:\n%s", err, errOut.String())
	}
	if !strings.Contains(out.String(), "pod demo/web-") {
		t.Errorf("got output %q, want pod lines", out.String())
	}
	if !strings.Contains(string(body), `kooper_controller_handle_duration_seconds_count{controller="pod-logger",success="true"}`) {
		t.Errorf("got metrics without the handling histogram:\n%s", body)
	}
}

// endregion: demo-test

func TestABadFlagIsAnError(t *testing.T) {
	err := run(context.Background(), []string{"-log-level", "loud"}, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "unknown log level") {
		t.Errorf("got %v, want an unknown log level error", err)
	}
}

func TestHelpPrintsTheFlagsAndSucceeds(t *testing.T) {
	var stderr bytes.Buffer
	if err := run(context.Background(), []string{"-h"}, io.Discard, &stderr); err != nil {
		t.Errorf("got %v for -h, want nil", err)
	}
	if !strings.Contains(stderr.String(), "-kubeconfig") {
		t.Errorf("-h printed %q, want the flags", stderr.String())
	}
}
