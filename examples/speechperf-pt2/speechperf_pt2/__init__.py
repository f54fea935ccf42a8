"""pt2: an example speechperf backend that runs ``torch.export`` programs (``.pt2`` files), a runtime that loads no
ONNX. docs/backends.md, "Runtimes that load no ONNX", walks through it."""
