package integration_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kooperkit/kooper/hack/worktree"
)

// root is the repository, relative to this package.
const root = "../.."

// Every shell block of every tutorial runs, in order, and prints what the
// text block after it says, unless a comment before it says why it cannot
// run. Each tutorial runs in a fresh copy of the work tree, so that what it
// writes and its dev cluster (make devcluster, in the background) are its
// own; the copies are made at one path, one after the other.
func TestTheTutorialsRun(t *testing.T) {
	ctx, tutorials := tutorials(t)
	var total result
	for _, path := range tutorials {
		name := filepath.Base(path)
		t.Run(strings.TrimSuffix(name, ".md"), func(t *testing.T) {
			blocks := parseFile(t, path)
			// Those make test-upgrade runs, TestTheTutorialsUpgradesRun.
			for i := range blocks {
				if blocks[i].upgrade && blocks[i].skip == "" {
					blocks[i].skip = "make test-upgrade runs it"
				}
			}
			// One path for every tutorial and every run: what one
			// tutorial's go run built, the next finds in Go's cache.
			dir := worktree.CopyAt(t, "tutorial")
			res, err := run(ctx, dir, blocks, t.Logf)
			total.ran += res.ran
			total.skipped += res.skipped
			if err != nil {
				t.Fatalf("%s, %v", name, err)
			}
			t.Logf("%s: %d shell blocks ran, %d marked not runnable or left to make test-upgrade", name, res.ran, res.skipped)
		})
	}
	t.Logf("the tutorials: %d shell blocks ran, %d marked not runnable or left to make test-upgrade", total.ran, total.skipped)
}

// tutorials returns the paths of docs/tutorial-*.md, and a context that
// ends a minute before the test's deadline: in time to interrupt what
// runs in the background, since go test's -timeout kills the test binary,
// not the processes it started.
func tutorials(t *testing.T) (context.Context, []string) {
	t.Helper()
	abs, err := filepath.Abs(root)
	if err != nil {
		t.Fatal(err)
	}
	paths, err := filepath.Glob(filepath.Join(abs, "docs", "tutorial-*.md"))
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) == 0 {
		t.Fatal("no docs/tutorial-*.md")
	}
	ctx := context.Background()
	if deadline, ok := t.Deadline(); ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, deadline.Add(-time.Minute))
		t.Cleanup(cancel)
	}
	return ctx, paths
}

// parseFile returns the shell blocks of the tutorial at path.
func parseFile(t *testing.T, path string) []block {
	t.Helper()
	md, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	blocks, err := parse(string(md))
	if err != nil {
		t.Fatalf("%s: %v", filepath.Base(path), err)
	}
	return blocks
}

func TestParse(t *testing.T) {
	tests := []struct {
		name    string
		md      string
		want    []block
		wantErr string
	}{
		{
			name: "a block and its output",
			md:   "Run it:\n\n```sh\necho hi\n```\n\n```text\nhi\n```\n",
			want: []block{{line: 3, script: "echo hi", expect: []string{"hi"}}},
		},
		{
			name: "a text block after prose is not output",
			md:   "```sh\necho hi\n```\n\nThen:\n\n```text\nhi\n```\n",
			want: []block{{line: 1, script: "echo hi"}},
		},
		{
			name: "directives",
			md: "<!-- run: in the background until \"ready\" -->\n```sh\nmake devcluster\n```\n" +
				"<!-- run: not runnable: needs a cloud account -->\n\n```bash\naws s3 ls\n```\n",
			want: []block{{line: 2, script: "make devcluster", readyWhen: "ready"}, {line: 7, script: "aws s3 ls", skip: "needs a cloud account"}},
		},
		{
			name: "a refusal",
			md:   "<!-- run: exits non-zero -->\n```sh\nkubectl apply -f bad.yaml\n```\n\n```text\nError from server ...\n```\n",
			want: []block{{line: 2, script: "kubectl apply -f bad.yaml", expect: []string{"Error from server ..."}, fails: true}},
		},
		{
			name: "Go and YAML blocks are not run",
			md:   "```go\nfunc main() {}\n```\n```yaml\na: b\n```\n",
		},
		{
			name: "clauses combined",
			md: "<!-- run: with make test-upgrade; in the background until \"ready\" -->\n```sh\nmake devcluster DEVCLUSTER_ARGS=-pods\n```\n" +
				"<!-- run: exits non-zero; with make test-upgrade -->\n```sh\nfalse\n```\n",
			want: []block{{line: 2, script: "make devcluster DEVCLUSTER_ARGS=-pods", readyWhen: "ready", upgrade: true}, {line: 6, script: "false", fails: true, upgrade: true}},
		},
		{
			name: "a reason is whole, whatever it holds",
			md:   "<!-- run: not runnable: needs root; with make test-upgrade it runs -->\n```sh\ntrue\n```\n",
			want: []block{{line: 2, script: "true", skip: "needs root; with make test-upgrade it runs"}},
		},
		{
			name:    "in the background and refused",
			md:      "<!-- run: exits non-zero; in the background until \"x\" -->\n```sh\ntrue\n```\n",
			wantErr: "cannot be one that exits non-zero",
		},
		{
			name:    "an unknown clause among known ones",
			md:      "<!-- run: with make test-upgrade; as root -->\n```sh\ntrue\n```\n",
			wantErr: `unknown directive "as root"`,
		},
		{
			name:    "an unknown directive",
			md:      "<!-- run: maybe -->\n```sh\ntrue\n```\n",
			wantErr: `unknown directive "maybe"`,
		},
		{
			name:    "a reason is required",
			md:      "<!-- run: not runnable: -->\n```sh\ntrue\n```\n",
			wantErr: "unknown directive",
		},
		{
			name:    "a directive before prose",
			md:      "<!-- run: not runnable: later -->\nSome text.\n```sh\ntrue\n```\n",
			wantErr: "is not followed by a shell block",
		},
		{
			name:    "a directive before a Go block",
			md:      "<!-- run: not runnable: later -->\n```go\nx\n```\n",
			wantErr: `followed by a "go" block`,
		},
		{
			name:    "an unclosed block",
			md:      "```sh\ntrue\n",
			wantErr: "not closed",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parse(tc.md)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("got error %v, want one with %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.EqualFunc(got, tc.want, func(a, b block) bool {
				return a.line == b.line && a.script == b.script && slices.Equal(a.expect, b.expect) && a.skip == b.skip && a.readyWhen == b.readyWhen && a.fails == b.fails && a.upgrade == b.upgrade
			}) {
				t.Errorf("got %+v\nwant %+v", got, tc.want)
			}
		})
	}
}

