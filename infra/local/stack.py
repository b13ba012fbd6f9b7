"""The local stack: moto, the template's resources and the real handlers behind a local HTTP API.

``LocalStack`` is what ``python -m infra.local.server`` runs and what the integration tests use. It
starts (and stops in the reverse order): the HTTP API's listener (:mod:`infra.local.gateway`; a
port already taken fails before anything is written), moto in a child process
(:mod:`infra.local.moto_server`, durable with ``data_dir``), the template's resources, secrets,
local REDCap and demo data (:mod:`infra.local.provision`), a pool of containers per function
(:mod:`infra.local.functions`: one process each, with the function's environment from the
template; the Anthropic key goes into Secrets Manager, never into an environment), then the routes.

Code of this process that reads the stack's data (``repo``, ``members``, the seed) runs with the
stack's AWS environment: for the stack's life (``isolated=False``, ``make run``) or only inside
:meth:`LocalStack.environment` (``isolated=True``, the tests: tests of the same process that use
moto's ``mock_aws`` and ``bind_tables`` neither see this stack's ``AWS_ENDPOINT_URL`` nor break it).
"""

from __future__ import annotations

import os
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from types import ModuleType
from typing import Any

from infra.local import provision
from infra.local.events import LOCAL_REGION
from infra.local.functions import DEFAULT_CONTAINERS_PER_FUNCTION, LocalFunction, load_handler_module, start_fork_server
from infra.local.gateway import GATEWAY_TIMEOUT_S, STATUS_LOG_ENV, LocalGateway
from infra.local.moto_server import MotoServer, MotoServerError, free_port  # noqa: F401 - tests import it here
from infra.template_model import FunctionSpec, LocalResource, function_specs, load_template

REPO_ROOT = Path(__file__).resolve().parents[2]
LAYER_PATH = REPO_ROOT / "layers" / "shared"
#: Dummy credentials: the local stack never talks to a real AWS account.
_DUMMY_CREDENTIALS = {"AWS_ACCESS_KEY_ID": "local", "AWS_SECRET_ACCESS_KEY": "local", "AWS_SESSION_TOKEN": "local"}
#: Never visible to a handler locally (the key goes to Secrets Manager, as in AWS).
_REMOVED_FROM_ENV = ("ANTHROPIC_API_KEY", "AWS_PROFILE", "AWS_DEFAULT_PROFILE")
#: The demo projects' clinical data lives with the demo data, outside the Lambda layer.
DEMO_CLINICAL_DATA_FILE = Path(__file__).resolve().parent / "demo" / "clinical_data.json"
#: Shell variables passed to the functions when set (``ANTHROPIC_BASE_URL`` + ``ANTHROPIC_API_KEY``:
#: any Messages-API server; ``LLM_PROVIDER=bedrock`` + ``ANTHROPIC_BEDROCK_BASE_URL``: Bedrock).
_PASS_THROUGH = (
    "LLM_PROVIDER", "ANTHROPIC_BASE_URL", "ANTHROPIC_BEDROCK_BASE_URL", "BEDROCK_REGION", "ANTHROPIC_SECRET_MAX_AGE_S",
    "CHAT_MODEL_ID", "FAST_MODEL_ID", "LLM_MAX_OUTPUT_TOKENS", "LLM_EFFORT_CHAT", "LLM_EFFORT_INTENT",
    "LLM_EFFORT_SYMPTOMS", "LLM_EFFORT_SUMMARY", "LLM_EFFORT_DISTILL", "LLM_EFFORT_ARCHIVE", "LLM_EFFORT_COMPACT",
    "INTENT_CLASSIFIER", "SYMPTOM_EXTRACTOR", "SESSION_SUMMARISER", "LLM_MAX_RETRIES", "LOG_LEVEL",
)

class LocalStackError(RuntimeError):
    """The local stack cannot start as configured (the message says why)."""


def merge_function_environments(specs: list[FunctionSpec]) -> dict[str, str]:
    """The one environment ``LocalStack.describe()`` publishes for all functions (``python -m
    infra.jobs`` runs the job handlers with it, in one process).

    Raises:
        LocalStackError: two functions set a variable to different values (one would run with the other's).
    """
    merged: dict[str, tuple[str, str]] = {}  # name -> (value, function)
    conflicts = [f"{name}: {merged[name][1]}={merged[name][0]!r} vs {spec.logical_id}={value!r}"
                 for spec in specs for name, value in spec.environment.items()
                 if merged.setdefault(name, (value, spec.logical_id))[0] != value]
    if conflicts:
        raise LocalStackError("functions disagree on environment variables: " + "; ".join(conflicts))
    return {name: value for name, (value, _) in merged.items()}


