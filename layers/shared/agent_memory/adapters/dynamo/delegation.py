"""Composition of the repositories: a repository holds the stores it builds on (``projects``, a
:class:`~agent_memory.adapters.dynamo.projects.ProjectRepository`; ``chat``, a
:class:`~agent_memory.adapters.dynamo.chat.ChatRepository`) and passes the calls that are theirs
on to them, one line per method: ``get_project = delegate("projects", ProjectRepository.get_project)``.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, Concatenate


def delegate[H, **P, R](attribute: str, method: Callable[Concatenate[H, P], R]) -> Callable[Concatenate[Any, P], R]:
    """A method that calls the method of ``method``'s name on the object the instance holds in
    ``attribute`` (looked up on that object, so its own class decides), with the same arguments,
    return value, errors and docstring; the type checker sees ``method``'s signature.

    Args:
        attribute: the instance attribute holding the store the call is passed to.
        method: that store's method, taken from its class (``ProjectRepository.get_project``).
    """
    name = method.__name__

    @functools.wraps(method)
    def passed_on(self: Any, /, *args: P.args, **kwargs: P.kwargs) -> R:
        bound: Callable[P, R] = getattr(getattr(self, attribute), name)
        return bound(*args, **kwargs)

    return passed_on


__all__ = ["delegate"]
