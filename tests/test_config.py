"""Benchmark configs: merging as fairseq does, and one clear line for every kind of bad config."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from speechperf.cli import main
from speechperf.config import ConfigError, default_config, load_config, parse_config
from speechperf.config.reference import markdown

REPO = Path(__file__).resolve().parents[1]
PRESETS = sorted((REPO / "configs").glob("*.yaml"))


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "bench.yaml"
    path.write_text(text)
    return path


def test_merge_defaults_general_stage(tmp_path):
    cfg = load_config(
        write(
            tmp_path,
            """
general:
  model_type: 3StageS2ST
  max_len_b: 50
  beam: 2
  threads: 2  # no more than the cores a test machine may have
stage1: {model: s2t, max_len_b: 7}
stage2: {model: mt}
stage3: {model: tts, preset: tiny}
""",
        )
    )
    assert cfg.general.threads == 2 and cfg.general.warmup == 2  # general over defaults
    assert [s.max_len_b for s in cfg.stages] == [7, 50, 50]  # stage over general
    assert [s.beam for s in cfg.stages] == [2, 2, 2]
    assert [s.preset for s in cfg.stages] == ["base", "base", "tiny"]
    assert cfg.roles == ("s2t", "mt", "tts")


def test_cli_overrides_replace_general_and_stage_keys(tmp_path):
    path = write(tmp_path, "general: {model_type: S2T, threads: 4}\nstage1: {model: s2t, preset: base}\n")
    cfg = load_config(path, {"threads": 2, "warmup": None}, {"preset": "tiny"})
    assert cfg.general.threads == 2 and cfg.general.warmup == 2
    assert cfg.stages[0].preset == "tiny"


def test_duplicate_stage_is_rejected_with_both_lines(tmp_path):
    # fairseq's own 3StageS2ST.yaml has stage2 twice; PyYAML would silently keep only the last one.
    path = write(
        tmp_path,
        "general:\n  model_type: 3StageS2ST\nstage1: {model: s2t}\nstage2: {model: mt}\nstage2: {model: tts}\n",
    )
    with pytest.raises(ConfigError) as err:
        load_config(path)
    assert str(err.value) == (
        f"{path}:5: duplicate key 'stage2' (first at line 4); each key may appear once in a "
        "section (YAML would silently keep only the last)"
    )


def test_unknown_key_suggests_the_nearest(tmp_path):
    path = write(tmp_path, "general:\n  model_type: S2T\n  dataset_szie: 3\nstage1: {model: s2t}\n")
    with pytest.raises(
        ConfigError,
        match=r"bench.yaml:3: unknown key general.dataset_szie \(did you mean "
        r"'dataset_size'\?\)",
    ):
        load_config(path)
    path = write(tmp_path, "general: {model_type: S2T}\nstage1:\n  model: s2t\n  max_lenb: 3\n")
    with pytest.raises(ConfigError, match=r":4: unknown key stage1.max_lenb \(did you mean 'max_len_b'\?\)"):
        load_config(path)


def test_run_level_key_in_a_stage_says_where_it_belongs(tmp_path):
    path = write(tmp_path, "general: {model_type: S2T}\nstage1: {model: s2t, threads: 2}\n")
    with pytest.raises(ConfigError, match="stage1.threads is a run-level key; put it in general"):
        load_config(path)


@pytest.mark.parametrize(
    "text, message",
    [
        ("general: {warmup: two}\nstage1: {model: s2t}", "general.warmup = 'two' (str); expected an integer"),
        ("general: {warmup: -1}\nstage1: {model: s2t}", "general.warmup = -1; must be >= 0"),
        ("general: {threads: true}\nstage1: {model: s2t}", "general.threads = True (bool); expected an integer"),
        ("general: {device: gpu}\nstage1: {model: s2t}", "general.device = 'gpu'; allowed: cpu, cuda"),
        ("general: {model_type: S2X}\nstage1: {model: s2t}", "general.model_type = 'S2X'; allowed: S2T, MT, TTS"),
        (
            "general: {meters: [runtime, flop]}\nstage1: {model: s2t}",
            "allowed: runtime, memory, flops, quality (did you mean 'flops'?)",
        ),
        ("stage1: {model: s2t, max_len_a: abc}", "stage1.max_len_a = 'abc' (str); expected a finite number"),
        ("stage1: {model: s2t, dur_prediction: 1}", "stage1.dur_prediction = 1 (int); expected true or false"),
        ("stage1: [1, 2]", "section 'stage1' is a list; a mapping is required"),
        ("stage4: {model: s2t}", "unknown section 'stage4'"),
        ("general: {model_type: S2T\n", "not valid YAML"),
    ],
)
def test_wrong_values_are_one_clear_line(tmp_path, text, message):
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as err:
        load_config(path)
    assert message in str(err.value)
    assert str(path) in str(err.value) and "\n" not in str(err.value)


@pytest.mark.parametrize(
    "model_type, present, missing",
    [
        ("2StageS2ST", "stage1: {model: s2t}", "needs stage2 (the tts model); it has stage1"),
        ("3StageS2ST", "stage1: {model: s2t}\nstage2: {model: mt}", "needs stage3 (the tts model)"),
        ("S2T", "", "needs stage1 (the s2t model); it has no stages"),
    ],
)
def test_missing_stage_for_the_model_type(tmp_path, model_type, present, missing):
    with pytest.raises(ConfigError, match=missing.replace("(", r"\(").replace(")", r"\)")):
        load_config(write(tmp_path, f"general: {{model_type: {model_type}}}\n{present}\n"))


def test_extra_stage_and_model_or_path(tmp_path):
    with pytest.raises(ConfigError, match="model_type S2T has 1 stage\\(s\\) \\(s2t\\); stage2 is not used"):
        load_config(write(tmp_path, "stage1: {model: s2t}\nstage2: {model: tts}\n"))
    with pytest.raises(ConfigError, match="sets both model"):
        load_config(write(tmp_path, "stage1: {model: s2t, path: x.onnx}\n"))
    with pytest.raises(ConfigError, match="needs `inputs` declared"):
        load_config(write(tmp_path, "stage1: {path: x.onnx, outputs: [y]}\n"))
    with pytest.raises(ConfigError, match=r"stage1.inputs\[0\].source = 'wave'; allowed: audio"):
        load_config(write(tmp_path, "stage1: {path: x.onnx, outputs: [y], inputs: [{name: x, source: wave}]}\n"))


def test_user_model_file_with_declared_inputs(tmp_path):
    cfg = load_config(
        write(
            tmp_path,
            """
