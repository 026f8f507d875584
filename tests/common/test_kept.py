"""Values kept between turns (common/kept.py): read once, again after the seconds or a forget,
and never a value read across a change."""

from __future__ import annotations

from unittest import mock

from common.kept import Kept


def test_a_value_is_read_once_until_its_seconds_pass() -> None:
    reads: list[int] = []

    def read() -> int:
        reads.append(1)
        return len(reads)

    kept: Kept[int] = Kept(lambda: 5.0)
    with mock.patch("common.kept.time.monotonic", return_value=100.0):
        assert kept.get(1, read) == 1
        assert kept.get(1, read) == 1
        assert kept.get(2, lambda: 20) == 20  # each key its own
    with mock.patch("common.kept.time.monotonic", return_value=105.0):
        assert kept.get(1, read) == 2


def test_zero_seconds_reads_every_time() -> None:
    values = iter(range(10))
    kept: Kept[int] = Kept(lambda: 0.0)
    assert [kept.get("k", lambda: next(values)) for _ in range(3)] == [0, 1, 2]


def test_forget_drops_one_key_or_all() -> None:
    kept: Kept[str] = Kept(lambda: 60.0)
    kept.get(1, lambda: "a")
    kept.get(2, lambda: "b")
    kept.forget(1)
    assert kept.get(1, lambda: "a2") == "a2"
    assert kept.get(2, lambda: "b2") == "b"
    kept.forget()
    assert kept.get(2, lambda: "b3") == "b3"


def test_a_read_that_a_change_overtook_is_returned_but_not_kept() -> None:
    kept: Kept[str] = Kept(lambda: 60.0)

    def read_while_someone_saves() -> str:
        kept.forget(1)  # another thread saved the row while this read ran
        return "old"

    assert kept.get(1, read_while_someone_saves) == "old"
    assert kept.get(1, lambda: "new") == "new"
