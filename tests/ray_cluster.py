"""A real Ray cluster of several nodes on this machine, for tests: each node is its own
``ray start`` (a head, then nodes that join it) with its own temp dir, ports and resources.

Why not ``ray stop``: it stops every Ray process of the machine by name, other people's
included, and has no ``--temp-dir``. A node here is the set of processes that have a file
open under its temp dir or name it on their command line (the raylet, GCS, the agents,
every worker: workers log to ``<temp dir>/session_*/logs``), plus their descendants; stopping
or killing a node signals exactly those.

Every port a node opens is chosen here (free ports on 127.0.0.1), because two nodes on one
machine collide on Ray's fixed defaults (the dashboard agent's 52365, the worker port range).
The temp dirs are short paths under /tmp: Ray's Unix sockets live under
``<temp dir>/session_<date>_<pid>/sockets/`` and a socket path may not exceed 107 bytes,
which a pytest ``tmp_path`` plus that suffix does.
"""

from __future__ import annotations

import os
import random
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

START_TIMEOUT_S = 180.0


def free_ports(n: int) -> list[int]:
    """``n`` distinct ports nobody listens on right now (bound together, then released)."""
    socks = []
    try:
        for _ in range(n):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


_INHERITED_NOT = ("RAY_ADDRESS", "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "RAY_AUTH_MODE", "RAY_AUTH_TOKEN")


def ray_env(token_path: Path) -> dict[str, str]:
    """The environment of every process of the cluster (nodes and drivers): no telemetry, no
    address or cluster switch inherited, and token authentication with the cluster's own
    token file (Ray 2.60 turns tokens on for a head when ``~/.ray/auth_token`` exists, and a
    joining node or driver must then present the same token: pinning the mode and the file
    makes the cluster independent of whatever the home directory holds)."""
    env = {k: v for k, v in os.environ.items() if k not in _INHERITED_NOT}
    env["RAY_USAGE_STATS_ENABLED"] = "0"
    env["RAY_AUTH_MODE"] = "token"
    env["RAY_AUTH_TOKEN_PATH"] = str(token_path)
    return env


def _parents() -> dict[int, int]:
    out: dict[int, int] = {}
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                out[int(d.name)] = int((d / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, ValueError, IndexError):
                pass
    return out


def _uses(pid: int, root: str) -> bool:
    """True when process ``pid`` names ``root`` on its command line or has a file open under it."""
    proc = Path("/proc") / str(pid)
    try:
        if root.encode() in (proc / "cmdline").read_bytes():
            return True
        for fd in (proc / "fd").iterdir():
            try:
                if os.readlink(fd).startswith(root):
                    return True
            except OSError:
                continue
    except OSError:
        return False
    return False


def alive(pids: set[int]) -> set[int]:
    """The processes of ``pids`` that still run (zombies count as gone)."""
    out = set()
    for p in pids:
        try:
            state = (Path("/proc") / str(p) / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state != "Z":
            out.add(p)
    return out


def cmdline(pid: int) -> str:
    try:
        return (Path("/proc") / str(pid) / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")[:160]
    except OSError:
        return ""


@dataclass
class Node:
    """One ``ray start`` of the cluster."""

    name: str
    temp_dir: Path
    resources: dict[str, float]
    head: bool = False
    port: int | None = None  # the head's GCS port
    output: str = ""
    pids: set[int] = field(default_factory=set)  # every process seen belonging to the node

    def processes(self) -> set[int]:
        """The node's processes now: users of its temp dir and their descendants (remembered,
        so workers orphaned by a killed raylet are still found)."""
        root = str(self.temp_dir)
        parents = _parents()
        found = {p for p in parents if p != os.getpid() and _uses(p, root)}
        frontier = set(found)
        while frontier:
            frontier = {p for p, pp in parents.items() if pp in frontier} - found
            found |= frontier
        self.pids |= found
        return alive(self.pids)

    def signal(self, sig: int) -> set[int]:
        """Send ``sig`` to every process of the node; returns the pids signalled."""
        pids = self.processes()
        for p in pids:
            try:
                os.kill(p, sig)
            except ProcessLookupError:
                pass
        return pids


class LocalRayCluster:
    """A head and more nodes, each a ``ray start`` with its own temp dir; ``stop`` (also on
    failure) ends exactly their processes and removes the temp dirs."""

    def __init__(self, cpus_per_node: int = 1, node_env: dict[str, str] | None = None):
        self.cpus = cpus_per_node
        self.node_env = dict(node_env or {})  # what the nodes' workers inherit (a judge key, as on a real cluster)
        self.root = Path(tempfile.mkdtemp(prefix="ur-ray-", dir="/tmp"))
        self.nodes: list[Node] = []
        self.token_path = self.root / "auth_token"
        fd = os.open(self.token_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(secrets.token_hex(32))

    def env(self) -> dict[str, str]:
        """The environment a driver of this cluster runs with (``ray_env``)."""
        return ray_env(self.token_path)

    @property
    def address(self) -> str:
        head = self.nodes[0]
        return f"127.0.0.1:{head.port}"

    def _start(self, node: Node, args: list[str]) -> Node:
        agent, grpc, metrics, env_agent, manager, objects = free_ports(6)
        # below the kernel's ephemeral range (32768+), where free_ports' picks never fall
        low = random.randrange(20000, 32000, 200)
        cmd = [
            sys.executable,
            "-m",
            "ray.scripts.scripts",
            "start",
            *args,
            "--num-cpus",
            str(self.cpus),
            "--resources",
            _json(node.resources),
            "--temp-dir",
            str(node.temp_dir),
            "--node-ip-address",
            "127.0.0.1",
            "--disable-usage-stats",
            "--dashboard-agent-listen-port",
            str(agent),
            "--dashboard-agent-grpc-port",
            str(grpc),
            "--metrics-export-port",
            str(metrics),
            "--runtime-env-agent-port",
            str(env_agent),
            "--node-manager-port",
            str(manager),
            "--object-manager-port",
            str(objects),
            "--min-worker-port",
            str(low),
            "--max-worker-port",
            str(low + 199),
            "--log-style",
            "record",
        ]
        self.nodes.append(node)
        res = subprocess.run(
            cmd, env={**self.env(), **self.node_env}, capture_output=True, text=True, timeout=START_TIMEOUT_S
        )
        node.output = res.stdout + res.stderr
        node.processes()
        if res.returncode != 0:
            raise RuntimeError(f"ray start of node {node.name} failed ({res.returncode}):\n{node.output[-3000:]}")
        return node

    def start_head(self, resources: dict[str, float] | None = None) -> Node:
        port, client, dashboard = free_ports(3)
        node = Node("head", self.root / "h", resources or {"head": 1}, head=True, port=port)
        args = ["--head", "--port", str(port), "--include-dashboard", "false"]
        return self._start(node, [*args, "--ray-client-server-port", str(client), "--dashboard-port", str(dashboard)])

    def add_node(self, name: str, resources: dict[str, float] | None = None) -> Node:
        node = Node(name, self.root / name[:8], resources or {name: 1})
        return self._start(node, ["--address", self.address])

    def kill_node(self, node: Node) -> set[int]:
        """kill -9 of every process of ``node`` (never another node's)."""
        return node.signal(signal.SIGKILL)

    def stop(self, grace_s: float = 10.0) -> set[int]:
        """SIGTERM to every node (the added ones first), SIGKILL to what is left after
        ``grace_s``; removes the temp dirs. Returns the pids that would not die."""
        for node in reversed(self.nodes):
            node.signal(signal.SIGTERM)
        end = time.monotonic() + grace_s
        while time.monotonic() < end and any(n.processes() for n in self.nodes):
            time.sleep(0.2)
        for node in self.nodes:
            node.signal(signal.SIGKILL)
        time.sleep(0.5)
        left = set().union(*(n.processes() for n in self.nodes)) if self.nodes else set()
        shutil.rmtree(self.root, ignore_errors=True)
        return left


def _json(d: dict[str, float]) -> str:
    import json

    return json.dumps(d)
