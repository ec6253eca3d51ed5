// Command coredns is CoreDNS (github.com/coredns/coredns) with only the plugins of the
// Corefile kubeadm deploys (k8s.io/kubernetes cmd/kubeadm/app/phases/addons/dns/manifests.go):
// errors, health, ready, kubernetes, prometheus (metrics), forward, cache, loop, reload,
// loadbalance, plus log. The upstream main (coredns.go) imports core/plugin, which pulls in
// every plugin and the cloud SDKs of several of them; importing the few the sandbox's
// Corefile names keeps the build short. The plugin order stays upstream's
// (core/dnsserver/zdirectives.go): a plugin not linked is simply absent.
package main

import (
	"github.com/coredns/coredns/coremain"
	_ "github.com/coredns/coredns/plugin/cache"
	_ "github.com/coredns/coredns/plugin/errors"
	_ "github.com/coredns/coredns/plugin/forward"
	_ "github.com/coredns/coredns/plugin/health"
	_ "github.com/coredns/coredns/plugin/kubernetes"
	_ "github.com/coredns/coredns/plugin/loadbalance"
	_ "github.com/coredns/coredns/plugin/log"
	_ "github.com/coredns/coredns/plugin/loop"
	_ "github.com/coredns/coredns/plugin/metrics"
	_ "github.com/coredns/coredns/plugin/ready"
	_ "github.com/coredns/coredns/plugin/reload"
)

func main() {
	coremain.Run()
}
