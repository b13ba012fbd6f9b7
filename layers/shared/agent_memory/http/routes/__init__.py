"""The routes of each HTTP function, one module per function, named after its handler's folder
(``functions/<name>/app.py`` serves ``agent_memory.http.routes.<name>``).

Each module holds the function's :class:`~agent_memory.http.routing.Routes` (``routes``: every
route declares its access where it is defined; a route is 3-5 lines that call ONE use case), the
collaborators its routes use (a dataclass wiring builds) and the function's event handler factory.
Nothing here imports a function's module at package import: each function imports its own module
only, so it loads only what it runs (docs/architecture.md, "Cold start").

:func:`route_table` is the route table of the whole API, derived from those declarations: the
tests check ``template.yaml``'s events against it, and the OpenAPI document (``infra/openapi.py``)
is generated from the same routes.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from agent_memory.http.routing import Access, Routes

#: The HTTP functions, by the folder of their handler module (``functions/<name>``).
FUNCTIONS = ("admin", "api", "chat", "governance", "sessions")


def function_routes(name: str) -> Routes:
    """The routes of the HTTP function ``functions/<name>`` (its module is imported now).

    Raises:
        ModuleNotFoundError: no such function here.
    """
    module = importlib.import_module(f"{__name__}.{name}")
    routes: Routes = module.routes
    return routes


def route_table() -> dict[str, Access]:
    """Every route of the API (``"METHOD /path"``, as in ``template.yaml``) -> who may call it.

    Raises:
        ValueError: two functions declare the same route.
    """
    table: dict[str, Access] = {}
    for name in FUNCTIONS:
        for key, access in function_routes(name).table.items():
            if key in table:
                raise ValueError(f"{key} is declared by two functions")
            table[key] = access
    return table


__all__ = ["FUNCTIONS", "function_routes", "route_table"]
