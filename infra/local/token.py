"""The local identity provider: a signing key, dev tokens, and the verification the local HTTP API
applies the way API Gateway's JWT authorizer does.

- Key: an RSA-2048 key generated on first use into ``.local/dev-jwt-key.pem`` (gitignored, mode
  0600), shared by ``make run``, ``make token`` and the tests. API Gateway's JWT authorizer
  verifies RSA signatures against the issuer's JWKS; locally the public half of this key plays
  the JWKS (:func:`jwks`).
- Verification (:func:`verify_token`): RS256 signature by this key (``kid`` must match when
  present), ``iss`` = :data:`LOCAL_ISSUER`, ``aud`` (or, without ``aud``, ``client_id``, as the
  authorizer accepts for access tokens) = :data:`LOCAL_AUDIENCE`, ``exp`` required and in the
  future, ``nbf`` / ``iat`` not in the future. Anything else is a 401 before the function runs.
- Dev tokens: ``python -m infra.local.token --user dev --project demo-iit --role admin`` (``make
  token USER=dev PROJECT=demo-iit ROLE=admin``) prints a description and, on its LAST line, the
  JWT alone. A token proves identity only (``sub``); the project's membership decides access, so
  when the local stack runs (``.local/stack.json``) the user is also made a member of each project
  with its role (``PUT /v1/projects/{p}/members/{u}`` as a platform operator; study role
  ``--study-role``, default ``Other``). ``--project`` takes several projects
  (``demo-iit,demo-clinic``) and per-project roles (``demo-iit:admin,demo-clinic:member``); ``--role``
  is the role of those without one. ``--role platform-admin`` prints a platform operator's token
  (``cognito:groups: platform-admins``), which needs no project.

Never used in AWS: there the identity provider (e.g. a Cognito user pool) issues the tokens and
API Gateway verifies them (``JwtIssuer`` / ``JwtAudience`` in template.yaml).
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import hashlib
import os
import sys
import tempfile
import time
from collections.abc import Iterable, Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

REPO_ROOT = Path(__file__).resolve().parents[2]
#: Where the local signing key lives (``LOCAL_JWT_KEY_FILE`` overrides it).
DEFAULT_KEY_FILE = REPO_ROOT / ".local" / "dev-jwt-key.pem"
#: The issuer and audience of local tokens (in AWS: the JwtIssuer / JwtAudience parameters).
LOCAL_ISSUER = "https://dev-issuer.agent-memory.invalid"
LOCAL_AUDIENCE = "agent-memory-local"
ALGORITHM = "RS256"
DEFAULT_TTL_S = 8 * 3600
ROLES = ("admin", "member")
#: The operator group claim (``agent_memory.http.auth.OPERATOR_GROUP``).
OPERATOR_GROUP = "platform-admins"
STUDY_ROLES = ("PI", "Sub-I", "CRC", "DM", "CRA", "Statistician", "Other")


class InvalidToken(Exception):
    """The token would not pass the JWT authorizer (the reason is safe to log)."""


def key_file() -> Path:
    """The signing key's path."""
    return Path(os.environ.get("LOCAL_JWT_KEY_FILE") or DEFAULT_KEY_FILE)


def _create_key_file(path: Path) -> None:
    """Generate the key and publish it atomically: concurrent first runs (pytest workers, a
    server and ``make token``) all end up reading the same key."""
    path.parent.mkdir(parents=True, exist_ok=True)
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".dev-jwt-key.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(pem)
        os.chmod(tmp, 0o600)
        with contextlib.suppress(FileExistsError):  # another process published its key first: use that
            os.link(tmp, path)
    finally:
        os.unlink(tmp)


@lru_cache(maxsize=4)
def _load_key(path: str) -> rsa.RSAPrivateKey:
    data = Path(path).read_bytes()
    key = serialization.load_pem_private_key(data, password=None)
    if not isinstance(key, rsa.RSAPrivateKey):
        raise InvalidToken(f"{path} is not an RSA private key")
    return key


def signing_key() -> rsa.RSAPrivateKey:
    """The local RSA key (generated into ``.local/`` on first use)."""
    path = key_file()
    if not path.exists():
        _create_key_file(path)
    return _load_key(str(path))


