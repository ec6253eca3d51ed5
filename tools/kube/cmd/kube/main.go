// Command kube is one multi-call binary for the upstream Kubernetes control plane:
// kube-apiserver, kube-controller-manager, kube-scheduler and kube-proxy, built from the
// k8s.io/kubernetes module at the version in the repository's KUBE_VERSION file.
//
// It dispatches on the name it was called by (a symlink named kube-apiserver, …) or on
// its first argument ("kube apiserver --flags…"). One binary instead of three: the
// components share most of their packages, so one link is smaller on disk and quicker
// to build. Each component still runs in a process of its own (their global flag and
// metric registries must not meet); this binary never runs two in one process.
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	_ "time/tzdata" // time zones for CronJob, as the upstream mains

	"github.com/spf13/cobra"
	"k8s.io/component-base/cli"
	_ "k8s.io/component-base/logs/json/register"          // --logging-format=json
	_ "k8s.io/component-base/metrics/prometheus/clientgo" // client-go metrics
	_ "k8s.io/component-base/metrics/prometheus/version"  // the build info metric
	apiserver "k8s.io/kubernetes/cmd/kube-apiserver/app"
	controllermanager "k8s.io/kubernetes/cmd/kube-controller-manager/app"
	proxy "k8s.io/kubernetes/cmd/kube-proxy/app"
	scheduler "k8s.io/kubernetes/cmd/kube-scheduler/app"
)

var components = map[string]func() *cobra.Command{
	"apiserver":          func() *cobra.Command { return apiserver.NewAPIServerCommand() },
	"controller-manager": func() *cobra.Command { return controllermanager.NewControllerManagerCommand() },
	"scheduler":          func() *cobra.Command { return scheduler.NewSchedulerCommand() },
	"proxy":              func() *cobra.Command { return proxy.NewProxyCommand() },
}

func main() {
	name := strings.TrimPrefix(filepath.Base(os.Args[0]), "kube-")
	args := os.Args[1:]
	if _, ok := components[name]; !ok && len(args) > 0 {
		name, args = strings.TrimPrefix(args[0], "kube-"), args[1:]
	}
	build, ok := components[name]
	if !ok {
		fmt.Fprintln(os.Stderr, "usage: kube apiserver|controller-manager|scheduler|proxy [flags]")
		os.Exit(2)
	}
	command := build()
	command.SetArgs(args)
	os.Exit(cli.Run(command))
}
