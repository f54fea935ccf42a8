"""Device memory for onnxruntime: not exposed.

ONNX Runtime's Python API has no call that returns its device arena's peak (the CUDA arena's statistics are not
reachable from ``InferenceSession``), so the device figure is reported as unavailable with that reason, on any device.
"""

from __future__ import annotations


class DeviceMemory:
    def __init__(self, device: str = "cpu"):
        self.device = device
        self.available = False
        if device == "cpu":
            self.reason = "device 'cpu': there is no separate device allocator; host memory is the process RSS"
        else:
            self.reason = (
                f"onnxruntime does not expose its {device} allocator's peak through its Python API; "
                "no device peak is reported for backend 'onnxruntime' (host RSS is still measured)"
            )

    def reset(self) -> None:
        raise RuntimeError(self.reason)

    def peak_bytes(self) -> int:
        raise RuntimeError(self.reason)