def _b64(number: int) -> str:
    raw = number.to_bytes((number.bit_length() + 7) // 8, "big")
    return base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=")


def key_id() -> str:
    """``kid`` of the local key: the RFC 7638 JWK thumbprint of its public half."""
    numbers = signing_key().public_key().public_numbers()
    canonical = f'{{"e":"{_b64(numbers.e)}","kty":"RSA","n":"{_b64(numbers.n)}"}}'
    return base64.urlsafe_b64encode(hashlib.sha256(canonical.encode("ascii")).digest()).decode("ascii").rstrip("=")


def jwks() -> dict[str, Any]:
    """The public key as a JWKS document (what an issuer publishes at its ``jwks_uri``)."""
    numbers = signing_key().public_key().public_numbers()
    return {
        "keys": [
            {"kty": "RSA", "use": "sig", "alg": ALGORITHM, "kid": key_id(), "n": _b64(numbers.n), "e": _b64(numbers.e)}
        ]
    }


def project_roles(projects: Mapping[str, str] | Iterable[str], default_role: str = "member") -> dict[str, str]:
    """``{project: role}`` from ``{project: role}``, from entries ``"p1"`` / ``"p1:admin"`` or from
    one string ``"p1:admin,p2"`` (entries without a role get ``default_role``).

    Raises:
        ValueError: an unknown role or an empty project id.
    """
    if isinstance(projects, str):
        projects = [p for p in projects.split(",") if p.strip()]
    items = projects.items() if isinstance(projects, Mapping) else (
        (entry.rsplit(":", 1) if ":" in entry else (entry, default_role)) for entry in projects
    )
    roles: dict[str, str] = {}
    for project, role in items:
        project, role = project.strip(), role.strip()
        if not project:
            raise ValueError("empty project id")
        if role not in ROLES:
            raise ValueError(f"unknown role {role!r} (admin or member)")
        roles[project] = role
    return roles


def mint_token(
    user: str,
    *,
    operator: bool = False,
    ttl_s: int = DEFAULT_TTL_S,
    now: float | None = None,
    issuer: str = LOCAL_ISSUER,
    audience: str = LOCAL_AUDIENCE,
    extra: Mapping[str, Any] | None = None,
) -> str:
    """A signed dev token (an ID token shaped like Cognito's) for ``user``: identity only; with
    ``operator``, in the ``platform-admins`` group."""
    if not user.strip():
        raise ValueError("empty user id")
    issued = int(now if now is not None else time.time())
    claims: dict[str, Any] = {
        "sub": user,
        "cognito:username": user,
        "iss": issuer,
        "aud": audience,
        "token_use": "id",
        "auth_time": issued,
        "iat": issued,
        "exp": issued + ttl_s,
        **({"cognito:groups": [OPERATOR_GROUP]} if operator else {}),
        **(extra or {}),
    }
    return jwt.encode(claims, signing_key(), algorithm=ALGORITHM, headers={"kid": key_id()})


def verify_token(token: str, *, now: float | None = None) -> dict[str, Any]:
    """The claims of a token the JWT authorizer would accept (see the module docstring).

    Raises:
        InvalidToken: why it would be refused.
    """
    try:
        header = jwt.get_unverified_header(token)
    except jwt.PyJWTError as exc:
        raise InvalidToken(f"malformed token: {exc}") from None
    if header.get("alg") != ALGORITHM:
        raise InvalidToken(f"algorithm {header.get('alg')!r} is not accepted")
    if "kid" in header and header["kid"] != key_id():
        raise InvalidToken("unknown signing key (kid)")
    try:
        claims = _decode_at(token, time.time() if now is None else now)
    except jwt.PyJWTError as exc:
        raise InvalidToken(f"{type(exc).__name__}: {exc}") from None
    if not isinstance(claims, dict):
        raise InvalidToken("token payload is not an object")
    audience = claims.get("aud")
    audiences = audience if isinstance(audience, list) else [audience] if audience is not None else []
    if audiences:
        if LOCAL_AUDIENCE not in audiences:
            raise InvalidToken("audience does not match")
    elif claims.get("client_id") != LOCAL_AUDIENCE:
        raise InvalidToken("no aud or client_id matching the audience")
    return claims


def _decode_at(token: str, now: float) -> dict[str, Any]:
    """Check the signature and issuer, then the times against ``now`` (no leeway)."""
    claims = jwt.decode(
        token,
        signing_key().public_key(),
        algorithms=[ALGORITHM],
        issuer=LOCAL_ISSUER,
        options={"require": ["exp", "iss"], "verify_aud": False, "verify_exp": False, "verify_nbf": False,
                 "verify_iat": False},
    )
    times: dict[str, float] = {}
    for name in ("exp", "nbf", "iat"):
        if name in claims:
            value = claims[name]
            # a NumericDate is a JSON number (RFC 7519 section 2); "soon" or true is not
            if isinstance(value, bool) or not isinstance(value, int | float):
                raise jwt.DecodeError(f"{name} must be a number (a NumericDate)")
            times[name] = float(value)
    if times["exp"] <= now:
        raise jwt.ExpiredSignatureError("Signature has expired")
    for name in ("nbf", "iat"):
        if name in times and times[name] > now:
            raise jwt.ImmatureSignatureError(f"The token is not yet valid ({name})")
    return dict(claims)


def add_memberships(
    base_url: str, user: str, roles: Mapping[str, str], *, study_role: str | None, display_name: str | None
) -> list[str]:
    """Make ``user`` a member of each project of ``roles`` in the local stack at ``base_url``,
    through its API as a platform operator. An existing membership keeps its study role and display
    name unless they are given (study role of a new member: ``Other``). Returns one line per project
    saying what happened."""
    import requests

    operator = {"Authorization": f"Bearer {mint_token('local-token-cli', operator=True)}"}
    own = {"Authorization": f"Bearer {mint_token(user)}"}
    lines = []
    for project, role in roles.items():
        listed = requests.get(f"{base_url}/v1/projects/{project}/members", headers=own, timeout=30)
        current = next((m for m in listed.json().get("items", []) if m.get("user_id") == user), None) \
            if listed.status_code == 200 else None
        wanted = {
            "project_role": role,
            "study_role": study_role or (current or {}).get("study_role") or "Other",
            "display_name": display_name or (current or {}).get("display_name") or user,
        }
        if current is not None and all(current.get(k) == v for k, v in wanted.items()):
            lines.append(f"# {user} is already a member of {project}: project role {role}, "
                         f"study role {wanted['study_role']}")
            continue
        response = requests.put(f"{base_url}/v1/projects/{project}/members/{user}", headers=operator, json=wanted,
                                timeout=30)
        if response.status_code in (200, 201):
            verb = "made" if response.status_code == 201 else "updated"
            lines.append(f"# {verb} {user} a member of {project}: project role {role}, "
                         f"study role {wanted['study_role']}")
        else:
            reason = response.json().get("reason", response.text) if response.content else response.reason
            lines.append(f"# could not make {user} a member of {project} ({response.status_code}: {reason})")
    return lines


def running_stack_url() -> str | None:
    """The base URL of the local stack ``make run`` is running (``.local/stack.json``), or None."""
    try:
        from infra.jobs import JobsCliError, local_description

        return str(local_description()["base_url"])
    except (JobsCliError, KeyError, ValueError, OSError):
        return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m infra.local.token",
        description="Print a dev JWT the local HTTP API accepts (the token alone on the last line); when the "
                    "local stack runs, also make the user a member of the projects.",
    )
    parser.add_argument("--user", required=True, help="the user id (the sub claim)")
    parser.add_argument(
        "--project", default="",
        help="project ids, comma separated; an entry may carry its role (demo-iit:admin,demo-clinic:member)",
    )
    parser.add_argument("--role", default="member", choices=(*ROLES, "platform-admin"),
                        help="role for projects given without one; platform-admin: an operator token")
    parser.add_argument("--study-role", default=None, choices=STUDY_ROLES,
                        help="study role (default: kept for an existing member, Other for a new one)")
    parser.add_argument("--display-name", default=None, help="display name of new members (default: the user id)")
    parser.add_argument("--ttl", type=int, default=DEFAULT_TTL_S, help="lifetime in seconds (default 8 h)")
    args = parser.parse_args(argv)
    if args.role == "platform-admin":
        token = mint_token(args.user, operator=True, ttl_s=args.ttl)
        print(f"# platform operator token for {args.user} (cognito:groups={OPERATOR_GROUP}); expires in {args.ttl} s")
        print(token)
        return 0
    entries = [p for p in (x.strip() for x in args.project.split(",")) if p]
    if not entries:
        parser.error("--project needs at least one project id (or --role platform-admin)")
    try:
        roles = project_roles(entries, args.role)
        token = mint_token(args.user, ttl_s=args.ttl)
    except ValueError as exc:
        parser.error(str(exc))
    claim = ",".join(f"{p}:{r}" for p, r in roles.items())
    base_url = running_stack_url()
    if base_url is None:
        print(f"# no local stack running: {args.user} was not made a member of {claim} (start `make run`, then "
              "run this again)", file=sys.stderr)
    else:
        for line in add_memberships(base_url, args.user, roles, study_role=args.study_role,
                                    display_name=args.display_name):
            print(line)
    print(f"# dev token for {args.user} ({claim}); expires in {args.ttl} s")
    print(f"# issuer {LOCAL_ISSUER}, audience {LOCAL_AUDIENCE}, key {key_file()} (local only)")
    print(token)
    return 0


if __name__ == "__main__":
    sys.exit(main())
