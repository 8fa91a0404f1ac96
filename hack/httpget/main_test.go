package main

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func TestGet(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/readyz" {
			http.Error(w, "not synced", http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ok"))
	}))
	defer srv.Close()
	tests := []struct {
		name, url, want, wantErr string
	}{
		{name: "a 200 prints its body", url: srv.URL + "/healthz", want: "ok"},
		{name: "a 503 prints its body and fails", url: srv.URL + "/readyz", want: "not synced\n", wantErr: "503"},
		{name: "nothing listening fails", url: "http://127.0.0.1:1/metrics", wantErr: "connect"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			err := get([]string{tc.url}, &out)
			if out.String() != tc.want {
				t.Errorf("got %q, want %q", out.String(), tc.want)
			}
			if (tc.wantErr == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.wantErr)) {
				t.Errorf("got error %v, want one with %q", err, tc.wantErr)
			}
		})
	}
	if err := get(nil, &bytes.Buffer{}); err == nil {
		t.Error("no URL: got no error")
	}
}
