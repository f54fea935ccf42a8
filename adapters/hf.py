"""Hugging Face ``save_pretrained`` folders (``model: hf``) in numpy: what the folder is (``config.json``'s
``architectures``), its processor's front-end and its decoding, shared by every backend so that the same folder
transcribes identically on each.

Transformers' own tokenizers and Whisper feature extractor import torch when torch is installed (the pytree
registration of their ``ModelOutput`` classes), which must not happen in a process that measures onnxruntime; so the
folder's files are read here and the results are checked against the folder's processor in tests/test_hf.py:

- CTC (Wav2Vec2, HuBERT, Wav2Vec2-Conformer, MMS: ``...ForCTC``): the feature extractor's normalisation (zero mean,
  unit variance with its 1e-7, when ``do_normalize``), then greedy CTC decoding as ``processor.batch_decode`` of the
  argmax ids does: repeats merged, the pad (blank) token dropped, the word delimiter made a space.
- Whisper (``WhisperForConditionalGeneration``): the log-mel of the processor's settings (n_fft, hop, mel bins, 30 s
  chunk), greedy generation from the folder's ``generation_config.json`` as Transformers' ``generate`` builds it
  (``decoder_start_token_id``, the language and task tokens of a multilingual model, ``no_timestamps_token_id``;
  ``suppress_tokens`` at every step, ``begin_suppress_tokens`` at the first; stop at ``eos_token_id``), and the
  text through the folder's ``tokenizer.json`` with the ``tokenizers`` library (no torch).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import attrs
import numpy as np

from speechperf.errors import ModelFileError

#: config.json ``architectures`` -> the kind of stage that runs it. The CTC family shares one head (logits over
#: characters, greedy CTC), so each runs as ``ctc``.
ARCHITECTURES = {
    "Wav2Vec2ForCTC": "ctc",
    "HubertForCTC": "ctc",
    "Wav2Vec2ConformerForCTC": "ctc",
    "Data2VecAudioForCTC": "ctc",
    "WavLMForCTC": "ctc",
    "UniSpeechSatForCTC": "ctc",
    "SEWForCTC": "ctc",
    "WhisperForConditionalGeneration": "whisper",
}

StepFn = Callable[[Mapping[str, np.ndarray]], Mapping[str, np.ndarray]]


def _json(path: Path) -> dict:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ModelFileError(f"cannot read {path}: {exc}") from None


@attrs.frozen
class HfFolder:
    """A ``save_pretrained`` folder: its path, architecture, kind (``ctc`` / ``whisper``) and config."""

    path: Path
    architecture: str
    kind: str
    config: Mapping[str, Any] = attrs.field(repr=False)

    @classmethod
    def read(cls, folder: str | Path) -> HfFolder:
        path = Path(folder)
        if not (path / "config.json").is_file():
            raise ModelFileError(
                f"{path} is no Hugging Face model folder (no config.json; give a save_pretrained folder)"
            )
        config = _json(path / "config.json")
        found = [a for a in config.get("architectures") or [] if a in ARCHITECTURES]
        if not found:
            raise ModelFileError(
                f"{path}/config.json: architectures {config.get('architectures')} has none speechperf runs; "
                f"allowed: {', '.join(ARCHITECTURES)}"
            )
        return cls(path, found[0], ARCHITECTURES[found[0]], config)

    def feature_extractor(self) -> dict:
        """The processor's feature-extractor settings: ``preprocessor_config.json`` (the hub's folders) or the
        ``feature_extractor`` of ``processor_config.json`` (what Transformers 5 writes)."""
        if (self.path / "preprocessor_config.json").is_file():
            return _json(self.path / "preprocessor_config.json")
        if (self.path / "processor_config.json").is_file():
            settings = _json(self.path / "processor_config.json").get("feature_extractor")
            if isinstance(settings, dict):
                return settings
        raise ModelFileError(
            f"{self.path}: no feature extractor (preprocessor_config.json, or processor_config.json with one); "
            "save the processor into the folder too (processor.save_pretrained)"
        )


# -- CTC ----------------------------------------------------------------------------------------------------------


@attrs.frozen
class CtcText:
    """Normalisation and greedy CTC decoding with the folder's feature extractor and vocabulary."""

    sample_rate: int
    normalize: bool
    tokens: tuple[str, ...] = attrs.field(repr=False)
    pad_id: int
    delimiter: str | None
    lower: bool

    @classmethod
    def from_folder(cls, folder: HfFolder) -> CtcText:
        fe = folder.feature_extractor()
        vocab = _json(folder.path / "vocab.json")
        settings = (
            _json(folder.path / "tokenizer_config.json") if (folder.path / "tokenizer_config.json").is_file() else {}
        )
        if vocab and all(isinstance(v, dict) for v in vocab.values()):  # MMS: one vocabulary per target language
            lang = settings.get("target_lang") or next(iter(vocab))
            vocab = vocab[lang]
        size = max(vocab.values()) + 1
        tokens = [""] * size
        for token, i in vocab.items():
            tokens[i] = token
        for i, added in (settings.get("added_tokens_decoder") or {}).items():
            if int(i) < size:
                tokens[int(i)] = added["content"]
        pad = settings.get("pad_token", "<pad>")
        pad = pad["content"] if isinstance(pad, dict) else pad
        if pad not in vocab:
            raise ModelFileError(f"{folder.path}/vocab.json has no pad (blank) token {pad!r}")
        delimiter = settings.get("word_delimiter_token", "|")
        return cls(
            int(fe.get("sampling_rate", 16000)),
            bool(fe.get("do_normalize", True)),
            tuple(tokens),
            int(vocab[pad]),
            delimiter["content"] if isinstance(delimiter, dict) else delimiter,
            bool(settings.get("do_lower_case", False)),
        )

    def input_values(self, audio: np.ndarray) -> np.ndarray:
        """(1, samples) float32, as Wav2Vec2FeatureExtractor gives it for one clip."""
        x = np.asarray(audio, dtype=np.float32)
        if self.normalize:
            x = (x - x.mean()) / np.sqrt(x.var() + 1e-7)
        return np.ascontiguousarray(x[None, :], dtype=np.float32)

    def ids(self, logits: np.ndarray) -> np.ndarray:
        """Greedy CTC: the argmax of each frame, repeats merged, blanks dropped."""
        best = np.asarray(logits).reshape(-1, np.asarray(logits).shape[-1]).argmax(axis=1)
        keep = np.ones(best.size, dtype=bool)
        keep[1:] = best[1:] != best[:-1]
        best = best[keep]
        return best[best != self.pad_id].astype(np.int64)

    def text(self, ids: np.ndarray) -> str:
        words = "".join(" " if self.tokens[i] == self.delimiter else self.tokens[i] for i in ids.tolist())
        words = " ".join(words.split())
        return words.lower() if self.lower else words


