"""``free_port()``: a TCP port free on the loopback interface right now (servers started in-process or as
children: the collector, the read API, a standalone Spark cluster)."""

from __future__ import annotations

import socket


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])
