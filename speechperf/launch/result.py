"""How one child run of a cell ended: the record every executor returns and every command reads.

compare ranks cells over these, optimize and tune read each run's bench JSON through them, ``bench --runs`` keeps
their process figures; tune's ledger stores them as dicts (``to_dict``) and reads them back (``RunResult(**d)``).
"""

from __future__ import annotations

import attrs


@attrs.frozen
class RunResult:
    """One child run of one cell. ``run`` counts from 0; ``exit_code`` is 128 + N for signal N."""

    label: str
    run: int
    ok: bool
    exit_code: int | None
    signal: str | None
    reason: str | None  # why it failed; None when ok
    json_path: str
    outputs_path: str
    stderr_path: str
    pid: int | None = None
    wall_s: float | None = None
    cpu_s: float | None = None  # the child's user + system CPU time
    max_rss_mib: float | None = None  # the child's peak RSS over its whole life (import, build, measure)
    cores: tuple[int, ...] | None = None  # the CPUs the child may run on (its affinity mask when it started)
    node: str | None = None
    started_at: float | None = None  # epoch seconds: which children of a --jobs run overlapped in time

    def to_dict(self) -> dict:
        return attrs.asdict(self)