general: {model_type: S2T}
stage1:
  path: my_asr.onnx
  inputs:
    - {name: speech, source: features}
    - {name: speech_lengths, source: feature_length, dtype: int64}
  outputs: [hyp]
""",
        )
    )
    inputs = cfg.stages[0].inputs
    assert [(i.name, i.source, i.dtype) for i in inputs] == [
        ("speech", "features", "float32"),
        ("speech_lengths", "feature_length", "int64"),
    ]
    assert cfg.stages[0].outputs == ("hyp",)


def test_yaml_tags_that_run_code_are_refused(tmp_path):
    path = write(tmp_path, "general: !!python/object/apply:os.system ['echo hacked']\n")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_config(path)


@pytest.mark.parametrize("preset", PRESETS, ids=lambda p: p.stem)
def test_every_preset_loads(preset):
    cfg = load_config(preset)
    assert cfg.general.model_type in preset.read_text()
    assert len(cfg.stages) >= 1


def test_builtin_default_is_package_data():
    cfg = default_config()
    assert (cfg.general.model_type, cfg.stages[0].model, cfg.stages[0].preset) == ("S2T", "s2t", "tiny")
    assert cfg.general.dataset_type == "generated"
    import speechperf.config

    assert (Path(speechperf.config.__file__).parent / "default.yaml").is_file()


def test_key_reference_doc_is_current():
    doc = REPO / "docs" / "config-keys.md"
    assert doc.read_text() == markdown(), (
        "docs/config-keys.md is stale: run `speechperf config keys > docs/config-keys.md`"
    )


def test_key_reference_lists_every_key():
    from speechperf.config.schema import GENERAL_KEYS, STAGE_KEYS

    text = markdown()
    for key in GENERAL_KEYS:
        assert f"`general.{key}`" in text
    for key in STAGE_KEYS:
        assert f"`stageN.{key}`" in text


def test_cli_config_keys_check_and_error(tmp_path):
    runner = CliRunner()
    result = runner.invoke(main, ["config", "keys"])
    assert result.exit_code == 0 and result.output == markdown()
    bad = write(tmp_path, "general: {model_type: 2StageS2ST}\nstage1: {model: s2t}\n")
    result = runner.invoke(main, ["config", "check", str(bad)])
    assert result.exit_code == 2
    assert "needs stage2" in result.output and "Traceback" not in result.output
    result = runner.invoke(main, ["config", "check", *map(str, PRESETS)])
    assert result.exit_code == 0, result.output
    assert result.output.count(": ok (") == len(PRESETS)


def test_config_import_needs_no_framework():
    code = (
        "import sys, speechperf.config, speechperf.cli.config_cmd; "
        "bad = [m for m in ('torch', 'paddle', 'onnxruntime') if m in sys.modules]; print(bad); "
        "sys.exit(1 if bad else 0)"
    )
    assert subprocess.run([sys.executable, "-c", code]).returncode == 0


def test_set_replaces_one_key_and_is_checked(tmp_path):
    path = write(tmp_path, "general: {model_type: S2T}\nstage1: {model: s2t, max_len_b: 50}\n")
    cfg = load_config(path, sets=["stage1.max_len_b=5", "general.generated_seconds=[0.5, 1]"])
    assert cfg.stages[0].max_len_b == 5 and cfg.general.generated_seconds == (0.5, 1.0)
    with pytest.raises(ConfigError, match="expected SECTION.KEY=VALUE"):
        load_config(path, sets=["max_len_b=5"])
    with pytest.raises(ConfigError, match=r"stage1.max_len_b = 'many' \(str\); expected an integer"):
        load_config(path, sets=["stage1.max_len_b=many"])
    with pytest.raises(ConfigError, match="unknown key stage1.max_len \\(did you mean"):
        load_config(path, sets=["stage1.max_len=5"])


def test_config_show_prints_the_merged_config():
    import yaml

    result = CliRunner().invoke(main, ["config", "show", str(REPO / "configs" / "3StageS2ST.yaml")])
    assert result.exit_code == 0, result.output
    merged = yaml.safe_load(result.output)
    assert merged["general"]["model_type"] == "3StageS2ST"
    assert [merged[f"stage{i}"]["max_len_b"] for i in (1, 2, 3)] == [50, 50, 50]  # general's value in every stage
    assert merged["stage3"]["vocoder"] == "mel_vocoder" and merged["stage1"]["preset"] == "base"


_USER_FILE = (
    "general: {{model_type: S2T}}\nstage1: {{path: {path}, inputs: [{{name: x, source: features{dtype}}}], "
    "outputs: [y]}}\n"
)


@pytest.mark.parametrize(
    "text,message",
    [
        (_USER_FILE.format(path="nothere.onnx", dtype=""), "bench.yaml:2: stage1.path = 'nothere.onnx'"),
        (_USER_FILE.format(path="model.xyz", dtype=""), "model.xyz from its suffix"),
        (
            _USER_FILE.format(path="model.onnx", dtype=", dtype: int65"),
            "stage1.inputs[0].dtype = 'int65'; allowed: float16, float32",
        ),
        ("stage1: {model: s2tt, preset: tiny}\n", "stage1: unknown reference model 's2tt' (did you mean 's2t'?)"),
        ("stage1: {model: s2t, preset: huge}\n", "stage1: unknown preset 'huge'; known presets: tiny, base"),
        (
            "general: {generated_seconds: [3, 1]}\nstage1: {model: s2t, preset: tiny}\n",
            "generated_seconds [3.0, 1.0] must be [shortest, longest]",
        ),
        (
            "general: {model_type: VAD}\nstage1: {model: silero_vad, vad_threshold: 0}\n",
            "stage1.vad_threshold = 0; must be > 0 and < 1",
        ),
        (
            "general: {model_type: VAD}\nstage1: {model: silero_vad, vad_threshold: 1.5}\n",
            "stage1.vad_threshold = 1.5; must be > 0 and < 1",
        ),
        (
            "general: {model_type: S2T, dataset_type: raw, dataset_path: nothere.tsv}\nstage1: {model: s2t, preset: tiny}\n",
            "general.dataset_path = 'nothere.tsv'",
        ),
    ],
)
def test_config_check_rejects_what_bench_rejects(tmp_path, monkeypatch, text, message):
    """The same one-line error, exit 2, from `config check` and from `bench` before it loads anything."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "model.xyz").write_bytes(b"\0")
    (tmp_path / "model.onnx").write_bytes(b"\0")
    path = write(tmp_path, text)
    lines = []
    for args in (
        ["config", "check", str(path)],
        ["config", "check", "-b", "onnxruntime", str(path)],
        ["bench", "-b", "onnxruntime", "--quiet", "--config", str(path)],
    ):
        result = CliRunner().invoke(main, args)
        assert result.exit_code == 2, result.output
        assert result.output.startswith("Error: ") and len(result.output.strip().splitlines()) == 1, result.output
        assert message in result.output
        lines.append(result.output)
    assert lines[1] == lines[2]  # with the same backend, check and bench say the same line


