// Command migrate is `make migrate-storage`: it moves the stored objects of
// custom resources to their CRD's storage version, then leaves each CRD's
// status.storedVersions holding that version alone, so that an old version
// can later leave the CRD. Run it after a new version became the storage
// version and the operator serving the conversion webhook is up
// (docs/tutorial-api-versions.md):
//
//	go run ./hack/migrate -kubeconfig ~/.kube/config webapps.webapps.example.com
//
// Where the cluster serves storagemigration.k8s.io/v1 (Kubernetes 1.37 and
// later) kube-controller-manager's migrator writes the objects, driven by
// a StorageVersionMigration; elsewhere this command writes them itself
// (-rewrite forces that). Package hack/migrate/storage says how. Each CRD
// ends with a line saying what was done:
//
//	webapps.webapps.example.com: storage version v2, storedVersions [v1 v2] -> [v2], by rewrite: 50 listed, 50 rewritten, ...
//
// It needs, as the current context's user: get and update (status) on the
// CRD, list and patch on its resource, and create and get on
// storageversionmigrations. It exits 1 if a migration fails (an object refused, the storage version
// changed meanwhile, the timeout), naming why; storedVersions is then left
// as it was, and running it again is safe.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/kooperkit/kooper/hack/migrate/storage"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	switch {
	case errors.Is(err, flag.ErrHelp):
	case errors.Is(err, errUsage):
		os.Exit(2)
	case err != nil:
		fmt.Fprintln(os.Stderr, "migrate:", err)
		os.Exit(1)
	}
}

// errUsage marks a command line that cannot be acted on; the flag set has
// printed why.
var errUsage = errors.New("usage")

// run migrates the CRDs args names, with the flags before them.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("migrate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	kubeconfig := fs.String("kubeconfig", "", "the kubeconfig; default $KUBECONFIG, else ~/.kube/config")
	rewrite := fs.Bool("rewrite", false, "write the objects with this command's own patches even where the cluster serves StorageVersionMigration")
	timeout := fs.Duration("timeout", 10*time.Minute, "give up on a CRD after this long")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: migrate [-kubeconfig FILE] [-rewrite] [-timeout D] CRD...")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return errUsage
	}
	if fs.NArg() == 0 {
		fmt.Fprintln(stderr, "migrate: name at least one CRD, <plural>.<group> (kubectl get crd lists them)")
		fs.Usage()
		return errUsage
	}
	cfg, err := loadREST(*kubeconfig)
	if err != nil {
		return err
	}
	for _, crd := range fs.Args() {
		cctx, cancel := context.WithTimeout(ctx, *timeout)
		report, err := storage.Migrate(cctx, cfg, crd, storage.Options{
			Rewrite: *rewrite,
			Logf:    func(format string, args ...any) { fmt.Fprintf(stderr, format+"\n", args...) },
		})
		cancel()
		if err != nil {
			return fmt.Errorf("%s: %w", crd, err)
		}
		fmt.Fprintln(stdout, report)
	}
	return nil
}

// loadREST reads kubeconfig, or $KUBECONFIG or ~/.kube/config when it is
// empty.
func loadREST(kubeconfig string) (*rest.Config, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = kubeconfig
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, nil).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("could not load the client config: %w", err)
	}
	return cfg, nil
}
