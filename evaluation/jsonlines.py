"""One JSON value read from an uploaded line, refused cleanly however it is malformed.

`json.loads` recurses once per level of nesting: a line of ten thousand "[" raises
RecursionError (a 500), not ValueError. A case is three levels deep at most, so nesting is
counted first, without recursion, and anything deeper than `MAX_DEPTH` is a ValueError like
any other malformed line.
"""

from __future__ import annotations

import json
from typing import Any

MAX_DEPTH = 32


def loads(text: str) -> Any:
    """The JSON value of `text`; ValueError when it is not JSON or nests deeper than MAX_DEPTH."""
    if nesting(text) > MAX_DEPTH:
        raise ValueError(f"nested more than {MAX_DEPTH} levels deep")
    try:
        return json.loads(text)
    except RecursionError as exc:  # not reachable within MAX_DEPTH; kept as the last guard
        raise ValueError("nested too deeply") from exc


def nesting(text: str) -> int:
    """The deepest level of brackets and braces outside strings."""
    depth = deepest = 0
    in_string = escaped = False
    for ch in text:
        if in_string:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_string = False
        elif ch == '"':
            in_string = True
        elif ch in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif ch in "]}":
            depth -= 1
    return deepest
