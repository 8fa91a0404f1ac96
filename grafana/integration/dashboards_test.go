package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"image/png"
	"io"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/promql/parser"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kooperkit/kooper/apis/client/clientset/versioned"
	"github.com/kooperkit/kooper/grafana/internal/catalog"
	"github.com/kooperkit/kooper/grafana/internal/dashboards"
	"github.com/kooperkit/kooper/hack/envtest"
)

// rateInterval stands for Grafana's $__rate_interval: at a 1s scrape
// interval it holds about 15 samples.
const rateInterval = "15s"

func TestDashboardsAgainstARealPrometheus(t *testing.T) {
	if len(workloads) == 0 {
		t.Fatal("no operator registers a workload (register, in a file named after it): nothing to scrape")
	}
	// The operators, as the binaries users run, with leader election.
	// They are built before the clock starts: a cold build cache can
	// take minutes over them, which is not the test's time.
	root := repoRoot(t)
	var pkgs []string
	for _, w := range workloads {
		pkgs = append(pkgs, "./operators/"+w.name+"/cmd/"+w.name)
	}
	bin := build(t, root, pkgs...)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	// A cluster of its own for each run: the test installs the CRDs after
	// the operators start, so a run (-count=3) must find none left by the
	// one before. One kwok node runs the pods a sample's work makes.
	cluster, err := envtest.Start(ctx, envtest.Options{BinDir: binaries.BinDir(), Nodes: 1})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cluster.Stop() })
	c := clients{kube: kubernetes.NewForConfigOrDie(cluster.Config()), kooper: versioned.NewForConfigOrDie(cluster.Config())}

	// The operators' namespaces (their Leases live there). The CRDs come
	// later, so that the leaders start with caches that cannot sync.
	for _, w := range workloads {
		if _, err := c.kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "kooper-" + w.name}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	addrs := map[string]string{}
	for _, w := range workloads {
		addrs[w.name] = freeAddr(t)
		start(t, w.name, filepath.Join(bin, w.name), append([]string{"-kubeconfig", cluster.KubeconfigPath(),
			"-http-addr", addrs[w.name], "-namespace", "kooper-" + w.name, "-log-level", "info"}, w.args...)...)
	}
	// Health: a leader whose caches have not synced (its CRD is missing)
	// is not ready; once the CRDs are installed it is.
	for name, addr := range addrs {
		eventually(t, 60*time.Second, name+" leads, not ready before its caches sync", func() error {
			code, body := readyz(ctx, addr)
			if code != http.StatusServiceUnavailable || !strings.Contains(body, "leading, caches not synced") {
				return fmt.Errorf("/readyz: %d %q", code, body)
			}
			return nil
		})
	}
	kubectl := filepath.Join(cluster.BinDir(), envtest.BinKubectl)
	if out, err := exec.Command(kubectl, "--kubeconfig", cluster.KubeconfigPath(), "apply", "-k", filepath.Join(root, "manifests", "crds")).CombinedOutput(); err != nil {
		t.Fatalf("kubectl apply the CRDs: %v\n%s", err, out)
	}
	crdsAt := time.Now()
	for name, addr := range addrs {
		eventually(t, 90*time.Second, name+" leads with synced caches", func() error {
			if code, body := readyz(ctx, addr); code != http.StatusOK || body != "leading" {
				return fmt.Errorf("/readyz: %d %q", code, body)
			}
			return nil
		})
	}
	t.Logf("operators %s ready (leading) %s after the CRDs were applied", strings.Join(slices.Sorted(maps.Keys(addrs)), ", "), time.Since(crdsAt).Round(time.Millisecond))
	c.prom = startPrometheus(t, addrs, filepath.Join(root, "grafana", "alerts", "kooper-rules.yml"))

	// Work for each operator, then Prometheus has seen it, for long enough
	// for a rate.
	answered := []string{
		`sum by (controller) (kooper_controller_leader) == 1`,
		`min(count_over_time(up[1m])) >= 15`,
	}
	for _, w := range workloads {
		w.work(ctx, t, c)
		answered = append(answered, w.answered...)
	}
	for _, q := range answered {
		eventually(t, 90*time.Second, "Prometheus answers "+q, func() error {
			s, err := c.prom.query(ctx, q)
			if err == nil && len(s) == 0 {
				return fmt.Errorf("no series")
			}
			return err
		})
	}
	prom := c.prom
	if up, err := prom.value(ctx, `sum(up)`); err != nil || up != float64(len(workloads)) {
		t.Fatalf("sum(up) = %v (%v), want %d: every operator's /metrics scraped", up, err, len(workloads))
	}
	// standIn is the operator whose controllers a dashboard is evaluated
	// with when its own operator does not run here: the generic dashboard
	// of a new operator has the same panels as the Controllers row of
	// this one's.
	standIn := workloads[0].name

	t.Run("every panel expression returns series, and so does each of its selectors", func(t *testing.T) {
		files, err := filepath.Glob(filepath.Join(root, "grafana", "dashboards", "*.json"))
		if err != nil || len(files) == 0 {
			t.Fatalf("no dashboards in grafana/dashboards (%v)", err)
		}
		operators, err := dashboards.Operators(os.DirFS(root))
		if err != nil {
			t.Fatal(err)
		}
		running := slices.Sorted(maps.Keys(addrs))
		notRun := slices.DeleteFunc(operators, func(name string) bool { return slices.Contains(running, name) })
		exposedHere := map[string]bool{}
		for _, name := range running {
			for _, f := range catalog.Exposed(catalog.Operators[name]...) {
				exposedHere[f.Name] = true
			}
		}
		evaluated := 0
		for _, file := range files {
			d := readDashboard(t, file)
			controllers := controllerValue(ctx, t, prom, d, running, notRun, standIn)
			t.Logf("%s: $controller = %s", filepath.Base(file), controllers)
			vars := strings.NewReplacer("$"+dashboards.VarController, controllers, dashboards.VarRateInterval, rateInterval)
			for _, q := range d.Queries {
				expr := vars.Replace(q.Expr)
				if strings.Contains(expr, "$") {
					t.Errorf("%s / %q: unknown variable left in %q", d.UID, q.Panel, expr)
					continue
				}
				if names, ok := onlyFamiliesNotExposed(expr, exposedHere); ok {
					// Such as the sharding gauges: no sample operator
					// shards. kooper/metrics/prometheus's tests prove
					// what they record.
					t.Logf("%s / %q: not evaluated, no operator run here exposes %v", d.UID, q.Panel, names)
					continue
				}
				evaluated++
				if s, err := prom.query(ctx, expr); err != nil {
					t.Errorf("%s / %q: %v", d.UID, q.Panel, err)
				} else if len(s) == 0 {
					t.Errorf("%s / %q: %q returns no series", d.UID, q.Panel, expr)
				}
				parsed, err := parser.NewParser(parser.Options{}).ParseExpr(expr)
				if err != nil {
					t.Errorf("%s / %q: %v", d.UID, q.Panel, err)
					continue
				}
				parser.Inspect(parsed, func(node parser.Node, _ []parser.Node) error {
					switch n := node.(type) {
					case *parser.VectorSelector:
						if s, err := prom.query(ctx, n.String()); err != nil || len(s) == 0 {
							t.Errorf("%s / %q: selector %s matches no series (%v)", d.UID, q.Panel, n, err)
						}
					case *parser.Call:
						if slices.Contains([]string{"absent", "absent_over_time", "vector"}, n.Func.Name) {
							t.Errorf("%s / %q: %s() pads the result", d.UID, q.Panel, n.Func.Name)
						}
					case *parser.BinaryExpr:
						if n.Op == parser.LOR {
							t.Errorf("%s / %q: `or` may pad the result", d.UID, q.Panel)
						}
					}
					return nil
				})
			}
		}
		t.Logf("evaluated %d panel expressions of %d dashboards", evaluated, len(files))
	})

	t.Run("every family in the catalog is in the operator's /metrics, with its type", func(t *testing.T) {
		for name, addr := range addrs {
			body, err := get(ctx, "http://"+addr+"/metrics")
			if err != nil {
				t.Fatal(err)
			}
			got := families(body)
			for _, f := range catalog.Exposed(catalog.Operators[name]...) {
				if typ, ok := got[f.Name]; !ok {
					t.Errorf("%s: /metrics has no %s (%s)", name, f.Name, f.Source)
				} else if typ != string(f.Type) {
					t.Errorf("%s: %s is a %s, the catalog says %s", name, f.Name, typ, f.Type)
				}
			}
		}
	})

	for _, w := range workloads {
		for name, check := range w.checks {
			t.Run(name, func(t *testing.T) { check(ctx, t, c) })
		}
	}

	t.Run("the alerting rules load and evaluate without errors", func(t *testing.T) {
		eventually(t, 30*time.Second, "every rule has been evaluated without error", func() error {
			body, err := get(ctx, prom.url+"/api/v1/rules")
			if err != nil {
				return err
			}
			var r struct {
				Data struct {
					Groups []struct {
						Rules []struct {
							Name      string `json:"name"`
							Health    string `json:"health"`
							LastError string `json:"lastError"`
						} `json:"rules"`
					} `json:"groups"`
				} `json:"data"`
			}
			if err := json.Unmarshal([]byte(body), &r); err != nil {
				return err
			}
			n := 0
			for _, g := range r.Data.Groups {
				for _, rule := range g.Rules {
					n++
					if rule.Health != "ok" {
						return fmt.Errorf("rule %s: health %q %s", rule.Name, rule.Health, rule.LastError)
					}
				}
			}
			if n == 0 {
				return fmt.Errorf("no rules loaded")
			}
			return nil
		})
	})

	t.Run("promplot draws the key series under load", func(t *testing.T) {
		// A burst of work, so the picture shows the operators at work.
		for _, w := range workloads {
			if w.load != nil {
				w.load(ctx, t, c)
			}
		}
		time.Sleep(5 * time.Second)
		plot := build(t, filepath.Join(root, "grafana"), "./cmd/promplot")
		out := filepath.Join(t.TempDir(), "plot.png")
		if keep := os.Getenv("KOOPER_PLOT_OUT"); keep != "" {
			out = keep // to refresh docs/img/kooper-under-load.png
		}
		cmd := exec.CommandContext(ctx, filepath.Join(plot, "promplot"), "-prometheus", prom.url, "-range", "40s",
			"-rate-window", rateInterval, "-title", "Kooper sample operators (grafana/integration)", "-out", out)
		if b, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("promplot: %v\n%s", err, b)
		}
		b, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		img, err := png.Decode(bytes.NewReader(b))
		if err != nil {
			t.Fatalf("promplot wrote no PNG: %v", err)
		}
		if w, h := img.Bounds().Dx(), img.Bounds().Dy(); w != 1200 || h < 4*320 {
			t.Errorf("got a %dx%d picture, want 1200 wide with four panels", w, h)
		}
	})
}

