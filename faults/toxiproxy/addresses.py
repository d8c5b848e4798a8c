"""Listen and upstream addresses as Toxiproxy's Go runtime treats them.

A proxy listens with ``net.Listen("tcp", listen)`` and then reports ``listener.Addr().String()``
(proxy.go ``Proxy.listen``); whether an update or a populate restarts a proxy depends on
``net.ResolveTCPAddr("tcp", listen).String()`` (proxy.go ``Proxy.Differs``). So: ``localhost:0``
listens on 127.0.0.1 (Go prefers IPv4 for "tcp") and a wildcard host (empty, ``0.0.0.0``, ``::``)
listens dual-stack and reports ``[::]:PORT``; an address Go cannot resolve or bind is an error that
is not an ``*ApiError``, so the API answers it with 500 and Go's text."""

from __future__ import annotations

import ipaddress
import os
import socket

from .errors import ApiError, internal_error

__all__ = ["join_host_port", "listen_socket", "resolve", "resolved_string", "split_host_port"]


def split_host_port(address: str) -> tuple[str, str]:
    """``net.SplitHostPort``: ``[v6]:port``, ``host:port`` or ``:port``."""
    if address.startswith("["):
        end = address.find("]")
        if end < 0:
            raise internal_error(f"address {address}: missing ']' in address")
        host, rest = address[1:end], address[end + 1 :]
        if not rest.startswith(":"):
            raise internal_error(f"address {address}: missing port in address")
        return host, rest[1:]
    host, sep, port = address.rpartition(":")
    if not sep:
        raise internal_error(f"address {address}: missing port in address")
    if ":" in host:
        raise internal_error(f"address {address}: too many colons in address")
    return host, port


def _port(address: str, port: str) -> int:
    if port.isdigit():
        if int(port) > 65535:
            raise internal_error(f"address {address}: invalid port")
        return int(port)
    if port == "":
        return 0
    try:
        return socket.getservbyname(port, "tcp")
    except OSError:
        raise internal_error(f"lookup tcp/{port}: unknown port") from None


def join_host_port(host: str, port: int) -> str:
    """``net.JoinHostPort``, as ``TCPAddr.String`` writes an address (``:PORT`` without an IP)."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def resolve(address: str) -> tuple[str, int]:
    """``net.ResolveTCPAddr("tcp", address)``: the IP ("" for none) and port."""
    host, port_text = split_host_port(address)
    port = _port(address, port_text)
    if host == "":
        return "", port
    try:
        return str(ipaddress.ip_address(host.split("%", 1)[0])), port
    except ValueError:
        pass
    try:
        found = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror:
        raise internal_error(f"lookup {host}: no such host") from None
    ips = [info[4][0] for info in found]
    ipv4 = [ip for ip in ips if ":" not in ip]
    return (ipv4 or ips)[0], port


def resolved_string(address: str) -> str:
    """``net.ResolveTCPAddr("tcp", address).String()``, what ``Proxy.Differs`` compares."""
    ip, port = resolve(address)
    return join_host_port(ip, port)


def listen_socket(address: str) -> tuple[socket.socket, str]:
    """A listening socket as ``net.Listen("tcp", address)`` opens it, and the address it reports."""
    try:
        ip, port = resolve(address)
    except ApiError as exc:
        raise internal_error(f"listen tcp: {exc.message}") from None
    wildcard = ip in ("", "0.0.0.0", "::")
    if wildcard:
        family, bind_ip = (
            (socket.AF_INET6, "::") if socket.has_dualstack_ipv6() else (socket.AF_INET, "0.0.0.0")
        )
    else:
        family, bind_ip = (socket.AF_INET6 if ":" in ip else socket.AF_INET), ip
    # IPPROTO_TCP, not 0: asyncio sets TCP_NODELAY only on sockets that say they are TCP, and Go sets
    # it on every connection (without it, small writes wait for delayed ACKs: ~40 ms each)
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        if family == socket.AF_INET6:
            sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0 if wildcard else 1)
        sock.bind((bind_ip, port))
        sock.listen(128)
    except OSError as exc:
        sock.close()
        reason = (os.strerror(exc.errno) if exc.errno else str(exc)).lower()  # Go's syscall wording
        raise internal_error(f"listen tcp {join_host_port(ip, port)}: bind: {reason}") from None
    sock.setblocking(False)
    bound = sock.getsockname()
    return sock, join_host_port(bound[0], bound[1])
