// Command etcd is the etcd server at the version k8s.io/kubernetes pins in its go.mod
// (go.etcd.io/etcd/server/v3), with etcd's own command line. It is a binary of its own,
// not a mode of the kube binary, so that etcd's process-wide metric registrations never
// share a process with the apiserver's.
package main

import (
	"os"

	"go.etcd.io/etcd/server/v3/etcdmain"
)

func main() {
	etcdmain.Main(os.Args)
}
