package main

import (
	"archive/tar"
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/kooperkit/kooper/hack/envtest"
	"github.com/kooperkit/kooper/hack/envtest/procnode"
)

// nodeName is the procnode node of a dev cluster started with -pods.
const nodeName = "devcluster"

// podsOptions are what a dev cluster that runs pods (-pods) adds to the
// control plane: a scheduler and the controller manager for its one node,
// and webhook calls routed to a Service's endpoints, as kube-proxy would
// (no kube-proxy runs), so that a deployed operator's webhooks answer.
func podsOptions(o envtest.Options) envtest.Options {
	o.Nodes = 0
	o.Scheduler = true
	o.ControllerManager = true
	o.APIServerArgs = append(o.APIServerArgs, "--enable-aggregator-routing=true")
	return o
}

// nodeImages returns the images a -pods node has: every image tarball
// named in paths (files, or directories whose *.tar are taken), each under
// every tag it holds, the tag that make image IMG=... gives it. A tag held
// by two tarballs is an error: the node could not tell which one a pod
// names.
func nodeImages(paths []string) (map[string]procnode.Image, error) {
	images := map[string]procnode.Image{}
	from := map[string]string{}
	for _, p := range paths {
		info, err := os.Stat(p)
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("-images: no %s: build an image first (make image OPERATOR=<name> IMG=<tag>)", p)
		}
		if err != nil {
			return nil, fmt.Errorf("-images: %w", err)
		}
		tarballs := []string{p}
		if info.IsDir() {
			if tarballs, err = filepath.Glob(filepath.Join(p, "*.tar")); err != nil {
				return nil, fmt.Errorf("-images: %w", err)
			}
		}
		for _, tb := range tarballs {
			tags, err := imageTags(tb)
			if err != nil {
				return nil, fmt.Errorf("-images: %s: %w", tb, err)
			}
			for _, tag := range tags {
				if other, ok := from[tag]; ok && other != tb {
					return nil, fmt.Errorf("-images: %s and %s are both tagged %s: give one another tag (make image IMG=...)", other, tb, tag)
				}
				from[tag] = tb
				images[tag] = procnode.Image{Tarball: tb}
			}
		}
	}
	if len(images) == 0 {
		return nil, fmt.Errorf("-images: no image tarball in %s: build one first (make image OPERATOR=<name> IMG=<tag>)", strings.Join(paths, ", "))
	}
	return images, nil
}

// errNoTag is a tarball whose image has no tag: a pod could not name it.
var errNoTag = errors.New("its image has no tag (make image tags it IMG, or IMAGE_REGISTRY/<operator>:VERSION)")

// imageTags returns the tags of the first image of a tarball in the format
// of `docker save`, which make image writes: its manifest.json's
// RepoTags. The node runs that first image.
func imageTags(tarball string) ([]string, error) {
	f, err := os.Open(tarball)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	tr := tar.NewReader(bufio.NewReader(f))
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil, errors.New("no manifest.json: not an image tarball (make image writes one)")
		}
		if err != nil {
			return nil, fmt.Errorf("not an image tarball: %w", err)
		}
		if filepath.Clean(h.Name) != "manifest.json" {
			continue
		}
		var manifest []struct {
			RepoTags []string `json:"RepoTags"`
		}
		if err := json.NewDecoder(tr).Decode(&manifest); err != nil {
			return nil, fmt.Errorf("manifest.json: %w", err)
		}
		if len(manifest) == 0 {
			return nil, errors.New("manifest.json lists no image")
		}
		if len(manifest[0].RepoTags) == 0 {
			return nil, errNoTag
		}
		return manifest[0].RepoTags, nil
	}
}

// startNode starts the -pods node with images and returns its stop
// function. Its log lines go to out, each after "node: ".
func startNode(ctx context.Context, cluster *envtest.Cluster, images map[string]procnode.Image, out io.Writer) (func() error, error) {
	log := &prefixWriter{prefix: "    node: ", w: out}
	node, err := procnode.Start(ctx, procnode.Options{
		Name:   nodeName,
		Config: cluster.Config(),
		Images: images,
		Dir:    filepath.Join(cluster.Dir(), "node"),
		Log:    log,
	})
	if err != nil {
		return nil, fmt.Errorf("could not start the node that runs pods: %w", err)
	}
	return func() error {
		// ctx is done by now (Ctrl-C): the pods get their grace period
		// from a context of their own.
		stopCtx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		return node.Stop(stopCtx)
	}, nil
}

// tags returns the images' references, sorted.
func tags(images map[string]procnode.Image) []string {
	refs := make([]string, 0, len(images))
	for ref := range images {
		refs = append(refs, ref)
	}
	slices.Sort(refs)
	return refs
}

// prefixWriter writes each whole line written to it to w, after prefix.
type prefixWriter struct {
	prefix string
	mu     sync.Mutex
	w      io.Writer
	buf    []byte
}

func (p *prefixWriter) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.buf = append(p.buf, b...)
	for {
		i := strings.IndexByte(string(p.buf), '\n')
		if i < 0 {
			return len(b), nil
		}
		if _, err := fmt.Fprintf(p.w, "%s%s\n", p.prefix, p.buf[:i]); err != nil {
			return len(b), err
		}
		p.buf = p.buf[i+1:]
	}
}
