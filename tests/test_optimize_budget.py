"""optimize's quality budget for speech and float outputs: a variant whose DNSMOS falls, whose speech is far from
fp32's in MCD, or whose float outputs (a mask) fall below the SNR floor is "over quality budget", never "ok"; on
fixed figures (tests/test_optimize_user_file.py holds it on a real int8 mask model)."""

from __future__ import annotations

import math

import pytest

from speechperf.meters.parity import OutputDiff
from speechperf.meters.speech_quality import SpeechQuality
from speechperf.optimize.fidelity import Fidelity, QualityBudget, floats_over_budget, min_snr, mos_drop, over_budget


def speech(ovrl: float, mcd: float | None = None) -> Fidelity:
    return Fidelity("snr", 30.0, speech=SpeechQuality(2, 3.5, 4.0, ovrl, 3.8, mcd, reference="fp32"))


def test_a_mos_drop_or_an_mcd_past_the_budget_is_named():
    fp32, variant = speech(3.30), speech(2.95, mcd=2.5)
    assert mos_drop(fp32, variant) == pytest.approx(0.35)
    assert over_budget(fp32, variant, QualityBudget()) == ["DNSMOS OVRL -0.35"]  # default: 0.2 MOS, no MCD limit
    budget = QualityBudget(max_mos_drop=0.5, max_mcd=2.0)
    assert over_budget(fp32, variant, budget) == ["MCD 2.50 dB > 2"]
    assert over_budget(fp32, speech(3.25, mcd=1.0), budget) == []
    assert "DNSMOS OVRL 2.95" in variant.text() and "MCD 2.50 dB vs fp32" in variant.text()


def test_float_outputs_below_the_snr_floor_are_over_budget_but_not_the_speech_waveform():
    mask = OutputDiff("stage1", "outputs.mask", False, 5, 5, 0.4, 0.5, 12.3, 0.98)
    wave = OutputDiff("stage1", "waveform", False, 5, 5, None, None, None, None)  # a TTS shifted in time
    tokens = OutputDiff("stage1", "tokens", True, 5, 0, None)
    assert floats_over_budget([mask, wave, tokens], "stage1", speech_out=True) == [
        "stage1 outputs.mask SNR 12.3 dB, DIFFER in 5/5"
    ]
    assert len(floats_over_budget([wave], "stage1", speech_out=False)) == 1  # a waveform that is no final speech
    assert min_snr([mask, wave, tokens]) == 12.3
    floor = QualityBudget(min_snr_db=25).float_tolerance()
    assert floor["snr_db"] == 25 and math.isinf(floor["max_rel"])  # only the SNR floor, where a stage sets none
