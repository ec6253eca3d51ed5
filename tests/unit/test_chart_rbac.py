"""The chart's RBAC for `credentials: serviceAccount`: what the code calls, granted; nothing more.

NEEDED is the table of every API call the provider makes, each with the code that makes it
(a module and a snippet of it, checked to be there), the values that turn it on, and the
object name RBAC can restrict it to. The tests render the chart with `helm template` and check
that every needed call is allowed by the ClusterRole (or the Role in kube-node-lease for
Leases), that taking away any one verb of any rendered rule leaves a needed call denied (so a
removed rule fails, and the chart grants nothing the table does not need), and that nothing
grants list or watch on Secrets or uses a wildcard. With `credentials: node` the ClusterRole
is exactly the CSR bootstrap (BOOTSTRAP_RULES) and there is no Role.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
import yaml

from tests.support.chart import REPO, one, render
from vk_sandbox.real import identities

NODE = "docker-1"  # the node name tests/support/chart.render sets
LEASE_NAMESPACE = "kube-node-lease"


@dataclass(frozen=True)
class Call:
    group: str
    resource: str  # with its subresource: pods/status
    verb: str
    where: tuple[str, str]  # (module under vk_provider/, a snippet of the call there)
    name: str = ""  # the one object's name, where RBAC can restrict to it
    when: str = ""  # the condition on the values: "", "webhook", "csr", "staticPods"
    namespace: str = ""  # a Role's namespace; "" for the ClusterRole


def _calls(group: str, resource: str, verbs: str, where: tuple[str, str], **kw: str) -> list[Call]:
    return [Call(group, resource, verb, where, **kw) for verb in verbs.split()]


AGENT = "node/agent.py"
NEEDED: list[Call] = [
    *_calls("", "nodes", "create", (AGENT, 'create("/api/v1/nodes", body)')),
    *_calls("", "nodes", "get", (AGENT, 'get(f"/api/v1/nodes/{self.name}")'), name=NODE),
    *_calls("", "nodes", "get", ("static/mirror.py", 'get(f"/api/v1/nodes/{self.node_name}")'), name=NODE),
    # The node's Reflector: list and watch with fieldSelector metadata.name, which RBAC
    # authorizes against resourceNames.
    *_calls("", "nodes", "list watch", (AGENT, '"metadata.name={self.name}"'), name=NODE),
    *_calls("", "nodes", "patch", (AGENT, 'patch(f"/api/v1/nodes/{self.name}", patch, "merge")'), name=NODE),
    *_calls("", "nodes/status", "patch", (AGENT, 'patch(f"/api/v1/nodes/{self.name}/status"'), name=NODE),
    *_calls("", "pods", "list watch", ("pods/api_source.py", '"spec.nodeName={node_name}"')),
    *_calls("", "pods", "get", ("status/manager.py", "get(_pod_path(entry.namespace, entry.name))")),
    *_calls("", "pods", "delete", ("status/manager.py", "delete(_pod_path(entry.namespace, entry.name)")),
    *_calls("", "pods", "delete", ("static/mirror.py", "client.delete(_pod_path(name), options)")),
    *_calls(
        "", "pods", "create", ("static/mirror.py", "client.create(_pods_path(name), body)"), when="staticPods"
    ),
    *_calls("", "pods/status", "patch", ("status/manager.py", 'patch(path + "/status", body, "strategic")')),
    *_calls("", "events", "create", ("kube/events.py", 'create(f"/api/v1/namespaces/{namespace}/events"')),
    *_calls("", "events", "patch", ("kube/events.py", "/events/{sent.name}")),
    *_calls("", "configmaps", "get", ("pods/api_source.py", 'get(f"/api/v1/namespaces/{namespace}/{_PLURAL')),
    *_calls("", "secrets", "get", ("pods/api_source.py", 'get(f"/api/v1/namespaces/{namespace}/{_PLURAL')),
    *_calls("", "services", "list watch", ("kube/services.py", "super().__init__(client, SERVICES_PATH")),
    *_calls(
        "node.k8s.io",
        "runtimeclasses",
        "list watch",
        ("kube/runtime_classes.py", "super().__init__(client, RUNTIME_CLASSES_PATH"),
    ),
    *_calls(
        "",
        "serviceaccounts/token",
        "create",
        ("pods/volume_writer.py", "/serviceaccounts/{service_account}/token"),
    ),
    *_calls(
        "certificates.k8s.io",
        "clustertrustbundles",
        "get",
        ("pods/volume_writer.py", 'client.get(f"{TRUST_BUNDLES}/{query.name}")'),
    ),
    *_calls(
        "certificates.k8s.io",
        "clustertrustbundles",
        "list",
        ("pods/volume_writer.py", "client.get(TRUST_BUNDLES, params)"),
    ),
    *_calls(
        "certificates.k8s.io",
        "podcertificaterequests",
        "create",
        ("pods/pod_certificates.py", "client.create(REQUESTS.format(namespace=namespace), body)"),
    ),
    *_calls(
        "certificates.k8s.io",
        "podcertificaterequests",
        "get",
        ("pods/pod_certificates.py", 'client.get(REQUESTS.format(namespace=namespace) + f"/{name}")'),
    ),
    *_calls(
        "",
        "serviceaccounts",
        "get",
        ("pods/pod_certificates.py", 'client.get(f"/api/v1/namespaces/{namespace}/serviceaccounts/{name}")'),
    ),
    *_calls(
        "authentication.k8s.io",
        "tokenreviews",
        "create",
        ("kubeletapi/webhook.py", '"/apis/authentication.k8s.io/v1/tokenreviews"'),
        when="webhook",
    ),
    *_calls(
        "authorization.k8s.io",
        "subjectaccessreviews",
        "create",
        ("kubeletapi/webhook.py", '"/apis/authorization.k8s.io/v1/subjectaccessreviews"'),
        when="webhook",
    ),
    *_calls(
        "certificates.k8s.io",
        "certificatesigningrequests",
        "create",
        ("kubeletapi/csr.py", 'generate_name=f"csr-{self.node_name}-"'),
        when="csr",
    ),
    *_calls(
        "certificates.k8s.io",
        "certificatesigningrequests",
        "get",
        ("kube/certificates.py", 'get(f"{CSR_PATH}/{name}")'),
        when="csr",
    ),
    *_calls(
        "coordination.k8s.io",
        "leases",
        "create",
        ("node/lease.py", "create(lease_path(self.node_name, collection=True), body)"),
        namespace=LEASE_NAMESPACE,
    ),
    *_calls(
        "coordination.k8s.io",
        "leases",
        "get",
        ("node/lease.py", "get(lease_path(self.node_name))"),
        name=NODE,
        namespace=LEASE_NAMESPACE,
    ),
    *_calls(
        "coordination.k8s.io",
        "leases",
        "update",
        ("node/lease.py", "replace(lease_path(self.node_name), body)"),
        name=NODE,
        namespace=LEASE_NAMESPACE,
    ),
]
# Not granted by the chart: SelfSubjectReview (node/agent.py, whether we run as a kubelet) is
# every authenticated user's by the default system:basic-user role, and its absence is handled;
# approving our own serving CSR (kubeletapi/csr.py, `/approval`) is attempted, and a refusal
# leaves the approval to a person or an approver, which is safer than granting it.

# The values of each variant and the conditions they turn on.
VARIANTS: dict[str, tuple[tuple[str, ...], set[str]]] = {
    "defaults": ((), {"webhook"}),
    "static pods, csr": (
        ("config.staticPods.path=/etc/vk/manifests", "config.kubeletServer.tls.mode=csr"),
        {"webhook", "staticPods", "csr"},
    ),
    "x509, no webhook": (
        ("config.kubeletServer.auth=x509", "config.kubeletServer.clientCAFile=/ca.pem"),
        set(),
    ),
}


def _rules(objects: list[dict[str, Any]], namespace: str) -> list[dict[str, Any]]:
    role = one(objects, "Role", namespace=namespace) if namespace else one(objects, "ClusterRole")
    rules: list[dict[str, Any]] = role["rules"]
    return rules


def _allows(rules: list[dict[str, Any]], call: Call) -> bool:
    """RBAC's rule matching (k8s.io/kubernetes/pkg/apis/rbac/v1/evaluation_helpers.go), without wildcards."""
    return any(
        call.group in rule["apiGroups"]
        and call.resource in rule["resources"]
        and call.verb in rule["verbs"]
        and (not rule.get("resourceNames") or call.name in rule["resourceNames"])
        for rule in rules
    )


