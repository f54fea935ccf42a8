"""The GPU allocator's peak for paddle: ``paddle.device.cuda.reset_max_memory_allocated`` and
``paddle.device.cuda.max_memory_allocated`` (bytes held by tensors)."""

from __future__ import annotations

from speechperf.backends.paddle.framework import import_paddle

paddle = import_paddle()


class DeviceMemory:
    def __init__(self, device: str = "cpu"):
        self.device = device
        if device == "cpu":
            self.available = False
            self.reason = "device 'cpu': there is no separate device allocator; host memory is the process RSS"
        elif not paddle.device.is_compiled_with_cuda() or paddle.device.cuda.device_count() == 0:
            self.available = False
            self.reason = (
                f"device {device!r} was asked for, but paddlepaddle {paddle.__version__} has no usable GPU "
                f"(compiled with CUDA: {paddle.device.is_compiled_with_cuda()}); no device peak is reported"
            )
        else:
            self.available = True
            self.reason = ""

    def reset(self) -> None:
        self._require()
        paddle.device.synchronize()
        paddle.device.cuda.reset_max_memory_allocated()

    def peak_bytes(self) -> int:
        self._require()
        paddle.device.synchronize()
        return int(paddle.device.cuda.max_memory_allocated())

    def _require(self) -> None:
        if not self.available:
            raise RuntimeError(self.reason)
