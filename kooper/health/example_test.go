package health_test

import (
	"context"
	"fmt"
	"io"
	"net/http"

	"github.com/kooperkit/kooper/kooper/controller/leaderelection"
	"github.com/kooperkit/kooper/kooper/health"
)

// filled stands for a *controller.Controller whose cache is filled.
type filled struct{}

func (filled) Run(ctx context.Context) error { <-ctx.Done(); return nil }
func (filled) HasSynced() bool               { return true }

// /readyz answers what the runner's Ready says: here a runner without
// leader election whose controller's cache is filled.
func ExampleStart() {
	runner, err := leaderelection.New(leaderelection.Config{Disabled: true}, filled{})
	if err != nil {
		fmt.Println(err)
		return
	}
	srv, err := health.Start(health.Config{Addr: "127.0.0.1:0", Ready: runner.Ready})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer srv.Stop()

	resp, err := http.Get("http://" + srv.Addr() + "/readyz")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	fmt.Print(resp.StatusCode, " ", string(body))
	// Output:
	// 200 synced
}
