"""speechperf.threads: GNU OpenMP's thread count, which torch and paddle's oneDNN share in one process."""

import subprocess
import sys
import textwrap

import pytest

from speechperf.values import usable_cores


def _run(code: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.strip().splitlines()[-1]


def test_without_a_libgomp_nothing_is_set_and_none_is_loaded():
    out = _run(
        """
        from speechperf.threads import set_gnu_openmp_threads
        found = set_gnu_openmp_threads(2)
        loaded = "libgomp" in open("/proc/self/maps").read()
        print(found, loaded)
        """
    )
    assert out == "False False"


@pytest.mark.skipif(usable_cores() < 2, reason="needs 2 usable cores")
@pytest.mark.slow
def test_a_paddle_predictor_after_torch_set_one_thread_still_uses_two():
    """The order the suite and an in-process compare can meet: torch told 1 thread, then a paddle predictor 2."""
    pytest.importorskip("torch")
    pytest.importorskip("paddle")
    out = _run(
        """
        import pathlib, tempfile
        import torch
        torch.set_num_threads(1)
        import numpy as np
        from speechperf.backend import ModelSpec, TensorInfo
        from speechperf.registry import get_backend
        from speechperf.threads import measure_thread_use
        from tests.test_conformance_paddle import save_inference_model

        rng = np.random.default_rng(0)
        weight = rng.standard_normal((512, 512)).astype(np.float32)
        spec = ModelSpec(save_inference_model(pathlib.Path(tempfile.mkdtemp()), weight, np.zeros(512, np.float32)),
                         outputs=(TensorInfo("y"),))
        session = get_backend("paddle").load(spec, threads=2)
        x = rng.standard_normal((1, 1024, 512)).astype(np.float32)
        use = measure_thread_use(lambda: session({"x": x}))
        print(use.cpu_wall_ratio, use.other_processes_cores)
        """
    )
    ratio, others = map(float, out.split())
    if ratio < 1.2 and others > 0.3:
        pytest.skip(f"the machine is busy, so two threads cannot get two cores: ratio {ratio}, others {others}")
    assert ratio >= 1.2, f"asked for 2 threads after torch.set_num_threads(1), kept {ratio:.2f} cores busy"
