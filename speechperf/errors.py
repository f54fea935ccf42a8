"""Errors a user can fix. The CLI prints their message as one line, without a traceback, and exits with 2."""


class SpeechperfError(Exception):
    """Bad input: the message names the thing, the value and what is allowed."""


class UnknownBackendError(SpeechperfError):
    pass


class BackendUnavailableError(SpeechperfError):
    pass


class ModelFileError(SpeechperfError):
    """A model file that is missing, or of a format the backend cannot load."""


class FeedError(SpeechperfError):
    """A session was fed an input with the wrong name, dtype, rank or size."""


class DeviceError(SpeechperfError):
    pass
