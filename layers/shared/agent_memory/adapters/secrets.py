"""Service-owned project secrets in AWS Secrets Manager (ports ``ProjectSecretReader`` and
``ProjectSecretWriter``; docs/architecture.md, "Project secrets").

- put: ``CreateSecret`` (tags ``project_id`` and ``purpose``; ``KmsKeyId`` = the stack's
  ``KmsKeyArn`` when set), or, when it exists, ``PutSecretValue`` and ``TagResource`` (so a secret
  made before the tags carries them too); one awaiting deletion (``DescribeSecret`` shows a
  ``DeletedDate``) is restored (``RestoreSecret``) first. A retry stores the same value again.
- read: ``GetSecretValue`` through Powertools Parameters (cached ``max_age_s``; ``fresh`` skips the
  cache). A missing or deleted secret is ``SecretNotSet``; access denied, a refused KMS key or a
  binary value is ``SecretUnreadable``; anything else ``ExternalServiceError``.
- delete: ``DeleteSecret`` with the recovery window (7 to 30 days; never
  ``ForceDeleteWithoutRecovery``: the IAM grant refuses it too).

No value is ever logged or put in an error; SDK messages are dropped (they name the secret only,
but the error codes say enough).
"""

from __future__ import annotations

from typing import Any

from botocore.exceptions import BotoCoreError, ClientError
from pydantic import SecretStr

from agent_memory.adapters.errors import coded_error, service_error
from agent_memory.domain.errors import SecretNotSet, SecretUnreadable
from agent_memory.domain.secrets import ProjectSecretRef

#: ``GetSecretValue`` codes meaning "no secret to read" (a secret scheduled for deletion answers
#: ``InvalidRequestException``).
_NOT_SET = frozenset({"ResourceNotFoundException", "InvalidRequestException"})
#: Codes meaning "it is there, but this role cannot read it" (Secrets Manager API reference,
#: GetSecretValue errors; KMS errors surface with their own codes).
_UNREADABLE = frozenset({
    "AccessDeniedException", "DecryptionFailure", "KMSAccessDeniedException", "KMSDisabledException",
    "KMSInvalidStateException", "KMSNotFoundException",
})


class SecretsManagerProjectSecrets:
    """Project secrets on one Secrets Manager client.

    Args:
        client: a boto3 ``secretsmanager`` client (made on first use when None).
        kms_key_id: the key new secrets are encrypted with ("" = Secrets Manager's own key).
        recovery_window_days: days a deleted secret can still be restored (7-30).
        max_age_s: seconds a read value is cached (a rotated value applies after at most this long).
    """

    def __init__(self, client: Any | None = None, *, kms_key_id: str = "", recovery_window_days: int = 7,
                 max_age_s: int = 300) -> None:
        if not 7 <= recovery_window_days <= 30:
            raise ValueError("recovery_window_days must be 7 to 30 (Secrets Manager's range)")
        self._client = client
        self._kms_key_id = kms_key_id
        self._recovery_window_days = recovery_window_days
        self._max_age_s = max_age_s
        self._provider: Any | None = None

    def _sm(self) -> Any:
        if self._client is None:
            import boto3

            self._client = boto3.client("secretsmanager")
        return self._client

    # ------------------------------------------------------------------ writer
    def put(self, ref: ProjectSecretRef, value: SecretStr) -> None:
        """See :meth:`ProjectSecretWriter.put`."""
        tags = [{"Key": "project_id", "Value": ref.project_id}, {"Key": "purpose", "Value": ref.purpose}]
        create: dict[str, Any] = {"Name": ref.name, "SecretString": value.get_secret_value(), "Tags": tags,
                                  "Description": f"{ref.purpose} of project {ref.project_id} (set by the service)"}
        if self._kms_key_id:
            create["KmsKeyId"] = self._kms_key_id
        try:
            try:
                self._sm().create_secret(**create)
                return
            except ClientError as exc:
                # exists, or (AWS) InvalidRequestException: a secret of that name awaits deletion
                if _code(exc) not in ("ResourceExistsException", "InvalidRequestException"):
                    raise
            if "DeletedDate" in self._sm().describe_secret(SecretId=ref.name):
                self._sm().restore_secret(SecretId=ref.name)
            self._sm().put_secret_value(SecretId=ref.name, SecretString=value.get_secret_value())
            self._sm().tag_resource(SecretId=ref.name, Tags=tags)
        except (BotoCoreError, ClientError) as exc:
            raise service_error("secretsmanager", exc) from None

    def delete(self, ref: ProjectSecretRef) -> bool:
        """See :meth:`ProjectSecretWriter.delete`."""
        try:
            self._sm().delete_secret(SecretId=ref.name, RecoveryWindowInDays=self._recovery_window_days)
        except ClientError as exc:
            if _code(exc) == "ResourceNotFoundException":
                return False
            if _code(exc) == "InvalidRequestException" and "delet" in _message(exc):
                return False  # already scheduled for deletion: the retry of a delete
            raise service_error("secretsmanager", exc) from None
        except BotoCoreError as exc:
            raise service_error("secretsmanager", exc) from None
        return True

    # ------------------------------------------------------------------ reader
    def read(self, ref: ProjectSecretRef, *, fresh: bool = False) -> SecretStr:
        """See :meth:`ProjectSecretReader.read`."""
        from aws_lambda_powertools.utilities.parameters import SecretsProvider
        from aws_lambda_powertools.utilities.parameters.exceptions import GetParameterError

        if self._provider is None:
            self._provider = SecretsProvider(boto3_client=self._sm())
        try:
            raw = self._provider.get(ref.name, max_age=self._max_age_s, force_fetch=fresh)
        except GetParameterError as exc:
            raise _read_error(ref, exc.__context__) from None
        if not isinstance(raw, str):  # a binary secret is not one the service wrote
            raise SecretUnreadable(f"the {ref.purpose} secret of project {ref.project_id} is not text")
        return SecretStr(raw)


def _read_error(ref: ProjectSecretRef, cause: BaseException | None) -> Exception:
    what = f"the {ref.purpose} secret of project {ref.project_id}"
    if isinstance(cause, ClientError):
        code = _code(cause)
        if code in _NOT_SET:
            return SecretNotSet(f"{what} is not set")
        if code in _UNREADABLE:
            return SecretUnreadable(f"{what} cannot be read ({code})")
        return service_error("secretsmanager", cause)
    return coded_error("secretsmanager", None)


def _code(exc: ClientError) -> str:
    return str(exc.response.get("Error", {}).get("Code", ""))


def _message(exc: ClientError) -> str:
    return str(exc.response.get("Error", {}).get("Message", "")).lower()


__all__ = ["SecretsManagerProjectSecrets"]