# -- Whisper --------------------------------------------------------------------------------------------------------


@attrs.frozen
class WhisperText:
    """Whisper's front-end, prompt, suppression and detokenizer from the folder."""

    n_mels: int
    n_fft: int
    hop: int
    chunk_samples: int
    sample_rate: int
    start: int
    eos: int
    no_timestamps: int | None
    suppress: tuple[int, ...]
    suppress_begin: tuple[int, ...]
    languages: Mapping[str, int]
    tasks: Mapping[str, int]
    max_length: int
    tokenizer_file: Path

    @classmethod
    def from_folder(cls, folder: HfFolder) -> WhisperText:
        fe = folder.feature_extractor()
        gen_path = folder.path / "generation_config.json"
        gen = _json(gen_path) if gen_path.is_file() else {}
        config = folder.config

        def setting(name: str, default=None):
            return gen.get(name, config.get(name, default))

        tokenizer = folder.path / "tokenizer.json"
        if not tokenizer.is_file():
            raise ModelFileError(f"{folder.path}: no tokenizer.json (save the fast WhisperTokenizer into the folder)")
        eos = setting("eos_token_id")
        multilingual = bool(gen.get("is_multilingual", False))
        return cls(
            n_mels=int(fe.get("feature_size", config.get("num_mel_bins", 80))),
            n_fft=int(fe.get("n_fft", 400)),
            hop=int(fe.get("hop_length", 160)),
            chunk_samples=int(fe.get("n_samples", 480000)),
            sample_rate=int(fe.get("sampling_rate", 16000)),
            start=int(setting("decoder_start_token_id")),
            eos=int(eos[0] if isinstance(eos, list) else eos),
            no_timestamps=gen.get("no_timestamps_token_id"),
            suppress=tuple(setting("suppress_tokens") or ()),
            suppress_begin=tuple(setting("begin_suppress_tokens") or ()),
            languages=dict(gen.get("lang_to_id") or {}) if multilingual else {},
            tasks=dict(gen.get("task_to_id") or {}) if multilingual else {},
            max_length=int(gen.get("max_length") or config.get("max_target_positions", 448)),
            tokenizer_file=tokenizer,
        )

    def features(self, audio: np.ndarray) -> np.ndarray:
        """(n_mels, frames of 30 s) float32: WhisperFeatureExtractor's log-mel of 16 kHz ``audio``."""
        from speechperf.adapters import features

        x = np.zeros(self.chunk_samples, dtype=np.float32)
        clip = np.asarray(audio, dtype=np.float32)[: self.chunk_samples]
        x[: clip.size] = clip
        settings = dict(features.PRESETS["whisper"][1], n_mels=self.n_mels, n_fft=self.n_fft, win_length=self.n_fft)
        settings.update(hop_length=self.hop, num_frames=self.chunk_samples // self.hop)
        return np.ascontiguousarray(features.log_mel(x, **settings).T)

    def prompt(self, language: str | None, task: str) -> list[int]:
        """The decoder's first tokens, as Transformers' Whisper ``generate`` makes them without timestamps."""
        ids = [self.start]
        if not self.languages and (language not in (None, "en") or task != "transcribe"):
            raise ModelFileError(
                f"an English-only Whisper (no is_multilingual in generation_config.json) transcribes English; got "
                f"src_lang {language!r}, task {task!r}; allowed: src_lang en or unset, task transcribe"
            )
        if self.languages:  # multilingual: <|lang|><|task|>
            token = f"<|{language or 'en'}|>"
            if token not in self.languages:
                raise ModelFileError(f"language {language!r} is not one of the model's: {', '.join(self.languages)}")
            ids += [int(self.languages[token]), int(self.tasks[task])]
        if self.no_timestamps is not None:
            ids.append(int(self.no_timestamps))
        return ids

    def generate(
        self, encoder: StepFn, decoder: StepFn, features: np.ndarray, max_new: int, language=None, task="transcribe"
    ) -> np.ndarray:
        """Greedy ids after the prompt (end-of-text dropped): the encoder once, then the decoder over the prefix at
        each step (no KV cache, the same on every backend)."""
        hidden = encoder({"input_features": np.ascontiguousarray(features[None], dtype=np.float32)})["encoder_out"]
        tokens = self.prompt(language, task)
        out: list[int] = []
        for step in range(max(0, min(max_new, self.max_length - len(tokens)))):
            ids = np.array([tokens + out], dtype=np.int64)
            logits = np.array(decoder({"decoder_input_ids": ids, "encoder_out": hidden})["logits"], dtype=np.float32)
            logits = logits.reshape(-1)
            logits[list(self.suppress)] = -np.inf
            if step == 0:
                logits[list(self.suppress_begin)] = -np.inf
            nxt = int(logits.argmax())
            if nxt == self.eos:
                break
            out.append(nxt)
        return np.array(out, dtype=np.int64)

    def text(self, ids: np.ndarray) -> str:
        return _tokenizer(self.tokenizer_file).decode(ids.tolist(), skip_special_tokens=True).strip()


@functools.lru_cache(maxsize=4)
def _tokenizer(path: Path):
    from speechperf.extras import require

    return require("tokenizers", "model: hf (a Whisper folder's tokenizer.json)").Tokenizer.from_file(str(path))
