"""Free TCP ports for the servers the harness and its tests start."""

from __future__ import annotations

import socket

__all__ = ["free_port", "free_ports"]


def free_ports(count: int, host: str = "127.0.0.1") -> list[int]:
    """``count`` ports free on ``host`` right now, held open together so that they differ. Another
    process may still take one before it is used: callers that can bind port 0 themselves should."""
    sockets: list[socket.socket] = []
    try:
        for _ in range(count):
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.bind((host, 0))
            sockets.append(sock)
        return [s.getsockname()[1] for s in sockets]
    finally:
        for sock in sockets:
            sock.close()


def free_port(host: str = "127.0.0.1") -> int:
    return free_ports(1, host)[0]
