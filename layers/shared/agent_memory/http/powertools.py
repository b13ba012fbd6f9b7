"""Powertools' event-handler and event-source names without running those packages' ``__init__``.

Python runs a package's ``__init__`` before any of its submodules. The ``__init__`` of
``aws_lambda_powertools.event_handler`` imports every resolver Powertools has (AppSync, which
imports asyncio; Bedrock agents; VPC Lattice; Lambda function URLs; the local HTTP resolver), and
the one of ``aws_lambda_powertools.utilities.data_classes`` every event class of every AWS
service; an HTTP function here uses the API Gateway resolver, its OpenAPI validation and one
event class. Imported the plain way they were a large part of the API function's cold import
(``make bench``: import_ratio_no_llm_handler; docs/architecture.md, "Cold start").

So this module registers both packages in ``sys.modules`` as *lazily initialised* modules:
created from the package's own spec (``importlib.util.module_from_spec``, ``__path__`` set), its
``__init__`` not run. It then imports the submodules the HTTP functions need (the import system
sets each one as an attribute of its package), gives each package the names its ``__init__``
would take from those submodules, and re-exports what our code uses. The first time anyone asks
a package for a name it does not have (``from aws_lambda_powertools.event_handler import
AppSyncResolver``, ``package.__all__``), a module-level ``__getattr__`` (PEP 562) runs the
package's real ``__init__`` in that same module object, once (under a lock), and answers from
it: every caller gets the real objects, the same ones the submodules define. If a package was
already imported the plain way before this module, it is left as it is.

Every module of ours (``functions/*/app.py``, ``agent_memory``, ``infra/local``) takes Powertools
event-handler and event-source names from here, so the packages stay lazy whichever of them is
imported first. Other Powertools utilities (idempotency, batch, parser, ...) import what they
need by full submodule path and are unaffected.

Is it still worth it? Measured with the routes in ``agent_memory.http.routes`` (this machine, 2
cores shared with other work, so noisy: three runs of 21 interleaved pairs each, the bench's method):
the API function's import is 1.63 / 1.65 / 1.65 times ``import boto3`` with the lazy registration and
1.78 / 1.85 / 1.79 without it (``make bench`` target: 1.7). So it stays, in this one module.

Pinned facts this relies on (aws-lambda-powertools :data:`CHECKED_VERSION`, ``requirements.txt``),
guarded by ``tests/unit/test_powertools_lazy.py``, which fails on another installed version and
names what to re-check:

- at import time, the submodules of both packages ask their package only for names this module
  provides (:data:`PROVIDED`: e.g. ``api_gateway`` takes ``content_types`` and seven event classes
  from the packages, ``openapi.params`` takes ``Response``, ``data_classes.sqs_event`` takes
  ``S3Event``). A submodule asking at import time for a name not provided would run the real
  ``__init__`` while itself half-imported, and the ``__init__`` importing it again fails
  ("partially initialized module"); the test imports every submodule of both packages after
  this module and records any such request;
- each provided name is the object the package's ``__init__`` binds (the test runs the
  ``__init__`` and compares).
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import threading
from types import ModuleType

#: The Powertools version the internals used here (the lazy registration's :data:`PROVIDED` names,
#: the resolver's ``_request_validation_middleware`` in :func:`validate_requests_with`) were checked
#: against; ``tests/unit/test_powertools_lazy.py`` fails when another one is installed.
CHECKED_VERSION = "3.37.0"

#: Serialises the deferred ``__init__`` runs (a second thread asking waits for the first).
_INIT_LOCK = threading.RLock()

EVENT_HANDLER = "aws_lambda_powertools.event_handler"
DATA_CLASSES = "aws_lambda_powertools.utilities.data_classes"

#: package -> submodule -> the names the package's ``__init__`` binds from that submodule and this
#: module gives the lazy package up front (imported in this order: a submodule's own imports from
#: its package must already be there).
PROVIDED: dict[str, dict[str, tuple[str, ...]]] = {
    DATA_CLASSES: {
        "alb_event": ("ALBEvent",),
        "api_gateway_proxy_event": ("APIGatewayProxyEvent", "APIGatewayProxyEventV2"),
        "bedrock_agent_event": ("BedrockAgentEvent",),
        "lambda_function_url_event": ("LambdaFunctionUrlEvent",),
        "vpc_lattice": ("VPCLatticeEvent", "VPCLatticeEventV2"),
        "s3_event": ("S3Event", "S3EventBridgeNotificationEvent"),
    },
    EVENT_HANDLER: {
        "content_types": (),
        "api_gateway": ("ALBResolver", "APIGatewayHttpResolver", "ApiGatewayResolver", "APIGatewayRestResolver",
                        "CORSConfig", "Response"),
        "depends": ("DependencyResolutionError", "Depends"),
        "request": ("Request",),
    },
}


def lazy_package(name: str) -> ModuleType:
    """The package ``name`` in ``sys.modules``, registered uninitialised if not imported yet.

    Args:
        name: a dotted package name whose parent package can be imported the plain way.

    Returns:
        The module object in ``sys.modules[name]``: the already imported package unchanged, or a
        new module made from the package's spec (``__path__`` set, so submodules import as usual)
        whose ``__init__`` runs, once, when a name it does not have is first asked for.

    Raises:
        ImportError: ``name`` is not a package found on the path.
    """
    existing = sys.modules.get(name)
    if existing is not None:
        return existing
    spec = importlib.util.find_spec(name)
    if spec is None or spec.loader is None or spec.submodule_search_locations is None:
        raise ImportError(f"{name} is not an importable package", name=name)
    module = importlib.util.module_from_spec(spec)
    loader = spec.loader
    pending = True

    def __getattr__(attribute: str) -> object:  # noqa: N807 - PEP 562's name
        nonlocal pending
        with _INIT_LOCK:
            if pending:
                pending = False  # a lookup from inside the __init__ itself sees a half-initialised module
                try:
                    loader.exec_module(module)
                except BaseException:
                    pending = True
                    raise
                module.__dict__.pop("__getattr__", None)  # an ordinary module from now on
        try:
            return module.__dict__[attribute]
        except KeyError:
            raise AttributeError(f"module {name!r} has no attribute {attribute!r}") from None

    module.__dict__["__getattr__"] = __getattr__
    sys.modules[name] = module
    parent, _, child = name.rpartition(".")
    setattr(sys.modules[parent], child, module)
    return module


def _import_provided() -> None:
    """Register both packages lazily, import :data:`PROVIDED`'s submodules, give the names."""
    for package_name, submodules in PROVIDED.items():
        package = lazy_package(package_name)
        for submodule_name, names in submodules.items():
            # by full path: ``from package import submodule`` would ask the package first
            submodule = importlib.import_module(f"{package_name}.{submodule_name}")
            for attribute in names:
                package.__dict__.setdefault(attribute, getattr(submodule, attribute))


