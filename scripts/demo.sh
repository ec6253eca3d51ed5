#!/usr/bin/env bash
# The sandbox demo (`make demo`): the embedded control plane, one virtual node run by the
# provider on the local Docker engine, a static pod from examples/static-pods and the example
# pod examples/hello-pod.yaml, shown with the real kubectl. Keeps running until Ctrl-C;
# DEMO_EXIT=1 stops after the tour (used by the tests).
#   DEMO_STATE_DIR  state directory (default .sandbox)   DEMO_PORT  API port (default 6443)
#   DEMO_CONTROL_PLANE  emulator (default: starts in a second) or real (the upstream
#                       kube-apiserver & co., built once by scripts/ensure-kube.sh)
#   KUBECTL  the kubectl to show (default: the pinned one in .venv, else the one on PATH)
set -euo pipefail
cd "$(dirname "$0")/.."

STATE=${DEMO_STATE_DIR:-.sandbox}
PORT=${DEMO_PORT:-6443}
VK=${VK_PROVIDER:-.venv/bin/vk-provider}
NODE=sandbox-1
PLANE=${DEMO_CONTROL_PLANE:-emulator}
KUBECTL=${KUBECTL:-$([ -x .venv/bin/kubectl ] && echo .venv/bin/kubectl || echo kubectl)}
mkdir -p "$STATE"
STATE=$(cd "$STATE" && pwd)
K=("$KUBECTL" --kubeconfig "$STATE/kubeconfig")
PLANE_ARGS=(--control-plane "$PLANE")
if [ "$PLANE" = real ]; then
  step_note="the real control plane (kube-apiserver, controller manager, scheduler, etcd)"
  PLANE_ARGS+=(--kube-bin "$(bash scripts/ensure-kube.sh)")
else
  step_note="the embedded control plane"
fi

# The provider configuration: the example config plus an absolute static pod directory.
{
  cat examples/sandbox-config.yaml
  printf 'staticPods:\n  path: %s\n  relistInterval: 5s\n' "$PWD/examples/static-pods"
} >"$STATE/demo-config.yaml"

step() { printf '\n\033[1m== %s\033[0m\n' "$*"; }
run() { printf '$'; printf ' %q' "$@"; printf '\n'; "$@"; }

step "Starting the sandbox ($step_note + provider for node $NODE); log: $STATE/sandbox.log"
rm -f "$STATE/kubeconfig"
"$VK" sandbox "${PLANE_ARGS[@]}" --state-dir "$STATE" --port "$PORT" --nodes 1 \
  --config "$STATE/demo-config.yaml" --clean >"$STATE/sandbox.log" 2>&1 &
SANDBOX_PID=$!
stop_sandbox() {
  if kill -0 "$SANDBOX_PID" 2>/dev/null; then
    kill -TERM "$SANDBOX_PID" 2>/dev/null || true
    wait "$SANDBOX_PID" 2>/dev/null || true
  fi
}
trap 'echo; echo "stopping the sandbox..."; stop_sandbox; exit 0' INT TERM
trap stop_sandbox EXIT

for _ in $(seq 1 360); do
  [ -s "$STATE/kubeconfig" ] && break
  kill -0 "$SANDBOX_PID" 2>/dev/null || { cat "$STATE/sandbox.log"; exit 1; }
  sleep 0.5
done
for _ in $(seq 1 120); do
  "${K[@]}" get node "$NODE" >/dev/null 2>&1 && break
  kill -0 "$SANDBOX_PID" 2>/dev/null || { cat "$STATE/sandbox.log"; exit 1; }
  sleep 0.5
done
run "${K[@]}" wait --for=condition=Ready "node/$NODE" --timeout=120s

step "The virtual node"
run "${K[@]}" get nodes -o wide

step "The example pod: scheduled onto $NODE by nodeSelector + toleration"
run "${K[@]}" apply -f examples/hello-pod.yaml
run "${K[@]}" wait --for=condition=Ready pod/hello --timeout=120s
run "${K[@]}" get pods -o wide
POD_IP=$("${K[@]}" get pod hello -o jsonpath='{.status.podIP}')

step "Served from the pod IP ($POD_IP) by busybox httpd"
run wget -qO- "http://$POD_IP:8080/" 2>/dev/null || run python3 -c "import urllib.request; print(urllib.request.urlopen('http://$POD_IP:8080/').read().decode())"

step "Logs and exec through the kubelet API"
sleep 2
run "${K[@]}" logs hello -c logger --tail=3
run "${K[@]}" exec hello -c web -- sh -c 'echo "hostname: $(hostname)"; ls /var/www'

step "The static pod from examples/static-pods, as its mirror pod"
"${K[@]}" wait --for=condition=Ready "pod/clock-$NODE" --timeout=120s >/dev/null
run "${K[@]}" get pod "clock-$NODE" -o wide
run "${K[@]}" get pod "clock-$NODE" -o jsonpath='{.metadata.annotations}'
echo

step "Events the provider recorded"
run "${K[@]}" get events --field-selector involvedObject.name=hello --sort-by=.lastTimestamp

if [ "${DEMO_EXIT:-0}" = 1 ]; then
  step "Cleaning up"
  run "${K[@]}" delete pod hello --wait=true
  exit 0
fi

cat <<MSG

The sandbox keeps running. In another terminal:
  export KUBECONFIG=$STATE/kubeconfig
  kubectl get pods -o wide
  kubectl logs -f hello -c logger
  kubectl exec -it hello -c web -- sh
  kubectl delete pod hello
Press Ctrl-C here to stop it (the node's containers are removed).
MSG
wait "$SANDBOX_PID"
