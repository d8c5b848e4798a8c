"""A report in local mode opens no port beyond loopback: every socket the Spark JVM (and this process)
listens on while a roll-up runs is bound to 127.0.0.1 or ::1. Read from /proc, as ``ss -ltnp`` would."""

from __future__ import annotations

import ipaddress
import os
from pathlib import Path

LOOPBACK = {"127.0.0.1", "::1"}


def _descendants(pid: int) -> set[int]:
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:  # a process that ended while we looked
            continue
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    found, todo = set(), [pid]
    while todo:
        for child in children.get(todo.pop(), []):
            if child not in found:
                found.add(child)
                todo.append(child)
    return found | {pid}


def _socket_inodes(pids: set[int]) -> set[str]:
    inodes = set()
    for pid in pids:
        try:
            links = [os.readlink(fd) for fd in Path(f"/proc/{pid}/fd").iterdir()]
        except OSError:
            continue
        inodes |= {link[8:-1] for link in links if link.startswith("socket:[")}
    return inodes


def _address(hex_address: str) -> str:
    raw = bytes.fromhex(hex_address)
    if len(raw) == 4:
        return ".".join(str(b) for b in reversed(raw))
    words = [raw[i : i + 4][::-1] for i in range(0, 16, 4)]  # each 32-bit word is host-order
    address = ipaddress.IPv6Address(b"".join(words))
    return str(address.ipv4_mapped or address)  # a Java socket on :: shows IPv4 as ::ffff:a.b.c.d


def listening(pids: set[int]) -> list[tuple[str, int]]:
    """(address, port) of every TCP socket in LISTEN state that one of ``pids`` holds."""
    inodes = _socket_inodes(pids)
    found = []
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] == "0A" and fields[9] in inodes:
                address, port = fields[1].split(":")
                found.append((_address(address), int(port, 16)))
    return found


def test_a_local_roll_up_listens_on_loopback_only(spark):
    assert spark.range(1000).selectExpr("sum(id)").collect()[0][0] == 499500
    sockets = listening(_descendants(os.getpid()))
    assert sockets, "the driver listens somewhere (its RPC endpoint at least): the census saw nothing"
    assert {address for address, _ in sockets} <= LOOPBACK, sockets
