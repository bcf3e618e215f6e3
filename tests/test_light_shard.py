"""The light runs' shares of the tests (conftest.shard, AGUI_TEST_SHARD): CI's light runs
together must run every case, each once, but the tests named to run everywhere, and each
share about one n-th of the suite."""

import random

import pytest
from conftest import shard, shard_spec


def ids(sizes, module="x"):
    """Node ids of functions with the given numbers of cases (0: not parametrized)."""
    out = []
    for f, size in enumerate(sizes):
        name = f"tests/test_{module}.py::test_{f}"
        out += [name] if size == 0 else [f"{name}[case-{c}]" for c in range(size)]
    return out


def function(nodeid):
    return nodeid.split("[", 1)[0]


@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_shares_are_disjoint_and_cover_every_case(n):
    nodeids = ids([0, 1, 2, 3, 4, 5, 7, 10, 31, 0, 0, 2])
    everywhere = {"tests/test_x.py::test_3", "tests/test_x.py::test_9"}
    shares = [shard(nodeids, i, n, everywhere) for i in range(n)]
    assert set().union(*shares) == set(nodeids)
    for x in nodeids:
        copies = sum(x in share for share in shares)
        assert copies == (n if function(x) in everywhere else 1), x
    for share in shares:
        assert share <= set(nodeids)
        # A small function is whole in the share that has it.
        for f in {function(x) for x in share}:
            cases = [y for y in nodeids if function(y) == f]
            if len(cases) < n:
                assert set(cases) <= share, f


def test_small_functions_are_spread_over_the_shares():
    nodeids = [x for m in range(30) for x in ids([0, 1], module=m)]
    sizes = sorted(len(shard(nodeids, i, 3)) for i in range(3))
    assert sizes == [20, 20, 20]
    # By size: a big module's share takes no more small ones until the others catch up.
    nodeids = ids([2] * 10, module="big") + [x for m in range(20) for x in ids([0], module=f"z{m}")]
    shares = [shard(nodeids, i, 3) for i in range(3)]
    assert sorted(map(len, shares)) == [10, 10, 20]
    assert set(ids([2] * 10, module="big")) in shares


def test_a_modules_small_functions_share_one_share():
    """Its module-scoped set-ups (a cluster, a server) then start in one light run only."""
    nodeids = [x for m in "abcde" for x in ids([0, 1, 0], module=m)]
    for n in (2, 3):
        shares = [shard(nodeids, i, n) for i in range(n)]
        for m in "abcde":
            mine = {x for x in nodeids if f"test_{m}.py" in x}
            assert sum(bool(mine & share) for share in shares) == 1, (m, n)


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
