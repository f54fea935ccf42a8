"""speechperf's harness against each framework's own best-practice loop, on the same model and inputs. Run by hand:

    python tests/perf/best_practice.py [--preset base] [--length 300] [--calls 20] [--blocks 4] [--threads 1]

For each backend path it times the zoo's S2T encoder (one utterance of ``--length`` feature frames) two ways, in
one child process per path (so no framework's thread pools or allocator meet another's):

- speechperf: the session ``speechperf.backend`` loads (``Session.__call__``: the feed checks, the copy into the
  framework and out to numpy), timed by ``speechperf.meters.runtime.RuntimeMeter`` as ``bench`` times a forward;
- by hand, as each framework's docs write it: ONNX Runtime ``InferenceSession.run`` on the same ``.onnx``; torch
  the same ``nn.Module`` (the zoo's factory, same weights) under ``torch.inference_mode``, and through
  ``torch.compile``; paddle an ``inference.create_predictor`` on the same ``.json`` with ``copy_from_cpu`` /
  ``run`` / ``copy_to_cpu``, oneDNN and IR passes on.

Both sides get the same warm-up and ``--calls`` timed calls per block, in alternating blocks (speechperf, hand,
hand, speechperf, ...) so drift hits both and neither side always goes first; each side's figure is the median
call of its fastest block, and every block's is printed. It prints speechperf / hand per path, side by side; the
target is <= 1.05x. The machine is shared: run it twice.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time

PATHS = {
    # path: (backend, zoo format, speechperf options, what the hand-written loop is)
    "onnxruntime": ("onnxruntime", "onnx-torch", {}, "InferenceSession.run"),
    "torch-eager": ("torch", "torch-eager", {}, "module under torch.inference_mode"),
    "torch-compile": ("torch", "torch-eager", {"compile": "default"}, "torch.compile(module) under inference_mode"),
    "paddle-predictor": ("paddle", "paddle-inference", {}, "predictor copy_from_cpu / run / copy_to_cpu"),
}


def _hand_loop(path: str, spec, feeds: dict, threads: int):
    """The framework's own loop over the file (or module) of ``spec``: a callable that runs one forward."""
    names = [t.name for t in spec.inputs]
    if path == "onnxruntime":
        import onnxruntime as ort

        options = ort.SessionOptions()
        options.intra_op_num_threads, options.inter_op_num_threads = threads, 1
        session = ort.InferenceSession(str(spec.path), options, providers=["CPUExecutionProvider"])
        return lambda: session.run(None, feeds)
    if path.startswith("torch"):
        import torch

        torch.set_num_threads(threads)
        module = spec.build_from_factory().eval()  # the zoo's factory: the component with its weights loaded
        if path == "torch-compile":
            module = torch.compile(module, dynamic=True)

        def forward():
            with torch.inference_mode():
                out = module(*(torch.from_numpy(feeds[n]) for n in names))
            return [o.numpy() for o in (out if isinstance(out, tuple) else (out,))]

        return forward
    from paddle import inference

    config = inference.Config(str(spec.path), str(spec.path.with_suffix(".pdiparams")))
    config.disable_gpu()
    config.disable_glog_info()
    config.enable_mkldnn()
    config.switch_ir_optim(True)
    config.set_cpu_math_library_num_threads(threads)
    predictor = inference.create_predictor(config)
    inputs = [predictor.get_input_handle(n) for n in predictor.get_input_names()]
    outputs = [predictor.get_output_handle(n) for n in predictor.get_output_names()]

    def run():
        for handle, name in zip(inputs, predictor.get_input_names()):
            handle.reshape(feeds[name].shape)
            handle.copy_from_cpu(feeds[name])
        predictor.run()
        return [o.copy_to_cpu() for o in outputs]

    return run


def one(path: str, preset: str, length: int, calls: int, blocks: int, threads: int) -> dict:
    """In the child: both sides' median call of their fastest block, in seconds."""
    import attrs
    import numpy as np

    from speechperf.meters.runtime import RuntimeMeter
    from speechperf.registry import require_backend
    from speechperf.zoo.build import ensure_built, model_spec
    from speechperf.zoo.catalog import get_model

    backend_name, fmt, options, _ = PATHS[path]
    folder = ensure_built("s2t", preset, formats=[fmt])
    spec = attrs.evolve(model_spec(folder, "encoder", fmt), options=options)
    feeds = get_model("s2t").example_feeds("encoder", preset, 1, length, np.random.default_rng(0))
    backend = require_backend(backend_name)
    backend.set_threads(threads)
    session = backend.load(spec, device="cpu", threads=threads)
    ours = lambda: session(feeds)  # noqa: E731
    hand = _hand_loop(path, spec, feeds, threads)
    for forward in (ours, hand):  # warm-up: the compile, first-call work, thread pools
        for _ in range(3):
            forward()
    best: dict[str, list[float]] = {"speechperf": [], "hand": []}

    def speechperf_block() -> None:
        timing = RuntimeMeter(backend, warmup=1, repeat=calls).measure("s", ours)
        best["speechperf"].append(statistics.median(timing.ns) / 1e9)

    def hand_block() -> None:
        times = []
        hand()
        for _ in range(calls):
            start = time.perf_counter_ns()
            hand()
            times.append(time.perf_counter_ns() - start)
        best["hand"].append(statistics.median(times) / 1e9)

    for block in range(blocks):  # the side that goes first alternates, so neither always follows the other
        for side in (speechperf_block, hand_block) if block % 2 == 0 else (hand_block, speechperf_block):
            side()
    return {**{side: min(values) for side, values in best.items()}, "blocks": best}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", default="base")
    parser.add_argument("--length", type=int, default=300, help="feature frames of the utterance (100 per second)")
    parser.add_argument("--calls", type=int, default=20)
    parser.add_argument("--blocks", type=int, default=4)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--paths", default=",".join(PATHS))
    parser.add_argument("--one", default=None, help=argparse.SUPPRESS)  # the child's path
    opts = parser.parse_args()
    if opts.one:
        print(json.dumps(one(opts.one, opts.preset, opts.length, opts.calls, opts.blocks, opts.threads)))
        return
    print(
        f"S2T encoder, preset {opts.preset}, {opts.length} frames, {opts.threads} thread(s), "
        f"{opts.blocks} blocks of {opts.calls} calls per side (median call of the fastest block)"
    )
    print(f"{'path':18} {'speechperf (ms)':>16} {'by hand (ms)':>13} {'ratio':>7}  hand-written loop")
    for path in opts.paths.split(","):
        args = [sys.argv[0], "--one", path, "--preset", opts.preset, "--length", str(opts.length)]
        args += ["--calls", str(opts.calls), "--blocks", str(opts.blocks), "--threads", str(opts.threads)]
        proc = subprocess.run([sys.executable, *args], capture_output=True, text=True)
        if proc.returncode != 0:
            print(f"{path:18} failed: {(proc.stderr.strip().splitlines() or ['?'])[-1][:300]}")
            continue
        got = json.loads(proc.stdout.strip().splitlines()[-1])
        ratio = got["speechperf"] / got["hand"]
        print(f"{path:18} {got['speechperf'] * 1e3:16.3f} {got['hand'] * 1e3:13.3f} {ratio:6.3f}x  {PATHS[path][3]}")
        for side, values in got["blocks"].items():
            print(f"{'':18} {side} per block (ms): {', '.join(f'{v * 1e3:.3f}' for v in values)}")


if __name__ == "__main__":
    main()
