"""The Docker bridge's gateway address, from the IPAM configuration the engine reports."""

from __future__ import annotations

from vk_sandbox.bridge_address import gateway_of


def test_the_gateway_the_engine_lists_is_taken() -> None:
    assert gateway_of([{"Subnet": "172.17.0.0/16", "Gateway": "172.17.0.1"}]) == "172.17.0.1"


def test_a_bridge_listing_no_gateway_has_the_first_address_of_its_subnet() -> None:
    # Docker 20.10's bridge on the engine's first start: a Subnet and no Gateway.
    assert gateway_of([{"Subnet": "10.88.0.0/16"}]) == "10.88.0.1"


def test_no_address_at_all_is_none_not_a_guess() -> None:
    assert gateway_of([]) is None
    assert gateway_of([{}]) is None