def _denied(objects: list[dict[str, Any]], on: set[str]) -> list[Call]:
    needed = [c for c in NEEDED if not c.when or c.when in on]
    return [c for c in needed if not _allows(_rules(objects, c.namespace), c)]


def test_every_needed_call_is_cited_from_the_code() -> None:
    for call in NEEDED:
        module, snippet = call.where
        assert snippet in (REPO / "vk_provider" / module).read_text(), call


@pytest.mark.parametrize("variant", VARIANTS)
def test_the_chart_grants_every_call_the_code_makes(helm: str, variant: str) -> None:
    sets, on = VARIANTS[variant]
    assert _denied(render(helm, *sets), on) == []


@pytest.mark.parametrize("variant", VARIANTS)
def test_every_granted_verb_is_needed(helm: str, variant: str) -> None:
    """Taking away any one verb of any rendered rule denies a call the code makes: so a rule
    removed from the chart fails the test above, and no rule grants more than NEEDED."""
    sets, on = VARIANTS[variant]
    objects = render(helm, *sets)
    assert _denied(objects, on) == []
    for namespace in ("", LEASE_NAMESPACE):
        role = one(objects, "Role", namespace=namespace) if namespace else one(objects, "ClusterRole")
        rules = role["rules"]
        for i, rule in enumerate(rules):
            for resource in rule["resources"]:
                for verb in rule["verbs"]:
                    narrowed = [
                        {**rule, "resources": [resource], "verbs": [v for v in rule["verbs"] if v != verb]},
                        {**rule, "resources": [r for r in rule["resources"] if r != resource]},
                    ]
                    kept = [r for r in narrowed if r["resources"] and r["verbs"]]
                    role["rules"] = [*rules[:i], *kept, *rules[i + 1 :]]
                    assert _denied(objects, on), f"{resource} {verb} of {rule} is not needed"
        role["rules"] = rules


