"""The local gateway's payload quota: like API Gateway HTTP API (10 MB), a longer request body is
refused with 413 before it is read or reaches a function; a body within it is passed on."""

from __future__ import annotations

import socket
from urllib.parse import urlsplit

import requests

from infra.local.gateway import MAX_REQUEST_BODY_BYTES
from infra.local.stack import LocalStack
from tests.support.auth import bearer


def test_a_body_over_the_payload_quota_is_refused_before_it_reaches_the_function(local_stack: LocalStack) -> None:
    url = f"{local_stack.base_url}/v1/projects/demo-iit/sessions/quota-1/messages"
    # When a body 1 byte over the quota is posted
    response = requests.post(url, data=b"x" * (MAX_REQUEST_BODY_BYTES + 1), timeout=60,
                             headers={**bearer(), "Content-Type": "application/json"})
    # Then the gateway answers 413 itself
    assert response.status_code == 413
    assert response.json() == {"message": "Request Entity Too Large"}
    # And a session that was never written to stays unknown
    listing = requests.get(f"{local_stack.base_url}/v1/projects/demo-iit/sessions/quota-1", timeout=30,
                           headers=bearer())
    assert listing.status_code == 404


def test_a_content_length_that_only_claims_a_huge_body_is_answered_at_once(local_stack: LocalStack) -> None:
    # Given a request whose Content-Length claims ~1 GB but which sends 2 bytes
    parts = urlsplit(local_stack.base_url)
    with socket.create_connection((parts.hostname, parts.port), timeout=30) as conn:
        conn.sendall(
            b"POST /v1/projects/demo-iit/sessions/quota-2/messages HTTP/1.1\r\n"
            b"Host: localhost\r\nContent-Type: application/json\r\n"
            + f"Authorization: {bearer()['Authorization']}\r\n".encode()
            + b"Content-Length: 999999999\r\nConnection: close\r\n\r\n{}"
        )
        # When the gateway reads the head, Then it answers 413 without waiting for the body
        head = conn.recv(4096).decode("latin-1")
    assert head.startswith("HTTP/1.1 413"), head


def _raw(local_stack: LocalStack, head: bytes, body: bytes, *, close_after: bool = False) -> str:
    """Send a hand-made request; the gateway's status line (or '' when it closed without one)."""
    parts = urlsplit(local_stack.base_url)
    with socket.create_connection((parts.hostname, parts.port), timeout=30) as conn:
        conn.sendall(
            head + f"\r\nAuthorization: {bearer()['Authorization']}\r\nConnection: close\r\n\r\n".encode() + body
        )
        if close_after:
            conn.shutdown(socket.SHUT_WR)  # the client is gone before its body ended
        return conn.recv(4096).decode("latin-1").split("\r\n", 1)[0]


def test_a_malformed_chunked_body_is_400_not_500(local_stack: LocalStack) -> None:
    status = _raw(local_stack, b"POST /v1/projects/demo-iit/sessions/chunk-1/messages HTTP/1.1\r\nHost: localhost"
                  b"\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked", b"ZZZ\r\n{}\r\n0\r\n\r\n")
    assert status.split(" ")[1] == "400"


def test_a_chunked_body_over_the_payload_quota_is_413(local_stack: LocalStack) -> None:
    chunk = b"x" * (1 << 20)
    body = b"".join(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n" for _ in range(11)) + b"0\r\n\r\n"
    status = _raw(local_stack, b"POST /v1/projects/demo-iit/sessions/chunk-2/messages HTTP/1.1\r\nHost: localhost"
                  b"\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked", body)
    assert status.split(" ")[1] == "413"


def test_a_client_gone_before_its_body_ended_is_400_not_500(local_stack: LocalStack) -> None:
    status = _raw(local_stack, b"POST /v1/projects/demo-iit/sessions/gone-1/messages HTTP/1.1\r\nHost: localhost"
                  b"\r\nContent-Type: application/json\r\nContent-Length: 100", b'{"content": "hi', close_after=True)
    assert status.split(" ")[1] == "400"
