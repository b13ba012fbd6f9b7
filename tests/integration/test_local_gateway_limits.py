"""The local gateway's payload quota: like API Gateway HTTP API (10 MB), a longer request body is
refused with 413 before it is read or reaches a function; a body within it is passed on."""

from __future__ import annotations

import socket
from urllib.parse import urlsplit

import requests

from infra.local.stack import MAX_REQUEST_BODY_BYTES, LocalStack
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
