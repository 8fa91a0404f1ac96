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

// -check fails on any file that is not what the command would write, and
// names it; writing them again makes them up to date.
func TestCheckNamesEveryFileOutOfDate(t *testing.T) {
	tests := []struct {
		name   string
		change func(t *testing.T, dir string)
		want   string
	}{
		{
			name: "a query edited by hand",
			change: func(t *testing.T, dir string) {
				edit(t, filepath.Join(dir, "dashboards", "kooper-shop.json"), "[$__rate_interval]", "[5m]")
			},
			want: "dashboards/kooper-shop.json",
		},
		{
			name: "a dashboard re-indented, the same JSON otherwise",
			change: func(t *testing.T, dir string) {
				edit(t, filepath.Join(dir, "dashboards", "kooper-controllers.json"), "\n  ", "\n\t")
			},
			want: "dashboards/kooper-controllers.json",
		},
		{
			name: "a dashboard removed",
			change: func(t *testing.T, dir string) {
				if err := os.Remove(filepath.Join(dir, "dashboards", "kooper-shop.json")); err != nil {
					t.Fatal(err)
				}
			},
			want: "dashboards/kooper-shop.json",
		},
		{
			name: "the metrics page edited by hand",
			change: func(t *testing.T, dir string) {
				edit(t, filepath.Join(dir, "..", "docs", "metrics.md"), "# Metrics", "# Metrics!")
			},
			want: "../docs/metrics.md",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := written(t)
			tt.change(t, dir)
			if err := run(dir, true); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %v from -check, want it to name %s", err, tt.want)
			}
			if err := run(dir, false); err != nil {
				t.Fatal(err)
			}
			if err := run(dir, true); err != nil {
				t.Errorf("got %v after writing again, want the files up to date", err)
			}
		})
	}
}

// written returns the grafana/ directory of a repository with operator
// shop, once the command has written its files there.
func written(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	for _, p := range []string{"operators/shop/cmd/shop", "grafana/dashboards", "docs"} {
		if err := os.MkdirAll(filepath.Join(root, p), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	dir := filepath.Join(root, "grafana")
	if err := run(dir, false); err != nil {
		t.Fatal(err)
	}
	if err := run(dir, true); err != nil {
		t.Fatalf("got %v right after writing, want the files up to date", err)
	}
	return dir
}

// edit replaces every from in file with to; from must be there.
func edit(t *testing.T, file, from, to string) {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), from) {
		t.Fatalf("%s has no %q", file, from)
	}
	if err := os.WriteFile(file, []byte(strings.ReplaceAll(string(b), from, to)), 0o644); err != nil {
		t.Fatal(err)
	}
}
