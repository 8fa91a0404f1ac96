// Command httpget prints the body of an HTTP GET, as curl -sf does: the
// tutorials use it to read an operator's /metrics, /healthz and /readyz
// with nothing installed but Go (make test runs them on a machine with only
// Go, make and gcc). It exits 1, saying why, when the request fails or the
// status is not 2xx.
//
//	go run ./hack/httpget http://127.0.0.1:8080/metrics
package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"time"
)

func main() {
	if err := get(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "httpget:", err)
		os.Exit(1)
	}
}

// get writes the body at args' one URL to out.
func get(args []string, out io.Writer) error {
	if len(args) != 1 {
		return fmt.Errorf("want one URL, got %d arguments", len(args))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, args[0], nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(out, resp.Body); err != nil {
		return fmt.Errorf("reading %s: %w", args[0], err)
	}
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("%s: %s", args[0], resp.Status)
	}
	return nil
}
