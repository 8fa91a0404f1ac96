// Command newcomer checks the README's set-up as a new user meets it: in a
// fresh clone of this repository's HEAD, with empty Go caches in a new home
// directory and a PATH that holds only Go, make, gcc and a shell's basics, it
// runs `make run` until the first sign of an operator at work (an Event of
// a demo's object, such as a PodTerminator's, or a demo Ready) and types
// Ctrl-C, then runs `make test`, and reports both commands' exit codes and
// times and every test that skipped.
//
// `make newcomer` runs it. Cold, it compiles everything from nothing: more
// than an hour on 2 cores. -home reuses a home directory, Go caches included,
// so a second run with the first one's -home measures the warm commands.
//
// The check asserts that promtool, prometheus and ip(8) are not on its
// PATH, whatever this machine has installed: make builds what the tests
// need. `make test` runs with TESTFLAGS=-v, which only makes `go test` name
// each test, so that skips can be counted; the commands are otherwise
// exactly the README's.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/kooperkit/kooper/hack/internal/terminal"
)

// The commands on the new user's PATH, linked into a directory of their
// own: what the README asks for, and what any shell has.
var (
	// required is Go, make and gcc, with the assembler and linker gcc runs
	// (binutils comes with it).
	required = []string{"go", "gofmt", "make", "gcc", "as", "ld"}
	// basics are linked when this machine has them: what every Debian
	// or Ubuntu system has (its Essential packages: coreutils, findutils,
	// grep, sed, awk, diffutils, tar, gzip, a shell, which, hostname, some of
	// util-linux), and git, which cloned the repository.
	basics = strings.Fields(`
		[ arch b2sum base32 base64 basename basenc cat chgrp chmod chown cksum comm cp csplit cut date dd df
		dir dircolors dirname du echo env expand expr factor false fmt fold groups head hostid id install
		join link ln logname ls md5sum mkdir mkfifo mknod mktemp mv nice nl nohup nproc numfmt od paste
		pathchk pr printenv printf ptx pwd readlink realpath rm rmdir seq sha1sum sha224sum sha256sum
		sha384sum sha512sum shred shuf sleep sort split stat stdbuf stty sum sync tac tail tee test timeout
		touch tr true truncate tsort tty uname unexpand uniq unlink vdir wc whoami yes
		find xargs grep egrep fgrep sed awk cmp diff diff3 tar gzip gunzip zcat
		sh bash which hostname getopt flock setsid more
		git`)
	// absent are the tools tests once took from the machine: the check
	// fails if its PATH finds one.
	absent = []string{"promtool", "prometheus", "ip"}
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "newcomer:", err)
		os.Exit(1)
	}
}

type options struct {
	home        string
	keep        bool
	steps       string
	runTimeout  time.Duration
	testTimeout time.Duration
}

