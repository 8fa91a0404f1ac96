//go:build linux

package procnode

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

// container is one container of a pod: its root file system (a copy of
// its image's, with its volumes written in), and the process running it,
// restarted as the pod's restartPolicy says.
type container struct {
	spec   *corev1.Container
	image  *loadedImage
	rootfs string
	logDir string

	// instance counts the processes started, for the log file names and to
	// tell a stale report from the current process's.
	instance int
	cmd      *exec.Cmd
	started  time.Time
	stop     context.CancelFunc // stops the current process's probes
	killing  string             // why the current process is being killed

	restarts  int32
	waiting   *corev1.ContainerStateWaiting
	last      *corev1.ContainerStateTerminated
	current   *corev1.ContainerStateTerminated // exited, not restarted (yet)
	nextStart time.Time
	backoff   time.Duration

	ready, startupDone bool
}

// user is the uid and gid a container runs as: its securityContext's, the
// pod's, else its image's.
func (c *container) user(pod *corev1.Pod) (uid, gid uint32, err error) {
	var runAsUser, runAsGroup *int64
	var nonRoot *bool
	if psc := pod.Spec.SecurityContext; psc != nil {
		runAsUser, runAsGroup, nonRoot = psc.RunAsUser, psc.RunAsGroup, psc.RunAsNonRoot
	}
	if sc := c.spec.SecurityContext; sc != nil {
		if sc.RunAsUser != nil {
			runAsUser = sc.RunAsUser
		}
		if sc.RunAsGroup != nil {
			runAsGroup = sc.RunAsGroup
		}
		if sc.RunAsNonRoot != nil {
			nonRoot = sc.RunAsNonRoot
		}
	}
	imgUser, imgGroup, _ := strings.Cut(c.image.config.User, ":")
	if runAsUser == nil && imgUser != "" {
		n, err := strconv.ParseInt(imgUser, 10, 64)
		if err != nil {
			// The kubelet cannot check a user name against runAsNonRoot.
			if ptr.Deref(nonRoot, false) {
				return 0, 0, fmt.Errorf("container has runAsNonRoot and image has non-numeric user (%s), cannot verify user is non-root", imgUser)
			}
			return 0, 0, fmt.Errorf("%w: image user %q is a name (no /etc/passwd lookup)", ErrUnsupported, imgUser)
		}
		runAsUser = &n
	}
	if runAsGroup == nil && imgGroup != "" {
		if n, err := strconv.ParseInt(imgGroup, 10, 64); err == nil {
			runAsGroup = &n
		}
	}
	uid64, gid64 := ptr.Deref(runAsUser, 0), ptr.Deref(runAsGroup, 0)
	if ptr.Deref(nonRoot, false) && uid64 == 0 {
		return 0, 0, errors.New("container has runAsNonRoot and image will run as root")
	}
	return uint32(uid64), uint32(gid64), nil
}

// argv is the command line the kubelet gives the runtime: command (or the
// image's entrypoint) and args (or, without a command, the image's cmd),
// with $(NAME) expanded from env.
func (c *container) argv(env []string) ([]string, error) {
	vals := map[string]string{}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		vals[k] = v
	}
	var cmd, args []string
	switch {
	case len(c.spec.Command) > 0:
		cmd, args = c.spec.Command, c.spec.Args
	case len(c.spec.Args) > 0:
		cmd, args = c.image.config.Entrypoint, c.spec.Args
	default:
		cmd, args = c.image.config.Entrypoint, c.image.config.Cmd
	}
	var argv []string
	for _, a := range append(append([]string(nil), cmd...), args...) {
		argv = append(argv, expand(a, vals))
	}
	if len(argv) == 0 {
		return nil, errors.New("no command specified")
	}
	return argv, nil
}

