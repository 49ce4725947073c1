"""The backend a mistyped --attention-backend most likely meant is kept per word (sglang/resolve.py
`_suggest`, an LRU of 512 short words): the same answers as worked out afresh, and bounded — a
stream of distinct values does not grow it past its bound, a long value is never kept."""

from __future__ import annotations

from h3doctor.sglang.resolve import _suggest, suggest_backend


def test_kept_answers_are_the_answers_and_the_table_stays_bounded():
    _suggest.cache_clear()
    words = [None, "none", "sage-attn", "FA3", "flash_attn", "sdpa", "torch_sdpa", "sagea_attn", "xformers", "qwerty"]
    first = [suggest_backend(w) for w in words]
    assert first == [suggest_backend(w) for w in words] == [_suggest.__wrapped__(str(w).strip().lower().replace("-", "_"))
                                                             for w in words]
    for n in range(2000):
        suggest_backend(f"backend{n}")
    assert _suggest.cache_info().currsize <= 512


def test_a_long_value_is_answered_but_never_kept():
    _suggest.cache_clear()
    assert suggest_backend("sage_attn" + "x" * 100) == _suggest.__wrapped__("sage_attn" + "x" * 100)
    assert _suggest.cache_info().currsize == 0
