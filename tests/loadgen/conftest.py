"""Fixtures for the load generator tests (the stub server: tests/loadgen/stub.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from loadgen.stub import StubServer


@pytest.fixture
def stub() -> Iterator[StubServer]:
    """A stub HTTP server on loopback, stopped (thread joined) after the test."""
    server = StubServer()
    server.start()
    try:
        yield server
    finally:
        server.stop()