// start starts the container's process in the pod's namespaces,
// chrooted to its root file system, as its user, with its log in
// logDir/<instance>.log.
func (c *container) start(sb *sandbox, pod *corev1.Pod, env []string) error {
	uid, gid, err := c.user(pod)
	if err != nil {
		return err
	}
	argv, err := c.argv(env)
	if err != nil {
		return err
	}
	var groups []uint32
	if psc := pod.Spec.SecurityContext; psc != nil {
		for _, g := range psc.SupplementalGroups {
			groups = append(groups, uint32(g))
		}
		if psc.FSGroup != nil {
			groups = append(groups, uint32(*psc.FSGroup))
		}
	}
	dir := c.spec.WorkingDir
	if dir == "" {
		dir = c.image.config.WorkingDir
	}
	if dir == "" {
		dir = "/"
	}
	path := argv[0]
	if !strings.HasPrefix(path, "/") {
		return fmt.Errorf("%w: a command without a path (%q): no PATH lookup in the image", ErrUnsupported, path)
	}
	if err := c.checkExecutable(path); err != nil {
		return err
	}
	if err := os.MkdirAll(c.logDir, 0o755); err != nil {
		return err
	}
	c.instance++
	logFile, err := os.OpenFile(filepath.Join(c.logDir, fmt.Sprintf("%d.log", c.instance)), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logFile.Close()
	cmd := &exec.Cmd{
		Path: path, Args: argv, Env: env, Dir: dir, Stdout: logFile, Stderr: logFile,
		SysProcAttr: &syscall.SysProcAttr{
			Chroot:     c.rootfs,
			Credential: &syscall.Credential{Uid: uid, Gid: gid, Groups: groups},
			Setpgid:    true,
			// The container dies with this process, so a killed test leaves
			// no operator running.
			Pdeathsig: syscall.SIGKILL,
		},
	}
	hostname := pod.Spec.Hostname
	if hostname == "" {
		hostname = pod.Name
	}
	if len(hostname) > 63 {
		hostname = hostname[:63]
	}
	if err := sb.inNamespace(hostname, cmd.Start); err != nil {
		return fmt.Errorf("could not start %s: %w", path, err)
	}
	c.cmd, c.started, c.killing = cmd, time.Now(), ""
	c.waiting, c.current = nil, nil
	c.ready, c.startupDone = false, c.spec.StartupProbe == nil
	return nil
}

// checkExecutable fails unless name, the command's path, is an executable
// file of the container's root as exec in the chroot will find it: through
// the image's links resolved in the root (see inRoot), not the node's file
// an absolute link names.
func (c *container) checkExecutable(name string) error {
	root, err := os.OpenRoot(c.rootfs)
	if err != nil {
		return fmt.Errorf("could not open the container's root file system: %w", err)
	}
	defer root.Close()
	p, err := inRoot(root, name)
	var fi fs.FileInfo
	if err == nil {
		fi, err = root.Stat(p)
	}
	if err == nil && (!fi.Mode().IsRegular() || fi.Mode()&0o111 == 0) {
		err = fmt.Errorf("%s is not an executable file", name)
	}
	if err != nil {
		return fmt.Errorf("exec: %q: no such executable file in the image: %w", name, err)
	}
	return nil
}

// maxLinks is how many symbolic links resolving one path may follow, as on
// Linux.
const maxLinks = 40

// inRoot returns name, an absolute path in the container, as a path in
// root with the symbolic links on it resolved as the container, chrooted to
// root, resolves them: a relative target from the link's directory, an
// absolute one from the root. So the node writes where the container will
// look, and never its own files: an image's "var/run -> /run" is the
// root's run, not the node's (os.Root alone refuses every absolute link).
// name is cleaned first; what does not exist is kept as named. It
// refuses, with an error naming the link, a link that climbs above the root
// with ".." (the container would stay at its root; no honest image has
// one), and more than maxLinks links.
//
// The result is only a path: callers act on it through root, which keeps
// them in the root if its files change meanwhile.
func inRoot(root *os.Root, name string) (string, error) {
	cur, rest := ".", strings.Split(path.Clean("/"+name), "/")
	links := 0
	var via string // the last link followed, for errors
	for len(rest) > 0 {
		elem := rest[0]
		rest = rest[1:]
		switch elem {
		case "", ".":
			continue
		case "..":
			if cur == "." {
				return "", fmt.Errorf("%s leaves the root file system", via)
			}
			cur = path.Dir(cur)
			continue
		}
		next := path.Join(cur, elem)
		fi, err := root.Lstat(next)
		if errors.Is(err, fs.ErrNotExist) || (err == nil && fi.Mode()&fs.ModeSymlink == 0) {
			cur = next
			continue
		}
		if err != nil {
			return "", err
		}
		if links++; links > maxLinks {
			return "", fmt.Errorf("symbolic link /%s: %w", next, syscall.ELOOP)
		}
		target, err := root.Readlink(next)
		if err != nil {
			return "", err
		}
		via = fmt.Sprintf("symbolic link /%s (-> %s)", next, target)
		if path.IsAbs(target) {
			cur = "."
		}
		rest = append(strings.Split(target, "/"), rest...)
	}
	return cur, nil
}

// makeRootfs copies the image's root file system for the container, hard
// linking its files, and writes the container's volumes into it.
func (c *container) makeRootfs(vols map[string]rendered, fsGroup *int64) error {
	if err := os.RemoveAll(c.rootfs); err != nil {
		return err
	}
	err := filepath.WalkDir(c.image.rootfs, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(c.image.rootfs, p)
		target := filepath.Join(c.rootfs, rel)
		fi, err := os.Lstat(p)
		if err != nil {
			return err
		}
		st := fi.Sys().(*syscall.Stat_t)
		switch {
		case d.IsDir():
			if err := os.MkdirAll(target, fi.Mode().Perm()); err != nil {
				return err
			}
			if err := os.Chmod(target, fi.Mode().Perm()); err != nil {
				return err
			}
			return os.Lchown(target, int(st.Uid), int(st.Gid))
		case fi.Mode()&fs.ModeSymlink != 0:
			link, err := os.Readlink(p)
			if err != nil {
				return err
			}
			return os.Symlink(link, target)
		default:
			return os.Link(p, target)
		}
	})
	if err != nil {
		return fmt.Errorf("could not make the container's root file system: %w", err)
	}
	return c.writeVolumes(vols, fsGroup)
}

