package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The dashboards directory is the command's own: a JSON file it does not
// write (the dashboard of an operator that is gone) is reported by -check,
// then removed; what it writes is then up to date.
func TestItRemovesTheDashboardsItNoLongerWrites(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "grafana")
	for _, p := range []string{"operators/shop/cmd/shop", "grafana/dashboards", "docs"} {
		if err := os.MkdirAll(filepath.Join(root, p), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	stale := filepath.Join(dir, "dashboards", "kooper-gone.json")
	if err := os.WriteFile(stale, []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := run(dir, false); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Errorf("got %v for the stale dashboard, want it removed", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "dashboards", "kooper-shop.json")); err != nil {
		t.Errorf("the generic dashboard of operator shop: %v", err)
	}
	if err := run(dir, true); err != nil {
		t.Errorf("got %v after writing, want the files up to date", err)
	}
	if err := os.WriteFile(stale, []byte("{}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := run(dir, true); err == nil || !strings.Contains(err.Error(), "dashboards/kooper-gone.json (not generated: remove it)") {
		t.Errorf("got %v from -check, want it to name the dashboard not generated", err)
	}
}