func TestMatch(t *testing.T) {
	out := "time=2026 level=info msg=\"serving metrics\" url=http://127.0.0.1:8080/metrics\npod demo/web-1 is Running\npod demo/web-2 is Running\ndone\n"
	tests := []struct {
		name   string
		expect string
		ok     bool
	}{
		{"lines in order, others between", "time=... msg=\"serving metrics\" ...\ndone", true},
		{"a line of ... alone", "...\npod demo/web-2 is Running\n...", true},
		{"no expected output", "", true},
		{"a stale line", "pod demo/web-3 is Running", false},
		{"out of order", "done\npod demo/web-1 is Running", false},
		{"a whole line, not a part", "is Running", false},
		{"regular expression characters are literal", "pod demo/web-. is Running", false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := match(lines(tc.expect), out)
			if (err == nil) != tc.ok {
				t.Errorf("match(%q): got %v, want ok=%v", tc.expect, err, tc.ok)
			}
		})
	}
}

// A tutorial whose command is broken, or whose output went stale, fails,
// naming the line; a background block is stopped at the end.
func TestABrokenTutorialFails(t *testing.T) {
	tests := []struct {
		name    string
		md      string
		wantErr string
		want    result
	}{
		{
			name: "all good",
			md: "<!-- run: in the background until \"up\" -->\n```sh\necho up; sleep 600\n```\n\n```sh\necho hello\n```\n\n```text\nhello\n```\n" +
				"<!-- run: not runnable: shown only -->\n```sh\nexit 1\n```\n",
			want: result{ran: 2, skipped: 1},
		},
		{
			name:    "a command that fails",
			md:      "```sh\necho one\n```\n\n```sh\ngo run ./no/such/package\n```\n\n```sh\necho never\n```\n",
			wantErr: "line 5:",
			want:    result{ran: 2},
		},
		{
			name:    "stale output",
			md:      "```sh\necho 'count=3'\n```\n\n```text\ncount=2\n```\n",
			wantErr: `the output has no line "count=2"`,
			want:    result{ran: 1},
		},
		{
			name: "a refusal that is refused",
			md:   "<!-- run: exits non-zero -->\n```sh\necho 'denied: no'; exit 1\n```\n\n```text\ndenied: ...\n```\n",
			want: result{ran: 1},
		},
		{
			name:    "a refusal that is accepted",
			md:      "<!-- run: exits non-zero -->\n```sh\necho 'configured'\n```\n\n```text\ndenied: ...\n```\n",
			wantErr: "exited with status 0, but the tutorial shows it refused",
			want:    result{ran: 1},
		},
		{
			name:    "a refusal with another message",
			md:      "<!-- run: exits non-zero -->\n```sh\necho 'connection refused'; exit 1\n```\n\n```text\ndenied: ...\n```\n",
			wantErr: `the output has no line "denied: ..."`,
			want:    result{ran: 1},
		},
		{
			name:    "a background block whose start-up output went stale",
			md:      "<!-- run: in the background until \"ready\" -->\n```sh\necho 'listening on :8081'; echo ready; sleep 600\n```\n\n```text\nlistening on :8080\nready\n```\n",
			wantErr: `the output has no line "listening on :8080"`,
			want:    result{ran: 1},
		},
		{
			name:    "a background block that never gets ready",
			md:      "<!-- run: in the background until \"ready\" -->\n```sh\necho starting; exit 3\n```\n",
			wantErr: "before printing \"ready\"",
			want:    result{ran: 1},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			blocks, err := parse(tc.md)
			if err != nil {
				t.Fatal(err)
			}
			got, err := run(context.Background(), t.TempDir(), blocks, t.Logf)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatal(err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Fatalf("got %v, want an error with %q", err, tc.wantErr)
			}
			if got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}
