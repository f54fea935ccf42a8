"""Transformers modules of a Hugging Face ``save_pretrained`` folder (``model: hf``), as ``nn.Module`` factories the
torch backend loads like any other (``ModelSpec.factory``: eager, ``compile``, the int8 methods, the ONNX export of
``derive``). Nothing is downloaded: ``local_files_only`` (and ``HF_HUB_OFFLINE``) keep Transformers on the folder.

Each graph takes and gives plain tensors (the names of ``speechperf.benchmark.hf_stage.GRAPHS``):
- ``ctc``: ``input_values`` (batch, samples) -> ``logits`` (batch, frames, vocabulary);
- ``whisper_encoder``: ``input_features`` (batch, mels, 3000) -> ``encoder_out`` (batch, 1500, d_model);
- ``whisper_decoder``: ``decoder_input_ids`` (batch, tokens), ``encoder_out`` -> ``logits`` of the last position
  (batch, vocabulary): the decoder over the whole prefix, without a KV cache.
"""

from __future__ import annotations

import functools
import os
from typing import Any

import torch


@functools.lru_cache(maxsize=4)
def _pretrained(cls_name: str, folder: str) -> Any:
    """The folder's model, loaded once per process: Whisper's encoder and decoder graphs are parts of one model, so
    its weights are held (and counted in the peak RSS) once, as in any Whisper run; a quantizer deep-copies."""
    return _load(cls_name, folder)


def _load(cls_name: str, folder: str) -> Any:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import transformers

    transformers.utils.logging.disable_progress_bar()  # "Loading weights" bars on stderr, at every load

    cls = getattr(transformers, cls_name)
    # Eager attention on torch too, so both backends run the same math: with Transformers' default (sdpa), the
    # ONNX export traced at one input length differed by 0.43 from the module at another (the tests' Wav2Vec2).
    model = cls.from_pretrained(folder, local_files_only=True, attn_implementation="eager")
    return model.eval()


class Ctc(torch.nn.Module):
    def __init__(self, folder: str):
        super().__init__()
        import transformers

        self.model = _pretrained("AutoModelForCTC", folder)
        assert isinstance(self.model, transformers.PreTrainedModel)

    def forward(self, input_values: torch.Tensor) -> torch.Tensor:
        return self.model(input_values).logits


class WhisperEncoder(torch.nn.Module):
    def __init__(self, folder: str):
        super().__init__()
        self.encoder = _pretrained("WhisperForConditionalGeneration", folder).get_encoder()

    def forward(self, input_features: torch.Tensor) -> torch.Tensor:
        return self.encoder(input_features).last_hidden_state


class WhisperDecoder(torch.nn.Module):
    def __init__(self, folder: str):
        super().__init__()
        model = _pretrained("WhisperForConditionalGeneration", folder)
        self.decoder = model.get_decoder()
        self.proj_out = model.proj_out

    def forward(self, decoder_input_ids: torch.Tensor, encoder_out: torch.Tensor) -> torch.Tensor:
        # An explicit all-ones mask: without one, Transformers looks for packed sequences with torch.diff, which the
        # ONNX exporter has no symbolic for; the mask changes nothing (every prefix token is real).
        hidden = self.decoder(
            input_ids=decoder_input_ids,
            attention_mask=torch.ones_like(decoder_input_ids),
            encoder_hidden_states=encoder_out,
            use_cache=False,
        ).last_hidden_state
        return self.proj_out(hidden[:, -1])


def ctc(folder: str) -> torch.nn.Module:
    return Ctc(folder)


def whisper_encoder(folder: str) -> torch.nn.Module:
    return WhisperEncoder(folder)


def whisper_decoder(folder: str) -> torch.nn.Module:
    return WhisperDecoder(folder)