@pytest.mark.parametrize("variant", VARIANTS)
def test_no_list_or_watch_on_secrets_and_no_wildcard(helm: str, variant: str) -> None:
    objects = render(helm, *VARIANTS[variant][0])
    for obj in objects:
        for rule in obj.get("rules", []):
            for key in ("apiGroups", "resources", "verbs", "resourceNames", "nonResourceURLs"):
                assert not [v for v in rule.get(key, []) if "*" in v], rule
            if "secrets" in rule["resources"]:
                assert not {"list", "watch"} & set(rule["verbs"]), rule


def test_shared_rbac_serves_providers_of_any_node_name_with_static_pods(helm: str) -> None:
    """`rbac.shared`: one service account for several providers (vk-provider sandbox's real
    control plane): the node's own rules for whatever name, and mirror pods."""
    objects = render(helm, "rbac.shared=true")
    needed = [c for c in NEEDED if c.when in ("", "webhook", "staticPods")]
    for call in needed:
        other = Call(call.group, call.resource, call.verb, call.where, "node-b" if call.name else "")
        assert _allows(_rules(objects, call.namespace), other), call
    assert _allows(_rules(render(helm), ""), Call("", "nodes", "get", ("", ""), NODE))
    assert not _allows(_rules(render(helm), ""), Call("", "nodes", "get", ("", ""), "node-b"))


def test_the_sandbox_renders_the_chart_rbac_it_shares_between_its_providers() -> None:
    tools = identities.find_chart_tools()
    if tools is None:
        pytest.skip("no helm binary: run scripts/ensure-helm.sh")
    objects = identities.render_chart_rbac(tools, identities.chart_values({}))
    mirror_pods = Call("", "pods", "create", ("", ""))
    assert _allows(_rules(objects, ""), mirror_pods)
    assert _allows(
        _rules(objects, LEASE_NAMESPACE), Call("coordination.k8s.io", "leases", "update", ("", ""), "x")
    )


def test_pods_are_created_only_with_static_pods(helm: str) -> None:
    create = Call("", "pods", "create", ("", ""))
    assert not _allows(_rules(render(helm), ""), create)
    assert _allows(_rules(render(helm, "config.staticPods.path=/etc/vk/manifests"), ""), create)


