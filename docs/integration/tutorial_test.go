package integration_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"
)

// A block is one shell block of a tutorial and what the runner does with
// it.
type block struct {
	// line is the line of its opening fence, counted from 1.
	line   int
	script string
	// expect is the text block right after it (only blank lines between),
	// its expected output; nil when none follows.
	expect []string
	// skip is why the block is not run: the reason in a
	// `<!-- run: not runnable: REASON -->` comment before it.
	skip string
	// readyWhen is set by `<!-- run: in the background until "TEXT" -->`:
	// the block runs in the background, the next one starts once its output
	// holds TEXT, and it is interrupted when the tutorial ends.
	readyWhen string
	// fails is set by `<!-- run: exits non-zero -->`: the block shows a
	// refusal, so it must end with a non-zero status (its last command's,
	// or the first failing one's) and print its expected output.
	fails bool
	// upgrade is set by `<!-- run: with make test-upgrade -->`: the block
	// needs what make test-upgrade has and make test may not (the
	// repository's history, root for pods run as processes), so
	// TestTheTutorialsUpgradesRun runs it, with the others so marked, and
	// TestTheTutorialsRun does not. It combines with the clauses above,
	// after "; ".
	upgrade bool
}

var (
	directive = regexp.MustCompile(`^<!-- run: (.*) -->$`)
	notRun    = regexp.MustCompile(`^not runnable: (\S.*)$`)
	untilText = regexp.MustCompile(`^in the background until "([^"]+)"$`)
	failing   = "exits non-zero"
	upgrading = "with make test-upgrade"
)

// clauses sets b's fields from a directive's text: "not runnable: REASON"
// (the rest is the reason, whatever it holds), or clauses separated by
// "; ".
func clauses(b *block, text string) error {
	if m := notRun.FindStringSubmatch(text); m != nil {
		b.skip = m[1]
		return nil
	}
	for c := range strings.SplitSeq(text, "; ") {
		switch {
		case untilText.MatchString(c):
			b.readyWhen = untilText.FindStringSubmatch(c)[1]
		case c == failing:
			b.fails = true
		case c == upgrading:
			b.upgrade = true
		default:
			return fmt.Errorf(`unknown directive %q: want "not runnable: REASON", or one or more of "in the background until \"TEXT\"", %q and %q, separated by "; "`, c, failing, upgrading)
		}
	}
	if b.readyWhen != "" && b.fails {
		return fmt.Errorf("%q: a block in the background cannot be one that exits non-zero", text)
	}
	return nil
}

// parse returns the shell blocks (```sh or ```bash) of a tutorial, with the
// directives before them and the output that follows them.
func parse(md string) ([]block, error) {
	lines := strings.Split(md, "\n")
	var (
		blocks  []block
		pending *block // a directive waiting for its block
		last    = -1   // index in blocks of the shell block a text block may follow
	)
	for i := 0; i < len(lines); i++ {
		l := strings.TrimRight(lines[i], " \t")
		if m := directive.FindStringSubmatch(l); m != nil {
			if pending != nil {
				return nil, fmt.Errorf("line %d: a second directive before a shell block (line %d has one)", i+1, pending.line)
			}
			pending = &block{line: i + 1}
			if err := clauses(pending, m[1]); err != nil {
				return nil, fmt.Errorf("line %d: %w", i+1, err)
			}
			continue
		}
		if !strings.HasPrefix(l, "```") {
			if l != "" {
				last = -1
				if pending != nil && !strings.HasPrefix(l, "<!--") {
					return nil, fmt.Errorf("line %d: the directive on line %d is not followed by a shell block", i+1, pending.line)
				}
			}
			continue
		}
		info := strings.TrimSpace(strings.TrimPrefix(l, "```"))
		start := i
		var body []string
		for i++; i < len(lines) && strings.TrimRight(lines[i], " \t") != "```"; i++ {
			body = append(body, lines[i])
		}
		if i == len(lines) {
			return nil, fmt.Errorf("line %d: the block is not closed", start+1)
		}
		switch info {
		case "sh", "bash":
			b := block{line: start + 1, script: strings.Join(body, "\n")}
			if pending != nil {
				b.skip, b.readyWhen, b.fails, b.upgrade = pending.skip, pending.readyWhen, pending.fails, pending.upgrade
				pending = nil
			}
			blocks = append(blocks, b)
			last = len(blocks) - 1
			continue
		case "text":
			if last >= 0 && blocks[last].expect == nil {
				blocks[last].expect = body
			}
		}
		if pending != nil {
			return nil, fmt.Errorf("line %d: the directive on line %d is followed by a %q block, not a shell block", start+1, pending.line, info)
		}
		last = -1
	}
	if pending != nil {
		return nil, fmt.Errorf("line %d: the directive is followed by no shell block", pending.line)
	}
	return blocks, nil
}