def test_vad_threshold_range_is_the_documented_one(tmp_path):
    row = next(line for line in markdown().splitlines() if "`stageN.vad_threshold`" in line)
    assert "| > 0 and < 1 |" in row
    for value, ok in ((0.001, True), (0.999, True), (1, False), (-0.1, False)):
        path = write(tmp_path, f"general: {{model_type: VAD}}\nstage1: {{model: silero_vad, vad_threshold: {value}}}\n")
        result = CliRunner().invoke(main, ["config", "check", str(path)])
        assert result.exit_code == (0 if ok else 2), result.output
        assert ok or "must be > 0 and < 1" in result.output


def test_config_check_with_a_backend_checks_its_formats(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "model.onnx").write_bytes(b"\0")
    path = write(tmp_path, _USER_FILE.format(path="model.onnx", dtype=""))
    assert CliRunner().invoke(main, ["config", "check", str(path)]).exit_code == 0
    for backend, own in (("torch", "torchscript, export, module"), ("paddle", "inference, layer")):
        # ONNX is not converted to torch or paddle: the line says so and what to write instead
        result = CliRunner().invoke(main, ["config", "check", "--backend", backend, str(path)])
        assert result.exit_code == 2, result.output
        assert f"backend '{backend}' does not load model.onnx (onnx: loaded by onnxruntime)" in result.output
        assert f"speechperf does not convert onnx files to {backend}'s formats" in result.output
        assert "Run this stage on onnxruntime (--backend onnxruntime, or the stage's `backend: onnxruntime`)" in (
            result.output
        )
        assert f"give {backend}'s own file ({own})" in result.output
    result = CliRunner().invoke(main, ["config", "check", "--backend", "torchh", str(path)])
    assert result.exit_code == 2 and "unknown backend 'torchh' (did you mean 'torch'?)" in result.output