func run(ctx context.Context, args []string, out io.Writer) error {
	var o options
	fs := flag.NewFlagSet("newcomer", flag.ContinueOnError)
	fs.StringVar(&o.home, "home", "", "the new user's home `directory`, holding its Go caches: empty or new for a cold run, an earlier run's for a warm one; kept (default: a new temporary directory)")
	fs.BoolVar(&o.keep, "keep", false, "keep the clone and the logs (they are kept anyway when a step fails)")
	fs.StringVar(&o.steps, "steps", "run,test", "the `commands` to run, in order: run, test or both")
	fs.DurationVar(&o.runTimeout, "run-timeout", 45*time.Minute, "the longest make run may take to show an operator at work")
	fs.DurationVar(&o.testTimeout, "test-timeout", 150*time.Minute, "the longest make test may take")
	if err := fs.Parse(args); err != nil {
		return err
	}
	steps := strings.Split(o.steps, ",")
	for _, s := range steps {
		if s != "run" && s != "test" {
			return fmt.Errorf("-steps: unknown command %q: want run, test or run,test", s)
		}
	}

	if err := checkSpace(o.home); err != nil {
		return err
	}
	repo, err := git("", "rev-parse", "--show-toplevel")
	if err != nil {
		return fmt.Errorf("run it inside the repository: %w", err)
	}
	commit, err := git(repo, "rev-parse", "--short", "HEAD")
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "kooper-newcomer-")
	if err != nil {
		return err
	}
	w := &checker{out: out, tmp: tmp, clone: filepath.Join(tmp, "kooper")}
	fmt.Fprintf(out, "newcomer: checking commit %s in %s\n", commit, tmp)
	if dirty, _ := git(repo, "status", "--porcelain", "--untracked-files=no"); dirty != "" {
		fmt.Fprintln(out, "newcomer: the work tree has uncommitted changes: the clone has the commit only")
	}
	if _, err := git("", "clone", "--quiet", "--no-hardlinks", repo, w.clone); err != nil {
		return err
	}
	home := o.home
	if home == "" {
		home = filepath.Join(tmp, "home")
	}
	if home, err = filepath.Abs(home); err != nil {
		return err
	}
	if err := w.environment(home); err != nil {
		return err
	}

	var failed []string
	for _, s := range steps {
		var err error
		switch s {
		case "run":
			err = w.makeRun(ctx, o.runTimeout)
		case "test":
			err = w.makeTest(ctx, o.testTimeout)
		}
		if err != nil {
			failed = append(failed, fmt.Sprintf("make %s: %v", s, err))
		}
		if ctx.Err() != nil {
			break
		}
	}

	fmt.Fprintf(out, "\nnewcomer: commit %s, PATH %s (%s); not on it: %s\n", commit, w.pathDir, strings.Join(w.linked, " "), strings.Join(absent, ", "))
	for _, line := range w.summary {
		fmt.Fprintln(out, "  "+line)
	}
	keep := o.keep || len(failed) > 0
	if keep {
		fmt.Fprintf(out, "newcomer: clone and logs kept in %s\n", tmp)
	} else if err := removeAll(tmp); err != nil {
		fmt.Fprintf(out, "newcomer: could not remove %s: %v\n", tmp, err)
	}
	if len(failed) > 0 {
		return errors.New(strings.Join(failed, "; "))
	}
	return ctx.Err()
}

// What a run writes, about. A cold one fills a new home with Go's build
// and module caches, the control plane's and the tools' builds (20 GiB at
// the end of a cold run, measured at stop 54, whose first try stopped 50
// minutes into make test with "no space left on device"), beside the clone
// and its tests' temporary files. A warm one writes the clone and the
// temporary files, and what changed since.
const (
	coldRunBytes = 24 << 30
	warmRunBytes = 4 << 30
)

// freeBytes returns the space free to this user on the file system holding
// dir; tests replace it.
var freeBytes = func(dir string) (uint64, error) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, err
	}
	return st.Bavail * uint64(st.Bsize), nil
}

// checkSpace refuses a run that would stop for want of space, hours in:
// the temporary directory, and home (empty: a new one in it), must have
// room for a cold run, or for a warm one when home holds an earlier run's
// caches.
func checkSpace(home string) error {
	need, dirs := uint64(coldRunBytes), []string{os.TempDir()}
	if home != "" {
		if entries, err := os.ReadDir(home); err == nil && len(entries) > 0 {
			need = warmRunBytes
		}
		dir := home
		for {
			if _, err := os.Stat(dir); err == nil {
				break
			}
			parent := filepath.Dir(dir)
			if parent == dir {
				break
			}
			dir = parent
		}
		dirs = append(dirs, dir)
	}
	for _, dir := range dirs {
		free, err := freeBytes(dir)
		if err != nil {
			return fmt.Errorf("could not tell the space free in %s: %w", dir, err)
		}
		if free < need {
			return fmt.Errorf("%s has %.1f GiB free, and this run writes about %d GiB there (Go's caches, the control plane, the tools): free some, or point TMPDIR or -home at a larger disk", dir, float64(free)/(1<<30), need>>30)
		}
	}
	return nil
}

// checker holds one check's directories, environment and findings.
type checker struct {
	out     io.Writer
	tmp     string // everything the check writes but the home
	clone   string
	pathDir string   // the new user's PATH
	linked  []string // the commands in it
	env     []string
	summary []string
}

