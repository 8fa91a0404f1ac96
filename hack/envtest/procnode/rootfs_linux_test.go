//go:build linux

package procnode

import (
	"archive/tar"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// newRootfs makes a container's root file system, dir/rootfs, holding
// files (tarFile's types for directories and symbolic links, made in
// order, as the test writes them: unpacking would refuse some), next to
// dir/outside (see newUnpackDirs), which holds an executable, tool, too.
// outside is the absolute path of dir/outside.
func newRootfs(t *testing.T, files func(outside string) []tarFile) *unpackDirs {
	t.Helper()
	s := newUnpackDirs(t)
	if err := os.WriteFile(filepath.Join(s.outside, "tool"), []byte("#!tool"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(s.root, 0o755); err != nil {
		t.Fatal(err)
	}
	var list []tarFile
	if files != nil {
		list = files(s.outside)
	}
	for _, f := range list {
		p := filepath.Join(s.root, filepath.FromSlash(f.name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		var err error
		switch f.typ {
		case tar.TypeDir:
			err = os.MkdirAll(p, 0o755)
		case tar.TypeSymlink:
			err = os.Symlink(f.link, p)
		default:
			err = os.WriteFile(p, []byte(f.body), fs.FileMode(f.mode))
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	s.before = snapshot(t, s.outside)
	return s
}

// check fails t if anything outside the root changed: the outside
// directory, or the directory holding the root and it.
func (s *unpackDirs) check(t *testing.T) {
	t.Helper()
	s.checkOutside(t)
	entries, err := os.ReadDir(s.dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if want := []string{"outside", "rootfs"}; !slices.Equal(names, want) {
		t.Errorf("next to the root: got %v, want %v", names, want)
	}
}

// describe is what is at name in the root: "-> target" for a symbolic link,
// the mode of a directory, the content of a file, "" if nothing.
func describe(t *testing.T, root, name string) string {
	t.Helper()
	p := filepath.Join(root, filepath.FromSlash(name))
	fi, err := os.Lstat(p)
	switch {
	case os.IsNotExist(err):
		return ""
	case err != nil:
		t.Fatal(err)
	case fi.Mode()&fs.ModeSymlink != 0:
		link, _ := os.Readlink(p)
		return "-> " + link
	case fi.IsDir():
		return fi.Mode().String()
	}
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// inside is the path, in the root, of the node's absolute path p: where a
// container sees it.
func inside(p string) string { return strings.TrimPrefix(p, "/") }

// checkResult fails t unless err contains every string of want (want nil:
// err is nil), and the root has files (see describe).
func checkResult(t *testing.T, s *unpackDirs, err error, want []string, files map[string]string) {
	t.Helper()
	switch {
	case want == nil && err != nil:
		t.Errorf("got error %v, want none", err)
	case want != nil && err == nil:
		t.Errorf("got no error, want one naming %q", want)
	case want != nil:
		for _, w := range want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("got error %q, want one naming %q", err, w)
			}
		}
	}
	for name, w := range files {
		if got := describe(t, s.root, name); got != w {
			t.Errorf("%s: got %q, want %q", name, got, w)
		}
	}
	s.check(t)
}

const (
	wantHosts    = "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n"
	wantHostname = "web-0\n"
)

// /etc/hosts, /etc/hostname and /dev are written where the container sees
// them, through the image's links resolved in its root (an absolute target
// from the root); a link climbing out of the root is refused with an error
// naming it, and nothing of the node is written.
func TestWriteEtcWritesOnlyInTheRoot(t *testing.T) {
	for _, tt := range []struct {
		name  string
		files func(outside string) []tarFile
		// want are strings the error must contain; nil: no error.
		want []string
		// result maps paths in the root to what describe says of them.
		result func(outside string) map[string]string
	}{
		{
			name: "etc linking out of the root with .. is refused",
			files: func(string) []tarFile {
				return []tarFile{{name: "etc", typ: tar.TypeSymlink, link: "../outside"}}
			},
			want: []string{"/etc/hosts", "symbolic link /etc (-> ../outside)"},
		},
		{
			name: "etc linking to the root's parent is refused",
			files: func(string) []tarFile {
				return []tarFile{{name: "etc", typ: tar.TypeSymlink, link: ".."}}
			},
			want: []string{"/etc/hosts", "symbolic link /etc (-> ..)"},
		},
		{
			name: "etc/hosts linking to a file outside is refused",
			files: func(string) []tarFile {
				return []tarFile{
					{name: "etc", typ: tar.TypeDir},
					{name: "etc/hosts", typ: tar.TypeSymlink, link: "../../outside/secret"},
				}
			},
			want: []string{"/etc/hosts", "symbolic link /etc/hosts (-> ../../outside/secret)"},
		},
		{
			name: "etc/hostname linking to a file outside is refused",
			files: func(string) []tarFile {
				return []tarFile{
					{name: "etc", typ: tar.TypeDir},
					{name: "etc/hostname", typ: tar.TypeSymlink, link: "../../outside/secret"},
				}
			},
			want: []string{"/etc/hostname", "symbolic link /etc/hostname (-> ../../outside/secret)"},
		},
		{
			name: "a chain of links in the root leading out is refused at the link leaving it",
			files: func(string) []tarFile {
				return []tarFile{
					{name: "etc", typ: tar.TypeDir},
					{name: "var", typ: tar.TypeDir},
					{name: "run", typ: tar.TypeSymlink, link: "var/run"},
					{name: "var/run", typ: tar.TypeSymlink, link: "../../outside"},
					{name: "etc/hosts", typ: tar.TypeSymlink, link: "../run/hosts"},
				}
			},
			want: []string{"/etc/hosts", "symbolic link /var/run (-> ../../outside)"},
		},
		{
			name: "dev linking out of the root is refused",
			files: func(string) []tarFile {
				return []tarFile{{name: "dev", typ: tar.TypeSymlink, link: "../outside"}}
			},
			want: []string{"/dev", "symbolic link /dev (-> ../outside)"},
		},
		{
			name: "a loop of links is refused",
			files: func(string) []tarFile {
				return []tarFile{
					{name: "dev", typ: tar.TypeSymlink, link: "dev2"},
					{name: "dev2", typ: tar.TypeSymlink, link: "dev"},
				}
			},
			want: []string{"/dev", "too many levels of symbolic links"},
		},
		{
			name: "a device linking to a file outside is left as it is",
			files: func(string) []tarFile {
				return []tarFile{
					{name: "dev", typ: tar.TypeDir},
					{name: "dev/null", typ: tar.TypeSymlink, link: "../../outside/secret"},
				}
			},
			result: func(string) map[string]string {
				return map[string]string{"dev/null": "-> ../../outside/secret", "etc/hosts": wantHosts}
			},
		},
		{
			name: "a device linking to an absolute path is left as it is",
			files: func(outside string) []tarFile {
				return []tarFile{
					{name: "dev", typ: tar.TypeDir},
					{name: "dev/zero", typ: tar.TypeSymlink, link: filepath.Join(outside, "secret")},
				}
			},
			result: func(outside string) map[string]string {
				return map[string]string{"dev/zero": "-> " + filepath.Join(outside, "secret")}
			},
		},
		{
			name: "a plain root file system gets /etc/hosts, /etc/hostname and /dev",
			files: func(string) []tarFile {
				return []tarFile{{name: "etc", typ: tar.TypeDir}, {name: "operator", body: "#!", mode: 0o755}}
			},
			result: func(string) map[string]string {
				return map[string]string{"etc/hosts": wantHosts, "etc/hostname": wantHostname, "dev": "drwxr-xr-x"}
			},
		},
		{
			name: "an empty root file system gets /etc and /dev",
			result: func(string) map[string]string {
				return map[string]string{"etc/hosts": wantHosts, "etc/hostname": wantHostname, "dev": "drwxr-xr-x"}
			},
		},
		{
			name: "a relative link to a directory of the root is followed",
			files: func(string) []tarFile {
				return []tarFile{
					{name: "usr/etc", typ: tar.TypeDir},
					{name: "etc", typ: tar.TypeSymlink, link: "usr/etc"},
				}
			},
			result: func(string) map[string]string {
				return map[string]string{"etc": "-> usr/etc", "usr/etc/hosts": wantHosts, "usr/etc/hostname": wantHostname}
			},
		},
		{
			name: "a relative link to a file of the root is written through",
			files: func(string) []tarFile {
				return []tarFile{
					{name: "etc", typ: tar.TypeDir},
					{name: "run", typ: tar.TypeDir},
					{name: "etc/hosts", typ: tar.TypeSymlink, link: "../run/hosts"},
				}
			},
			result: func(string) map[string]string {
				return map[string]string{"etc/hosts": "-> ../run/hosts", "run/hosts": wantHosts, "etc/hostname": wantHostname}
			},
		},
		{
			name: "an absolute link to a directory resolves from the root, not from the node's /",
			files: func(outside string) []tarFile {
				return []tarFile{{name: "etc", typ: tar.TypeSymlink, link: outside}}
			},
			result: func(outside string) map[string]string {
				return map[string]string{
					"etc":                         "-> " + outside,
					inside(outside) + "/hosts":    wantHosts,
					inside(outside) + "/hostname": wantHostname,
				}
			},
		},
		{
			name: "an absolute link to a file resolves from the root, not from the node's /",
			files: func(outside string) []tarFile {
				return []tarFile{
					{name: "etc", typ: tar.TypeDir},
					{name: "etc/hosts", typ: tar.TypeSymlink, link: filepath.Join(outside, "secret")},
				}
			},
			result: func(outside string) map[string]string {
				return map[string]string{inside(outside) + "/secret": wantHosts, "etc/hostname": wantHostname}
			},
		},
		{
			name: "dev linking to an absolute path is made in the root",
			files: func(outside string) []tarFile {
				return []tarFile{{name: "dev", typ: tar.TypeSymlink, link: outside}}
			},
			result: func(outside string) map[string]string {
				return map[string]string{"dev": "-> " + outside, inside(outside): "drwxr-xr-x"}
			},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := newRootfs(t, tt.files)
			r := &podRunner{pod: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-0"}}}
			err := r.writeEtc(&container{rootfs: s.root})
			var result map[string]string
			if tt.result != nil {
				result = tt.result(s.outside)
			}
			checkResult(t, s, err, tt.want, result)
		})
	}
}

// The device files are made in the root's /dev, through its links resolved
// in the root, never in the node's.
func TestWriteEtcMakesDevicesInTheRoot(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("making device files needs root")
	}
	for _, tt := range []struct {
		name  string
		files func(outside string) []tarFile
		// dev is where the devices must be, in the root.
		dev func(outside string) string
	}{
		{
			name: "a plain root file system gets them in /dev",
			dev:  func(string) string { return "dev" },
		},
		{
			name: "a relative link to a directory of the root is followed",
			files: func(string) []tarFile {
				return []tarFile{{name: "lib/dev", typ: tar.TypeDir}, {name: "dev", typ: tar.TypeSymlink, link: "lib/dev"}}
			},
			dev: func(string) string { return "lib/dev" },
		},
		{
			name: "an absolute link resolves from the root",
			files: func(outside string) []tarFile {
				return []tarFile{{name: "dev", typ: tar.TypeSymlink, link: outside}}
			},
			dev: inside,
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := newRootfs(t, tt.files)
			r := &podRunner{pod: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-0"}}}
			if err := r.writeEtc(&container{rootfs: s.root}); err != nil {
				t.Fatal(err)
			}
			dev := tt.dev(s.outside)
			for name, minor := range map[string]uint32{"null": 3, "zero": 5, "full": 7, "random": 8, "urandom": 9} {
				fi, err := os.Lstat(filepath.Join(s.root, dev, name))
				if err != nil {
					t.Errorf("%s/%s: %v", dev, name, err)
					continue
				}
				rdev := fi.Sys().(*syscall.Stat_t).Rdev
				if fi.Mode()&fs.ModeCharDevice == 0 || unix.Major(rdev) != 1 || unix.Minor(rdev) != minor || fi.Mode().Perm() != 0o666 {
					t.Errorf("%s/%s: got %v %d:%d, want a character device 1:%d, rw-rw-rw-", dev, name, fi.Mode(), unix.Major(rdev), unix.Minor(rdev), minor)
				}
			}
			s.check(t)
		})
	}
}

// Volumes are written at their mount paths as the container sees them,
// through the image's links resolved in its root; a mount path, or a
// directory of a volume, through a link climbing out of the root is
// refused with an error naming it, and nothing of the node is written.
func TestWriteVolumesWritesOnlyInTheRoot(t *testing.T) {
	const token = "/var/run/secrets/kubernetes.io/serviceaccount"
	vols := map[string]rendered{
		"token":  {files: []volumeFile{{path: "token", data: []byte("tok"), mode: 0o644}}},
		"config": {files: []volumeFile{{path: "sub/key", data: []byte("value"), mode: 0o600}}},
		"cache":  {writable: true},
	}
	for _, tt := range []struct {
		name   string
		files  func(outside string) []tarFile
		mounts []corev1.VolumeMount
		// want are strings the error must contain; nil: no error.
		want []string
		// result maps paths in the root to what describe says of them.
		result func(outside string) map[string]string
	}{
		{
			name: "a mount path beneath a link out of the root is refused",
			files: func(string) []tarFile {
				return []tarFile{{name: "var", typ: tar.TypeDir}, {name: "var/run", typ: tar.TypeSymlink, link: "../../outside"}}
			},
			mounts: []corev1.VolumeMount{{Name: "token", MountPath: token}},
			want:   []string{"volume token at " + token, "symbolic link /var/run (-> ../../outside)"},
		},
		{
			name: "an emptyDir at a link out of the root is refused",
			files: func(string) []tarFile {
				return []tarFile{{name: "data", typ: tar.TypeSymlink, link: "../outside"}}
			},
			mounts: []corev1.VolumeMount{{Name: "cache", MountPath: "/data"}},
			want:   []string{"volume cache at /data", "symbolic link /data (-> ../outside)"},
		},
		{
			name: "an emptyDir beneath a link out of the root is refused",
			files: func(string) []tarFile {
				return []tarFile{{name: "tmp", typ: tar.TypeSymlink, link: "../outside"}}
			},
			mounts: []corev1.VolumeMount{{Name: "cache", MountPath: "/tmp/cache"}},
			want:   []string{"volume cache at /tmp/cache", "symbolic link /tmp (-> ../outside)"},
		},
		{
			name: "a directory of a volume linking out of the root is refused",
			files: func(string) []tarFile {
				return []tarFile{{name: "config", typ: tar.TypeDir}, {name: "config/sub", typ: tar.TypeSymlink, link: "../../outside"}}
			},
			mounts: []corev1.VolumeMount{{Name: "config", MountPath: "/config"}},
			want:   []string{"volume config at /config", "sub/key"},
		},
		{
			name:   "a plain root file system gets its volumes",
			files:  func(string) []tarFile { return []tarFile{{name: "operator", body: "#!", mode: 0o755}} },
			mounts: []corev1.VolumeMount{{Name: "token", MountPath: token}, {Name: "config", MountPath: "/config"}, {Name: "cache", MountPath: "/tmp/cache"}},
			result: func(string) map[string]string {
				return map[string]string{inside(token) + "/token": "tok", "config/sub/key": "value", "tmp/cache": "dtrwxrwxrwx"}
			},
		},
		{
			name: "a relative link to a directory of the root is followed",
			files: func(string) []tarFile {
				return []tarFile{{name: "run", typ: tar.TypeDir}, {name: "var", typ: tar.TypeDir}, {name: "var/run", typ: tar.TypeSymlink, link: "../run"}}
			},
			mounts: []corev1.VolumeMount{{Name: "token", MountPath: token}},
			result: func(string) map[string]string {
				return map[string]string{"var/run": "-> ../run", "run/secrets/kubernetes.io/serviceaccount/token": "tok"}
			},
		},
		{
			name: "an absolute link resolves from the root, not from the node's /",
			files: func(outside string) []tarFile {
				return []tarFile{{name: "var", typ: tar.TypeDir}, {name: "var/run", typ: tar.TypeSymlink, link: outside}}
			},
			mounts: []corev1.VolumeMount{{Name: "token", MountPath: token}},
			result: func(outside string) map[string]string {
				return map[string]string{inside(outside) + "/secrets/kubernetes.io/serviceaccount/token": "tok"}
			},
		},
		{
			name: "an emptyDir at an absolute link is made in the root",
			files: func(outside string) []tarFile {
				return []tarFile{{name: "data", typ: tar.TypeSymlink, link: outside}}
			},
			mounts: []corev1.VolumeMount{{Name: "cache", MountPath: "/data"}},
			result: func(outside string) map[string]string {
				return map[string]string{"data": "-> " + outside, inside(outside): "dtrwxrwxrwx"}
			},
		},
		{
			name: "a file of a volume linking out is replaced, not written through",
			files: func(outside string) []tarFile {
				return []tarFile{{name: "config/sub", typ: tar.TypeDir}, {name: "config/sub/key", typ: tar.TypeSymlink, link: "../../../outside/secret"}}
			},
			mounts: []corev1.VolumeMount{{Name: "config", MountPath: "/config"}},
			result: func(string) map[string]string {
				return map[string]string{"config/sub/key": "value"}
			},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := newRootfs(t, tt.files)
			c := &container{spec: &corev1.Container{Name: "c", VolumeMounts: tt.mounts}, rootfs: s.root}
			err := c.writeVolumes(vols, nil)
			var result map[string]string
			if tt.result != nil {
				result = tt.result(s.outside)
			}
			checkResult(t, s, err, tt.want, result)
		})
	}
}

// With an fsGroup, a volume's files are the group's, readable by it.
func TestWriteVolumesGivesFilesToTheFSGroup(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("giving files to another group needs root")
	}
	s := newRootfs(t, nil)
	c := &container{spec: &corev1.Container{Name: "c", VolumeMounts: []corev1.VolumeMount{{Name: "config", MountPath: "/config"}}}, rootfs: s.root}
	vols := map[string]rendered{"config": {files: []volumeFile{{path: "key", data: []byte("value"), mode: 0o600}}}}
	fsGroup := int64(2000)
	if err := c.writeVolumes(vols, &fsGroup); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(s.root, "config", "key"))
	if err != nil {
		t.Fatal(err)
	}
	st := fi.Sys().(*syscall.Stat_t)
	if st.Uid != 0 || st.Gid != 2000 || fi.Mode() != 0o640 {
		t.Errorf("config/key: got %d:%d %v, want 0:2000 -rw-r-----", st.Uid, st.Gid, fi.Mode())
	}
	s.check(t)
}

// The command is looked up as the container will run it: in its root,
// through the image's links resolved there, never a file of the node.
func TestCheckExecutableLooksInTheRoot(t *testing.T) {
	for _, tt := range []struct {
		name    string
		files   func(outside string) []tarFile
		command string
		// want are strings the error must contain; nil: no error.
		want []string
	}{
		{
			name:    "an executable file of the root passes",
			files:   func(string) []tarFile { return []tarFile{{name: "operator", body: "#!", mode: 0o755}} },
			command: "/operator",
		},
		{
			name:    "a file that is not executable is refused",
			files:   func(string) []tarFile { return []tarFile{{name: "operator", body: "#!", mode: 0o644}} },
			command: "/operator",
			want:    []string{`"/operator": no such executable file in the image`},
		},
		{
			name:    "a missing file is refused",
			command: "/operator",
			want:    []string{`"/operator": no such executable file in the image`},
		},
		{
			name:    "a directory is refused",
			files:   func(string) []tarFile { return []tarFile{{name: "bin", typ: tar.TypeDir}} },
			command: "/bin",
			want:    []string{`"/bin": no such executable file in the image`},
		},
		{
			name:    "a command climbing above / stays at the root, as in the chroot",
			files:   func(string) []tarFile { return []tarFile{{name: "operator", body: "#!", mode: 0o755}} },
			command: "/../operator",
		},
		{
			name: "a relative link in the root is followed",
			files: func(string) []tarFile {
				return []tarFile{{name: "bin/busybox", body: "#!", mode: 0o755}, {name: "bin/sh", typ: tar.TypeSymlink, link: "busybox"}}
			},
			command: "/bin/sh",
		},
		{
			name: "an absolute link resolves from the root",
			files: func(string) []tarFile {
				return []tarFile{{name: "bin/busybox", body: "#!", mode: 0o755}, {name: "bin/sh", typ: tar.TypeSymlink, link: "/bin/busybox"}}
			},
			command: "/bin/sh",
		},
		{
			name: "an absolute link to an executable of the node is looked up in the root",
			files: func(outside string) []tarFile {
				return []tarFile{{name: "bin", typ: tar.TypeDir}, {name: "bin/sh", typ: tar.TypeSymlink, link: filepath.Join(outside, "tool")}}
			},
			command: "/bin/sh",
			want:    []string{`"/bin/sh": no such executable file in the image`},
		},
		{
			name: "a link out of the root to an executable of the node is refused",
			files: func(string) []tarFile {
				return []tarFile{{name: "bin", typ: tar.TypeDir}, {name: "bin/sh", typ: tar.TypeSymlink, link: "../../outside/tool"}}
			},
			command: "/bin/sh",
			want:    []string{`"/bin/sh": no such executable file in the image`, "symbolic link /bin/sh (-> ../../outside/tool)"},
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := newRootfs(t, tt.files)
			err := (&container{rootfs: s.root}).checkExecutable(tt.command)
			checkResult(t, s, err, tt.want, nil)
		})
	}
}