// match checks that out holds the expected lines in order (others may come
// between): in an expected line, "..." stands for any text, and a line of
// "..." alone for any lines.
func match(expect []string, out string) error {
	outLines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	j := 0
	for _, e := range expect {
		e = strings.TrimSpace(e)
		if e == "" || e == "..." {
			continue
		}
		parts := strings.Split(e, "...")
		for k := range parts {
			parts[k] = regexp.QuoteMeta(parts[k])
		}
		re := regexp.MustCompile(`^` + strings.Join(parts, `.*`) + `$`)
		for ; j < len(outLines) && !re.MatchString(strings.TrimSpace(outLines[j])); j++ {
		}
		if j == len(outLines) {
			return fmt.Errorf("the output has no line %q (in this order)", e)
		}
		j++
	}
	return nil
}

// lockedBuffer collects a background block's output.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// Timeouts of a block: a foreground one must end within foreground, a
// background one must print its text within background (a dev cluster whose
// control plane is built already starts in seconds).
const (
	foreground = 5 * time.Minute
	background = 5 * time.Minute
)

// result is what running a tutorial's blocks did.
type result struct {
	ran, skipped int
}

// run runs blocks in dir, in order, and stops at the first that fails: the
// later ones build on it. Background blocks are interrupted (SIGINT to
// their process group, as Ctrl-C does) before it returns, and must end
// within 30 s.
func run(ctx context.Context, dir string, blocks []block, logf func(string, ...any)) (res result, err error) {
	var bg []*process
	defer func() {
		// Last started, first stopped, as a user ends them: the operators
		// before the dev cluster they talk to.
		for _, p := range slices.Backward(bg) {
			_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGINT)
			select {
			case <-p.exited:
			case <-time.After(30 * time.Second):
				_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
				<-p.exited
				err = errors.Join(err, fmt.Errorf("line %d: the background block did not end within 30s of SIGINT", p.line))
			}
		}
	}()
	for _, b := range blocks {
		if b.skip != "" {
			res.skipped++
			continue
		}
		res.ran++
		cmd := exec.Command("bash", "-euo", "pipefail", "-c", b.script)
		cmd.Dir = dir
		cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		out := &lockedBuffer{}
		cmd.Stdout, cmd.Stderr = out, out
		began := time.Now()
		if err := cmd.Start(); err != nil {
			return res, fmt.Errorf("line %d: %w", b.line, err)
		}
		p := &process{cmd: cmd, line: b.line, exited: make(chan struct{})}
		go func() { p.err = cmd.Wait(); close(p.exited) }()
		if b.readyWhen != "" {
			bg = append(bg, p)
			if err := waitFor(ctx, out, b.readyWhen, p); err != nil {
				return res, fmt.Errorf("line %d, in the background:\n%s\n%w; its output:\n%s", b.line, b.script, err, out.String())
			}
			if err := match(b.expect, out.String()); err != nil {
				return res, fmt.Errorf("line %d, in the background:\n%s\n%w by the time it printed %q; its output:\n%s", b.line, b.script, err, b.readyWhen, out.String())
			}
			logf("line %d: in the background, %q after %.1fs", b.line, b.readyWhen, time.Since(began).Seconds())
			continue
		}
		var runErr error
		select {
		case <-p.exited:
			runErr = p.err
		case <-time.After(foreground):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-p.exited
			runErr = fmt.Errorf("did not end within %v", foreground)
		case <-ctx.Done():
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
			<-p.exited
			runErr = ctx.Err()
		}
		var exit *exec.ExitError
		switch {
		case b.fails && runErr == nil:
			return res, fmt.Errorf("line %d:\n%s\nexited with status 0, but the tutorial shows it refused; its output:\n%s", b.line, b.script, out.String())
		case b.fails && !errors.As(runErr, &exit):
			return res, fmt.Errorf("line %d:\n%s\nfailed: %w; its output:\n%s", b.line, b.script, runErr, out.String())
		case !b.fails && runErr != nil:
			return res, fmt.Errorf("line %d:\n%s\nfailed: %w; its output:\n%s", b.line, b.script, runErr, out.String())
		}
		if err := match(b.expect, out.String()); err != nil {
			return res, fmt.Errorf("line %d:\n%s\n%w; its output:\n%s", b.line, b.script, err, out.String())
		}
		logf("line %d: ran in %.1fs", b.line, time.Since(began).Seconds())
	}
	return res, nil
}

// A process is a block's shell; exited is closed once it has ended, with
// err.
type process struct {
	cmd    *exec.Cmd
	line   int
	exited chan struct{}
	err    error
}

// waitFor waits until out holds text, the process ends, or background
// passes.
func waitFor(ctx context.Context, out *lockedBuffer, text string, p *process) error {
	deadline := time.After(background)
	for {
		if strings.Contains(out.String(), text) {
			return nil
		}
		select {
		case <-p.exited:
			if strings.Contains(out.String(), text) {
				return nil
			}
			if p.err == nil {
				return fmt.Errorf("it exited with status 0 before printing %q", text)
			}
			return fmt.Errorf("it ended (%w) before printing %q", p.err, text)
		case <-deadline:
			return fmt.Errorf("no %q within %v", text, background)
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// lines returns s's lines, for the tests' tables.
func lines(s string) []string {
	var l []string
	sc := bufio.NewScanner(strings.NewReader(s))
	for sc.Scan() {
		l = append(l, sc.Text())
	}
	return l
}
