"""What a user types, end to end: `vk-provider sandbox` (control plane + one provider on the real
Docker engine) started as a subprocess, then the real kubectl against it: the node, a two-container
pod (HTTP to the pod IP, logs, logs -f, exec over WebSocket and SPDY, exec -it on a terminal,
port-forward, describe, events), a failing pod, a crash loop, logs and exec of containers that never
started (an image that cannot be pulled, an init container still running), `kubectl debug` (an
ephemeral container in its target's PID namespace), deletes, and SIGTERM with `--clean`.

One sandbox serves the whole module on each control-plane tier (`--control-plane`: the emulator,
and the real upstream control plane with the providers under the Helm chart's RBAC); each test
makes its own pods, except the read-only tests that share the `web` pod. The stop test starts a
sandbox of its own.
"""

from __future__ import annotations

import json
import os
import pty
import re
import select
import subprocess
import time
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from tests.support.polling import until
from tests.support.sandbox_process import (
    COUNTER,
    DEADLINE,
    KUBECTL,
    POD_NAME_LABEL,
    Sandbox,
    module_sandbox,
    node_containers,
    pod_manifest,
    remove_node_containers,
    start_sandbox,
    stop_sandbox,
)

pytestmark = [pytest.mark.kubectl, pytest.mark.docker]


sandbox = module_sandbox("provider-kubectl")


WEB = "web"


@pytest.fixture(scope="module")
def web(sandbox: Sandbox) -> str:
    """A Ready pod `web`: container `counter` prints `line N` every second, `httpd` serves
    busybox's index page on 8080. Tests only read it."""
    containers = [
        {"name": "counter", "image": "vk-test/busybox:1", "command": ["sh", "-c", COUNTER]},
        {
            "name": "httpd",
            "image": "vk-test/busybox:1",
            "command": ["httpd", "-f", "-p", "8080", "-h", "/var/www"],
        },
    ]
    sandbox.apply(pod_manifest(WEB, sandbox.node, containers, terminationGracePeriodSeconds=5))
    sandbox.kubectl("wait", "--for=condition=Ready", f"pod/{WEB}", "--timeout=120s", timeout=150)
    return WEB


def test_node_is_ready_with_docker_info_labels_and_taint(sandbox: Sandbox) -> None:
    node = json.loads(sandbox.kubectl("get", "node", sandbox.node, "-o", "json").stdout)
    info = node["status"]["nodeInfo"]
    assert info["containerRuntimeVersion"].startswith("docker://")
    assert info["osImage"] and info["kernelVersion"]
    labels = node["metadata"]["labels"]
    assert labels["type"] == "virtual-kubelet"
    assert labels["kubernetes.io/hostname"] == sandbox.node
    assert {"key": "virtual-kubelet.io/provider", "value": "docker", "effect": "NoSchedule"} in node["spec"][
        "taints"
    ]

    wide = sandbox.kubectl("get", "nodes", "-o", "wide").stdout
    header, *rows = wide.splitlines()
    assert "OS-IMAGE" in header and "KERNEL-VERSION" in header and "CONTAINER-RUNTIME" in header
    row = next(r for r in rows if r.split()[0] == sandbox.node)
    assert row.split()[1] == "Ready", wide
    assert info["osImage"] in row and info["kernelVersion"] in row and info["containerRuntimeVersion"] in row

    described = sandbox.kubectl("describe", "node", sandbox.node).stdout
    assert "virtual-kubelet.io/provider=docker:NoSchedule" in described


def _try_http(url: str) -> str | None:
    """The body of a GET, or None while nothing answers yet."""
    try:
        with urllib.request.urlopen(url, timeout=10) as resp:
            return str(resp.read().decode())
    except OSError:
        return None