@pytest.mark.parametrize(
    "inputs,message",
    [
        ("[{name: scales, value: [1, 2], source: audio}]", "needs exactly one of source"),
        ("[{name: scales}]", "needs exactly one of source"),
        ("[{name: scales, value: null}]", "needs exactly one of source"),
        ("[{name: scales, value: [[1, 2], [3]]}]", "expected a number or a rectangular nested list of numbers"),
        ("[{name: scales, value: [a, b]}]", "expected a number or a rectangular nested list of numbers"),
        ("[{name: n, value: [1.5], dtype: int64}]", "does not fit dtype int64 exactly"),
    ],
)
def test_constant_input_values_are_checked(tmp_path, inputs, message):
    with pytest.raises(ConfigError, match=message):
        parse_config(
            f"general: {{model_type: TTS}}\nstage1: {{path: m.onnx, inputs: {inputs}, outputs: [y]}}\n", "c.yaml"
        )


def test_output_sample_rate_only_for_a_speech_output_file(tmp_path):
    cfg = parse_config(
        "general: {model_type: TTS}\nstage1: {path: m.onnx, output_sample_rate: 22050, inputs: "
        "[{name: t, source: tokens, dtype: int64}, {name: s, value: [0.667, 1, 0.8]}], outputs: [y]}\n",
        "c.yaml",
    )
    assert cfg.stages[0].output_sample_rate == 22050 and cfg.stages[0].inputs[1].value == pytest.approx([0.667, 1, 0.8])
    with pytest.raises(ConfigError, match="output_sample_rate applies to your own model file"):
        parse_config("stage1: {model: s2t, output_sample_rate: 22050}\n", "c.yaml")