_import_provided()

# What our modules use, from the submodules that define them (the packages are lazy by now).
from aws_lambda_powertools.event_handler import content_types  # noqa: E402 - after the registration above
from aws_lambda_powertools.event_handler.api_gateway import (  # noqa: E402
    APIGatewayHttpResolver,
    ApiGatewayResolver,
    BaseRouter,
    Response,
)
from aws_lambda_powertools.event_handler.depends import Depends  # noqa: E402
from aws_lambda_powertools.event_handler.middlewares import NextMiddleware  # noqa: E402
from aws_lambda_powertools.event_handler.middlewares.openapi_validation import (  # noqa: E402
    OpenAPIRequestValidationMiddleware,
)
from aws_lambda_powertools.event_handler.openapi.exceptions import RequestValidationError  # noqa: E402
from aws_lambda_powertools.event_handler.openapi.params import Header, Path, Query  # noqa: E402
from aws_lambda_powertools.event_handler.request import Request  # noqa: E402
from aws_lambda_powertools.utilities.data_classes.api_gateway_proxy_event import (  # noqa: E402
    APIGatewayProxyEventV2,
)


def validate_requests_with(app: ApiGatewayResolver, middleware: OpenAPIRequestValidationMiddleware) -> None:
    """Make ``middleware`` (a request validation middleware) the first middleware of every route
    of ``app``, in the place of Powertools' own request validation.

    Powertools runs its request validation before every middleware given to ``use()``; a check
    that must answer before validation (the route guard: 401 / 403 before any 422) can only take
    that place. It is an attribute of the resolver that Powertools documents nowhere
    (``_request_validation_middleware``, aws-lambda-powertools 3.37.0): this function is the one
    place that touches it, and ``tests/unit/test_powertools_lazy.py`` fails on an upgrade that
    moves it.

    Raises:
        RuntimeError: ``app`` validates no requests there (created without ``enable_validation``,
            or a Powertools version without that place): the middleware would never run.
    """
    if not isinstance(getattr(app, "_request_validation_middleware", None), OpenAPIRequestValidationMiddleware):
        raise RuntimeError("the Powertools event handler no longer validates requests where the route guard expects")
    app._request_validation_middleware = middleware


__all__ = [
    "CHECKED_VERSION",
    "DATA_CLASSES",
    "EVENT_HANDLER",
    "PROVIDED",
    "APIGatewayHttpResolver",
    "APIGatewayProxyEventV2",
    "ApiGatewayResolver",
    "BaseRouter",
    "Depends",
    "Header",
    "NextMiddleware",
    "OpenAPIRequestValidationMiddleware",
    "Path",
    "Query",
    "Request",
    "RequestValidationError",
    "Response",
    "content_types",
    "lazy_package",
    "validate_requests_with",
]
