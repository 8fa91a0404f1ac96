package main

import (
	"io"
	"log"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/crane"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// -push prints the digest-pinned reference of what it pushed; crane push of
// the tarball pushes the same digest; and deploy.sh render (make deploy)
// sets that reference as the Deployment's image.
func TestThePushedImageIsTheTarballsAndDeploys(t *testing.T) {
	t.Parallel()
	bin := operatorBinary(t)
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	// 127.0.0.1:PORT: go-containerregistry speaks plain HTTP to a loopback
	// registry.
	host := strings.TrimPrefix(srv.URL, "http://")
	repo := host + "/" + operator

	tarPath := filepath.Join(t.TempDir(), operator+".tar")
	stdout, stderr, err := runImage(t, "-binary", bin, "-version", testVersion, "-revision", testRevision,
		"-out", tarPath, "-push", repo+":"+testVersion)
	if err != nil {
		t.Fatalf("image -push: %v\n%s", err, stderr)
	}
	pinned := strings.TrimSpace(stdout)
	if strings.Count(stdout, "\n") != 1 {
		t.Errorf("got stdout %q, want the pinned reference on one line", stdout)
	}
	ref, err := name.NewDigest(pinned)
	if err != nil {
		t.Fatalf("got stdout %q, want REPOSITORY@sha256:DIGEST: %v", pinned, err)
	}
	if got := ref.Context().String(); got != repo {
		t.Errorf("got repository %s, want %s", got, repo)
	}
	t.Logf("pushed %s", pinned)

	// Pulled back by digest: the registry has the whole image (manifest,
	// config, layer), and it is the tarball's.
	pulled, err := remote.Image(ref)
	if err != nil {
		t.Fatalf("could not pull %s: %v", pinned, err)
	}
	if d, err := pulled.Digest(); err != nil || d.String() != ref.DigestStr() {
		t.Errorf("pulled %s: got digest %s (%v)", pinned, d, err)
	}
	if layers, err := pulled.Layers(); err != nil || len(layers) != 1 {
		t.Errorf("pulled %s: got %d layers (%v), want 1", pinned, len(layers), err)
	} else if files := layerFiles(t, layers[0]); len(files) != 1 || files[0].hdr.Name != "operator" {
		t.Errorf("pulled %s: got %d files in the layer, want /operator alone", pinned, len(files))
	}
	// The tag points at it too.
	if d, err := crane.Digest(repo + ":" + testVersion); err != nil || d != ref.DigestStr() {
		t.Errorf("got %s:%s at %s (%v), want %s", repo, testVersion, d, err, ref.DigestStr())
	}

	// What `crane push bin/images/<op>.tar REF` does: the same digest, so
	// a tarball pushed later deploys as the same pinned reference.
	img, err := crane.Load(tarPath)
	if err != nil {
		t.Fatalf("crane load %s: %v", tarPath, err)
	}
	if err := crane.Push(img, host+"/from-tarball:"+testVersion); err != nil {
		t.Fatalf("crane push: %v", err)
	}
	if d, err := crane.Digest(host + "/from-tarball:" + testVersion); err != nil || d != ref.DigestStr() {
		t.Errorf("crane push of the tarball: got digest %s (%v), want %s, -push's", d, err, ref.DigestStr())
	}

	// What make deploy OPERATOR=<operator> IMG=<pinned> applies.
	checkRender(t, operator, pinned)
}

// checkRender runs manifests/deploy.sh render op image, what make deploy
// OPERATOR=op IMG=image applies, and fails unless the one image it names is
// image, run as the image's user.
func checkRender(t *testing.T, op, image string) {
	t.Helper()
	cmd := exec.Command(filepath.Join(root, "manifests", "deploy.sh"), "render", op, image)
	cmd.Env = append(os.Environ(), "KUBECTL="+kubectlPath(t))
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("manifests/deploy.sh render %s %s: %v", op, image, err)
	}
	checkRendered(t, string(out), image)
}

// checkRendered fails unless the manifests out name one image, image, and
// run their pods as the image's user, so that runAsNonRoot holds.
func checkRendered(t *testing.T, out, image string) {
	t.Helper()
	var images []string
	for line := range strings.SplitSeq(out, "\n") {
		if im, ok := strings.CutPrefix(strings.TrimLeft(strings.TrimSpace(line), "- "), "image: "); ok {
			images = append(images, im)
		}
	}
	if len(images) != 1 || images[0] != image {
		t.Errorf("got images %q, want [%s]", images, image)
	}
	uid, gid, _ := strings.Cut(User, ":")
	for _, want := range []string{"runAsNonRoot: true", "runAsUser: " + uid, "runAsGroup: " + gid} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q: want the pods to run as the image's user %s", want, User)
		}
	}
}

// kubectlPath returns kubectl: KUBECTL, the one of make controlplane
// (bin/kubectl), or the PATH's; the test is skipped without one.
func kubectlPath(t *testing.T) string {
	t.Helper()
	if k := os.Getenv("KUBECTL"); k != "" {
		return k
	}
	if abs, err := filepath.Abs(filepath.Join(root, "bin", "kubectl")); err == nil {
		if _, err := os.Stat(abs); err == nil {
			return abs
		}
	}
	k, err := exec.LookPath("kubectl")
	if err != nil {
		t.Fatal("no kubectl to run manifests/deploy.sh render: make controlplane links one into bin/ (make test-integration does)")
	}
	return k
}

func mustTag(t *testing.T, s string) name.Tag {
	t.Helper()
	tag, err := name.NewTag(s)
	if err != nil {
		t.Fatal(err)
	}
	return tag
}
