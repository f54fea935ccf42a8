"""The LibriVox clips of Debian's pocketsphinx-testdata (real English speech with transcripts), for the tests of
the real speech models."""

from __future__ import annotations

from tests.needs import LIBRIVOX


def librivox(ids=None):
    """(16 kHz clips, transcripts) of the pocketsphinx LibriVox test set, in its fileids order (or ``ids``')."""
    import soundfile as sf

    from speechperf.data.audio import resample

    texts = {}
    for line in (LIBRIVOX / "transcription").read_text().splitlines():
        words, _, utt = line.rpartition("(")
        texts[utt.strip(") ")] = words.replace("<s>", "").replace("</s>", "").strip()
    utts = ids or (LIBRIVOX / "fileids").read_text().split()
    audio = []
    for utt in utts:
        data, rate = sf.read(LIBRIVOX / f"{utt}.wav", dtype="float32")
        audio.append(resample(data, rate, 16000))
    return audio, [texts[u] for u in utts]
