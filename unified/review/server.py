"""``unified-eval review``: the web app on 127.0.0.1 under uvicorn, until Ctrl-C.

The socket is bound before uvicorn starts, so ``--port 0`` (any free port) is known when
the URL — with its token — is printed, and a port in use is a one-line error.
"""

from __future__ import annotations

import signal
import socket
from pathlib import Path
from typing import Any, Callable

from unified.review.session import ReviewSession
from unified.review.web import make_app

HOST = "127.0.0.1"


def bind(port: int) -> socket.socket:
    """A listening socket on ``HOST``:``port``; ``OSError`` when it is taken."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((HOST, port))
    except OSError:
        sock.close()
        raise
    sock.listen(64)
    return sock


def serve(run_dir: str | Path, annotator: str, port: int = 0, say: Callable[[str], None] = print) -> None:
    """Serve the review of ``run_dir`` by ``annotator`` until Ctrl-C or SIGTERM (both end
    it normally: every label is on disk as it is made); ``say`` gets the URL (with the
    token) once the socket listens."""
    import uvicorn

    session = ReviewSession(run_dir, annotator)
    app, token = make_app(session)
    sock = bind(port)
    url = f"http://{HOST}:{sock.getsockname()[1]}/?token={token}"
    say(url)
    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off")
    # uvicorn shuts down on SIGINT/SIGTERM, then re-raises the signal to the handler that was
    # there before it: make both a KeyboardInterrupt, the way to stop, not a failure
    previous = signal.signal(signal.SIGTERM, _interrupt)
    try:
        uvicorn.Server(config).run(sockets=[sock])
    except KeyboardInterrupt:
        pass
    finally:
        signal.signal(signal.SIGTERM, previous)
        sock.close()


def _interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


__all__ = ["HOST", "bind", "serve"]