// environment makes the PATH directory and the environment the commands run
// in: nothing of this process's environment but what a login gives.
func (w *checker) environment(home string) error {
	w.pathDir = filepath.Join(w.tmp, "path")
	linked, err := linkCommands(w.pathDir, os.Getenv("PATH"))
	if err != nil {
		return err
	}
	w.linked = linked
	tmpdir := filepath.Join(w.tmp, "tmp")
	for _, d := range []string{home, tmpdir} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return err
		}
	}
	w.env = []string{
		"HOME=" + home,
		"PATH=" + w.pathDir,
		"USER=" + os.Getenv("USER"),
		"LANG=C.UTF-8",
		"TERM=xterm",
		// Spelled out, though they are where Go puts them in this HOME.
		"GOPATH=" + filepath.Join(home, "go"),
		"GOMODCACHE=" + filepath.Join(home, "go", "pkg", "mod"),
		"GOCACHE=" + filepath.Join(home, ".cache", "go-build"),
		"XDG_CACHE_HOME=" + filepath.Join(home, ".cache"),
		// Temporary files of the commands stay in the check's directory,
		// so that what they leave behind is found and removed.
		"TMPDIR=" + tmpdir,
	}
	return w.checkAbsent()
}

// checkAbsent fails if the new user's shell finds one of the absent tools.
func (w *checker) checkAbsent() error {
	for _, name := range absent {
		cmd := exec.Command(filepath.Join(w.pathDir, "sh"), "-c", "command -v "+name)
		cmd.Env = w.env
		if out, err := cmd.Output(); err == nil {
			return fmt.Errorf("%s is on the new user's PATH (%s): the check would prove nothing", name, strings.TrimSpace(string(out)))
		}
	}
	return nil
}

// linkCommands links into dir the required commands and the basics found
// on path, and returns their names. A required command that is missing is
// an error.
func linkCommands(dir, path string) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var linked []string
	for _, name := range append(append([]string{}, required...), basics...) {
		src := lookPath(name, path)
		if src == "" {
			if slices.Contains(required, name) {
				return nil, fmt.Errorf("%s is not on this machine's PATH: the README asks for Go, make and gcc", name)
			}
			continue
		}
		if err := os.Symlink(src, filepath.Join(dir, name)); err != nil {
			return nil, err
		}
		linked = append(linked, name)
	}
	return linked, nil
}

// lookPath finds the executable name in the directories of path, with its
// symbolic links resolved, or returns "".
func lookPath(name, path string) string {
	for _, d := range filepath.SplitList(path) {
		p := filepath.Join(d, name)
		if fi, err := os.Stat(p); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			if real, err := filepath.EvalSymlinks(p); err == nil {
				return real
			}
			return p
		}
	}
	return ""
}

// workPattern matches the lines make run prints when an operator is at
// work: an Event of a demo's object ("[events] PodTerminator
// kooper-demo-victims: Terminated ..."), a demo or an example Ready
// ("==> Tenant demo is Ready: ...", "==> shop: the example ... is Ready").
var workPattern = regexp.MustCompile(`^\[events\] \S+ \S+: |^==> .* is Ready\b`)

