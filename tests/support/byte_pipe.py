"""`pipe`: copy one direction of a TCP connection, bytes as they are, until EOF or an error.

Shared by the test proxies (`registry.SlowProxy`, `cuttable_proxy.CuttableProxy`), which run
one pipe each way. Must not: look into or change the bytes.
"""

from __future__ import annotations

import asyncio


async def pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Copy `reader` to `writer` until EOF or an error, then close `writer`."""
    try:
        while data := await reader.read(65536):
            writer.write(data)
            await writer.drain()
    except OSError:
        pass
    finally:
        writer.close()