func TestPanelsOfFamiliesNoOperatorRunHereExposesAreLeftOut(t *testing.T) {
	exposed := map[string]bool{}
	for _, f := range catalog.Exposed(catalog.Library, catalog.RESTClient, catalog.Runtime) {
		exposed[f.Name] = true
	}
	tests := []struct {
		name string
		expr string
		want bool
	}{
		{"a family no operator exposes is left out", "sum by (group) (" + catalog.ShardingSlots + ")", true},
		{"two such families are left out", catalog.ShardingSlots + " / on (group) " + catalog.ShardingGroupSlots, true},
		{"an exposed family is evaluated", "sum(" + catalog.QueueLength + ")", false},
		{"a mix is evaluated", catalog.ShardingSlots + " and on (instance) " + catalog.QueueLength, false},
		{"a metric not in the catalog is evaluated, and fails", "kooper_unknown", false},
		{"an expression that does not parse is evaluated, and fails", catalog.ShardingSlots + "{", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, got := onlyFamiliesNotExposed(tt.expr, exposed); got != tt.want {
				t.Errorf("got %t, want %t", got, tt.want)
			}
		})
	}
}

// The dashboards of the operators run here are evaluated with their own
// controllers; another operator's, with the stand-in's.
func TestTheStandInReplacesOnlyTheControllersOfOperatorsNotRunHere(t *testing.T) {
	running, notRun, standIn := []string{"bank", "shop"}, []string{"web-demo"}, "bank"
	standInSelector := catalog.QueueLength + `{controller=~"bank.*"}`
	selector := func(controllers string) string {
		return dashboards.Dashboard{Controllers: controllers}.ControllerVariableSelector()
	}
	tests := []struct {
		name        string
		selector    string
		want        string
		wantStoodIn bool
		wantErr     bool
	}{
		{"the library's dashboard keeps every controller", selector(""), catalog.QueueLength, false, false},
		{"a sample's dashboard keeps its operator's controllers", selector("shop.*"), selector("shop.*"), false, false},
		{"the stand-in's own dashboard keeps its controllers", selector("bank.*"), selector("bank.*"), false, false},
		{"the generic dashboard of an operator not run here gets the stand-in's", selector("web-demo.*"), standInSelector, true, false},
		{"a sample's dashboard matching no operator keeps its selector, and fails", selector("shopp.*"), selector("shopp.*"), false, false},
		{"a selector that does not parse is an error", catalog.QueueLength + "{", "", false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, stoodIn, err := controllersSelector(tt.selector, dashboards.VarController, running, notRun, standIn)
			if (err != nil) != tt.wantErr {
				t.Fatalf("got error %v, want error: %t", err, tt.wantErr)
			}
			if got != tt.want || stoodIn != tt.wantStoodIn {
				t.Errorf("got %s (stood in: %t), want %s (stood in: %t)", got, stoodIn, tt.want, tt.wantStoodIn)
			}
		})
	}
}

