// Command probe is the container of procnode's integration tests: it
// serves what it sees of its pod (host name, user, environment, the
// identity its ServiceAccount token has at the API server) and exits as
// told.
package main

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"
)

const sa = "/var/run/secrets/kubernetes.io/serviceaccount/"

func main() {
	addr := flag.String("addr", ":8080", "where to serve")
	exit := flag.Int("exit", -1, "exit at once with this code")
	name := flag.String("name", "", "a name to echo, from $(POD_NAME)")
	flag.Parse()
	if *exit >= 0 {
		fmt.Println("exiting with", *exit)
		os.Exit(*exit)
	}
	http.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	http.HandleFunc("/whoami", func(w http.ResponseWriter, _ *http.Request) {
		host, _ := os.Hostname()
		user, err := whoami()
		out := map[string]any{"host": host, "uid": os.Getuid(), "gid": os.Getgid(), "env": os.Environ(), "name": *name, "user": user}
		if err != nil {
			out["userError"] = err.Error()
		}
		if f, err := os.Create("/written"); err == nil {
			f.Close()
			out["rootWritable"] = true
		}
		_ = json.NewEncoder(w).Encode(out)
	})
	l, err := net.Listen("tcp", *addr)
	if err != nil {
		fmt.Println(err)
		os.Exit(1)
	}
	fmt.Println("serving on", *addr)
	go func() { _ = http.Serve(l, nil) }()
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM)
	<-sig
	fmt.Println("got SIGTERM")
	time.Sleep(100 * time.Millisecond)
}

// whoami asks the API server, as an in-cluster client does, who the
// mounted token is.
func whoami() (string, error) {
	token, err := os.ReadFile(sa + "token")
	if err != nil {
		return "", err
	}
	ca, err := os.ReadFile(sa + "ca.crt")
	if err != nil {
		return "", err
	}
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(ca)
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	url := "https://" + net.JoinHostPort(os.Getenv("KUBERNETES_SERVICE_HOST"), os.Getenv("KUBERNETES_SERVICE_PORT")) +
		"/apis/authentication.k8s.io/v1/selfsubjectreviews"
	req, _ := http.NewRequest(http.MethodPost, url, bytes.NewBufferString(`{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}`))
	req.Header.Set("Authorization", "Bearer "+string(token))
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	var review struct {
		Status struct {
			UserInfo struct {
				Username string `json:"username"`
			} `json:"userInfo"`
		} `json:"status"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&review); err != nil {
		return "", err
	}
	return review.Status.UserInfo.Username, nil
}
