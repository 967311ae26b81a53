"""The search signature (bench/signature.py) pins search behaviour across refactors.

If a change is *meant* to change the search (new pruning, priors, selection, victim choice), update
``EXPECTED`` in the same commit and say why in the commit message; otherwise a mismatch is a bug.
"""

from bench.signature import fold, positions, search_signature

EXPECTED = {"uniform": 16987447371717660335, "tiny-net": 1806704191234842601}


def test_fold_is_sensitive_to_every_count():
    base = fold(0xCBF29CE484222325, [3, 1, 4])
    assert base != fold(0xCBF29CE484222325, [3, 1, 5])
    assert base != fold(0xCBF29CE484222325, [1, 3, 4])
    assert base != fold(0xCBF29CE484222325, [3, 14])


def test_positions_load():
    states = positions()
    assert len(states) == 15
    assert {s.phase for s in states} == {0, 1}


def test_search_signature_is_pinned():
    result = search_signature()
    assert result["parts"] == EXPECTED, (
        f"search signature changed: {result['parts']} (expected {EXPECTED}); if the search was meant to "
        "change, update EXPECTED and say why"
    )
