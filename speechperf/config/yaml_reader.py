"""The YAML of a config (a file, stdin, a ``--set`` value) read into plain data, safely, or refused in one line.

A safe loader (no object construction), plus what PyYAML's own SafeLoader lets through and the config cannot use:

- a key twice in one mapping (PyYAML silently keeps the last, which is how fairseq's 3-stage config loses a stage);
- a key that is not a string: ``general: {1: 2}``, ``{null: x}``, ``{yes: x}`` (YAML reads those as a number, null
  and true) or a complex key (``? [a, b] : 1``): a config key is a name;
- a document whose aliases expand to more than ``MAX_VALUES`` values (a "billion laughs": ten lines of ``&a`` /
  ``*a`` that stand for 10⁹ strings), or an alias inside itself: PyYAML builds them as shared lists in a
  millisecond, but anything that walks or prints them (a check, an error message) would run for hours;
- lists and mappings nested more than ``MAX_DEPTH`` deep (``[[[[...]]]]``): PyYAML composes them by recursion, and
  5,000 levels end in a RecursionError;
- an integer of more than ``MAX_DIGITS`` digits (Python refuses to convert those, with a ValueError).

YAML merge keys are supported: ``<<: *base`` copies the mapping ``base`` into the one holding it, whose own keys win.
The anchors they name may live in top-level keys starting with ``x-`` (``x-common: &common {...}``), which the config
ignores, as docker-compose does.
"""

from __future__ import annotations

from typing import Any

import yaml

from speechperf.errors import first_line, shorten
from speechperf.values import ConfigError

#: The most values (scalars, lists and mappings, each alias counted as what it stands for) a config may expand to;
#: the largest real config holds a few hundred.
MAX_VALUES = 100_000
#: The longest integer a config may write (Python's own limit for converting text to int is 4300 digits).
MAX_DIGITS = 100
#: The deepest nesting of lists and mappings a config may have; a real one nests four levels.
MAX_DEPTH = 100
#: Top-level keys with this prefix hold anchors for merge keys and are not part of the config.
IGNORED_PREFIX = "x-"

_MERGE = "tag:yaml.org,2002:merge"
_STR = "tag:yaml.org,2002:str"
_INT = "tag:yaml.org,2002:int"
_KIND = {
    "tag:yaml.org,2002:int": "an integer",
    "tag:yaml.org,2002:float": "a number",
    "tag:yaml.org,2002:bool": "a boolean (YAML reads yes/no/on/off/true/false so)",
    "tag:yaml.org,2002:null": "null",
    "tag:yaml.org,2002:timestamp": "a date",
}


class _Loader(yaml.SafeLoader):
    """SafeLoader that refuses a mapping with the same key twice (merged keys aside: the mapping's own win)."""

    source = "<config>"
    depth = 0

    def compose_node(self, parent, index):
        """PyYAML's, refusing a nesting deeper than ``MAX_DEPTH`` before its recursion overflows the stack."""
        self.depth += 1
        try:
            if self.depth > MAX_DEPTH:
                line = self.peek_event().start_mark.line + 1
                raise ConfigError(
                    f"{self.source}:{line}: lists and mappings nested more than {MAX_DEPTH} deep; a config nests a few"
                )
            return super().compose_node(parent, index)
        finally:
            self.depth -= 1

    def construct_mapping(self, node, deep=False):
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            if key_node.tag == _MERGE:
                continue
            k = self.construct_object(key_node, deep=True)
            line = key_node.start_mark.line + 1
            if k in seen:
                raise ConfigError(
                    f"{self.source}:{line}: duplicate key {shorten(k)} (first at line {seen[k]}); "
                    "each key may appear once in a section (YAML would silently keep only the last)"
                )
            seen[k] = line
        return super().construct_mapping(node, deep)


def _check_nodes(root: yaml.Node, source: str) -> None:
    """Refuse what the module docstring lists, on the composed nodes, before anything is built from them. An
    alias is the very node of its anchor, so each node is visited once and its expanded size remembered: linear in
    the text, whatever the aliases make of it."""
    size: dict[int, int] = {}
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    open_nodes: set[int] = set()
    while stack:
        node, children_done = stack.pop()
        key = id(node)
        if children_done:
            open_nodes.discard(key)
            children = _children(node)
            size[key] = 1 + sum(size[id(c)] for c in children)
            if size[key] > MAX_VALUES:
                raise ConfigError(
                    f"{source}:{node.start_mark.line + 1}: this value expands to more than {MAX_VALUES:,} values "
                    "through its aliases (*name); a config holds a few hundred; write the values out"
                )
            continue
        if key in size:
            continue
        if key in open_nodes:
            raise ConfigError(
                f"{source}:{node.start_mark.line + 1}: an alias refers to the value that holds it (a recursive "
                "value); a config cannot be recursive"
            )
        if isinstance(node, yaml.ScalarNode):
            if node.tag == _INT and len(node.value) > MAX_DIGITS:
                raise ConfigError(
                    f"{source}:{node.start_mark.line + 1}: an integer of {len(node.value)} digits; at most "
                    f"{MAX_DIGITS} are read"
                )
            size[key] = 1
            continue
        if isinstance(node, yaml.MappingNode):
            for key_node, _ in node.value:
                _check_key(key_node, source)
        open_nodes.add(key)
        stack.append((node, True))
        stack.extend((c, False) for c in _children(node))


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    if isinstance(node, yaml.MappingNode):
        return [n for pair in node.value for n in pair]
    return []


def _check_key(key_node: yaml.Node, source: str) -> None:
    line = key_node.start_mark.line + 1
    if key_node.tag == _MERGE:
        return
    if not isinstance(key_node, yaml.ScalarNode):
        shape = "a list" if isinstance(key_node, yaml.SequenceNode) else "a mapping"
        raise ConfigError(f"{source}:{line}: a key is {shape} (a YAML complex key, `? [...]`); keys are names")
    if key_node.tag != _STR:
        kind = _KIND.get(key_node.tag, f"of type {key_node.tag}")
        raise ConfigError(
            f"{source}:{line}: key {shorten(key_node.value)} is {kind}; keys are names (strings): quote it "
            f"('{key_node.value[:40]}') if you mean the text"
        )


def read_yaml(text: str, source: str) -> Any:
    """The YAML document in ``text`` as plain data (None when empty); ``source`` names it in errors."""
    try:  # the loader's reader refuses unprintable characters (binary garbage) as it is made
        loader = type("_SourceLoader", (_Loader,), {"source": source})(text)
    except yaml.YAMLError as exc:
        raise ConfigError(f"{source}: not valid YAML: {getattr(exc, 'reason', None) or first_line(exc)}") from None
    try:
        root = loader.get_single_node()
        if root is None:
            return None
        _check_nodes(root, source)
        return loader.construct_document(root)
    except yaml.YAMLError as exc:
        where = getattr(exc, "problem_mark", None)
        at = f":{where.line + 1}" if where is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ConfigError(f"{source}{at}: not valid YAML: {problem}") from None
    finally:
        loader.dispose()


def read_config_yaml(text: str, source: str) -> dict[str, Any]:
    """A config file's top level: a mapping (of sections), less the ``x-`` keys that only hold anchors."""
    data = read_yaml(text, source)
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise ConfigError(
            f"{source}: the top level is a {type(data).__name__}; a mapping with general and stage1..3 is required"
        )
    return {k: v for k, v in data.items() if not k.startswith(IGNORED_PREFIX)}
