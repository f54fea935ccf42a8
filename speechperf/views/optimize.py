"""How an optimize document (``kind: optimize``) is shown: one row per variant (fp32 first) in the console and the
Markdown, every figure of the rows in the CSV and the HTML table, the trade-off plot on the page.

Each is read from the document alone (its rows, ``backend``, ``runs_per_variant``, ``stage_labels``,
``quality_budget`` and the config's ``general``), so that ``speechperf show`` prints what the run printed.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from speechperf import stats, tables
from speechperf.results import Document
from speechperf.store.html import table_html
from speechperf.views import Shown, View

log = logging.getLogger(__name__)

#: The CSV's and the HTML table's columns: every figure of a row, as the JSON keeps it.
COLUMNS = (
    "variant",
    "status",
    "size_mb",
    "size_ratio",
    "compressed_mb",
    "compressed_ratio",
    "sparsity",
    "model_sparsity",
    "mean_ms",
    "stdev_ms",
    "speedup",
    "speedup_sigma",
    "p_value",
    "runs",
    "peak_rss_mib",
    "fidelity",
    "fidelity_kind",
    "wer",
    "cer",
    "bleu",
    "normalizer",
    "agreement_or_snr",
    "dnsmos_ovrl",
    "mos_drop",
    "mcd_db",
    "pesq",
    "stoi",
    "min_snr_db",
    "graph_max_rel_diff",
    "parity_max_rel_diff",
    "parity",
    "float_outputs",
    "fp32_ops",
)

#: The console's and the Markdown's columns: a figure with its spread in one cell.
HEADERS = (
    "variant",
    "status",
    "size MB (x fp32)",
    "latency ms mean ± σ",
    "speed-up vs fp32",
    "peak RSS MiB",
    "zip MB (x fp32)",
    "sparsity (whole model)",
    "fidelity vs fp32",
    "graph max rel diff",
    "float outputs vs fp32",
    "ops not int8 (share of op time)",
)
LEFT = ("variant", "status", "fidelity vs fp32", "float outputs vs fp32", "ops not int8 (share of op time)")


def _general(doc: Document) -> dict[str, Any]:
    return (doc.config or {}).get("general") or {}


def title(doc: Document) -> str:
    """``speechperf optimize: s2t s2t/tiny on onnxruntime``: the page's title and the plot's."""
    labels = doc.get("stage_labels")
    what = " ".join(str(part) for part in (_general(doc).get("model_type"), labels) if part)
    return f"speechperf optimize: {what} on {doc.get('backend')}"


def _display(p: dict) -> list[Any]:
    """One row as the console and the Markdown show it."""
    size = (
        "-"
        if p.get("size_mb") is None
        else f"{p['size_mb']:.2f}" + (f" ({p['size_ratio']:.2f}x)" if p.get("size_ratio") is not None else "")
    )
    latency = stats.mean_sigma(p.get("mean_ms"), p.get("stdev_ms"))
    speed = "-"
    if p.get("speedup") is not None:
        speed = stats.Ratio(p["speedup"], p.get("speedup_sigma")).text()
        speed += f" ({stats.p_text(p['p_value'])})" if p.get("p_value") is not None else ""
    diff = p.get("graph_max_rel_diff")
    graphs = "-" if diff is None else (str(diff) if isinstance(diff, str) else f"{diff:.2g}")
    if p.get("parity_max_rel_diff") is not None:  # a pruned graph against the pruned weights where they were pruned
        graphs += f"; parity {p['parity_max_rel_diff']:.2g}"
    peak = p.get("peak_rss_mib")
    zipped = "-" if p.get("compressed_mb") is None else f"{p['compressed_mb']:.2f}"
    if p.get("compressed_ratio") is not None:
        zipped += f" ({p['compressed_ratio']:.2f}x)"
    sparsity = "-"
    if p.get("sparsity") is not None:
        sparsity = f"{100 * p['sparsity']:.1f}% ({100 * (p.get('model_sparsity') or 0):.1f}%)"
    return [
        p.get("variant"),
        p.get("status"),
        size,
        latency,
        speed,
        "-" if peak is None else str(peak),
        zipped,
        sparsity,
        p.get("fidelity") or "-",
        graphs,
        p.get("float_outputs") or "-",
        p.get("fp32_ops") or "-",
    ]


def console(doc: Document, how: Shown) -> str:
    """The one table; never fitted to a terminal (its text columns are long): a pipe or a log never wraps a row."""
    heading = (
        f"{title(doc)}, {_general(doc).get('threads')} thread(s), {doc.get('runs_per_variant')} run(s) per variant"
    )
    return tables.render_table(heading, HEADERS, (_display(row) for row in doc.rows), left=LEFT)


def markdown(doc: Document) -> str:
    return tables.to_markdown(HEADERS, (_display(row) for row in doc.rows))


def csv(doc: Document) -> str:
    """The rows as the JSON has them: fractions stay fractions."""
    return tables.to_csv(COLUMNS, ({c: row.get(c) for c in COLUMNS} for row in doc.rows))


def html_tables(doc: Document) -> list[str]:
    return [table_html(title(doc), list(COLUMNS), doc.rows)]


def draw(doc: Document, path: Path) -> Path | None:
    """The trade-off into ``path`` (``optimize --plot``); None, with a warning, when no variant has a quality
    figure."""
    from speechperf.views.optimize_plot import plot_tradeoff

    drawn = plot_tradeoff(doc.rows, doc.get("quality_budget") or {}, path, title(doc))
    if drawn is None:
        log.warning("--plot: no variant has a quality figure (WER, BLEU, agreement, SNR); nothing drawn")
    return drawn


def plots(doc: Document, folder: Path) -> list[Path]:
    """The --html page's trade-off; without matplotlib (an extra) the page goes without it rather than fail."""
    from speechperf.extras import MissingExtraError, require

    try:
        require("matplotlib", "the --html page's trade-off plot")
    except MissingExtraError as exc:
        log.warning("%s", exc)
        return []
    drawn = draw(doc, folder / "optimize.png")
    return [] if drawn is None else [drawn]


VIEW = View(console=console, markdown=markdown, csv=csv, html_tables=html_tables, title=title, plots=plots)
