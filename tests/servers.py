"""Test helper: run an ASGI app with uvicorn on 127.0.0.1 (a free port) in a thread."""

import socket
import threading
import time
from contextlib import contextmanager

import pytest


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def serve(app, timeout: float = 15.0):
    """Yield the base URL of ``app`` served by uvicorn; stopped (bounded) on exit."""
    uvicorn = pytest.importorskip("uvicorn")
    config = uvicorn.Config(app, host="127.0.0.1", port=free_port(), log_level="warning",
                            access_log=False, lifespan="off")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + timeout
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{config.port}"
    finally:
        server.should_exit = True
        thread.join(timeout)
