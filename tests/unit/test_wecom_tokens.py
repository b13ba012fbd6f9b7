"""The access-token cache: a token is used until shortly before WeCom says it expires, and a refused
token is dropped only if no other call already replaced it."""

from __future__ import annotations

from agent_memory.adapters.wecom.api import TOKEN_REFRESH_MARGIN_S, AccessTokenCache

KEY = ("https://qyapi.weixin.qq.com", "ww1234567890abcdef", 1000002, "0f" * 32)


class _Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_token_is_used_until_the_refresh_margin_before_expiry() -> None:
    # Given: a token WeCom says expires in 7,200 s
    clock = _Clock()
    cache = AccessTokenCache(clock)
    cache.put(KEY, "tok-1", 7200)
    # When / Then: cached until 7,200 - margin seconds, then due for refresh
    clock.now += 7200 - TOKEN_REFRESH_MARGIN_S - 1
    assert cache.get(KEY) == "tok-1"
    clock.now += 1
    assert cache.get(KEY) is None


def test_a_refused_token_is_dropped_but_not_its_replacement() -> None:
    cache = AccessTokenCache(_Clock())
    cache.put(KEY, "tok-2", 7200)
    cache.drop(KEY, "tok-1")  # a late refusal of an older token
    assert cache.get(KEY) == "tok-2"
    cache.drop(KEY, "tok-2")
    assert cache.get(KEY) is None


def test_tokens_of_another_secret_or_agent_are_apart() -> None:
    cache = AccessTokenCache(_Clock())
    cache.put(KEY, "tok-1", 7200)
    assert cache.get((*KEY[:3], "1e" * 32)) is None
    assert cache.get((KEY[0], KEY[1], 1000003, KEY[3])) is None