// onlyFamiliesNotExposed returns the families expr selects, and whether all
// of them are catalog families missing from exposed, so that expr cannot
// return series here. An expression that does not parse is not one.
func onlyFamiliesNotExposed(expr string, exposed map[string]bool) (_ []string, ok bool) {
	parsed, err := parser.NewParser(parser.Options{}).ParseExpr(expr)
	if err != nil {
		return nil, false
	}
	var names []string
	ok = true
	parser.Inspect(parsed, func(node parser.Node, _ []parser.Node) error {
		if n, isSel := node.(*parser.VectorSelector); isSel {
			f, known := catalog.Lookup(n.Name)
			if !known || exposed[f.Name] {
				ok = false
			} else if !slices.Contains(names, f.Name) {
				names = append(names, f.Name)
			}
		}
		return nil
	})
	return names, ok && len(names) > 0
}

// readyz returns the status code and trimmed body of addr's /readyz, or 0
// if it does not answer.
func readyz(ctx context.Context, addr string) (int, string) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+"/readyz", nil)
	if err != nil {
		return 0, err.Error()
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, strings.TrimSpace(string(b))
}

// dashboard is what the test reads of a Grafana dashboard's JSON, through
// the SDK's model (package dashboards' Read): every panel's every
// expression, and its controller variable.
type dashboard struct {
	UID     string
	Queries []dashboards.Query
	// ControllerQuery is the controller variable's query,
	// label_values(selector, controller); AllValue its All value, if any.
	ControllerQuery, AllValue string
}

