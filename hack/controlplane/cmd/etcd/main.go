// Command etcd is etcd's own server entry point, built from this module.
//
// `go install go.etcd.io/etcd/v3@...` does not work (etcd's go.mod has
// replace directives), so build.sh compiles this instead, against the etcd
// server version k8s.io/kubernetes pins (see go.mod).
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
