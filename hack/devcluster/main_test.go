package main

import "testing"

// The printed hints name the kubectl make controlplane built, as the user
// types it in the repository where make runs: bin/kubectl, never a kubectl
// on the PATH that may not match the server.
func TestTheHintsNameTheKubectlThatMatchesTheServer(t *testing.T) {
	tests := []struct {
		name, path, wd, want string
	}{
		{name: "bin/ of the repository make runs in", path: "/src/kooper/bin/kubectl", wd: "/src/kooper", want: "bin/kubectl"},
		{name: "a bin/ above it, named in full", path: "/src/bin/kubectl", wd: "/src/kooper", want: "/src/bin/kubectl"},
		{name: "another directory ($KOOPER_CONTROLPLANE_BIN), named in full", path: "/opt/k8s/kubectl", wd: "/src/kooper", want: "/opt/k8s/kubectl"},
		{name: "none built: the PATH's, by name", path: "kubectl", wd: "/src/kooper", want: "kubectl"},
		{name: "an unknown working directory: in full", path: "/src/kooper/bin/kubectl", wd: "", want: "/src/kooper/bin/kubectl"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := kubectlName(tt.path, tt.wd); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}
