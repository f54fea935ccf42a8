"""Which reference a text stage is scored against, and the language each of its texts is normalized in.

The reference follows what the stage puts out (docs/benchmark.md, Quality):

- a transcript (Whisper's ``task: transcribe``, or the ASR before a cascade's MT stage) is scored against the
  source-language transcripts: a fairseq manifest's ``src_text``, else references that are transcripts (a ``.wrd``,
  a manifest without ``src_text``, ``general.reference_path``);
- a translation (Whisper's ``task: translate``, an MT stage) against the target texts (``tgt_text``, a ``.ref``,
  ``general.reference_path``), never a ``.wrd``;
- any other text stage (a model file, a fairseq S2T model) against the run's references as they come.

The language, which picks the normalizer (Whisper's English one for English, its basic one otherwise: the Open ASR
leaderboard's convention): for a transcript the stage's ``src_lang``, else the language Whisper detected for that
sample, else ``general.language``; for a translation the dataset's ``tgt_lang``, else the stage's (Whisper
translates into English), else ``general.language``; English where nothing tells.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import attrs

from speechperf.errors import SpeechperfError

SOURCE, TARGET = "source", "target"
ENGLISH = "en"


@attrs.frozen
class TextReference:
    """The texts a stage is scored against, where they come from (file and column), and what they are."""

    texts: Mapping[str, str]
    where: str
    kind: str | None  # SOURCE, TARGET, or None: the run's references as they come


def config_task(stage_cfg) -> str | None:
    """The task a configured stage says it does: Whisper's ``task``; None for a stage without one."""
    whisper = not stage_cfg.path and str(stage_cfg.model or "").startswith("whisper-")
    return stage_cfg.task if whisper else None


def kind_of(role: str, later_roles: Sequence[str], task: str | None) -> str | None:
    """SOURCE, TARGET or None (see the module's docstring) for a text stage of ``role`` before ``later_roles``."""
    if role == "mt" or task == "translate":
        return TARGET
    if role == "s2t" and ("mt" in later_roles or task == "transcribe"):
        return SOURCE
    return None


def reference_for(kind: str | None, refs, what: str) -> TextReference:
    """The references a stage of ``kind`` is scored against; a one-line SpeechperfError naming ``what`` (the stage)
    and the file when the dataset has none of that kind."""
    if kind == SOURCE:
        if refs.sources:
            return TextReference(refs.sources, str(refs.sources_origin), SOURCE)
        if refs.translation and not refs.transcripts:
            raise SpeechperfError(
                f"{what} is scored against the source-language transcripts, but {refs.origin} holds translations "
                "and the dataset has no src_text column: add src_text to the fairseq manifest (or set "
                "general.reference_path to one transcript per sample)"
            )
    if kind == TARGET and refs.transcripts:
        raise SpeechperfError(
            f"{what} is scored against translations, but {refs.origin} holds transcripts: use a fairseq_s2t "
            "manifest (tgt_text) or set general.reference_path to one translation per sample"
        )
    return TextReference(refs.texts, refs.origin, kind)


def languages(
    kind: str | None,
    ids: Sequence[str],
    refs,
    outputs: Mapping[str, Mapping],
    task: str | None,
    src_lang: str | None,
    default: str | None,
) -> dict[str, str]:
    """The language of each sample's scored text (see the module's docstring)."""
    if kind == SOURCE:
        return {sid: src_lang or str((outputs.get(sid) or {}).get("language") or default or ENGLISH) for sid in ids}
    stage = ENGLISH if task == "translate" else None
    return {sid: refs.languages.get(sid) or stage or default or ENGLISH for sid in ids}


def check(cfg, refs) -> None:
    """Before anything is loaded: the run's text output has references of its kind (one line naming the stage, the
    file and the column otherwise). An earlier stage without them is left unscored, with a note."""
    roles = cfg.roles
    last = len(cfg.stages) - 1
    stage = cfg.stages[last]
    if refs is None or roles[last] not in ("s2t", "mt"):
        return
    reference_for(kind_of(roles[last], (), config_task(stage)), refs, f"stage{last + 1} ({_what(stage)})")


def contradiction(cfg) -> str | None:
    """A warning when ``general.language`` says another language than the text a stage puts out (its src_lang for a
    transcript, English for Whisper's translation): the stage's wins, so general.language is not what is used."""
    told = cfg.general.language
    if told is None:
        return None
    for index, (stage, role) in enumerate(zip(cfg.stages, cfg.roles), 1):
        task = config_task(stage)
        kind = kind_of(role, cfg.roles[index:], task)
        says = ENGLISH if task == "translate" else stage.src_lang if kind == SOURCE else None
        if says and _base(says) != _base(told):
            return (
                f"general.language is {told!r} but stage{index} ({_what(stage)}) puts out {says!r} text: it is "
                f"scored as {says!r} (general.language applies only where neither the stage nor the dataset says)"
            )
    return None


def _what(stage) -> str:
    task = config_task(stage)
    return f"{stage.model or stage.path}" + (f", task {task}" if task else "")


def _base(language: str) -> str:
    return language.lower().replace("_", "-").split("-")[0]
