"""bench/load.py's worker options: the Celery processes the redis set-up starts (no load run)."""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest

LOAD = Path(__file__).resolve().parents[2] / "bench" / "load.py"


@pytest.fixture(scope="module")
def load() -> Iterator[ModuleType]:
    spec = importlib.util.spec_from_file_location("bench_load_under_test", LOAD)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up by name
    try:
        spec.loader.exec_module(module)
        yield module
    finally:
        sys.modules.pop(spec.name, None)


def test_prefork_is_one_main_process_forking_n_children(load: ModuleType) -> None:
    args = load.parser().parse_args(["--setup", "redis", "--workers", "3", "--pool", "prefork"])
    commands = load.worker_commands(args.workers, args.pool, args.concurrency)
    assert [name for name, _ in commands] == ["worker"]
    argv = commands[0][1]
    assert "--pool=prefork" in argv and "--concurrency=3" in argv
    assert "--prefetch-multiplier=1" in argv


def test_threads_are_n_processes_with_their_threads(load: ModuleType) -> None:
    args = load.parser().parse_args(["--setup", "redis", "--workers", "2", "--concurrency", "5"])
    commands = load.worker_commands(args.workers, args.pool, args.concurrency)
    assert [name for name, _ in commands] == ["worker", "worker-1"]  # faults.py stops "worker"
    for _, argv in commands:
        assert "--pool=threads" in argv and "--concurrency=5" in argv
    names = [argv[argv.index("-n") + 1] for _, argv in commands]
    assert len(set(names)) == 2  # two workers with one node name would clash


def test_the_cluster_starts_each_worker_process(load: ModuleType, tmp_path: Path) -> None:
    cluster = load.Cluster("redis", var_dir=tmp_path, daphnes=1, workers=2, pool="threads")
    assert sorted(p.name for p in cluster.procs.values() if p.kind == "worker") == [
        "worker",
        "worker-1",
    ]
    with pytest.raises(ValueError):
        load.Cluster("redis", var_dir=tmp_path, workers=0)
    with pytest.raises(SystemExit):
        load.parser().parse_args(["--pool", "gevent"])