def _clear_settings_caches() -> None:
    """Forget the settings read so far (``get_settings``, ``get_store_settings``), so that the next
    read sees the current environment."""
    from agent_memory.config import get_settings
    from agent_memory.store_settings import get_store_settings

    get_settings.cache_clear()
    get_store_settings.cache_clear()


class LocalStack:
    """Start moto, resources, functions, demo data and the HTTP API; stop them all (one per process).

    Usage: ``with LocalStack() as stack: requests.get(f"{stack.base_url}/v1/health")``. After
    start: ``base_url``, ``moto_url``, ``table_names`` / ``resources`` (by logical id),
    ``functions`` (logical id -> :class:`~infra.local.functions.LocalFunction`), ``env`` (the
    functions' variables merged), ``llm_provider``, ``redcap``, ``restarted``, ``moto_start_seconds``.

    Args:
        port / moto_port: 0 = a free port. isolated: see the module docstring.
        seed: seed the demo projects (at ``now``, default the current time).
        env_overrides: function environment variables that win over the template.
        anthropic_api_key: default ``$ANTHROPIC_API_KEY``; when set the provider is ``anthropic``.
        data_dir: keep the DynamoDB tables there across restarts (``None``: in memory only); a
            directory that holds data is restored and not seeded again.
        stop_requested: read on every request; once ``True`` new requests get 503 + ``Retry-After``
            (the server's signal handler sets the flag; its main thread then calls :meth:`stop`).
    """

    _active: LocalStack | None = None
    _env_lock = threading.RLock()

    def __init__(self, *, host: str = "127.0.0.1", port: int = 0, moto_port: int = 0, isolated: bool = False,
                 seed: bool = True, now: datetime | None = None, env_overrides: Mapping[str, str] | None = None,
                 anthropic_api_key: str | None = None, template_path: Path | None = None,
                 gateway_timeout_s: float = GATEWAY_TIMEOUT_S, data_dir: Path | None = None,
                 stop_requested: Callable[[], bool] | None = None) -> None:
        self._stop_requested = stop_requested
        self._host, self._port = host, port
        self._moto = MotoServer(host, moto_port, data_dir)
        self.data_dir = data_dir
        self._isolated, self._seed, self._now = isolated, seed, now
        self._env_overrides = dict(env_overrides or {})
        self._api_key = anthropic_api_key if anthropic_api_key is not None else os.environ.get("ANTHROPIC_API_KEY")
        self._template_path, self._gateway_timeout_s = template_path, gateway_timeout_s
        self.table_names: dict[str, str] = {}
        self.resources: dict[str, LocalResource] = {}
        self.functions: dict[str, LocalFunction] = {}
        self.env: dict[str, str] = {}
        self.llm_provider = "offline"  # or "anthropic" / "bedrock", from the functions' environment
        self.restarted, self.moto_start_seconds = False, 0.0
        self.redcap: Any = None
        self._gateway: LocalGateway | None = None
        self._saved_env: dict[str, str] | None = None
        self._bound_marker: Any = None
        #: read once here (isolated mode swaps ``os.environ``): the test suite's proof of no 500
        self._status_log = os.environ.get(STATUS_LOG_ENV) or None

    # ------------------------------------------------------------------------- lifecycle
    def __enter__(self) -> LocalStack:
        return self.start()

    def __exit__(self, *exc_info: object) -> None:
        self.stop()

    def start(self) -> LocalStack:
        """Start everything (module docstring); on failure, stop what started."""
        if LocalStack._active is not None:
            raise LocalStackError("another LocalStack is already running in this process")
        LocalStack._active = self
        try:
            self._start()
        except BaseException:
            self.stop()
            raise
        return self

    def _start(self) -> None:
        if str(LAYER_PATH) not in sys.path:  # the layer is /opt/python in Lambda
            sys.path.insert(0, str(LAYER_PATH))
        self._gateway = LocalGateway(self._host, self._port, timeout_s=self._gateway_timeout_s,
                                     stop_requested=lambda: bool(self._stop_requested and self._stop_requested()),
                                     status_log=self._status_log)
        self._port = self._gateway.port
        start_fork_server()  # containers are forked from it: it imports the shared libraries meanwhile
        started = time.perf_counter()
        try:
            self._moto.start()
        except MotoServerError as exc:
            raise LocalStackError(str(exc)) from None
        self.moto_start_seconds = time.perf_counter() - started
        template = load_template(self._template_path)
        self.table_names, self.resources, restarted = provision.create_resources(self.aws_client, template)
        self.restarted = restarted and self.data_dir is not None
        specs = function_specs(template, self.table_names, self._overrides(), self.resources)
        self.env = self._aws_env(merge_function_environments(specs))
        self.llm_provider = self.env.get("LLM_PROVIDER", "offline")
        self._store_api_key()
        snap_start = {name for name, resource in template.get("Resources", {}).items()
                      if (resource.get("Properties") or {}).get("SnapStart")}
        self.functions = {spec.logical_id: self._function(spec, spec.logical_id in snap_start) for spec in specs}
        if not self._isolated:
            self._saved_env = dict(os.environ)
            self._apply_env()
        with self.environment():
            self._provision_data()
        self._gateway.add_routes(self.functions)
        self._gateway.serve()

    def _overrides(self) -> dict[str, str]:
        overrides = {"LLM_PROVIDER": "anthropic" if self._api_key else "offline", "POWERTOOLS_TRACE_DISABLED": "true",
                     "CLINICAL_DATA_FILE": str(DEMO_CLINICAL_DATA_FILE)}
        overrides.update({name: os.environ[name] for name in _PASS_THROUGH if os.environ.get(name)})
        return {**overrides, **self._env_overrides}

    def _aws_env(self, function_env: Mapping[str, str]) -> dict[str, str]:
        """``function_env`` with Powertools' names, the dummy credentials, the moto endpoint and region."""
        return {"POWERTOOLS_METRICS_NAMESPACE": "AgentMemory", "POWERTOOLS_SERVICE_NAME": "agent-memory",
                **function_env, **_DUMMY_CREDENTIALS, "AWS_ENDPOINT_URL": self.moto_url,
                "AWS_REGION": LOCAL_REGION, "AWS_DEFAULT_REGION": LOCAL_REGION}

    def _store_api_key(self) -> None:
        if self.llm_provider != "anthropic":
            return
        if not self._api_key:
            raise LocalStackError("LLM_PROVIDER=anthropic needs ANTHROPIC_API_KEY (put into moto Secrets Manager)")
        secret_name = self.env.get("ANTHROPIC_SECRET_NAME")
        if not secret_name:
            raise LocalStackError("the template sets no ANTHROPIC_SECRET_NAME")
        provision.put_secret(self.aws_client("secretsmanager"), secret_name, self._api_key)

    def _function(self, spec: FunctionSpec, snap_start: bool) -> LocalFunction:
        module_path, _, _ = spec.handler.rpartition(".")
        file = REPO_ROOT / spec.code_uri / (module_path.replace(".", "/") + ".py")
        if not module_path or not file.is_file():
            raise LocalStackError(f"{spec.logical_id}: handler {spec.handler!r} has no file {file}")
        maximum = int(os.environ.get("LOCAL_CONTAINERS_PER_FUNCTION") or DEFAULT_CONTAINERS_PER_FUNCTION)
        inherited = {k: v for k, v in os.environ.items() if k not in _REMOVED_FROM_ENV}
        return LocalFunction(spec=spec, env={**inherited, **self._aws_env(spec.environment)},
                             max_containers=max(1, maximum), snap_start=snap_start)

    def _provision_data(self) -> None:
        _clear_settings_caches()  # read ours, and do not leave ours cached for others (isolated)
        try:
            self._bind_models()
            if self._seed:  # the local REDCap is not kept across restarts: started, demo-iit repointed
                self.redcap, clinical_data = provision.start_demo_redcap(self.aws_client("secretsmanager"))
                provision.seed(self.repo.projects, self.members, clinical_data, now=self._now or datetime.now(UTC),
                               restarted=self.restarted)
            if self.restarted:
                provision.backfill_patient_refs(self.aws_client("dynamodb"), self.table_names["MemoryTable"],
                                                now=self._now or datetime.now(UTC))
        finally:
            _clear_settings_caches()

    def stop(self) -> None:
        """Drain the HTTP API (:meth:`LocalGateway.stop`), then end the containers, REDCap and moto,
        and restore this process's environment."""
        if self._gateway is not None:
            self._gateway.stop()
            self._gateway = None
        for function in self.functions.values():
            function.stop()
        if self.redcap is not None:
            self.redcap.stop()
            self.redcap = None
        self._moto.stop()
        if self._saved_env is not None:
            os.environ.clear()
            os.environ.update(self._saved_env)
            self._saved_env = None
        if LocalStack._active is self:
            LocalStack._active = None

    # ------------------------------------------------------------------------ invocation
    def invoke(self, logical_id: str, event: dict[str, Any], *, request_id: str | None = None) -> Any:
        """Invoke a function with ``event`` in one of its containers; its result. Raises
        ``infra.local.functions.InvocationError`` (the function raised, timed out, or its container died)."""
        return self.functions[logical_id].invoke(event, request_id or str(uuid.uuid4()))

    @contextmanager
    def configured(self, logical_id: str, variables: Mapping[str, str]) -> Iterator[None]:
        """Inside the block the function runs with ``variables`` added (as UpdateFunctionConfiguration)."""
        function = self.functions[logical_id]
        original = dict(function.env)
        function.set_environment({**original, **variables})
        try:
            yield
        finally:
            function.set_environment(original)

    def handler_modules(self) -> dict[str, ModuleType]:
        """Every function's handler module imported into THIS process with the stack's environment
        (to read what they declare, e.g. the OpenAPI document; requests never run here)."""
        with self.environment():
            _clear_settings_caches()
            try:
                return {name: load_handler_module(fn.spec, f"local_fn_{name}") for name, fn in self.functions.items()}
            finally:
                _clear_settings_caches()

    # ------------------------------------------------------------------------ properties
    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:<port>`` of the local HTTP API."""
        return f"http://{self._host}:{self._port}"

    @property
    def moto_url(self) -> str:
        """Endpoint of the embedded AWS (``AWS_ENDPOINT_URL`` of the functions)."""
        return self._moto.url

    def moto_running(self) -> bool:
        """Whether the stack's moto still serves (the server stops when not)."""
        return self._moto.running()

    def describe(self) -> dict[str, Any]:
        """What another process needs to use this stack (``.local/stack.json``, read by ``make job``):
        URLs, table, queue and topic names, the functions' environment (no secret)."""
        return {
            "base_url": self.base_url, "moto_url": self.moto_url, "region": LOCAL_REGION,
            "table_names": dict(self.table_names),
            "resources": {k: {"type": r.type, "ref": r.ref, "arn": r.arn, "name": r.name}
                          for k, r in self.resources.items()},
            "env": {k: v for k, v in self.env.items() if k not in _REMOVED_FROM_ENV},
            "llm_provider": self.llm_provider, "pid": os.getpid(), "moto_pid": self._moto.pid,
            # The local REDCap server and demo-iit's token (a fictional demo project, local only).
            **({"redcap": provision.demo_redcap_info(self.redcap)} if self.redcap is not None else {}),
        }

    # ---------------------------------------------------------------- this process's data access
    @property
    def repo(self) -> Any:
        """A ``ChatRepository`` on this stack's tables (models re-bound if someone re-bound them)."""
        from agent_memory.adapters.dynamo.chat import ChatRepository

        with self.environment():
            self._ensure_bound()
        return ChatRepository()

    @property
    def members(self) -> Any:
        """A ``MemberRepository`` (projects and members) on this stack's tables."""
        from agent_memory.adapters.dynamo.members import MemberRepository

        with self.environment():
            self._ensure_bound()
        return MemberRepository()

    def aws_client(self, service: str) -> Any:
        """A boto3 client for the embedded AWS (explicit endpoint and dummy credentials)."""
        import boto3

        return boto3.client(service, endpoint_url=self.moto_url, region_name=LOCAL_REGION,
                            **{name.lower(): value for name, value in _DUMMY_CREDENTIALS.items()})

    def _apply_env(self) -> None:
        os.environ.update(self.env)
        for name in _REMOVED_FROM_ENV:
            os.environ.pop(name, None)

    @contextmanager
    def environment(self) -> Iterator[None]:
        """The stack's environment in this process for the duration of the block (isolated mode;
        otherwise it is there for the stack's whole life)."""
        if not self._isolated:
            yield
            return
        with LocalStack._env_lock:
            saved = dict(os.environ)
            self._apply_env()
            try:
                yield
            finally:
                os.environ.clear()
                os.environ.update(saved)

    def _bind_models(self) -> None:
        """Bind the PynamoDB models to this stack's tables.

        Isolated mode also creates every model's client now, inside the stack's environment:
        a botocore client reads ``AWS_ENDPOINT_URL`` when it is created, and code outside
        :meth:`environment` (``stack.repo`` in a test) runs without that variable. So every module of
        models is imported (registered) first.
        """
        from agent_memory.adapters.dynamo import conversation_tables, record_tables, tables  # noqa: F401 - registered
        from agent_memory.adapters.dynamo.pynamodb_internals import create_client

        binding = tables.bind_tables(
            memory_table=self.table_names["MemoryTable"],
            sessions_table=self.table_names["SessionsTable"],
            flow_log_table=self.table_names["FlowLogTable"],
        )
        if self._isolated:
            for model, _table in binding.models():
                create_client(model)
        self._bound_marker = binding

    def _ensure_bound(self) -> None:
        """Bind again when someone else bound the models since (``bind_tables`` in a test)."""
        from agent_memory.adapters.dynamo import tables

        if tables.current_binding() is not self._bound_marker:
            self._bind_models()
