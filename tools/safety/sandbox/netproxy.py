"""The network a sandboxed command gets with ``sandbox: {network: true}``: a proxy that never reaches this machine.

Under bubblewrap a command always has its own network namespace (only its own loopback), so nothing on
127.0.0.1 — the kernel's ports, Jupyter, ``%mcp serve`` — is reachable from it. With the network opted in,
the call gets an HTTP proxy (``CONNECT host:port`` and absolute-URI requests) listening on a unix socket in its
private temp dir, and a forwarder inside the sandbox (``FORWARDER``) that offers it at ``127.0.0.1:3128`` with
``HTTP(S)_PROXY`` set. The proxy resolves each host itself and connects only to global addresses (never
loopback, private, link-local, multicast or unspecified ones: this machine and its LAN stay out of reach,
whatever name points there), and answers 403 otherwise.
"""

from __future__ import annotations

import ipaddress
import logging
import os
import socket
import threading
from collections.abc import Callable
from urllib.parse import urlsplit

__all__ = ["FORWARDER", "PORT", "Proxy", "allowed_address"]

log = logging.getLogger(__name__)

PORT = 3128  # inside the sandbox's own network namespace
_HEAD_LIMIT = 16384
_CONNECT_TIMEOUT = 15.0

#: Relay one direction of a connection, then shut both ends: the same text runs in the proxy (``_pipe``) and
#: inside the sandbox (``FORWARDER``, under ``python -S``, where this module cannot be imported).
_PIPE = """
def pipe(a, b):
    try:
        while data := a.recv(65536):
            b.sendall(data)
    except OSError:
        pass
    for s in (a, b):
        try:
            s.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
"""

#: Run inside the sandbox as ``python -S -c FORWARDER SOCKET COMMAND``: listen on 127.0.0.1:PORT, then the
#: parent becomes ``bash -c COMMAND`` while a child relays each connection to the proxy's unix socket.
FORWARDER = f"""
import os, socket, sys, threading
path, command = sys.argv[1], sys.argv[2]
srv = socket.socket()
srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind(("127.0.0.1", {PORT}))
srv.listen(64)
if os.fork():
    srv.close()
    os.execvp("bash", ["bash", "-c", command])
os.setsid()
for fd in (0, 1, 2):
    os.dup2(os.open(os.devnull, os.O_RDWR), fd)
""" + _PIPE + """
while True:
    client, _ = srv.accept()
    up = socket.socket(socket.AF_UNIX)
    try:
        up.connect(path)
    except OSError:
        client.close()
        continue
    threading.Thread(target=pipe, args=(client, up), daemon=True).start()
    threading.Thread(target=pipe, args=(up, client), daemon=True).start()
"""


_NAT64 = ipaddress.ip_network("64:ff9b::/96")  # the well-known NAT64 prefix: the last 32 bits are the IPv4 host
_NAT64_LOCAL = ipaddress.ip_network("64:ff9b:1::/48")  # a network's own translator (RFC 8215): its LAN


def allowed_address(ip: str) -> bool:
    """Only global unicast addresses: never this machine, its LAN, link-local (cloud metadata) or multicast.
    An IPv6 address that carries an IPv4 one (mapped, compatible, 6to4, NAT64) is judged by the IPv4 host it
    reaches: ``64:ff9b::10.0.0.5`` is the LAN behind a NAT64 gateway, whatever ``is_global`` says of it."""
    addr: ipaddress.IPv4Address | ipaddress.IPv6Address = ipaddress.ip_address(ip.split("%", 1)[0])
    if isinstance(addr, ipaddress.IPv6Address):
        if addr in _NAT64_LOCAL:
            return False
        embedded = addr.ipv4_mapped or addr.sixtofour
        if embedded is None and (addr in _NAT64 or int(addr) >> 32 == 0):  # NAT64, or IPv4-compatible ::a.b.c.d
            embedded = ipaddress.IPv4Address(int(addr) & 0xFFFFFFFF)
        addr = embedded or addr
    return addr.is_global and not addr.is_multicast


