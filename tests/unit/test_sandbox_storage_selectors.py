"""Label and field selectors: grammar, matching and upstream's error messages."""

from __future__ import annotations

import pytest

from vk_sandbox.storage.selectors import (
    SelectorError,
    field_value,
    parse_field_selector,
    parse_label_selector,
)

LABELS = {"app": "web", "tier": "front", "env": "prod"}


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        ("", True),
        ("app=web", True),
        ("app==web", True),
        ("app!=web", False),
        ("app!=db", True),
        ("missing!=x", True),
        ("app in (web,db)", True),
        ("app in (db)", False),
        ("app notin (db)", True),
        ("missing notin (db)", True),
        ("app notin (web)", False),
        ("app", True),
        ("missing", False),
        ("!missing", True),
        ("!app", False),
        ("app=web,tier=front", True),
        ("app=web, tier=back", False),
        ("app in (web), !missing, env", True),
        ("x in (in, notin)", False),
    ],
)
def test_label_selector_matches(selector: str, expected: bool) -> None:
    assert parse_label_selector(selector).matches(LABELS) is expected


def test_label_selector_empty_value_matches_empty_label() -> None:
    assert parse_label_selector("a=").matches({"a": ""})
    assert not parse_label_selector("a=").matches({})


@pytest.mark.parametrize(
    ("selector", "message"),
    [
        ("app=web,", "found '', expected: identifier after ','"),
        ("app in b", "unable to parse requirement: found 'b' expected: '('"),
        ("app in (a", "unable to parse requirement: found '', expected: ',' or ')'"),
        ("=x", "found '=', expected: !, identifier, or 'end of string'"),
        ("a b", "unable to parse requirement: found 'b', expected: '=', '!=', '==', 'in', notin'"),
        ("!a b", "found 'b', expected: ',' or 'end of string'"),
        ("a=b=c", "found '=', expected: ',' or 'end of string'"),
    ],
)
def test_label_selector_parse_errors(selector: str, message: str) -> None:
    with pytest.raises(SelectorError) as e:
        parse_label_selector(selector)
    assert e.value.message == message


def test_label_selector_invalid_key_and_value() -> None:
    with pytest.raises(SelectorError) as e:
        parse_label_selector("-a=b")
    assert e.value.message.startswith('unable to parse requirement: key: Invalid value: "-a": name part must')
    with pytest.raises(SelectorError) as e:
        parse_label_selector("a=-b")
    assert e.value.message.startswith(
        'unable to parse requirement: values[0][a]: Invalid value: "-b": a valid label must be'
    )


POD = {
    "metadata": {"name": "web", "namespace": "default"},
    "spec": {"nodeName": "vk-node", "restartPolicy": "Always", "schedulerName": "default-scheduler"},
    "status": {"phase": "Running", "podIP": "10.0.0.2", "podIPs": [{"ip": "10.0.0.2"}]},
}


@pytest.mark.parametrize(
    ("selector", "expected"),
    [
        ("", True),
        ("metadata.name=web", True),
        ("metadata.name==web", True),
        ("metadata.name!=web", False),
        ("spec.nodeName=vk-node,status.phase!=Succeeded", True),
        ("spec.nodeName=other", False),
        ("spec.nodeName=", False),
        ("spec.hostNetwork=false", True),
        ("status.podIP=10.0.0.2", True),
        ("status.nominatedNodeName=", True),
        ("metadata.namespace=default,spec.restartPolicy=Always", True),
    ],
)
def test_pod_field_selector(selector: str, expected: bool) -> None:
    assert parse_field_selector(selector, "pods").matches(POD) is expected


def test_unbound_pod_matches_empty_node_name() -> None:
    pod = {"metadata": {"name": "p"}, "spec": {}}
    assert parse_field_selector("spec.nodeName=", "pods").matches(pod)


@pytest.mark.parametrize(
    ("selector", "resource", "message"),
    [
        pytest.param(
            "spec.containers=x",
            "pods",
            "field label not supported: spec.containers",
            id="unsupported-pod-field",
        ),
        pytest.param(
            "status.phase=Active",
            "configmaps",
            "field label not supported: status.phase",
            id="unsupported-configmap-field",
        ),
        pytest.param(
            "metadata.name",
            "pods",
            "invalid selector: 'metadata.name'; can't understand 'metadata.name'",
            id="no-operator",
        ),
        pytest.param(
            "metadata.name=a\\b",
            "pods",
            "invalid field selector: invalid escape sequence: \\b",
            id="bad-escape",
        ),
    ],
)
def test_field_selector_error_messages(selector: str, resource: str, message: str) -> None:
    with pytest.raises(SelectorError) as e:
        parse_field_selector(selector, resource)
    assert e.value.message == message


def test_field_selector_escapes() -> None:
    sel = parse_field_selector("metadata.name=a\\,b", "configmaps")
    assert sel.matches({"metadata": {"name": "a,b"}})


def test_event_fields() -> None:
    ev = {
        "metadata": {"name": "web.1", "namespace": "default"},
        "involvedObject": {"kind": "Pod", "name": "web", "namespace": "default", "uid": "u1"},
        "reason": "Scheduled",
        "source": {"component": "default-scheduler"},
        "type": "Normal",
        "reportingComponent": "default-scheduler",
    }
    sel = parse_field_selector(
        "involvedObject.name=web,involvedObject.namespace=default,involvedObject.uid=u1,involvedObject.kind=Pod",
        "events",
    )
    assert sel.matches(ev)
    assert parse_field_selector("source=default-scheduler,type=Normal,reason=Scheduled", "events").matches(ev)
    assert field_value(ev, "events", "involvedObject.fieldPath") == ""


def test_node_namespace_secret_fields() -> None:
    assert parse_field_selector("spec.unschedulable=false", "nodes").matches({"metadata": {"name": "n"}})
    assert parse_field_selector("status.phase=Active", "namespaces").matches({"status": {"phase": "Active"}})
    assert parse_field_selector("type=Opaque", "secrets").matches({"type": "Opaque"})
    assert field_value({}, "leases.coordination.k8s.io", "spec.holderIdentity") is None
