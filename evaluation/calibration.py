"""Confidence calibration of the router (V3): pure functions over a run's per-case rows.

Each step the router routed is a sample: the agent, the confidence the router gave it, and
whether it was right (its intent is one of the case's expected ones, each expected intent
matched once). Per agent:

- the reliability diagram: samples in ten equal confidence bins, each bin's mean confidence
  against its accuracy (a calibrated router has them equal);
- the expected calibration error, ECE = Σ_bins (n_b / N) · |accuracy_b − confidence_b|;
- the trade-off of a threshold t: coverage (share of steps with confidence ≥ t, which run; the
  rest yield) against accuracy among them; the suggested threshold keeps the most steps while
  the accuracy stays at the target, moving the current threshold as little as that allows.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass
from typing import Any

BINS = 10
TARGET_ACCURACY = 0.9
THRESHOLDS = tuple(round(i / 20, 2) for i in range(1, 20))  # 0.05 … 0.95

Sample = tuple[float, bool]  # (confidence, right)


@dataclass(frozen=True)
class Bin:
    low: float
    high: float
    count: int
    confidence: float  # mean confidence of the bin's samples (0 when empty)
    accuracy: float  # share right (0 when empty)


@dataclass(frozen=True)
class Point:
    threshold: float
    coverage: float
    accuracy: float


def samples_by_agent(rows: list[dict[str, Any]]) -> dict[str, list[Sample]]:
    by_agent: dict[str, list[Sample]] = defaultdict(list)
    for row in rows:
        expected = Counter(row.get("expected_intents", []))
        for agent, intent, confidence in row.get("routed", []):
            right = expected[intent] > 0
            if right:
                expected[intent] -= 1
            by_agent[str(agent)].append((float(confidence), right))
    return dict(sorted(by_agent.items()))


def _bin_of(confidence: float, bins: int) -> int:
    return min(max(int(confidence * bins), 0), bins - 1)  # 1.0 goes in the last bin


def reliability(samples: list[Sample], bins: int = BINS) -> list[Bin]:
    grouped: list[list[Sample]] = [[] for _ in range(bins)]
    for sample in samples:
        grouped[_bin_of(sample[0], bins)].append(sample)
    result = []
    for i, members in enumerate(grouped):
        n = len(members)
        result.append(
            Bin(
                low=round(i / bins, 4),
                high=round((i + 1) / bins, 4),
                count=n,
                confidence=sum(c for c, _r in members) / n if n else 0.0,
                accuracy=sum(1 for _c, r in members if r) / n if n else 0.0,
            )  # fmt: skip
        )
    return result


def ece(samples: list[Sample], bins: int = BINS) -> float:
    if not samples:
        return 0.0
    total = len(samples)
    return sum(b.count / total * abs(b.accuracy - b.confidence) for b in reliability(samples, bins))


def tradeoff(samples: list[Sample], thresholds: tuple[float, ...] = THRESHOLDS) -> list[Point]:
    points = []
    for t in thresholds:
        kept = [right for confidence, right in samples if confidence >= t]
        points.append(
            Point(
                threshold=t,
                coverage=len(kept) / len(samples) if samples else 0.0,
                accuracy=sum(kept) / len(kept) if kept else 0.0,
            )
        )
    return points


def suggest(
    points: list[Point], target: float = TARGET_ACCURACY, current: float | None = None
) -> float | None:
    """The threshold that keeps the most steps while their accuracy stays at the target; of
    several that keep as many, the nearest to the current one (no change when it is one of them,
    the lowest without one). When none reaches the target: the most accurate, nearest likewise."""
    covered = [p for p in points if p.coverage > 0]
    if not covered:
        return None
    reaching = [p for p in covered if p.accuracy >= target]
    if reaching:
        best = max(p.coverage for p in reaching)
        candidates = [p for p in reaching if p.coverage == best]
    else:
        best = max(p.accuracy for p in covered)
        candidates = [p for p in covered if p.accuracy == best]
    if current is None:
        return candidates[0].threshold  # thresholds ascending
    return min(candidates, key=lambda p: (abs(p.threshold - current), p.threshold)).threshold


@dataclass(frozen=True)
class AgentCalibration:
    agent: str
    samples: int
    accuracy: float
    mean_confidence: float
    ece: float
    bins: list[Bin]
    points: list[Point]
    suggested: float | None


def calibrate(
    rows: list[dict[str, Any]],
    target: float = TARGET_ACCURACY,
    current: dict[str, float] | None = None,
) -> list[AgentCalibration]:
    """Per agent; `current` holds each agent's threshold now (the suggestion moves it least)."""
    result = []
    for agent, samples in samples_by_agent(rows).items():
        points = tradeoff(samples)
        result.append(
            AgentCalibration(
                agent=agent,
                samples=len(samples),
                accuracy=sum(1 for _c, r in samples if r) / len(samples),
                mean_confidence=sum(c for c, _r in samples) / len(samples),
                ece=ece(samples),
                bins=reliability(samples),
                points=points,
                suggested=suggest(points, target, (current or {}).get(agent)),
            )
        )
    return result
