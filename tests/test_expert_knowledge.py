"""The expert's scores as a service (``knowledge/expert.py``): the shared one-ply cache never changes a
score, the service pickles without its cache, and bad arguments are refused."""

from __future__ import annotations

import math
import pickle
import random

import numpy as np
import pytest

from core.state import GameState
from knowledge.expert import ExpertKnowledge
from tests.strategies import random_battle_jfen


def _positions(n: int) -> list[GameState]:
    rng = random.Random(7)
    out = []
    while len(out) < n:
        s = GameState.from_jfen(random_battle_jfen(rng, rng.randint(30, 80), rng.randint(30, 80), 1))
        if not s.is_terminal() and s.paths().m:
            out.append(s)
    return out


def test_the_cache_gives_the_uncached_scores_and_stays_bounded():
    cached, plain = ExpertKnowledge(cache=2), ExpertKnowledge(cache=0)
    states = _positions(4)
    for s in states + states[::-1]:
        a, la = cached.one_ply(s)
        b, lb = plain.one_ply(s)
        assert np.array_equal(a, b) and np.array_equal(la, lb)
        assert not a.flags.writeable  # shared: read-only
        assert np.array_equal(cached.two_ply_scores(s), plain.two_ply_scores(s))
    assert len(cached._cache) <= 2 and cached.hits > 0 and plain.hits == 0


def test_the_service_pickles_without_its_cache():
    k = ExpertKnowledge(k_full=32, layout_mix=0.5, cache=8)
    s = _positions(1)[0]
    k.one_ply(s)
    copy = pickle.loads(pickle.dumps(k))
    assert (copy.k_full, copy.layout_mix, copy.cache) == (32, 0.5, 8) and len(copy._cache) == 0
    assert np.array_equal(copy.one_ply(s)[0], k.one_ply(s)[0])


def test_bad_arguments_are_refused():
    with pytest.raises(ValueError, match="cache must be >= 0"):
        ExpertKnowledge(cache=-1)
    k, s = ExpertKnowledge(), _positions(1)[0]
    for bad in (-1.0, math.nan):
        with pytest.raises(ValueError, match="margin"):
            k.two_ply_scores(s, margin=bad)
        with pytest.raises(ValueError, match="margin"):
            k.battle_scores(s, plies=1, margin=bad)
