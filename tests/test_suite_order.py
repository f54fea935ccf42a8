"""The suite's own scheduling: under pytest-xdist each worker's share starts with the ``alone`` tests (conftest)."""

import pytest

from tests.conftest import alone_first_in_every_share


class Item:
    def __init__(self, name: str, alone: bool):
        self.name, self.alone = name, alone

    def get_closest_marker(self, name):
        return object() if name == "alone" and self.alone else None


@pytest.mark.parametrize("workers", [1, 2, 3, 4])
def test_every_share_of_worksteal_starts_with_its_alone_tests(workers):
    items = [Item(f"t{i}", i in (3, 7, 8, 15, 19)) for i in range(20)]
    ordered = alone_first_in_every_share(items, workers)
    assert sorted(i.name for i in ordered) == sorted(i.name for i in items)  # nothing lost, nothing twice
    left, start = len(ordered), 0
    for worker in range(workers):  # the shares worksteal deals: len(left) // workers_left, in turn
        share = ordered[start : start + left // (workers - worker)]
        alone = [i for i in share if i.alone]
        assert share[: len(alone)] == alone and len(alone) >= 5 // workers
        start, left = start + len(share), left - len(share)
    others = [i.name for i in ordered if not i.alone]
    assert others == [i.name for i in items if not i.alone]  # the other tests keep their order
