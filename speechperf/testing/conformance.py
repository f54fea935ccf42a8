"""The conformance suite for a backend. Subclass it in a pytest module and implement ``build_affine_model``.

    from speechperf.testing.conformance import BackendConformance

    class TestMyBackend(BackendConformance):
        backend_name = "mybackend"

        def build_affine_model(self, directory, weight, bias):
            ...  # write a model computing y = tanh(x @ weight + bias) in your format
            return ModelSpec(directory / "affine.myformat")

The suite checks the Backend protocol, the Session contract (host numpy arrays in and out, declared input and
output names, dynamic batch and time), the one-line errors for bad input, that the thread count a user asks for
is the number of cores the backend really uses, that ``seed`` works and reseeding repeats the outputs, that the
options class is made with ``key``, and, for each optional capability the backend has (a stub raising
``CapabilityUnavailableError`` counts as absent): the FLOP count of the affine model by the counting rule, the known
graphs (float32 and int8) against their numpy reference, the silero VAD port against its numpy reference (a
backend with ``silero_vad_port``), ``DeviceMemory``'s ``available`` / ``reason``, and a short profiled loop.
"""

from __future__ import annotations

from pathlib import Path

import attrs
import numpy as np
import pytest

from speechperf.backend import Availability, Backend, Capabilities, ModelSpec, Session, hooks
from speechperf.errors import DeviceError, FeedError, ModelFileError, SpeechperfError
from speechperf.registry import get_backend
from speechperf.threads import measure_thread_use
from speechperf.values import usable_cores

#: Input features of the affine model; the heavy variant is large enough for the thread check.
SMALL, HEAVY = (8, 4), (512, 512)


def affine_reference(x: np.ndarray, weight: np.ndarray, bias: np.ndarray) -> np.ndarray:
    return np.tanh(x @ weight + bias)


