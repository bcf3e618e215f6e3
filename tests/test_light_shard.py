"""The light runs' shares of the parametrized cases (conftest.shard, AGUI_TEST_SHARD): CI's
light runs together must run every case, each once, and each run every test function."""

import random

import pytest
from conftest import shard, shard_spec


def ids(sizes):
    """Node ids of functions with the given numbers of cases (0: not parametrized)."""
    out = []
    for f, size in enumerate(sizes):
        name = f"tests/test_x.py::test_{f}"
        out += [name] if size == 0 else [f"{name}[case-{c}]" for c in range(size)]
    return out


def function(nodeid):
    return nodeid.split("[", 1)[0]


@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_shares_are_disjoint_cover_every_case_and_keep_every_function(n):
    nodeids = ids([0, 1, 2, 3, 4, 5, 7, 10, 31, 0])
    shares = [shard(nodeids, i, n) for i in range(n)]
    functions = {function(x) for x in nodeids}
    for share in shares:
        assert share <= set(nodeids)
        assert {function(x) for x in share} == functions
    # Every case in some share; a case in two shares only if its function has fewer than n
    # cases (then every share runs all of them).
    assert set().union(*shares) == set(nodeids)
    for x in nodeids:
        copies = sum(x in share for share in shares)
        small = sum(function(y) == function(x) for y in nodeids) < n
        assert copies == (n if small else 1), x


def test_a_share_is_about_one_nth_of_a_big_function():
    nodeids = ids([100])
    assert sorted(len(shard(nodeids, i, 3)) for i in range(3)) == [33, 33, 34]


def test_a_share_does_not_depend_on_collection_order():
    nodeids = ids([0, 5, 17, 40])
    shuffled = nodeids[:]
    random.Random(7).shuffle(shuffled)
    assert shuffled != nodeids
    for i in range(3):
        assert shard(shuffled, i, 3) == shard(nodeids, i, 3)


def test_shard_spec():
    assert shard_spec("") == (0, 1)
    assert shard_spec("2/3") == (2, 3)
    for bad in ("3/3", "-1/2", "1/0", "x/3"):
        with pytest.raises(ValueError):
            shard_spec(bad)