@pytest.mark.parametrize("meters", ["", " , "])
def test_empty_meters_is_an_error(meters):
    result = CliRunner().invoke(main, ["bench", "-b", "onnxruntime", "--quiet", "--meters", meters])
    assert result.exit_code == 2
    assert result.output == (
        f"Error: <built-in default.yaml>: general.meters = {meters!r} is empty; allowed: one or "
        "more of runtime, memory, flops, quality\n"
    )


def _show_then_check(config: Path, cwd: Path) -> subprocess.CompletedProcess:
    """`speechperf config show X | speechperf config check -` through a real shell pipe, as a user types it."""
    show = f"{sys.executable} -m speechperf config show {config}"
    check = f"{sys.executable} -m speechperf config check -"
    return subprocess.run(f"{show} | {check}", shell=True, cwd=cwd, capture_output=True, text=True, check=False)


@pytest.mark.parametrize("preset", PRESETS, ids=lambda p: p.stem)
def test_config_show_round_trips_through_check(preset, tmp_path):
    shown = CliRunner().invoke(main, ["config", "show", str(preset)])
    assert shown.exit_code == 0, shown.output
    again = write(tmp_path, shown.output)
    assert load_config(again).to_dict() == load_config(preset).to_dict()
    cfg = load_config(preset)
    checked = CliRunner().invoke(main, ["config", "check", str(again)])
    assert checked.exit_code == 0, checked.output
    assert checked.output.endswith(f"ok ({cfg.general.model_type}, {len(cfg.stages)} stage(s))\n")


@pytest.mark.slow
def test_config_show_of_user_file_stages_round_trips_through_a_pipe(tmp_path):
    """A `path` stage with a sourced input, a constant input (its `source` unset) and a file per backend: the
    shown config is accepted by `config check -` (a constant used to come back as `value: null` beside a source)."""
    for name in ("m.onnx", "m.pt", "m.json"):
        (tmp_path / name).write_bytes(b"x")
    config = write(
        tmp_path,
        "general: {model_type: S2S}\n"
        "stage1:\n"
        "  path: {onnxruntime: m.onnx, torch: m.pt, paddle: m.json}\n"
        "  inputs: [{name: x, source: features, layout: BCT}, {name: scales, value: [0.667, 1.0]}]\n"
        "  outputs: [y]\n",
    )
    done = _show_then_check(config, tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "-: ok (S2S, 1 stage(s))\n"
    shown = yaml_load(CliRunner().invoke(main, ["config", "show", str(config)]).output)
    assert shown["stage1"]["inputs"] == [
        {"name": "x", "source": "features", "dtype": "float32", "layout": "BCT"},
        {"name": "scales", "dtype": "float32", "value": [0.667, 1.0]},
    ]
    # Shown absolute (config-relative paths resolved against the config's folder): the output runs from any folder.
    assert shown["stage1"]["path"] == {
        b: str(tmp_path / f) for b, f in (("onnxruntime", "m.onnx"), ("torch", "m.pt"), ("paddle", "m.json"))
    }


def yaml_load(text: str):
    import yaml

    return yaml.safe_load(text)


@pytest.mark.parametrize(
    "path, message",
    [
        ("{torhc: m.pt}", "stage1.path.torhc: unknown backend (did you mean 'torch'?); known backends:"),
        ("{torch: 3}", "stage1.path.torch = 3; expected a file path"),
        ("{}", "stage1.path = {} (dict); expected a file path or a mapping of backend name -> file path"),
    ],
)
def test_a_bad_file_per_backend_is_one_line(tmp_path, path, message):
    config = write(
        tmp_path,
        f"general: {{model_type: S2S}}\nstage1: {{path: {path}, inputs: [{{name: x, source: features}}], outputs: [y]}}\n",
    )
    with pytest.raises(ConfigError) as err:
        load_config(config)
    assert message in str(err.value) and "\n" not in str(err.value)