def affine_weights(size: tuple[int, int], seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    weight = (rng.standard_normal(size) / np.sqrt(size[0])).astype(np.float32)
    bias = rng.standard_normal(size[1]).astype(np.float32) * 0.1
    return weight, bias


def _file_field(spec: ModelSpec) -> str:
    """The file a spec loads from: ``path``, or for a factory its ``weights`` file; a factory without a weights
    file has none, and the file checks are skipped, saying how to keep them."""
    if spec.path is not None:
        return "path"
    if spec.weights is not None:
        return "weights"
    pytest.skip(
        "the affine model is a factory without a weights file, so there is no file to check: return "
        "ModelSpec(path=...) or ModelSpec(factory=..., weights=...) from build_affine_model to keep this check "
        '(docs/backends.md, "The conformance suite")'
    )


class BackendConformance:
    """Tests every backend must pass. Subclasses set ``backend_name`` and implement ``build_affine_model``."""

    backend_name: str = ""
    #: Largest allowed CPU time / wall time while a 1-thread session runs.
    single_thread_max_ratio: float = 1.3

    def build_affine_model(self, directory: Path, weight: np.ndarray, bias: np.ndarray) -> ModelSpec:
        """Write a model with input ``x`` [batch, time, in] float32 and output ``y = tanh(x @ weight + bias)``."""
        raise NotImplementedError

    # -- fixtures ---------------------------------------------------------------------------------------------

    @pytest.fixture
    def backend(self) -> Backend:
        backend = get_backend(self.backend_name)
        if not backend.availability().ok:
            pytest.skip(f"{self.backend_name}: {backend.availability().reason}")
        return backend

    @pytest.fixture
    def affine(self, tmp_path: Path):
        weight, bias = affine_weights(SMALL)
        return self.build_affine_model(tmp_path, weight, bias), weight, bias

    @pytest.fixture
    def session(self, backend: Backend, affine) -> Session:
        return backend.load(affine[0], device="cpu", threads=1)

    # -- the protocol -----------------------------------------------------------------------------------------

    def test_satisfies_protocol(self, backend: Backend):
        assert isinstance(backend, Backend)
        assert backend.name == self.backend_name
        assert isinstance(backend.capabilities, Capabilities)
        assert "cpu" in backend.capabilities.devices
        assert backend.capabilities.formats, "a backend must declare the formats it loads"

    def test_availability_reports_version(self, backend: Backend):
        status = backend.availability()
        assert isinstance(status, Availability) and status.ok
        assert status.version, "an available backend reports its framework version"

    # -- the session contract ---------------------------------------------------------------------------------

    def test_session_declares_inputs_and_outputs(self, session: Session):
        assert session.input_names == ["x"]
        assert len(session.outputs) == 1
        assert session.inputs[0].dtype in (None, "float32")

    @pytest.mark.parametrize("batch,time", [(1, 5), (3, 17), (2, 64)])
    def test_session_matches_reference_at_any_batch_and_length(self, session: Session, affine, batch, time):
        _, weight, bias = affine
        x = np.random.default_rng(batch * 100 + time).standard_normal((batch, time, SMALL[0])).astype(np.float32)
        out = session({"x": x})
        assert list(out) == session.output_names
        y = out[session.output_names[0]]
        assert isinstance(y, np.ndarray), "sessions return host numpy arrays"
        np.testing.assert_allclose(y, affine_reference(x, weight, bias), rtol=1e-5, atol=1e-5)

    def test_session_is_repeatable(self, session: Session):
        x = np.ones((1, 4, SMALL[0]), np.float32)
        first = session({"x": x})[session.output_names[0]]
        second = session({"x": x})[session.output_names[0]]
        np.testing.assert_array_equal(first, second)

    def test_outputs_are_named_as_in_the_model_file(self, session: Session):
        assert session.output_names == ["y"], (
            f"the session names its output {session.output_names}, but the model file names it 'y': adapters look "
            'outputs up by the file\'s names (docs/backends.md, "The session": names as in the file)'
        )

    def test_outputs_have_the_files_dtype(self, session: Session):
        y = session({"x": np.ones((1, 3, SMALL[0]), np.float32)})[session.output_names[0]]
        assert y.dtype == np.float32, (
            f"the model file's output 'y' is float32, the session returned {y.dtype}: return the dtype the file "
            'declares (docs/backends.md, "The session": dtypes)'
        )

    def test_each_call_returns_fresh_arrays(self, session: Session):
        name = session.output_names[0]
        x = np.ones((2, 4, SMALL[0]), np.float32)
        first = session({"x": x})[name]
        kept = first.copy()
        second = session({"x": -x})[name]
        message = (
            "a second call changed the array the first call returned: each call must return fresh arrays that no "
            'later call overwrites, as the decoding loops keep them (docs/backends.md, "The session": fresh arrays)'
        )
        assert not np.shares_memory(first, second), message
        np.testing.assert_array_equal(first, kept, err_msg=message)

    # -- bad input --------------------------------------------------------------------------------------------

    def test_wrong_feed_name_is_named(self, session: Session):
        with pytest.raises(FeedError, match="'features'"):
            session({"features": np.ones((1, 4, SMALL[0]), np.float32)})

    def test_missing_feed_is_named(self, session: Session):
        with pytest.raises(FeedError, match="missing input 'x'"):
            session({})

    def test_wrong_dtype_is_named(self, session: Session):
        with pytest.raises(FeedError, match="'x'.*float64"):
            session({"x": np.ones((1, 4, SMALL[0]), np.float64)})

    def test_wrong_rank_is_named(self, session: Session):
        with pytest.raises(FeedError, match="'x'.*rank 2"):
            session({"x": np.ones((4, SMALL[0]), np.float32)})

    def test_missing_model_file(self, backend: Backend, affine, tmp_path: Path):
        spec, field = affine[0], _file_field(affine[0])
        missing = attrs.evolve(spec, **{field: tmp_path / "nowhere" / getattr(spec, field).name})
        with pytest.raises(ModelFileError, match="not found"):
            backend.load(missing)

    def test_file_of_wrong_format(self, backend: Backend, affine, tmp_path: Path):
        spec, field = affine[0], _file_field(affine[0])
        junk = tmp_path / "junk" / getattr(spec, field).name
        junk.parent.mkdir()
        junk.write_bytes(b"this is not a model file\n" * 8)
        with pytest.raises(ModelFileError, match="junk"):
            backend.load(attrs.evolve(spec, **{field: junk}))

    @pytest.mark.parametrize("threads", [0, -1])
    def test_bad_thread_count(self, backend: Backend, affine, threads):
        with pytest.raises(SpeechperfError, match="threads"):
            backend.set_threads(threads)
        with pytest.raises(SpeechperfError, match="threads"):
            backend.load(affine[0], threads=threads)

    def test_unknown_device(self, backend: Backend, affine):
        with pytest.raises(DeviceError, match="'tpu'"):
            backend.load(affine[0], device="tpu")

    def test_cuda_loads_or_says_why_not(self, backend: Backend, affine):
        if "cuda" not in backend.capabilities.devices:
            with pytest.raises(DeviceError, match="cuda"):
                backend.load(affine[0], device="cuda")
            return
        try:
            session = backend.load(affine[0], device="cuda")
        except DeviceError as exc:
            assert "cuda" in str(exc) and "cpu" in str(exc), "the error says what to use instead"
            return
        x = np.ones((1, 4, SMALL[0]), np.float32)
        y = session({"x": x})[session.output_names[0]]
        np.testing.assert_allclose(y, affine_reference(x, *affine[1:]), rtol=1e-4, atol=1e-4)

    # -- threads ----------------------------------------------------------------------------------------------

    @pytest.fixture
    def heavy(self, backend: Backend, tmp_path: Path):
        weight, bias = affine_weights(HEAVY)
        x = np.random.default_rng(1).standard_normal((1, 1024, HEAVY[0])).astype(np.float32)
        return self.build_affine_model(tmp_path, weight, bias), x

    def test_one_thread_uses_one_core(self, backend: Backend, heavy):
        spec, x = heavy
        session = backend.load(spec, threads=1)
        use = measure_thread_use(lambda: session({"x": x}))
        assert use.cpu_wall_ratio <= self.single_thread_max_ratio, f"asked for 1 thread, used {use}"

    @pytest.mark.skipif(usable_cores() < 2, reason="needs 2 usable cores")
    def test_two_threads_use_two_cores(self, backend: Backend, heavy):
        spec, x = heavy
        session = backend.load(spec, threads=2)
        use = measure_thread_use(lambda: session({"x": x}))
        if use.cpu_wall_ratio < 1.2 and use.other_processes_cores > 0.3:
            pytest.skip(f"the machine is busy, so two threads cannot get two cores: {use}")
        assert use.cpu_wall_ratio >= 1.2, f"asked for 2 threads, used {use}"

    # -- seed, options and the optional capabilities (each checked only where the backend has it) ----------------

    def test_seed_is_callable_and_outputs_repeat_after_reseeding(self, backend: Backend, affine):
        backend.seed(1234)  # raising (a stub's NotImplementedError) fails here, before anything is loaded
        session = backend.load(affine[0], threads=1)
        x = np.random.default_rng(5).standard_normal((2, 6, SMALL[0])).astype(np.float32)
        outs = []
        for _ in range(2):
            backend.seed(1234)
            outs.append(session({"x": x})[session.output_names[0]])
        np.testing.assert_array_equal(
            outs[0], outs[1], err_msg='the same seed gave other outputs (docs/backends.md, "The backend class": seed)'
        )

    def test_options_class_keys_are_made_with_key(self, backend: Backend):
        cls = hooks(backend).options_class
        if cls is None:
            pytest.skip("the backend takes no options")
        assert attrs.has(cls), 'options_class must be an attrs class (docs/backends.md, "Options")'
        for field in attrs.fields(cls):
            assert {"help", "kind"} <= set(field.metadata), (
                f"options field {field.name!r} is not made with speechperf.values.key(default, help, kind) "
                '(docs/backends.md, "Options")'
            )

    def _capability(self, backend: Backend, name: str):
        from speechperf.backend import CapabilityUnavailableError

        if not hooks(backend).has_capability(name):
            pytest.skip(f"no capability {name!r}")
        try:
            return hooks(backend).capability(name)
        except CapabilityUnavailableError as exc:
            pytest.skip(str(exc))

    def test_flops_count_the_affine_model_by_the_counting_rule(self, backend: Backend, affine):
        from speechperf.backend import CapabilityUnavailableError

        self._capability(backend, "flops")
        session = backend.load(affine[0], threads=1)
        batch, time = 2, 7
        feeds = {"x": np.ones((batch, time, SMALL[0]), np.float32)}
        try:
            count = hooks(backend).count_flops(session, feeds)
        except CapabilityUnavailableError as exc:
            pytest.skip(str(exc))  # a stub: "unavailable", as check and bench show it
        except SpeechperfError as exc:  # "cannot count this session" in one line: a FLOP failure, said why
            pytest.skip(f"the counter cannot count this format: {exc}")
        expected = 2 * batch * time * SMALL[0] * SMALL[1]
        assert count.total == expected, (
            f"the affine model x[{batch}, {time}, {SMALL[0]}] @ w[{SMALL[0]}, {SMALL[1]}] counts {count.total} FLOPs, "
            f'the counting rule gives 2*batch*time*in*out = {expected} (docs/backends.md, "FLOPs")'
        )

    @pytest.mark.parametrize("kind, dtype", [("matmul", "float32"), ("conv", "float32"), ("matmul", "int8")])
    def test_known_graph_matches_its_reference(self, backend: Backend, kind, dtype):
        from speechperf.backend import CapabilityUnavailableError
        from speechperf.meters.flops import KnownGraph

        self._capability(backend, "known_graph")
        graph = KnownGraph(kind, dtype=dtype)
        try:
            known = hooks(backend).known_session(graph, 1)
        except CapabilityUnavailableError as exc:  # also how a runtime without int8 kernels says so
            pytest.skip(str(exc))
        feeds = graph.feeds()
        y, expected = known(feeds)[known.output_names[0]], graph.reference(feeds)
        where = f'the {dtype} {kind} known graph (docs/backends.md, "Known graphs")'
        assert y.dtype == expected.dtype, f"{where} returns {y.dtype}; its reference is {expected.dtype}"
        np.testing.assert_allclose(y, expected, atol=1e-3, err_msg=f"{where} differs from graph.reference")

    def test_onnx_session_declares_the_files_dtypes(self, session: Session):
        from speechperf.meters.onnx_files import onnx_tensor_infos

        path = session.spec.path if session.spec is not None else None
        if path is None or path.suffix != ".onnx":
            pytest.skip("the affine model is not an ONNX file")
        pytest.importorskip("onnx")
        declared = (session.inputs, session.outputs)
        expected = onnx_tensor_infos(path)
        for mine, theirs in zip(declared, expected):
            assert [(t.name, t.dtype) for t in mine] == [(t.name, t.dtype) for t in theirs], (
                f"the session declares {mine}, the ONNX file {theirs}: take them from "
                'speechperf.meters.onnx_files.onnx_tensor_infos (docs/backends.md, "The session": dtypes)'
            )

    def test_silero_vad_port_matches_its_reference(self, backend: Backend, tmp_path: Path):
        from speechperf.zoo import silero_port

        port = hooks(backend).silero_vad_port
        if port is None:
            pytest.skip("the backend runs silero's own files (no silero_vad_port)")
        weights = silero_port.random_weights()
        if port == "onnx":
            pytest.importorskip("onnx")
            spec = ModelSpec(silero_port.write_port(weights, tmp_path / "port.onnx"))
        else:
            from safetensors.numpy import save_file

            save_file(weights, str(tmp_path / "port.safetensors"))
            spec = ModelSpec(
                factory=port,
                weights=tmp_path / "port.safetensors",
                inputs=silero_port.INPUTS,
                outputs=silero_port.OUTPUTS,
            )
        session = backend.load(spec, threads=1)
        rng = np.random.default_rng(0)
        feeds = {
            "input": rng.standard_normal((2, 576)).astype(np.float32) * 0.1,
            "state": rng.standard_normal((2, 2, 128)).astype(np.float32) * 0.1,
        }
        got, expected = session(feeds), silero_port.reference(weights, **feeds)
        for name in ("output", "stateN"):
            np.testing.assert_allclose(
                got[name],
                expected[name],
                atol=1e-4,
                err_msg=f"the silero VAD port's {name!r} differs from speechperf.zoo.silero_port.reference "
                '(docs/backends.md, "The silero VAD port")',
            )

    def test_device_memory_says_whether_it_is_available(self, backend: Backend):
        self._capability(backend, "memory")
        memory = hooks(backend).device_memory("cpu")
        message = 'DeviceMemory needs available: bool and reason: str (docs/backends.md, "Device memory")'
        assert isinstance(memory.available, bool), message
        assert isinstance(memory.reason, str), message
        if memory.available:
            memory.reset()
            assert isinstance(memory.peak_bytes(), int), message

    def test_profiler_records_ops_of_a_short_loop_starting_at_step_0(self, backend: Backend, affine, tmp_path: Path):
        self._capability(backend, "profiler")
        session = backend.load(affine[0], threads=1)
        x = np.ones((1, 8, SMALL[0]), np.float32)
        with hooks(backend).step_profiler(f"batch_range=[0,2]; profile_path={tmp_path / 'trace'}") as prof:
            profiled = prof.attach(session)
            for _ in range(3):
                profiled({"x": x})
                prof.step(num_samples=1)
        assert prof.finished and prof.summary.ops, (
            'a profiled loop over the affine model with batch_range=[0,2] recorded no ops (docs/backends.md, "Step '
            'profiler": the edge case, _open runs before any attach)'
        )
