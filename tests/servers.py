"""Test helper: run an ASGI app with uvicorn on 127.0.0.1 in a thread, on a socket bound to
port 0 before the server starts: the kernel's free port, held from the start, so concurrent
test runs never race for one."""

import socket
import threading
import time
from contextlib import contextmanager

import pytest


@contextmanager
def serve(app, timeout: float = 15.0):
    """Yield the base URL of ``app`` served by uvicorn; stopped (bounded) on exit."""
    uvicorn = pytest.importorskip("uvicorn")
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off")
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    deadline = time.monotonic() + timeout
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("uvicorn did not start")
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout)
        sock.close()
