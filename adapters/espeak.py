"""The espeak-ng library's text-to-phonemes call, from the library and data the ``espeakng-loader`` wheel ships.

The phoneme front-ends (speechperf.adapters.phonemes, .kokoro) need espeak-ng's IPA. Running the ``espeak-ng``
program needs an apt package; the wheel ships ``libespeak-ng`` and its ``espeak-ng-data`` (voices, dictionaries),
so ``pip install "speechperf[piper]"`` alone phonemizes. The library is called through ctypes (no compiler, no
other binding): ``espeak_Initialize`` once with the wheel's data folder, ``espeak_SetVoiceByName`` per voice, and
``espeak_TextToPhonemes`` once per clause it finds, the same phonemes the program prints with ``-q --ipa`` (one
line per clause). espeak-ng keeps global state, so every call holds one lock.
"""

from __future__ import annotations

import ctypes
import functools
import threading
from pathlib import Path

from speechperf.errors import SpeechperfError

INSTALL_HINT = 'pip install "espeakng-loader==0.2.4" (in speechperf[piper] and speechperf[kokoro])'
#: speak_lib.h: synchronous output (no audio device), return errors instead of exiting, UTF-8 text, IPA phonemes,
#: and the bit that makes bits 8-23 of the phoneme mode a tie character inside multi-letter phonemes.
AUDIO_OUTPUT_SYNCHRONOUS = 2
INITIALIZE_DONT_EXIT = 0x8000
CHARS_UTF8 = 1
PHONEMES_IPA = 0x02
PHONEMES_TIE = 0x80

_lock = threading.Lock()


class PhonemizerError(SpeechperfError):
    pass


def data_files() -> tuple[str, str]:
    """(the library, its data folder) from espeakng-loader; a one-line error with the install command without it."""
    try:
        import espeakng_loader
    except ImportError:
        raise PhonemizerError(
            f"the phoneme front-end needs the espeak-ng library of the espeakng-loader package: {INSTALL_HINT}"
        ) from None
    return str(espeakng_loader.get_library_path()), str(espeakng_loader.get_data_path())


class _Espeak:
    """The loaded library, initialized with the wheel's data, and the voice it was last set to."""

    def __init__(self, library: str, data: str):
        try:
            lib = ctypes.CDLL(library)
        except OSError as exc:
            raise PhonemizerError(f"cannot load the espeak-ng library {library}: {exc}") from None
        lib.espeak_Initialize.restype = ctypes.c_int
        lib.espeak_Initialize.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_char_p, ctypes.c_int]
        lib.espeak_SetVoiceByName.restype = ctypes.c_int
        lib.espeak_SetVoiceByName.argtypes = [ctypes.c_char_p]
        lib.espeak_TextToPhonemes.restype = ctypes.c_char_p
        lib.espeak_TextToPhonemes.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_int, ctypes.c_int]
        if lib.espeak_Initialize(AUDIO_OUTPUT_SYNCHRONOUS, 0, data.encode(), INITIALIZE_DONT_EXIT) <= 0:
            raise PhonemizerError(f"espeak-ng did not start with the data folder {data}")
        self.lib, self.data = lib, Path(data)
        self.voice: str | None = None

    def set_voice(self, voice: str) -> None:
        if voice != self.voice:
            if self.lib.espeak_SetVoiceByName(voice.encode()) != 0:
                self.voice = None
                voices = sorted({p.name.lower() for p in (self.data / "lang").rglob("*") if p.is_file()})
                raise PhonemizerError(f"espeak-ng has no voice {voice!r}; allowed: {', '.join(voices)}")
            self.voice = voice

    def clauses(self, text: str, mode: int) -> list[str]:
        """The phonemes of each clause espeak-ng finds in ``text``."""
        buffer = ctypes.create_string_buffer(text.encode("utf-8"))
        pointer = ctypes.c_void_p(ctypes.addressof(buffer))
        out = []
        while pointer.value:
            phonemes = self.lib.espeak_TextToPhonemes(ctypes.byref(pointer), CHARS_UTF8, mode)
            out.append((phonemes or b"").decode("utf-8"))
        return out


@functools.cache
def _espeak() -> _Espeak:
    return _Espeak(*data_files())


def check_voice(voice: str) -> None:
    """A one-line error now, before anything is timed, when the library is missing or has no ``voice``."""
    with _lock:
        _espeak().set_voice(voice)


def ipa(text: str, voice: str, tie: str | None = None) -> str:
    """espeak-ng's IPA for ``text`` in ``voice``: each clause's phonemes joined by spaces. With ``tie``, that
    character joins the two halves of an affricate or a diphthong (``d^ʒ``), as the program's ``--tie``."""
    mode = PHONEMES_IPA | ((PHONEMES_TIE | (ord(tie) << 8)) if tie else 0)
    with _lock:
        espeak = _espeak()
        espeak.set_voice(voice)
        pieces = espeak.clauses(text, mode)
    return " ".join(p.strip() for p in pieces if p.strip())
