"""Pod-to-pod traffic between the real-plane sandbox's nodes: two iptables rules.

What lives here: `PodForwarding`, which lets the pods of the sandbox's nodes reach each other
across the engine's networks without address translation, as Kubernetes' network model asks
(every pod reaches every other pod by its own address). In Docker mode each node's pods sit on
a bridge of their own (`vk-pods-<node>`, the node's `/22` of the cluster range); Docker drops
traffic between two of its networks (`DOCKER-ISOLATION-STAGE-*`) and masquerades what leaves a
bridge for another interface. So, while the sandbox runs:

- `filter DOCKER-USER`: `-s <cluster> -d <cluster> -j ACCEPT`. Docker's `FORWARD` chain jumps to
  `DOCKER-USER` before its isolation chains; the chain is Docker's documented place for rules of
  the host's own (docs.docker.com, "Docker and iptables").
- `nat POSTROUTING`: `-s <cluster> -d <cluster> -j RETURN` ahead of Docker's `MASQUERADE`, so a
  pod sees the other pod's own address (flannel and kubenet keep pod-to-pod traffic out of
  masquerading the same way). Docker inserts a network's `MASQUERADE` rule at the top of
  `POSTROUTING` when it creates the network, which a provider does after the sandbox started
  (a node's network once it has a podCIDR), so a task checks the order every `KEEP_SECONDS`
  and moves the rule back to the top, as kube-proxy's sync loop keeps its own jumps in place.
  The rule leaves alone the packets kube-proxy marked for masquerading (a pod that reaches
  itself through its Service needs the masquerade of `KUBE-POSTROUTING`).

Both carry the comment `vk-provider sandbox`; `start()` first removes any left by a sandbox that
was killed, `stop()` ends the task and removes them. Nothing leaves the machine: the cluster range has the
blackhole route of `host_network` behind the nodes' bridges. Needs root.
Must not: touch kube-proxy's `KUBE-*` chains or any rule it did not add.
"""

from __future__ import annotations

import asyncio

from vk_common.logging import get_logger
from vk_common.tasks import BackgroundTask

log = get_logger("sandbox.real")

COMMENT = "vk-provider sandbox"
KEEP_SECONDS = 2.0
RULES = (("filter", "DOCKER-USER"), ("nat", "POSTROUTING"))
# kube-proxy's --iptables-masquerade-bit default (14): the mark of packets KUBE-POSTROUTING masquerades.
KUBE_MASQUERADE_MARK = "0x4000"


class PodForwardingError(Exception):
    """A rule could not be added; the message has iptables' answer."""


async def _iptables(*args: str) -> tuple[int, str]:
    proc = await asyncio.create_subprocess_exec(
        "iptables", "-w", "5", *args, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT
    )
    out, _ = await proc.communicate()
    return proc.returncode or 0, out.decode(errors="replace").strip()


class PodForwarding:
    def __init__(self, cluster_cidr: str) -> None:
        self.cluster_cidr = cluster_cidr
        self._keeper = BackgroundTask("keep the pod forwarding rule in place")

    def _rule(self, table: str) -> tuple[str, ...]:
        """The rule of `table` as `iptables -t <table> <op> <chain> ...` wants it after the chain."""
        both = ("-s", self.cluster_cidr, "-d", self.cluster_cidr)
        if table == "filter":
            return (*both, "-m", "comment", "--comment", COMMENT, "-j", "ACCEPT")
        # A packet kube-proxy marked for masquerading (a pod reaching itself through its
        # Service) keeps its masquerade: KUBE-POSTROUTING may come after this rule.
        unmarked = ("-m", "mark", "!", "--mark", f"{KUBE_MASQUERADE_MARK}/{KUBE_MASQUERADE_MARK}")
        return (*both, *unmarked, "-m", "comment", "--comment", COMMENT, "-j", "RETURN")

    async def start(self) -> None:
        await self.stop()
        await _iptables(
            "-t", "filter", "-N", "DOCKER-USER"
        )  # Docker makes it; an engine that never ran has none
        for table, chain in RULES:
            code, out = await _iptables("-t", table, "-I", chain, "1", *self._rule(table))
            if code != 0:
                await self.stop()
                raise PodForwardingError(f"iptables -t {table} -I {chain}: {out}")
        log.info(
            "cluster network: pods of all nodes reach each other",
            extra={"clusterCIDR": self.cluster_cidr},
        )
        self._keeper.start(self._keep_in_place)

    async def _keep_in_place(self) -> None:
        while True:
            await asyncio.sleep(KEEP_SECONDS)
            _, listing = await _iptables("-t", "nat", "-S", "POSTROUTING")
            if _in_place([rule for rule in listing.splitlines() if rule.startswith("-A ")]):
                continue
            await self._remove("nat", "POSTROUTING")
            code, out = await _iptables("-t", "nat", "-I", "POSTROUTING", "1", *self._rule("nat"))
            if code != 0:
                log.error("cannot keep the pod forwarding rule in place", extra={"output": out})

    async def _remove(self, table: str, chain: str) -> None:
        """Delete every copy of the rule of `table` (a killed sandbox may have left some)."""
        for _ in range(16):
            code, _ = await _iptables("-t", table, "-D", chain, *self._rule(table))
            if code != 0:
                return

    async def stop(self) -> None:
        """End the keeper and remove the rules."""
        await self._keeper.stop()
        for table, chain in RULES:
            await self._remove(table, chain)


def _in_place(rules: list[str]) -> bool:
    """Whether the RETURN rule is the first of `POSTROUTING` (`-A` lines, in order), once."""
    return bool(rules) and COMMENT in rules[0] and sum(COMMENT in rule for rule in rules) == 1