// writeVolumes writes each volume the container mounts at its mount path,
// resolved in the container's root (see inRoot), through an os.Root: an
// image's links, or a container that replaced a directory of its root with
// one while it ran, never make the node write outside the root.
func (c *container) writeVolumes(vols map[string]rendered, fsGroup *int64) error {
	if len(c.spec.VolumeMounts) == 0 {
		return nil
	}
	root, err := os.OpenRoot(c.rootfs)
	if err != nil {
		return fmt.Errorf("could not open the container's root file system: %w", err)
	}
	defer root.Close()
	for _, m := range c.spec.VolumeMounts {
		v, ok := vols[m.Name]
		if !ok {
			return fmt.Errorf("volumeMount %s: no such volume", m.Name)
		}
		if m.SubPath != "" || m.SubPathExpr != "" {
			return fmt.Errorf("%w: volumeMount %s: subPath", ErrUnsupported, m.Name)
		}
		dir, err := inRoot(root, path.Clean("/"+m.MountPath))
		if err == nil {
			err = v.write(root, dir, fsGroup)
		}
		if err != nil {
			return fmt.Errorf("volume %s at %s: %w", m.Name, m.MountPath, err)
		}
	}
	return nil
}

// signal sends sig to the container's process, if it runs.
func (c *container) signal(sig syscall.Signal) {
	if c.cmd != nil && c.cmd.Process != nil {
		_ = c.cmd.Process.Signal(sig)
	}
}
