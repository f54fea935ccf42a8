"""The suite's own scheduling: under pytest-xdist each worker's share starts with the ``alone`` tests (conftest)."""

import pytest

from tests.conftest import alone_first_in_every_share, heavy_modules_first


class Item:
    def __init__(self, name: str, alone: bool, path: str = "test_a.py", slow: bool = False):
        self.name, self.alone, self.path, self.slow = name, alone, path, slow

    def get_closest_marker(self, name):
        return object() if (name == "alone" and self.alone) or (name == "slow" and self.slow) else None


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


def test_the_modules_with_the_most_slow_tests_come_first_each_whole_and_in_order():
    items = [
        Item("u1", False, "test_unit.py"),
        Item("c1", False, "test_cli.py", slow=True),
        Item("u2", False, "test_unit.py"),
        Item("c2", False, "test_cli.py"),
        Item("c3", False, "test_cli.py", slow=True),
        Item("o1", False, "test_one.py", slow=True),
    ]
    assert [i.name for i in heavy_modules_first(items)] == ["c1", "c2", "c3", "o1", "u1", "u2"]
