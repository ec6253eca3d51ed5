"""One run of one CNI plugin, as libcni's invoke package runs it.

What lives here: `PluginArgs` (the CNI_* environment: command, container id, netns, ifname,
CNI_ARGS, CNI_PATH, appended to this process's environment as libcni's Args.AsEnv does) and
`exec_plugin`, which runs the plugin with the network configuration on stdin, waits at most
`time_limit` seconds (then kills it and its process group), and returns its stdout;
`CNIPluginError` for a non-zero exit (the spec's error object `{"code", "msg", "details"}`
on stdout becomes the message, else stderr) or a timeout.
Must not: block the event loop (an asyncio subprocess) or know what the result means.

Upstream: github.com/containernetworking/cni@v1.1.2 pkg/invoke/args.go (Args.AsEnv),
pkg/invoke/raw_exec.go (ExecPlugin, pluginErr), SPEC.md ("Error" result).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
from dataclasses import dataclass

MAX_OUTPUT_BYTES = 1 << 20


class CNIPluginError(Exception):
    """A plugin failed or did not answer in time; `message` says which and why."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


@dataclass(frozen=True)
class PluginArgs:
    command: str  # ADD | DEL | CHECK | VERSION
    container_id: str
    netns: str
    ifname: str
    args: str  # CNI_ARGS: `K=V;K=V`
    path: str  # CNI_PATH

    def env(self) -> dict[str, str]:
        return {
            **os.environ,
            "CNI_COMMAND": self.command,
            "CNI_CONTAINERID": self.container_id,
            "CNI_NETNS": self.netns,
            "CNI_ARGS": self.args,
            "CNI_IFNAME": self.ifname,
            "CNI_PATH": self.path,
        }


def _error_message(plugin: str, code: int | None, stdout: bytes, stderr: bytes) -> str:
    """raw_exec.go pluginErr: the spec's error object when stdout holds one."""
    with contextlib.suppress(ValueError, UnicodeDecodeError):
        data = json.loads(stdout)
        if isinstance(data, dict) and data.get("msg"):
            details = f"; {data['details']}" if data.get("details") else ""
            return f"{data['msg']}{details}"
    text = (stderr or stdout).decode("utf-8", "replace").strip()[-2048:]
    return f"netplugin {plugin} failed with exit code {code}" + (f": {text}" if text else "")


async def exec_plugin(plugin: str, args: PluginArgs, stdin: bytes, time_limit: float) -> bytes:
    """Run the plugin at path `plugin`; its stdout on success."""
    name = os.path.basename(plugin)
    try:
        proc = await asyncio.create_subprocess_exec(
            plugin,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE,
            env=args.env(),
            start_new_session=True,  # its own process group: a timeout kills what it started
        )
    except OSError as exc:
        raise CNIPluginError(f"cannot run plugin {plugin}: {exc.strerror or exc}") from exc
    try:
        stdout, stderr = await asyncio.wait_for(proc.communicate(stdin), time_limit)
    except TimeoutError:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        await proc.wait()
        raise CNIPluginError(f"plugin {name} ({args.command}) timed out after {time_limit:g}s") from None
    if proc.returncode != 0:
        raise CNIPluginError(_error_message(name, proc.returncode, stdout, stderr))
    return stdout[:MAX_OUTPUT_BYTES]