// makeRun runs make run in a terminal of its own, as a user types it, until
// the first sign of an operator at work, types Ctrl-C and waits for the end, then
// looks for processes left behind.
func (w *checker) makeRun(ctx context.Context, timeout time.Duration) error {
	logPath := filepath.Join(w.tmp, "make-run.log")
	log, err := os.Create(logPath)
	if err != nil {
		return err
	}
	defer log.Close()
	master, slave, err := terminal.OpenPTY()
	if err != nil {
		return err
	}
	defer master.Close()
	cmd := w.command("run")
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	fmt.Fprintf(w.out, "\nnewcomer: make run (log: %s)\n", logPath)
	began := time.Now()
	if err := cmd.Start(); err != nil {
		_ = slave.Close()
		return err
	}
	_ = slave.Close()
	defer func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }()

	event := make(chan string, 1)
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		sc := bufio.NewScanner(master)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := strings.TrimRight(sc.Text(), "\r")
			fmt.Fprintln(log, line)
			fmt.Fprintf(w.out, "  make run %s | %s\n", clock(time.Since(began)), line)
			if workPattern.MatchString(line) {
				select {
				case event <- line:
				default:
				}
			}
		}
	}()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()

	var result error
	select {
	case line := <-event:
		took := time.Since(began)
		w.note("make run: an operator at work after %s: %s", round(took), line)
	case err := <-exited:
		w.note("make run: ended after %s without an operator at work: %s", round(time.Since(began)), status(err))
		<-copied
		return fmt.Errorf("ended without an operator at work: %s (log: %s)", status(err), logPath)
	case <-time.After(timeout):
		result = fmt.Errorf("no operator at work within %s (log: %s)", timeout, logPath)
		w.note("make run: no operator at work within %s", timeout)
	case <-ctx.Done():
		result = ctx.Err()
	}

	interrupted := time.Now()
	_, _ = master.Write([]byte{0x03}) // Ctrl-C
	select {
	case err := <-exited:
		code := cmd.ProcessState.ExitCode()
		w.note("make run: Ctrl-C ended it in %s with exit status %d", round(time.Since(interrupted)), code)
		if err != nil && result == nil {
			result = fmt.Errorf("exit status %d after Ctrl-C (log: %s)", code, logPath)
		}
	case <-time.After(2 * time.Minute):
		w.note("make run: still running 2 minutes after Ctrl-C")
		if result == nil {
			result = fmt.Errorf("still running 2 minutes after Ctrl-C (log: %s)", logPath)
		}
	}
	// The reader ends when the last process holding the terminal exits.
	select {
	case <-copied:
	case <-time.After(10 * time.Second):
	}
	if left := w.leftovers(); len(left) > 0 {
		w.note("make run: %d processes left after Ctrl-C: %s", len(left), strings.Join(left, "; "))
		if result == nil {
			result = fmt.Errorf("processes left after Ctrl-C: %s", strings.Join(left, "; "))
		}
	} else {
		w.note("make run: no process left after Ctrl-C")
	}
	return result
}

// makeTest runs make test, its output in a log, and counts the tests that
// skipped.
func (w *checker) makeTest(ctx context.Context, timeout time.Duration) error {
	logPath := filepath.Join(w.tmp, "make-test.log")
	log, err := os.Create(logPath)
	if err != nil {
		return err
	}
	defer log.Close()
	cmd := w.command("test")
	cmd.Env = append(cmd.Env, "TESTFLAGS=-v")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	pr, pw := io.Pipe()
	cmd.Stdout, cmd.Stderr = pw, pw
	fmt.Fprintf(w.out, "\nnewcomer: make test, with TESTFLAGS=-v (log: %s)\n", logPath)
	began := time.Now()
	if err := cmd.Start(); err != nil {
		return err
	}
	defer func() { _ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }()
	var skips []string
	scanned := make(chan struct{})
	go func() {
		defer close(scanned)
		sc := bufio.NewScanner(pr)
		sc.Buffer(make([]byte, 64<<10), 16<<20)
		skip := -1 // the skip whose reason comes next
		for sc.Scan() {
			line := sc.Text()
			fmt.Fprintln(log, line)
			if s, ok := skipped(line); ok {
				skips = append(skips, s)
				skip = len(skips) - 1
				fmt.Fprintf(w.out, "  make test %s | %s\n", clock(time.Since(began)), line)
				continue
			}
			if skip >= 0 && strings.HasPrefix(line, "    ") && !strings.Contains(skips[skip], " — ") {
				skips[skip] += " — " + strings.TrimSpace(line)
			}
			skip = -1
			if shown(line) {
				fmt.Fprintf(w.out, "  make test %s | %s\n", clock(time.Since(began)), line)
			}
		}
		_, _ = io.Copy(io.Discard, pr)
	}()
	exited := make(chan error, 1)
	go func() {
		err := cmd.Wait()
		_ = pw.Close()
		exited <- err
	}()
	ticker := time.NewTicker(5 * time.Minute)
	defer ticker.Stop()
	var result error
wait:
	for {
		select {
		case err := <-exited:
			<-scanned
			code := cmd.ProcessState.ExitCode()
			w.note("make test: exit status %d after %s", code, round(time.Since(began)))
			if err != nil {
				result = fmt.Errorf("exit status %d (log: %s)", code, logPath)
			}
			break wait
		case <-ticker.C:
			fmt.Fprintf(w.out, "newcomer: make test still running, %s\n", round(time.Since(began)))
		case <-time.After(timeout - time.Since(began)):
			w.note("make test: still running after %s: stopped", timeout)
			result = fmt.Errorf("still running after %s (log: %s)", timeout, logPath)
			break wait
		case <-ctx.Done():
			result = ctx.Err()
			break wait
		}
	}
	w.note("make test: %d tests skipped", len(skips))
	for _, s := range skips {
		w.note("  %s", s)
	}
	return result
}

