"""The chart's hooks and the API server address value, rendered with the real `helm`.

The pre-delete hook (uninstallHook) is a Job running `vk-provider remove-node` where the
provider runs, with the provider's engine volumes, and an account that may do exactly what
vk_provider/node_removal.py does; the `helm test` pod must land on the virtual Node; and
`apiServer.host` reaches both the provider's and the hook's containers as the in-cluster
address. The whole flow runs for real in tests/e2e/test_helm_install.py.
"""

from __future__ import annotations

from typing import Any

from tests.support.chart import one, render

NODE = "docker-1"  # the node name tests/support/chart.render sets
DEPLOYMENT = "vk-vk-provider"


def _container(pod_spec: dict[str, Any]) -> dict[str, Any]:
    containers: list[dict[str, Any]] = pod_spec["containers"]
    assert len(containers) == 1
    return containers[0]


def _env(pod_spec: dict[str, Any]) -> dict[str, str]:
    return {e["name"]: e.get("value", "") for e in _container(pod_spec).get("env", [])}


def test_the_uninstall_hook_removes_the_node_where_the_provider_runs(helm: str) -> None:
    where = ("nodeSelector.kubernetes\\.io/hostname=host-1", '--set-json=tolerations=[{"operator":"Exists"}]')
    release = render(helm, *where)
    hooks = render(helm, *where, hooks=True)
    job = one(hooks, "Job")
    assert job["metadata"]["annotations"]["helm.sh/hook"] == "pre-delete"
    pod = job["spec"]["template"]["spec"]
    provider = one(release, "Deployment")["spec"]["template"]["spec"]
    assert _container(pod)["args"] == [
        "remove-node",
        "--config=/etc/vk-provider/config.yaml",
        f"--stop-deployment=vk-system/{DEPLOYMENT}",
    ]
    # The same hosts, the same engine, the same configuration as the provider.
    for key in ("nodeSelector", "tolerations", "volumes", "securityContext"):
        assert pod[key] == provider[key], key
    assert _container(pod)["volumeMounts"] == _container(provider)["volumeMounts"]
    assert _env(pod)["DOCKER_HOST"] == _env(provider)["DOCKER_HOST"] == "unix:///var/run/docker.sock"
    assert pod["serviceAccountName"] != provider["serviceAccountName"]


def test_the_uninstall_hooks_account_may_stop_this_deployment_and_delete_this_node_only(helm: str) -> None:
    hooks = render(helm, hooks=True)
    account = one(hooks, "ServiceAccount")["metadata"]["name"]
    assert one(hooks, "Job")["spec"]["template"]["spec"]["serviceAccountName"] == account
    role, cluster_role = one(hooks, "Role"), one(hooks, "ClusterRole")
    granted = {
        (group, resource, verb, tuple(rule.get("resourceNames", [])))
        for rule in role["rules"] + cluster_role["rules"]
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
    }
    assert granted == {
        ("apps", "deployments", "get", (DEPLOYMENT,)),
        ("apps", "deployments/scale", "patch", (DEPLOYMENT,)),
        ("", "pods", "list", ()),
        ("", "nodes", "delete", (NODE,)),
    }
    assert role["metadata"]["namespace"] == "vk-system"
    for kind, bound in (("RoleBinding", role), ("ClusterRoleBinding", cluster_role)):
        binding = one(hooks, kind)
        assert binding["roleRef"]["name"] == bound["metadata"]["name"]
        assert binding["subjects"] == [{"kind": "ServiceAccount", "name": account, "namespace": "vk-system"}]
    # Created before the Job, removed once it succeeded.
    for obj in hooks:
        if obj["kind"] != "Pod":
            assert "hook-succeeded" in obj["metadata"]["annotations"]["helm.sh/hook-delete-policy"]


def test_without_the_uninstall_hook_only_the_test_pod_is_a_hook(helm: str) -> None:
    assert [o["kind"] for o in render(helm, "uninstallHook.enabled=false", hooks=True)] == ["Pod"]


def test_the_test_pod_is_scheduled_onto_the_virtual_node_tolerating_its_taints(helm: str) -> None:
    taints = (
        '--set-json=config.node.taints=[{"key":"a","value":"b","effect":"NoSchedule"},'
        '{"key":"c","effect":"NoExecute"}]'
    )
    pod = one(render(helm, taints, "test.image=example/busybox:1", hooks=True), "Pod")
    assert pod["metadata"]["annotations"]["helm.sh/hook"] == "test"
    spec = pod["spec"]
    assert spec["nodeSelector"] == {"kubernetes.io/hostname": NODE}
    assert spec["tolerations"] == [
        {"key": "a", "operator": "Equal", "value": "b", "effect": "NoSchedule"},
        {"key": "c", "operator": "Exists", "effect": "NoExecute"},
    ]
    assert _container(spec)["image"] == "example/busybox:1"
    assert spec["restartPolicy"] == "Never"
    # Not counted among the provider's pods (the uninstall hook waits for those to end).
    selector = one(render(helm), "Deployment")["spec"]["selector"]["matchLabels"]
    assert not selector.items() <= pod["metadata"]["labels"].items()


def test_the_api_server_address_reaches_the_provider_and_the_hook(helm: str) -> None:
    address = ("apiServer.host=172.17.0.1", "apiServer.port=6443")
    provider = one(render(helm, *address), "Deployment")["spec"]["template"]["spec"]
    hook = one(render(helm, *address, hooks=True), "Job")["spec"]["template"]["spec"]
    for spec in (provider, hook):
        env = _env(spec)
        assert (env["KUBERNETES_SERVICE_HOST"], env["KUBERNETES_SERVICE_PORT"]) == ("172.17.0.1", "6443")
    # By default in-cluster configuration keeps what the kubelet injects.
    assert "KUBERNETES_SERVICE_HOST" not in _env(one(render(helm), "Deployment")["spec"]["template"]["spec"])


def test_the_uninstall_hooks_container_has_small_resources_that_can_be_set(helm: str) -> None:
    container = _container(one(render(helm, hooks=True), "Job")["spec"]["template"]["spec"])
    assert container["resources"] == {
        "requests": {"cpu": "50m", "memory": "64Mi"},
        "limits": {"memory": "256Mi"},
    }
    hooks = render(helm, "uninstallHook.resources.limits.memory=1Gi", hooks=True)
    container = _container(one(hooks, "Job")["spec"]["template"]["spec"])
    assert container["resources"]["limits"] == {"memory": "1Gi"}