def test_bindings_name_the_service_account_and_never_cluster_admin(helm: str) -> None:
    objects = render(helm)
    account = one(objects, "ServiceAccount")["metadata"]
    subject = {"kind": "ServiceAccount", "name": account["name"], "namespace": "vk-system"}
    for kind, role in (("ClusterRoleBinding", "ClusterRole"), ("RoleBinding", "Role")):
        binding = one(objects, kind)
        assert binding["subjects"] == [subject]
        assert binding["roleRef"] == {
            "apiGroup": "rbac.authorization.k8s.io",
            "kind": role,
            "name": one(objects, role)["metadata"]["name"],
        }
    assert one(objects, "RoleBinding")["metadata"]["namespace"] == LEASE_NAMESPACE


def test_rbac_and_service_account_can_be_left_to_the_user(helm: str) -> None:
    objects = render(helm, "rbac.create=false", "serviceAccount.create=false", "serviceAccount.name=vk-sa")
    assert sorted(o["kind"] for o in objects) == ["ConfigMap", "Deployment"]
    assert one(objects, "Deployment")["spec"]["template"]["spec"]["serviceAccountName"] == "vk-sa"


# --- credentials: node ---------------------------------------------------------------------------

# What the service account still does with `credentials: node`: bootstrap (and renew) the
# node's client certificate. Everything in NEEDED is then the certificate's, under the Node
# authorizer (plugin/pkg/auth/authorizer/rbac/bootstrappolicy NodeRules) and NodeRestriction.
BOOTSTRAP_NEEDED: list[Call] = [
    *_calls(
        "certificates.k8s.io",
        "certificatesigningrequests",
        "create",
        ("kube/certificates.py", "await client.create(CSR_PATH, body)"),
    ),
    *_calls(
        "certificates.k8s.io",
        "certificatesigningrequests",
        "get",
        ("kube/certificates.py", 'get(f"{CSR_PATH}/{name}")'),
    ),
    # Not called by the provider: the csrapproving controller's SubjectAccessReview for the
    # requester of a kube-apiserver-client-kubelet CSR (approver/sarapprove.go).
    *_calls(
        "certificates.k8s.io",
        "certificatesigningrequests/nodeclient",
        "create",
        ("kube/node_credentials.py", 'SIGNER = "kubernetes.io/kube-apiserver-client-kubelet"'),
    ),
]
BOOTSTRAP_RULES = [
    {
        "apiGroups": ["certificates.k8s.io"],
        "resources": ["certificatesigningrequests"],
        "verbs": ["create", "get"],
    },
    {
        "apiGroups": ["certificates.k8s.io"],
        "resources": ["certificatesigningrequests/nodeclient"],
        "verbs": ["create"],
    },
]


def test_every_bootstrap_call_is_cited_from_the_code() -> None:
    for call in BOOTSTRAP_NEEDED:
        module, snippet = call.where
        assert snippet in (REPO / "vk_provider" / module).read_text(), call


@pytest.mark.parametrize(
    "sets",
    [(), *(sets for sets, _ in VARIANTS.values()), ("rbac.shared=true",)],
    ids=["defaults", *VARIANTS, "shared"],
)
def test_node_credentials_grant_exactly_the_bootstrap_rules(helm: str, sets: tuple[str, ...]) -> None:
    """With `credentials=node` the ClusterRole is the CSR bootstrap and nothing else, whatever
    the other values: no Node, pod, Secret or Lease rule, no Role in kube-node-lease."""
    objects = render(helm, "credentials=node", *sets)
    assert sorted(o["kind"] for o in objects) == [
        "ClusterRole",
        "ClusterRoleBinding",
        "ConfigMap",
        "Deployment",
        "ServiceAccount",
    ]
    rules = _rules(objects, "")
    assert rules == BOOTSTRAP_RULES
    assert all(_allows(rules, call) for call in BOOTSTRAP_NEEDED)
    assert not [c for c in NEEDED if c.group != "certificates.k8s.io" and _allows(rules, c)]
    binding = one(objects, "ClusterRoleBinding")
    assert binding["subjects"][0]["name"] == one(objects, "ServiceAccount")["metadata"]["name"]
    config = yaml.safe_load(one(objects, "ConfigMap")["data"]["config.yaml"])
    assert config["kubernetes"]["credentials"] == "node"


def test_service_account_credentials_are_the_default_and_render_no_bootstrap_rule(helm: str) -> None:
    objects = render(helm)
    assert "certificatesigningrequests/nodeclient" not in str(_rules(objects, ""))
    config = yaml.safe_load(one(objects, "ConfigMap")["data"]["config.yaml"])
    assert config["kubernetes"]["credentials"] == "serviceAccount"
