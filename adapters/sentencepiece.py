"""SentencePiece text front-end (framework-free): text to token ids and back, with a model file's own vocabulary.

Marian's models (``speechperf.zoo.marian``) read the ids of the SentencePiece model shipped beside them; ``</s>``
is appended by the caller (``speechperf.adapters.marian``). Uses the ``sentencepiece`` package (extra ``marian``),
which reads the ``.spm`` protobuf itself; a missing package is one line saying how to install it.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from speechperf.errors import ModelFileError, SpeechperfError

INSTALL_HINT = 'pip install "speechperf[marian]"'


class SentencePieceText:
    """Encode and decode text with one SentencePiece model file."""

    def __init__(self, model_file: str | Path):
        try:
            import sentencepiece
        except ModuleNotFoundError:
            raise SpeechperfError(
                f"the SentencePiece front-end needs the package sentencepiece; install it with: {INSTALL_HINT}"
            ) from None
        self.path = Path(model_file)
        if not self.path.is_file():
            raise ModelFileError(f"SentencePiece model {self.path} does not exist")
        try:
            self.processor = sentencepiece.SentencePieceProcessor(model_file=str(self.path))
        except Exception as exc:  # the C++ parser's message, on one line
            raise ModelFileError(f"cannot read {self.path} as a SentencePiece model: {exc}") from None

    @property
    def vocab_size(self) -> int:
        return int(self.processor.get_piece_size())

    def encode(self, text: str) -> np.ndarray:
        """The ids of ``text`` (no end-of-sentence id), int64."""
        return np.asarray(self.processor.encode(text), dtype=np.int64)

    def decode(self, ids) -> str:
        return str(self.processor.decode([int(i) for i in np.asarray(ids).reshape(-1)]))
