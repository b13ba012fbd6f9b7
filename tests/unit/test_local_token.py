"""The local identity provider: dev tokens and the verification the local HTTP API applies the way
API Gateway's JWT authorizer does (signature, issuer, audience, expiry)."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import time

import jwt
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from infra.local.token import (
    LOCAL_AUDIENCE,
    LOCAL_ISSUER,
    InvalidToken,
    jwks,
    key_id,
    main,
    mint_token,
    project_roles,
    signing_key,
    verify_token,
)


def _claims(**overrides: object) -> dict[str, object]:
    now = int(time.time())
    claims: dict[str, object] = {
        "sub": "u-1", "custom:projects": "p1:admin", "iss": LOCAL_ISSUER, "aud": LOCAL_AUDIENCE,
        "iat": now, "exp": now + 600,
    }
    claims.update(overrides)
    return {k: v for k, v in claims.items() if v is not None}


def _sign(
    claims: dict[str, object], key: rsa.RSAPrivateKey | None = None, alg: str = "RS256", kid: str | None = "default"
) -> str:
    headers = {"kid": key_id() if kid == "default" else kid} if kid else None
    return jwt.encode(claims, key if key is not None else signing_key(), algorithm=alg, headers=headers)


def test_a_minted_token_verifies_and_carries_identity_only() -> None:
    token = mint_token("dev")
    claims = verify_token(token)
    assert claims["sub"] == "dev"
    assert "custom:projects" not in claims and "cognito:groups" not in claims
    assert (claims["iss"], claims["aud"]) == (LOCAL_ISSUER, LOCAL_AUDIENCE)
    assert jwt.get_unverified_header(token)["kid"] == key_id() == jwks()["keys"][0]["kid"]


@pytest.mark.parametrize(
    ("claims", "fragment"),
    [
        (_claims(exp=int(time.time()) - 1), "Expired"),
        (_claims(exp=None), "exp"),
        (_claims(iat=int(time.time()) + 600), "ImmatureSignature"),
        (_claims(nbf=int(time.time()) + 600), "ImmatureSignature"),
        (_claims(iss="https://evil.example"), "Issuer"),
        (_claims(iss=None), "iss"),
        (_claims(aud="another-client"), "audience"),
        (_claims(aud=None), "client_id"),
        (_claims(exp="soon"), "exp must be a number"),
        (_claims(exp=True), "exp must be a number"),
        (_claims(nbf="2026-01-01"), "nbf must be a number"),
    ],
    ids=["expired", "no-exp", "iat-in-future", "nbf-in-future", "wrong-issuer", "no-issuer", "wrong-audience",
         "no-audience", "exp-text", "exp-boolean", "nbf-text"],
)
def test_a_token_the_authorizer_would_refuse_is_invalid(claims: dict[str, object], fragment: str) -> None:
    with pytest.raises(InvalidToken, match=fragment):
        verify_token(_sign(claims))


def test_an_access_token_with_client_id_instead_of_aud_is_accepted() -> None:
    claims = verify_token(_sign(_claims(aud=None, client_id=LOCAL_AUDIENCE, token_use="access")))
    assert claims["client_id"] == LOCAL_AUDIENCE


def test_a_token_signed_by_another_key_is_invalid() -> None:
    other = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    with pytest.raises(InvalidToken, match="Signature"):
        verify_token(_sign(_claims(), key=other))
    with pytest.raises(InvalidToken, match="kid"):
        verify_token(_sign(_claims(), key=other, kid="someone-elses-key"))


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def test_hs256_none_and_algorithm_confusion_are_refused() -> None:
    # An HS256 token whose HMAC key is our PUBLIC key (the classic algorithm-confusion forgery)
    public_pem = signing_key().public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    header = _b64(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
    signing_input = f"{header}.{_b64(json.dumps(_claims()).encode())}"
    signature = hmac.new(public_pem, signing_input.encode(), hashlib.sha256).digest()
    with pytest.raises(InvalidToken, match="HS256"):
        verify_token(f"{signing_input}.{_b64(signature)}")
    # an unsigned token
    unsigned = f"{_b64(json.dumps({'alg': 'none'}).encode())}.{_b64(json.dumps(_claims()).encode())}."
    with pytest.raises(InvalidToken, match="none"):
        verify_token(unsigned)
    with pytest.raises(InvalidToken, match="malformed"):
        verify_token("not-a-jwt")


def test_project_roles_take_several_projects_and_refuse_unknown_roles() -> None:
    assert project_roles(["a", "b:admin"], "member") == {"a": "member", "b": "admin"}
    assert project_roles("a:admin,b") == {"a": "admin", "b": "member"}
    with pytest.raises(ValueError, match="role"):
        project_roles(["a:owner"])
    with pytest.raises(ValueError, match="project"):
        project_roles([":admin"])


def test_the_cli_prints_the_token_alone_on_its_last_line_and_says_no_stack_made_no_member(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("infra.local.token.running_stack_url", lambda: None)
    assert main(["--user", "dev", "--project", "demo-iit,demo-clinic:member", "--role", "admin"]) == 0
    captured = capsys.readouterr()
    lines = captured.out.strip().splitlines()
    assert verify_token(lines[-1])["sub"] == "dev"
    assert all(line.startswith("#") for line in lines[:-1])
    assert "not made a member of demo-iit:admin,demo-clinic:member" in captured.err


def test_the_cli_prints_a_platform_operator_token(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--user", "ops", "--role", "platform-admin"]) == 0
    lines = capsys.readouterr().out.strip().splitlines()
    claims = verify_token(lines[-1])
    assert (claims["sub"], claims["cognito:groups"]) == ("ops", ["platform-admins"])
