"""A compare document's cells as its views read them: each one's row, its finished runs' raw timings (``runs[].
timings``) and its failed runs, with the figures ``speechperf.compare.summary`` computed from the same timings."""

from __future__ import annotations

import statistics
from typing import Any

import attrs
import numpy as np

from speechperf import length_cost, stats
from speechperf.results import Document


@attrs.frozen
class CellRuns:
    """One cell as the document keeps it: its row, its finished runs' raw timings and its failed runs."""

    label: str
    backend: str
    threads: int
    params: tuple[tuple[str, Any], ...]
    row: dict[str, Any]
    finished: tuple[dict[str, Any], ...]  # the runs' entries of ``runs`` with timings
    failures: tuple[dict[str, Any], ...]  # those without: the run did not count
    roofline: dict[str, dict[str, Any]]  # stage -> its roofline columns
    length_fits: dict[str, length_cost.LengthFit]

    @property
    def timings(self) -> list[dict[str, Any]]:
        return [run["timings"] for run in self.finished]

    @property
    def run_values(self) -> list[float]:
        """Seconds: each finished run's mean per-sample runtime, the ranking's unit."""
        return [statistics.fmean(t["per_sample_s"].values()) for t in self.timings]

    @property
    def per_sample(self) -> list[float]:
        return [v for t in self.timings for v in t["per_sample_s"].values()]

    @property
    def ok(self) -> bool:
        return bool(self.finished)

    @property
    def mean(self) -> float | None:
        return stats.mean(self.run_values)

    @property
    def stdev(self) -> float | None:
        return stats.stdev(self.run_values)

    def percentile(self, q: float) -> float | None:
        pooled = self.per_sample
        return float(np.percentile(pooled, q, method="linear")) if pooled else None


def cells(doc: Document) -> list[CellRuns]:
    """The document's cells in the table's order."""
    described = {c["label"]: c for c in doc.get("cells") or ()}
    per_stage = (doc.get("roofline") or {}).get("per_stage") or {}
    fits = doc.get("length_fit") or {}
    out = []
    for row in doc.rows:
        label = row["cell"]
        cell = described.get(label, {})
        runs = [r for r in doc.get("runs") or () if r.get("label") == label]
        out.append(
            CellRuns(
                label,
                cell.get("backend", row.get("backend")),
                cell.get("threads", row.get("threads")),
                tuple((cell.get("params") or {}).items()),
                row,
                tuple(r for r in runs if r.get("timings")),
                tuple(r for r in runs if not r.get("timings")),
                per_stage.get(label) or {},
                {name: length_cost.LengthFit(**f) for name, f in (fits.get(label) or {}).items()},
            )
        )
    return out
