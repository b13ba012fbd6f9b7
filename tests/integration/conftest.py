"""Integration fixtures.

``local_stack`` (the whole local stack: moto + template tables + real handlers + HTTP) and ``api``
(a ``requests`` session carrying the dev user's bearer token) live in ``tests/conftest.py``: the
browser tests share them, and only one local stack may run in a process. Other tokens:
``tests.support.auth.bearer``.
"""