// command is make with args in the clone, in the new user's environment.
func (w *checker) command(args ...string) *exec.Cmd {
	cmd := exec.Command(filepath.Join(w.pathDir, "make"), args...)
	cmd.Args[0] = "make"
	cmd.Dir = w.clone
	cmd.Env = append([]string{}, w.env...)
	return cmd
}

func (w *checker) note(format string, args ...any) {
	line := fmt.Sprintf(format, args...)
	w.summary = append(w.summary, line)
	fmt.Fprintln(w.out, "newcomer: "+line)
}

// skipPattern matches go test -v's line for a skipped test, at any depth,
// also when a test logs a nested go test's line.
var skipPattern = regexp.MustCompile(`--- SKIP: (\S+)`)

// skipped returns the name of the test a line of go test -v output says
// skipped.
func skipped(line string) (string, bool) {
	m := skipPattern.FindStringSubmatch(line)
	if m == nil {
		return "", false
	}
	return m[1], true
}

// shown reports whether a line of make test's output is worth showing live:
// the packages' results, failures, make's own lines and the tools' builds.
func shown(line string) bool {
	for _, p := range []string{"ok ", "FAIL", "--- FAIL", "panic:", "make", "controlplane:", "tools:", "go: downloading github.com/golangci", "installing"} {
		if strings.HasPrefix(strings.TrimSpace(line), p) {
			return true
		}
	}
	return false
}

// leftovers lists the processes that still run in the clone, or under the
// check's directory, or name it on their command line.
func (w *checker) leftovers() []string {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	self := os.Getpid()
	var left []string
	for _, e := range entries {
		var pid int
		if _, err := fmt.Sscan(e.Name(), &pid); err != nil || pid == self {
			continue
		}
		cwd, _ := os.Readlink(filepath.Join("/proc", e.Name(), "cwd"))
		cmdline, _ := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		args := strings.TrimSpace(strings.ReplaceAll(string(cmdline), "\x00", " "))
		if strings.HasPrefix(cwd, w.tmp) || strings.Contains(args, w.tmp) {
			left = append(left, fmt.Sprintf("%d %s", pid, args))
		}
	}
	return left
}

// removeAll removes dir, the Go module cache's read-only directories too.
func removeAll(dir string) error {
	_ = filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err == nil && d.IsDir() {
			_ = os.Chmod(path, 0o755)
		}
		return nil
	})
	return os.RemoveAll(dir)
}

func git(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			return "", fmt.Errorf("git %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(ee.Stderr)))
		}
		return "", fmt.Errorf("git %s: %w", strings.Join(args, " "), err)
	}
	return strings.TrimSpace(string(out)), nil
}

// status describes how a command that returned err ended.
func status(err error) string {
	if err == nil {
		return "exit status 0"
	}
	return err.Error()
}

// clock is d as minutes and seconds, for the lines shown.
func clock(d time.Duration) string {
	return fmt.Sprintf("%02d:%02d", int(d.Minutes()), int(d.Seconds())%60)
}

func round(d time.Duration) time.Duration { return d.Round(time.Second) }
