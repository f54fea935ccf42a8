"""Print how far apart the silero VAD speech probabilities of the three backends are, frame by frame (run by hand).

    python tests/perf/silero_agreement.py

tests/test_silero_vad.py asserts the same bound (1e-4); this prints the figures.
"""

import itertools
import tempfile
from pathlib import Path

import soundfile as sf

from speechperf.adapters.vad import silero_model_spec, speech_probabilities
from speechperf.registry import get_backend

audio, sr = sf.read(Path(__file__).resolve().parents[1] / "data" / "speech_16k.wav", dtype="float32")
work = Path(tempfile.mkdtemp())
probs = {}
for name in ("onnxruntime", "torch", "paddle"):
    session = get_backend(name).load(silero_model_spec(name, work), threads=1)
    probs[name] = speech_probabilities(session, audio, sr)
for a, b in itertools.combinations(probs, 2):
    print(f"{a} vs {b}: {len(probs[a])} frames, max |diff| {abs(probs[a] - probs[b]).max():.2e}")