def _target(head: bytes) -> tuple[str, int, bool] | None:
    """(host, port, is CONNECT) from a request head, or None when it is not one the proxy serves."""
    try:
        method, target, _version = head.split(b"\r\n", 1)[0].decode("latin-1").split(" ", 2)
    except ValueError:
        return None
    if method.upper() == "CONNECT":
        host, _, port = target.rpartition(":")
        host = host.strip("[]")
        return (host, int(port), True) if host and port.isdigit() else None
    url = urlsplit(target)
    if url.scheme != "http" or not url.hostname:
        return None
    return url.hostname, url.port or 80, False


class Proxy:
    """One call's proxy on the unix socket ``path``; ``close`` ends it and every tunnel."""

    def __init__(self, path: str, *, allow: Callable[[str], bool] = allowed_address) -> None:
        self.path, self._allow = path, allow
        self._server = socket.socket(socket.AF_UNIX)
        self._server.bind(path)
        os.chmod(path, 0o600)
        self._server.listen(64)
        self._open: set[socket.socket] = set()
        self._lock = threading.Lock()
        self._closed = False
        threading.Thread(target=self._accept, name="hermes-nb-netproxy", daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._server.accept()
            except OSError:
                return  # closed
            self._keep(client)
            threading.Thread(target=self._serve, args=(client,), daemon=True).start()

    def _keep(self, sock: socket.socket) -> None:
        with self._lock:
            if self._closed:
                sock.close()
            else:
                self._open.add(sock)

    def _serve(self, client: socket.socket) -> None:
        head = b""
        while b"\r\n\r\n" not in head and len(head) < _HEAD_LIMIT:
            chunk = client.recv(4096)
            if not chunk:
                client.close()
                return
            head += chunk
        target = _target(head)
        if target is None:
            return self._answer(client, 400, "the proxy serves CONNECT and http:// requests only")
        host, port, tunnel = target
        try:
            found = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except OSError as exc:
            return self._answer(client, 502, f"cannot resolve {host}: {exc}")
        allowed = [a for a in found if self._allow(str(a[4][0]))]
        if not allowed:
            return self._answer(client, 403, f"{host} is this machine, its network or not a public address")
        family, kind, proto, _, sockaddr = allowed[0]
        up = socket.socket(family, kind, proto)
        up.settimeout(_CONNECT_TIMEOUT)
        try:
            up.connect(sockaddr)
        except OSError as exc:
            up.close()
            return self._answer(client, 502, f"cannot connect to {host}:{port}: {exc}")
        up.settimeout(None)
        self._keep(up)
        if tunnel:
            client.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
        else:
            up.sendall(head)
        threading.Thread(target=_pipe, args=(up, client), daemon=True).start()
        _pipe(client, up)

    def _answer(self, client: socket.socket, status: int, why: str) -> None:
        body = f"hermes_nb sandbox: {why}\n".encode()
        reason = {400: "Bad Request", 403: "Forbidden", 502: "Bad Gateway"}[status]
        try:
            client.sendall(f"HTTP/1.1 {status} {reason}\r\nContent-Length: {len(body)}\r\nConnection: close\r\n\r\n"
                           .encode() + body)
        except OSError:
            pass
        client.close()

    def close(self) -> None:
        with self._lock:
            self._closed = True
            sockets, self._open = list(self._open), set()
        self._server.close()
        for sock in sockets:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            sock.close()


def _compiled_pipe() -> Callable[[socket.socket, socket.socket], None]:
    """``_PIPE`` as a function of this process (the text is this module's own, never a command's)."""
    namespace: dict[str, object] = {"socket": socket}
    exec(compile(_PIPE, f"<{__name__}._PIPE>", "exec"), namespace)
    return namespace["pipe"]  # type: ignore[return-value]


_pipe = _compiled_pipe()