func readDashboard(t *testing.T, file string) dashboard {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	g, err := dashboards.Read(b)
	if err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	d := dashboard{UID: filepath.Base(file)}
	if g.Uid != nil {
		d.UID = *g.Uid
	}
	if d.Queries, err = dashboards.Queries(g); err != nil {
		t.Fatalf("%s: %v", d.UID, err)
	}
	if d.ControllerQuery, d.AllValue, err = dashboards.ControllerVariable(g); err != nil {
		t.Fatalf("%s: %v", d.UID, err)
	}
	return d
}

var labelValues = regexp.MustCompile(`^label_values\((.+),\s*(\w+)\)$`)

// controllerValue is what Grafana puts for $controller with "All"
// selected: the variable's allValue, or the values its query finds as a
// regular expression. The query's selector must find at least one. The
// dashboard of an operator not run here (one make new-operator added, with
// the generic dashboard) gets the stand-in's controllers instead.
func controllerValue(ctx context.Context, t *testing.T, prom prometheus, d dashboard, running, notRun []string, standIn string) string {
	t.Helper()
	m := labelValues.FindStringSubmatch(d.ControllerQuery)
	if m == nil {
		t.Fatalf("%s: controller variable query %q is not label_values(selector, label)", d.UID, d.ControllerQuery)
	}
	label := m[2]
	selector, stoodIn, err := controllersSelector(m[1], label, running, notRun, standIn)
	if err != nil {
		t.Fatalf("%s: %v", d.UID, err)
	}
	if stoodIn {
		t.Logf("%s: its operator does not run here (%s matches none of %q but one of %q): evaluating it with the %s operator's controllers", d.UID, m[1], running, notRun, standIn)
	}
	series, err := prom.query(ctx, selector)
	if err != nil {
		t.Fatalf("%s: controller variable: %v", d.UID, err)
	}
	var values []string
	for _, s := range series {
		if v := s.Metric[label]; v != "" && !slices.Contains(values, regexp.QuoteMeta(v)) {
			values = append(values, regexp.QuoteMeta(v))
		}
	}
	if len(values) == 0 {
		t.Fatalf("%s: controller variable selector %s finds no values", d.UID, selector)
	}
	if d.AllValue != "" {
		return d.AllValue
	}
	slices.Sort(values)
	return "(" + strings.Join(values, "|") + ")"
}

// controllersSelector returns selector, the series of a controller
// variable's query, or the controllers of the operator standIn (stoodIn) when its label
// matcher matches an operator of the repository not run here and none that
// runs (controllers are named with their operator's name as prefix). A
// matcher that matches no operator at all, such as a typo in a sample's
// dashboard, is kept, so that its query finds nothing and fails.
func controllersSelector(selector, label string, running, notRun []string, standIn string) (_ string, stoodIn bool, _ error) {
	matchers, err := parser.NewParser(parser.Options{}).ParseMetricSelector(selector)
	if err != nil {
		return "", false, fmt.Errorf("could not parse the controller variable's selector %s: %w", selector, err)
	}
	for _, m := range matchers {
		if m.Name == label && !slices.ContainsFunc(running, m.Matches) && slices.ContainsFunc(notRun, m.Matches) {
			return fmt.Sprintf("%s{%s=~%q}", catalog.QueueLength, label, standIn+".*"), true, nil
		}
	}
	return selector, false, nil
}
