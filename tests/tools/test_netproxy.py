"""``sandbox: {network: true}`` under bubblewrap: the only way out is a proxy that reaches public addresses and
never this machine (the kernel's ports), its LAN or link-local metadata services."""

from __future__ import annotations

import socket
import sys
import threading
from pathlib import Path

import pytest
import yaml

from hermes_nb.tools.safety.sandbox.netproxy import Proxy, allowed_address
from hermes_nb.tools.terminal_tool import run_command
from tests.support.bubblewrap import require_bwrap

ADDRESSES = [  # (address, allowed, why)
    ("127.0.0.1", False, "loopback: the kernel's ports, Jupyter, %mcp serve"),
    ("127.8.9.10", False, "all of 127.0.0.0/8"),
    ("::1", False, "IPv6 loopback"),
    ("::ffff:127.0.0.1", False, "loopback spelled as an IPv4-mapped IPv6 address"),
    ("0.0.0.0", False, "unspecified: connects to this machine"),
    ("10.1.2.3", False, "private LAN (a kernel bound to 0.0.0.0 is reachable there)"),
    ("192.168.0.10", False, "private LAN"),
    ("172.17.0.1", False, "the docker bridge"),
    ("169.254.169.254", False, "link-local: cloud metadata and its credentials"),
    ("fe80::1%eth0", False, "IPv6 link-local"),
    ("224.0.0.1", False, "multicast"),
    ("203.0.113.5", False, "documentation range, not global"),
    ("64:ff9b::10.1.2.3", False, "the LAN behind a NAT64 gateway (an IPv6-only cloud subnet reaches its VPC so)"),
    ("64:ff9b::169.254.169.254", False, "link-local metadata through NAT64"),
    ("64:ff9b:1::a01:203", False, "a local-use NAT64 prefix: the network's own translator"),
    ("2002:a01:203::1", False, "6to4 spelling of 10.1.2.3"),
    ("::127.0.0.1", False, "loopback as an IPv4-compatible IPv6 address"),
    ("64:ff9b::8.8.8.8", True, "a public IPv4 host through NAT64"),
    ("8.8.8.8", True, "a public address"),
    ("2606:4700:4700::1111", True, "a public IPv6 address"),
]


@pytest.mark.parametrize(("address", "allowed", "why"), ADDRESSES, ids=[a[0] for a in ADDRESSES])
def test_only_public_addresses_are_reached(address: str, allowed: bool, why: str) -> None:
    assert allowed_address(address) is allowed, why


def _echo_server() -> socket.socket:
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(4)

    def serve() -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            data = conn.recv(65536)
            conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello" if data.startswith(b"GET") else data)
            conn.close()

    threading.Thread(target=serve, daemon=True).start()
    return server


def _ask(path: str, head: bytes, then: bytes = b"") -> bytes:
    with socket.socket(socket.AF_UNIX) as s:
        s.connect(path)
        s.sendall(head)
        if then:
            assert s.recv(4096).startswith(b"HTTP/1.1 200 Connection established")
            s.sendall(then)
        out = b""
        while chunk := s.recv(4096):
            out += chunk
            if then and out:
                break
        return out


def test_the_proxy_relays_connect_and_plain_requests(tmp_path: Path) -> None:
    """The address policy is the seam: allowing loopback here lets a local server stand in for the internet."""
    server = _echo_server()
    port = server.getsockname()[1]
    proxy = Proxy(str(tmp_path / "p.sock"), allow=lambda ip: True)
    try:
        assert _ask(proxy.path, f"CONNECT 127.0.0.1:{port} HTTP/1.1\r\n\r\n".encode(), b"ping") == b"ping"
        reply = _ask(proxy.path, f"GET http://127.0.0.1:{port}/x HTTP/1.1\r\nHost: a\r\n\r\n".encode())
        assert reply.endswith(b"hello")
        assert b"400 Bad Request" in _ask(proxy.path, b"GET /relative HTTP/1.1\r\n\r\n")
    finally:
        proxy.close()
        server.close()
    default = Proxy(str(tmp_path / "q.sock"))
    try:
        assert b"403 Forbidden" in _ask(default.path, f"CONNECT 127.0.0.1:{port} HTTP/1.1\r\n\r\n".encode())
        assert b"403 Forbidden" in _ask(default.path, b"CONNECT localhost:22 HTTP/1.1\r\n\r\n")
    finally:
        default.close()


@pytest.mark.sandbox
def test_with_the_network_on_the_kernels_loopback_stays_out_of_reach(tmp_path: Path, hermes_home: Path,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    require_bwrap()
    monkeypatch.setenv("HERMES_NB_WORKSPACE", str(tmp_path))
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    port = listener.getsockname()[1]
    probe = (f"{sys.executable} -c \"import socket,os\n"
             f"print('direct', socket.socket().connect_ex(('127.0.0.1', {port})))\n"
             f"s = socket.create_connection(('127.0.0.1', 3128))\n"
             f"s.sendall(b'CONNECT 127.0.0.1:{port} HTTP/1.1\\\\r\\\\n\\\\r\\\\n'); print(s.recv(200).split()[1])\n"
             f"print(os.environ['HTTPS_PROXY'])\"")
    try:
        (hermes_home / "config.yaml").write_text(yaml.safe_dump({"sandbox": {"network": True}}))
        result = run_command(probe, timeout=30)
        assert "direct 0" not in result["stdout"] and "b'403'" in result["stdout"], result
        assert "http://127.0.0.1:3128" in result["stdout"]
        listener.setblocking(False)
        with pytest.raises(BlockingIOError):  # nothing reached the listener
            listener.accept()
        # the same probe unsandboxed reaches it (there is no proxy there, so only the direct line counts)
        (hermes_home / "config.yaml").write_text(yaml.safe_dump({"sandbox": {"enabled": False}}))
        assert "direct 0" in run_command(probe, timeout=30)["stdout"]
    finally:
        listener.close()
