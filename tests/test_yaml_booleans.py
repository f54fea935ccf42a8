"""Option values survive YAML: an unquoted ``off`` / ``on`` (a boolean to YAML 1.1) is the choice 'off' / 'on' of
every enum option that offers it; any other enum option and every free text refuse a boolean in one line that says
why and what to write."""

from __future__ import annotations

import attrs
import pytest

from speechperf.backend import hooks
from speechperf.config import ConfigError, parse_config
from speechperf.config.schema import FeatureConfig, GeneralConfig, InputConfig, StageConfig
from speechperf.errors import SpeechperfError
from speechperf.registry import get_backend
from speechperf.values import check_value


def enum_options() -> list[tuple[str, attrs.Attribute]]:
    """Every option of the config and of each built-in backend that takes one of a list of words."""
    classes = {"general.": GeneralConfig, "stageN.": StageConfig, "inputs.": InputConfig, "features.": FeatureConfig}
    for name in ("torch", "paddle", "onnxruntime"):
        classes[f"options.{name}."] = hooks(get_backend(name)).options_class
    return [(prefix + f.name, f) for prefix, cls in classes.items() for f in attrs.fields(cls) if f.metadata["choices"]]


ENUMS = enum_options()


def test_the_audit_covers_the_enum_options_known_today():
    names = {name for name, _ in ENUMS}
    assert {"options.torch.compile", "options.onnxruntime.graph_optimization_level", "features.padding"} <= names
    assert len(names) >= 20


@pytest.mark.parametrize("name,field", ENUMS, ids=[n for n, _ in ENUMS])
def test_each_enum_option_reads_yaml_booleans_as_off_and_on_where_it_offers_them(name, field):
    for value, word in ((False, "off"), (True, "on")):
        if field.metadata["kind"].startswith("list"):  # meters: a list of names, where a boolean is no name
            with pytest.raises(ConfigError):
                check_value(field, value, name, "c.yaml:1")
        elif word in field.metadata["choices"]:
            assert check_value(field, value, name, "c.yaml:1") == word
        else:
            with pytest.raises(ConfigError) as error:
                check_value(field, value, name, "c.yaml:1")
            message = str(error.value)
            assert message.startswith(f"c.yaml:1: {name} = {value} (bool); expected one of ")
            assert "YAML reads an unquoted on/off/yes/no/true/false as a boolean: quote the text" in message


def test_compile_off_in_a_config():
    cfg = parse_config("stage1: {model: s2t, options: {torch: {compile: off}}}\n", "c.yaml")
    assert cfg.stages[0].options == {"torch": {"compile": "off"}}
    with pytest.raises(SpeechperfError, match=r"options.torch.compile = True \(bool\); expected one of off, default"):
        parse_config("stage1: {model: s2t, options: {torch: {compile: on}}}\n", "c.yaml")


def test_free_text_read_as_a_boolean_says_to_quote_it():
    with pytest.raises(ConfigError) as error:
        parse_config("general: {language: no}\nstage1: {model: s2t}\n", "c.yaml")
    assert str(error.value) == (
        "c.yaml:1: general.language = False (bool); expected a string or null (YAML reads an unquoted on/off/yes/no/true/"
        "false as a boolean: quote the text)"
    )
    assert parse_config("general: {language: 'no'}\nstage1: {model: s2t}\n", "c.yaml").general.language == "no"
