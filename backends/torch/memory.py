"""The CUDA caching allocator's peak for torch: ``torch.cuda.reset_peak_memory_stats`` and
``torch.cuda.max_memory_allocated`` (bytes held by tensors, not the allocator's reserved pool)."""

from __future__ import annotations

import torch


class DeviceMemory:
    def __init__(self, device: str = "cpu"):
        self.device = device
        if device == "cpu":
            self.available = False
            self.reason = "device 'cpu': there is no separate device allocator; host memory is the process RSS"
        elif not torch.cuda.is_available():
            self.available = False
            self.reason = (
                f"device {device!r} was asked for, but torch {torch.__version__} sees no CUDA device "
                "(torch.cuda.is_available() is False); no device peak is reported"
            )
        else:
            self.available = True
            self.reason = ""

    def reset(self) -> None:
        self._require()
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()

    def peak_bytes(self) -> int:
        self._require()
        torch.cuda.synchronize()
        return int(torch.cuda.max_memory_allocated())

    def _require(self) -> None:
        if not self.available:
            raise RuntimeError(self.reason)
