"""``optimize --plot``: the quality / speed-up / size trade-off drawn from a fixed table (no model runs), and the
option's checks before any work."""

from __future__ import annotations

import sys

import pytest
from click.testing import CliRunner

pytest.importorskip("matplotlib")

from speechperf.cli import main  # noqa: E402
from speechperf.views.optimize_plot import BUDGET_GID, plot_tradeoff, quality_of, tradeoff_figure  # noqa: E402

BUDGET = {"max_wer_increase": 1.0, "max_bleu_drop": 1.0, "min_agreement": None}


def row(variant, speedup, size_ratio, **figures):
    return {
        "variant": variant,
        "status": "ok",
        "speedup": speedup,
        "speedup_sigma": 0.1 if speedup else None,
        "size_ratio": size_ratio,
        **figures,
    }


#: fp32 at 5.0% WER; dyn within the 1-point budget, static over it, broken failed (no figures).
WER_ROWS = [
    row("fp32", None, 1.0, wer=0.05, fidelity_kind="tokens", agreement_or_snr=1.0),
    row("dyn", 1.8, 0.5, wer=0.055, fidelity_kind="tokens", agreement_or_snr=0.99),
    row("static", 2.3, 0.26, wer=0.09, fidelity_kind="tokens", agreement_or_snr=0.9),
    row("broken", None, None, wer=None),
]


def points(ax) -> dict[str, tuple[float, float]]:
    """Each annotated point of a panel: its label -> (x, y)."""
    return {t.get_text(): tuple(t.xy) for t in ax.texts}


def test_wer_against_speedup_and_size_with_fp32_and_the_budget_line():
    fig = tradeoff_figure(WER_ROWS, BUDGET, "t")
    speed, size = fig.axes[:2]
    assert speed.get_xlabel() == "speed-up over fp32 (x, higher is faster)"
    assert size.get_xlabel() == "size / fp32 size"
    assert speed.get_ylabel() == "WER (%), lower is better"
    # fp32 at speed-up 1 and size 1, each variant at its own; the failed one is not drawn.
    assert points(speed) == {"fp32": (1.0, 5.0), "dyn": (1.8, 5.5), "static": (2.3, 9.0)}
    assert points(size) == {"fp32": (1.0, 5.0), "dyn": (0.5, 5.5), "static": (0.26, 9.0)}
    for ax in (speed, size):
        stars = [line for line in ax.lines if line.get_marker() == "*"]
        assert [tuple(s.get_xydata()[0]) for s in stars] == [(1.0, 5.0)]  # fp32 marked
        budget = [line for line in ax.lines if line.get_gid() == BUDGET_GID]
        assert len(budget) == 1 and list(budget[0].get_ydata()) == pytest.approx([6.0, 6.0])  # 5% + 1 point
        assert budget[0].get_label() == "budget: fp32 WER + 1.0 points"


def test_the_figure_is_saved_as_a_png(tmp_path):
    import matplotlib.image

    path = plot_tradeoff(WER_ROWS, BUDGET, tmp_path / "t.png", "t")
    assert path == tmp_path / "t.png" and path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    height, width, _ = matplotlib.image.imread(path).shape
    assert width > 2 * height * 0.9  # two panels side by side


def test_bleu_budget_is_below_fp32():
    rows = [row("fp32", None, 1.0, bleu=30.0), row("q", 1.5, 0.5, bleu=29.5)]
    quality = quality_of(rows, BUDGET)
    assert quality.label == "BLEU, higher is better" and quality.budget == pytest.approx(29.0)


def test_agreement_without_a_budget_says_so_and_draws_no_line():
    rows = [
        row("fp32", None, 1.0, agreement_or_snr=1.0, fidelity_kind="vad"),
        row("q", 1.2, 0.7, agreement_or_snr=0.97),
    ]
    fig = tradeoff_figure(rows, BUDGET, "t")
    assert fig.axes[0].get_ylabel() == "VAD agreement with fp32 (%)"
    assert not [line for ax in fig.axes for line in ax.lines if line.get_gid() == BUDGET_GID]
    assert "no --min-agreement: no budget line" in fig._suptitle.get_text()
    with_budget = quality_of(rows, {**BUDGET, "min_agreement": 0.98})
    assert with_budget.budget == pytest.approx(98.0)


def test_no_quality_figure_draws_nothing(tmp_path):
    rows = [row("fp32", None, 1.0), row("q", 1.2, 0.7)]
    assert plot_tradeoff(rows, BUDGET, tmp_path / "t.png", "t") is None
    assert not (tmp_path / "t.png").exists()


def optimize(tmp_path, *args):
    return CliRunner().invoke(
        main, ["optimize", "-b", "onnxruntime", "--method", "ort-dynamic", "--out-dir", str(tmp_path / "o"), *args]
    )


def test_plot_without_matplotlib_is_refused_before_any_work(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib now fails as if not installed
    result = optimize(tmp_path, "--plot", str(tmp_path / "t.png"))
    assert result.exit_code == 2, result.output
    assert result.output.strip() == (
        'Error: --plot needs the matplotlib package, which is not installed: pip install "speechperf[plot]"'
    )
    assert not (tmp_path / "o").exists()  # nothing was quantized


@pytest.mark.parametrize(
    "name,message",
    [("t.txt", "must end in .png or .svg"), ("file/t.png", "is a file, not a folder")],
    ids=["suffix", "folder"],
)
def test_a_bad_plot_path_is_refused_before_any_work(tmp_path, name, message):
    (tmp_path / "file").write_text("")
    result = optimize(tmp_path, "--plot", str(tmp_path / name))
    assert result.exit_code == 2, result.output
    assert "--plot" in result.output and message in result.output
    assert not (tmp_path / "o").exists()