def test_pod_runs_both_containers_and_serves_http_on_its_ip(sandbox: Sandbox, web: str) -> None:
    wide = sandbox.kubectl("get", "pods", "-o", "wide").stdout
    row = next(r.split() for r in wide.splitlines() if r.split()[0] == web)
    # NAME READY STATUS RESTARTS AGE IP NODE NOMINATED-NODE READINESS-GATES
    assert row[1:3] == ["2/2", "Running"], wide
    pod_ip = sandbox.kubectl("get", "pod", web, "-o", "jsonpath={.status.podIP}").stdout
    assert pod_ip and row[5] == pod_ip and row[6] == sandbox.node, wide
    body = until(f"httpd on {pod_ip}:8080", lambda: _try_http(f"http://{pod_ip}:8080/"))
    assert body == "hello from vk-test/busybox\n"


def test_kubectl_logs_and_logs_follow(sandbox: Sandbox, web: str) -> None:
    out = until(
        "two log lines",
        lambda: (
            (r := sandbox.kubectl("logs", web, "-c", "counter", check=False)).returncode == 0
            and "line 1\n" in r.stdout
            and r.stdout
        ),
    )
    assert out.startswith("line 0\nline 1\n")

    proc = subprocess.Popen(
        [KUBECTL, "--kubeconfig", str(sandbox.kubeconfig), "logs", "-f", web, "-c", "counter", "--tail=1"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None
    try:
        # pytest-timeout bounds this read; the counter writes a line every second.
        lines = [proc.stdout.readline().decode() for _ in range(3)]
    finally:
        proc.kill()
        proc.wait()
    assert proc.stderr is not None
    assert all(lines), (lines, proc.stderr.read(), sandbox.log_tail())
    numbers = [int(line.split()[1]) for line in lines]
    assert numbers == list(range(numbers[0], numbers[0] + 3)), lines  # new lines arrive as written


@pytest.mark.parametrize("websockets", ["true", "false"])  # false: kubectl speaks SPDY/3.1
def test_kubectl_exec_exit_code_and_stdin(sandbox: Sandbox, web: str, websockets: str) -> None:
    env = {"KUBECTL_REMOTE_COMMAND_WEBSOCKETS": websockets}
    result = sandbox.kubectl(
        "exec", web, "-c", "counter", "--", "sh", "-c", "echo hi; exit 3", check=False, env=env
    )
    assert (result.returncode, result.stdout) == (3, "hi\n"), result.stderr
    result = sandbox.kubectl(
        "exec", "-i", web, "-c", "httpd", "--", "cat", stdin="from stdin\nline two\n", env=env
    )
    assert result.stdout == "from stdin\nline two\n"


def test_kubectl_exec_it_runs_an_interactive_shell_on_a_tty(sandbox: Sandbox, web: str) -> None:
    master, slave = pty.openpty()
    proc = subprocess.Popen(
        [KUBECTL, "--kubeconfig", str(sandbox.kubeconfig), "exec", "-it", web, "-c", "counter", "--", "sh"],
        stdin=slave,
        stdout=slave,
        stderr=slave,
    )
    os.close(slave)
    try:
        os.write(master, b"echo $((6*7)); tty; exit 5\n")  # the terminal buffers it for the shell
        out = b""
        end = time.monotonic() + DEADLINE
        while time.monotonic() < end:
            if select.select([master], [], [], 0.5)[0]:
                try:
                    chunk = os.read(master, 4096)
                except OSError:  # EIO: kubectl exited and closed the terminal
                    break
                if not chunk:
                    break
                out += chunk
            elif proc.poll() is not None:
                break
        code = proc.wait(timeout=DEADLINE)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        os.close(master)
    text = out.decode(errors="replace")
    assert code == 5, text
    assert "\r\n42\r\n/dev/pts/" in text, text  # a terminal on both ends: CRLF, and tty names a pty


def test_crash_loop_shows_back_off_restarts_and_previous_logs(sandbox: Sandbox) -> None:
    name = "crashy"
    script = "echo run; exit 2"
    containers = [{"name": "main", "image": "vk-test/busybox:1", "command": ["sh", "-c", script]}]
    sandbox.apply(pod_manifest(name, sandbox.node, containers, terminationGracePeriodSeconds=2))

    def backing_off() -> list[str] | None:
        row = sandbox.kubectl("get", "pod", name, "--no-headers").stdout.split()
        return row if row[2] == "CrashLoopBackOff" and row[3] != "0" else None

    row = until(f"pod {name} in CrashLoopBackOff", backing_off)
    assert row[1] == "0/1", row
    previous = sandbox.kubectl("logs", name, "--previous").stdout
    assert previous == "run\n", previous
    status = json.loads(sandbox.kubectl("get", "pod", name, "-o", "json").stdout)["status"]
    last = status["containerStatuses"][0]["lastState"]["terminated"]
    assert (last["exitCode"], last["reason"]) == (2, "Error")
    sandbox.kubectl("delete", "pod", name, timeout=90)


def _waiting_reason(sandbox: Sandbox, name: str, key: str = "containerStatuses") -> str:
    status = json.loads(sandbox.kubectl("get", "pod", name, "-o", "json").stdout).get("status") or {}
    states = [s.get("state") or {} for s in status.get(key) or []]
    return str(((states[0].get("waiting") or {}).get("reason") or "") if states else "")


# What kubectl prints against a real kubelet for a container that never started: the kubelet's
# validateContainerLogStatus text relayed by the apiserver as a 400, and GetExec's 500 body
# relayed as the failed upgrade (pkg/kubelet/kubelet_pods.go, pkg/kubelet/server/server.go).
PULL_FAILURES = {
    "ErrImagePull": "image can't be pulled",
    "ImagePullBackOff": "trying and failing to pull image",
}


@pytest.mark.parametrize("websockets", ["true", "false"])  # false: kubectl speaks SPDY/3.1
def test_logs_and_exec_of_a_container_whose_image_cannot_be_pulled(sandbox: Sandbox, websockets: str) -> None:
    name = f"unpullable-{'ws' if websockets == 'true' else 'spdy'}"
    containers = [{"name": "c", "image": "127.0.0.1:1/vk-test/missing:1"}]
    sandbox.apply(pod_manifest(name, sandbox.node, containers, terminationGracePeriodSeconds=1))
    until(f"pod {name} failing to pull", lambda: _waiting_reason(sandbox, name) in PULL_FAILURES)

    logs = sandbox.kubectl("logs", name, check=False)
    assert logs.returncode == 1, logs
    expected = {
        f'Error from server (BadRequest): container "c" in pod "{name}" is waiting to start: {why}\n'
        for why in PULL_FAILURES.values()
    }
    assert logs.stderr in expected, logs.stderr

    env = {"KUBECTL_REMOTE_COMMAND_WEBSOCKETS": websockets}
    result = sandbox.kubectl("exec", name, "-c", "c", "--", "true", check=False, env=env)
    assert result.returncode == 1, result
    # Over WebSocket the apiserver's stream translator reports the kubelet's refusal as a Status.
    wrapped = "Internal error occurred: " if websockets == "true" else ""
    assert result.stderr == f'error: {wrapped}unable to upgrade connection: container not found ("c")\n', (
        result.stderr
    )
    sandbox.kubectl("delete", "pod", name, timeout=90)


def test_logs_of_an_app_container_while_its_init_container_runs(sandbox: Sandbox) -> None:
    name = "initializing"
    init = [{"name": "setup", "image": "vk-test/busybox:1", "command": ["sh", "-c", "sleep 3600"]}]
    containers = [{"name": "app", "image": "vk-test/busybox:1", "command": ["sh", "-c", COUNTER]}]
    sandbox.apply(
        pod_manifest(name, sandbox.node, containers, initContainers=init, terminationGracePeriodSeconds=1)
    )
    until(f"pod {name} initializing", lambda: _waiting_reason(sandbox, name) == "PodInitializing")

    logs = sandbox.kubectl("logs", name, "-c", "app", check=False)
    waiting = f'container "app" in pod "{name}" is waiting to start: PodInitializing'
    assert (logs.returncode, logs.stderr) == (1, f"Error from server (BadRequest): {waiting}\n"), logs
    result = sandbox.kubectl("exec", name, "-c", "app", "--", "true", check=False)  # WebSocket
    refused = 'unable to upgrade connection: container not found ("app")'
    assert result.stderr == f"error: Internal error occurred: {refused}\n", result.stderr
    sandbox.kubectl("delete", "pod", name, timeout=90)


def test_kubectl_port_forward_reaches_httpd(sandbox: Sandbox, web: str) -> None:
    proc = subprocess.Popen(
        [KUBECTL, "--kubeconfig", str(sandbox.kubeconfig), "port-forward", f"pod/{web}", ":8080"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    try:
        line = proc.stdout.readline().decode()  # pytest-timeout bounds this read
        match = re.match(r"Forwarding from 127\.0\.0\.1:(\d+) -> 8080", line)
        assert match, (line, sandbox.log_tail())
        body = until("a forwarded connection", lambda: _try_http(f"http://127.0.0.1:{match.group(1)}/"))
        assert body == "hello from vk-test/busybox\n"
    finally:
        proc.kill()
        proc.wait()


def test_kubectl_describe_shows_kubelet_events(sandbox: Sandbox, web: str) -> None:
    wanted = ("Scheduled", "Created", "Started", "Started container counter", "Started container httpd")

    def events() -> str | None:  # the recorder posts events in the background
        described = sandbox.kubectl("describe", "pod", web).stdout
        section = described[described.index("Events:") :]
        complete = all(w in section for w in wanted) and ("Pulled" in section or "Pulling" in section)
        return section if complete else None

    section = until("Scheduled, Pulled, Created and Started in kubectl describe", events)
    assert "default-scheduler" in section and "kubelet" in section, section


def test_kubectl_get_events_shows_the_kubelet_source(sandbox: Sandbox, web: str) -> None:
    def started() -> list[dict[str, Any]]:
        items = json.loads(sandbox.kubectl("get", "events", "-o", "json").stdout)["items"]
        # Not every Event names its object: the real controller manager's ServiceCIDR warning has none.
        return [e for e in items if e["involvedObject"].get("name") == web and e["reason"] == "Started"]

    events = until("Started events of the web pod", started)
    assert all(e["source"] == {"component": "kubelet", "host": sandbox.node} for e in events), events
    wide = sandbox.kubectl(
        "get", "events", "--field-selector", f"involvedObject.name={web}", "-o", "wide"
    ).stdout
    assert f"kubelet, {sandbox.node}" in wide, wide


def test_failing_pod_with_restart_never_shows_error(sandbox: Sandbox) -> None:
    name = "fails"
    containers = [{"name": "main", "image": "vk-test/busybox:1", "command": ["sh", "-c", "echo bye; exit 1"]}]
    sandbox.apply(pod_manifest(name, sandbox.node, containers, restartPolicy="Never"))
    phase = "jsonpath={.status.phase}"
    until(f"pod {name} Failed", lambda: sandbox.kubectl("get", "pod", name, "-o", phase).stdout == "Failed")
    row = sandbox.kubectl("get", "pod", name, "--no-headers").stdout.split()
    assert row[1:4] == ["0/1", "Error", "0"], row
    state = json.loads(sandbox.kubectl("get", "pod", name, "-o", "json").stdout)["status"]
    terminated = state["containerStatuses"][0]["state"]["terminated"]
    assert (terminated["exitCode"], terminated["reason"]) == (1, "Error")
    assert sandbox.kubectl("logs", name).stdout == "bye\n"


def test_kubectl_delete_stops_the_containers_and_the_pod_disappears(
    sandbox: Sandbox, docker_client: Any
) -> None:
    name = "doomed"
    containers = [{"name": "main", "image": "vk-test/busybox:1", "command": ["sh", "-c", COUNTER]}]
    sandbox.apply(pod_manifest(name, sandbox.node, containers, terminationGracePeriodSeconds=5))
    sandbox.kubectl("wait", "--for=condition=Ready", f"pod/{name}", "--timeout=120s", timeout=150)
    assert node_containers(docker_client, sandbox.node, **{POD_NAME_LABEL: name})
    # kubectl delete waits until the pod is gone: the shell (PID 1, no TERM handler) is killed
    # when the 5 s grace period runs out.
    sandbox.kubectl("delete", "pod", name, timeout=90)
    gone = sandbox.kubectl("get", "pod", name, check=False)
    assert gone.returncode == 1 and "NotFound" in gone.stderr, gone
    until(
        f"the containers of {name} removed from Docker",
        lambda: not node_containers(docker_client, sandbox.node, **{POD_NAME_LABEL: name}),
    )


def test_delete_ends_when_the_containers_stop_not_when_the_grace_period_ends(sandbox: Sandbox) -> None:
    name = "quick-exit"
    script = "trap 'echo got TERM; exit 0' TERM; echo trapped; while true; do sleep 1; done"
    containers = [{"name": "main", "image": "vk-test/busybox:1", "command": ["sh", "-c", script]}]
    sandbox.apply(pod_manifest(name, sandbox.node, containers, terminationGracePeriodSeconds=300))
    sandbox.kubectl("wait", "--for=condition=Ready", f"pod/{name}", "--timeout=120s", timeout=150)
    # A SIGTERM before the shell has set its trap is ignored (pid 1 without a handler), as on a
    # kubelet: a loaded CI machine once deleted the pod 160 ms after the start, before the trap.
    until("the shell's trap", lambda: "trapped" in sandbox.kubectl("logs", name).stdout, 60)
    # The shell exits on SIGTERM at once; a pod that stayed until its 300 s grace period ran out
    # would make kubectl give up after its (generous) wait.
    sandbox.kubectl("delete", "pod", name, "--timeout=120s", timeout=150)
    gone = sandbox.kubectl("get", "pod", name, check=False)
    assert gone.returncode == 1 and "NotFound" in gone.stderr, gone


def test_sigterm_stops_the_sandbox_and_clean_removes_containers(
    tmp_path: Path, docker_client: Any, test_images: dict[str, str], control_plane: str
) -> None:
    sb = start_sandbox(tmp_path, test_images["pause"], control_plane)
    try:
        containers = [{"name": "main", "image": "vk-test/busybox:1", "command": ["sleep", "3600"]}]
        sb.apply(pod_manifest("left-running", sb.node, containers))
        sb.kubectl("wait", "--for=condition=Ready", "pod/left-running", "--timeout=120s", timeout=150)
        assert node_containers(docker_client, sb.node)
        assert stop_sandbox(sb) == 0, sb.log_tail()
        assert node_containers(docker_client, sb.node) == [], "--clean left containers behind"
    finally:
        if sb.proc.poll() is None:
            sb.proc.kill()
            sb.proc.wait()
        remove_node_containers(docker_client, sb.node)


def _ephemeral_statuses(sandbox: Sandbox, pod: str) -> dict[str, Any]:
    got = json.loads(sandbox.kubectl("get", "pod", pod, "-o", "json").stdout)
    return {s["name"]: s for s in got["status"].get("ephemeralContainerStatuses") or []}


def test_kubectl_debug_runs_in_the_target_s_pid_namespace(sandbox: Sandbox) -> None:
    main = {"name": "c", "image": "vk-test/busybox:1", "command": ["sleep", "3600"]}
    sandbox.apply(pod_manifest("debuggee", sandbox.node, [main], terminationGracePeriodSeconds=1))
    sandbox.kubectl("wait", "--for=condition=Ready", "pod/debuggee", "--timeout=120s", timeout=150)
    # --profile=baseline: the default (general) adds SYS_PTRACE, which this node does not allow
    sandbox.kubectl(
        "debug", "debuggee", "-c", "dbg", "--image=vk-test/busybox:1", "--image-pull-policy=Never",
        "--target=c", "--profile=baseline", "--", "sh", "-c", "ps -o args; echo hi",
    )  # fmt: skip
    status = until(
        "dbg terminated",
        lambda: (
            (s := _ephemeral_statuses(sandbox, "debuggee").get("dbg")) and "terminated" in s["state"] and s
        ),
    )
    assert status["state"]["terminated"]["exitCode"] == 0 and status["ready"] is False
    logs = sandbox.kubectl("logs", "debuggee", "-c", "dbg").stdout
    assert "sleep 3600" in logs and logs.endswith("hi\n")
    described = sandbox.kubectl("describe", "pod", "debuggee").stdout
    assert "Ephemeral Containers:" in described and "dbg:" in described
