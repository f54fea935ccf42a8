"""A step split into op categories, the same on every framework, so a paddle step and a torch step of one model can
be read side by side.

Each framework names its ops its own way (torch ``aten::lstm`` and autograd nodes, paddle's new API kernels such as
``conv2d dygraph`` and ``Global_Conv2dGradNodeFinal``, paddle legacy's ``conv2d pybind_imperative_func`` and one
``backward`` row, onnxruntime's node types). ``category_of`` maps a name to one of ``CATEGORIES`` with one ordered
list of rules (``RULES``); a backend may also put a whole scope in a category without looking at its ops (paddle's
``Optimization`` and ``Backward`` events, torch's ``Optimizer.step#...``).

The backend hands over the *outermost* op spans of each recorded step (an op inside another op, or inside an autograd
node, is not counted again) and each step's span as its profiler saw it. What the step spent outside every op (Python
between ops, the framework's dispatch) is the ``between ops`` row, so the rows add up to the step: a sum above the
step (ops counted twice) would make that row negative (``tests/test_profiler_dropin.py`` checks it is not, on real
training loops).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import attrs

from speechperf.errors import SpeechperfError

CATEGORIES = (
    "matmul/linear",
    "conv",
    "rnn",
    "attention",
    "norm",
    "elementwise",
    "data movement",
    "optimizer",
    "backward total",
    "other",
)
#: The step's time outside every recorded op.
BETWEEN = "between ops"
#: In a table's ``source``: its profiler records only part of each step's ops (``CategoryTable.partial``).
PARTIAL_MARK = "only the op calls directly inside each step"

#: (category, pattern searched in the normalized name), first match wins. The order matters: a gradient node of a
#: conv is backward, an optimizer's ``zero_grad`` is optimizer, ``scaled_dot_product_attention`` is attention.
RULES: tuple[tuple[str, str], ...] = (
    (
        "optimizer",
        r"^optimizer\.|^(adam|adamw|sgd|momentum|lamb|rmsprop|adagrad|adadelta|adamax)$|clear_grad|zero_grad",
    ),
    ("backward total", r"backward|gradnode|^grad|_grad$|^autograd::|evaluate_function"),
    ("attention", r"attention|sdpa|flash_attn|multi_?head"),
    ("rnn", r"lstm|gru|^rnn|_rnn|rnn_"),
    ("conv", r"conv"),
    ("norm", r"norm(?!al$)"),  # not aten::normal_ (random numbers)
    ("matmul/linear", r"matmul|linear|addmm|^mm$|bmm|gemm|^fc$|einsum|^dot$|^mv$"),
    (
        "data movement",
        r"copy|^to$|^_to|reshape|view|transpose|permute|contiguous|^cat$|concat|split|slice|stack|squeeze|flatten"
        r"|expand|gather|scatter|index|select|numpy|to_tensor|memcpy|set_value|narrow|chunk|unbind|tile|repeat"
        r"|^pad|dataloader|assign|cast|clone|^t$|^item$|detach|^lift",
    ),
    (
        "elementwise",
        r"relu|gelu|silu|sigmoid|tanh|softmax|^add|^sub|^mul|^div|^exp|^log|^pow|sqrt|mean|^sum|^max|^min|pool"
        r"|dropout|cross_entropy|nll_loss|^where|clip|clamp|^abs|^neg|^scale|square|elementwise|fill|zeros|ones"
        r"|^full|^empty|^ne$|^eq$|^lt$|^gt$|^le$|^ge$|argmax|reduce|^rsub|^sign|^erf|^reciprocal|^threshold",
    ),
)
_COMPILED = tuple((category, re.compile(pattern)) for category, pattern in RULES)
_SUFFIXES = (" dygraph", " pybind_imperative_func", " pybind_patch_func", " compute", " infer_shape")


def normalize(name: str) -> str:
    """``aten::lstm`` -> ``lstm``; ``conv2d dygraph`` -> ``conv2d``; ``adam_`` -> ``adam``; ``Optimizer.step#Adam.step``
    and ``autograd::engine::evaluate_function: X`` keep their prefix (it is what says what they are)."""
    text = name.strip().lower()
    if text.startswith(("autograd::", "optimizer.")):
        return text
    for suffix in _SUFFIXES:
        if text.endswith(suffix):
            text = text[: -len(suffix)]
    text = text.rsplit("::", 1)[-1]
    if text.startswith("global_"):
        text = text[len("global_") :]
    return text.strip("_ ")


def category_of(name: str) -> str:
    """The category of one op, from its name in any framework."""
    text = normalize(name)
    for category, pattern in _COMPILED:
        if pattern.search(text):
            return category
    return "other"


@attrs.frozen
class CategoryTable:
    """The recorded steps by category. Times in ns, summed over ``steps`` steps."""

    backend: str
    steps: int
    #: The recorded steps' spans, as the framework's profiler timed them.
    step_ns: int
    #: (category, ns) for every category of ``CATEGORIES`` (0 where no op fell in it).
    by_category: tuple[tuple[str, int], ...]
    #: What an op span is on this framework (the footer of the table).
    source: str = ""

    @property
    def ops_ns(self) -> int:
        return sum(ns for _, ns in self.by_category)

    @property
    def between_ns(self) -> int:
        return self.step_ns - self.ops_ns

    def ns(self, category: str) -> int:
        if category == BETWEEN:
            return self.between_ns
        return dict(self.by_category)[category]

    def rows(self) -> list[tuple[str, float, float]]:
        """(category, ms per step, share of the step) for every category, then ``between ops``."""
        per = max(self.steps, 1) * 1e6
        total = self.step_ns or 1
        names = [*CATEGORIES, BETWEEN]
        return [(c, self.ns(c) / per, self.ns(c) / total) for c in names]

    def document(self, **extra):
        """The table as a result document of kind ``profile`` (``extra``: the step timing), for
        ``speechperf profile-compare``."""
        from speechperf.results import Document

        rows = [{"category": c, "ms_per_step": round(ms, 6), "share": round(share, 6)} for c, ms, share in self.rows()]
        body = {
            "backend": self.backend,
            "steps": self.steps,
            "step_ns": self.step_ns,
            "by_category": dict(self.by_category),
            "source": self.source,
            **extra,
        }
        return Document("profile", rows=rows, complete=True, body=body)

    def to_json(self, **extra) -> str:
        return self.document(**extra).dumps()

    @classmethod
    def read(cls, path: str | Path) -> CategoryTable:
        """A table written by ``to_json`` (or by a speechperf before the result document, which wrote the body
        alone); a file that is not one is a one-line error naming it."""
        from speechperf.results import DocumentError, read

        try:
            record = read(path, kinds=("profile",))
        except DocumentError as exc:
            why = str(exc).split(": ", 1)[-1]  # the reader's message names the file first
            raise SpeechperfError(
                f"{path}: not a category table written by the step profiler (*.categories.json): {why}"
            ) from None
        try:
            counts = record["by_category"]
            table = cls(
                str(record["backend"]),
                int(record["steps"]),
                int(record["step_ns"]),
                tuple((c, int(counts.get(c, 0))) for c in CATEGORIES),
                str(record.get("source", "")),
            )
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            raise SpeechperfError(
                f"{path}: not a category table written by the step profiler (*.categories.json): "
                f"{type(exc).__name__}: {exc}"
            ) from None
        if table.steps < 1:
            raise SpeechperfError(f"{path}: a category table of {table.steps} steps; it needs at least one")
        return table

    @property
    def partial(self) -> bool:
        """Recorded by a profiler that sees only part of each step's ops (paddle's legacy API: the Python op calls,
        no optimizer or attention internals); its backend says so in ``source``."""
        return PARTIAL_MARK in self.source

    def table(self):
        from rich.table import Table

        title = f"{self.backend} step by category ({self.steps} steps)"
        table = Table(title=title, caption=self.source, min_width=max(len(title), 60))
        table.add_column("category")
        table.add_column("ms/step", justify="right")
        table.add_column("share", justify="right")
        for category, ms, share in self.rows():
            table.add_row(category, f"{ms:.3f}", f"{share * 100:.1f}%")
        table.add_row("step", f"{self.step_ns / max(self.steps, 1) / 1e6:.3f}", "100.0%")
        return table


def build(
    backend: str,
    spans: Iterable[tuple[int, str, int, str | None]],
    step_ns: Mapping[int, int],
    source: str = "",
) -> CategoryTable | None:
    """``spans``: (step, op name, ns, category or None to map the name) of the outermost ops of each step;
    ``step_ns``: step -> its span. Spans of steps not in ``step_ns`` are dropped. None without a step."""
    if not step_ns:
        return None
    acc = dict.fromkeys(CATEGORIES, 0)
    for step, name, ns, category in spans:
        if step in step_ns:
            acc[category or category_of(name)] += ns
    return CategoryTable(backend, len(step_ns), sum(step_ns.values()), tuple(acc.items()), source)


def json_path_beside(trace: Path) -> Path:
    """``torch_trace.json`` -> ``torch_trace.categories.json``, ``model.profile.json`` -> ``model.profile.categories.json``."""
    name = trace.name[: -len(".json")] if trace.name.endswith(".json") else trace.name
    return trace.with_name(f"{name}.categories.json")


def side_by_side(tables: Sequence[tuple[str, CategoryTable]]):
    """One rich table: ms per step and share of each labelled table, and each one's time over the first's."""
    from rich.table import Table

    first = tables[0][1]
    out = Table(title="step by category, ms per step (share)", min_width=60)
    out.add_column("category")
    for i, (label, t) in enumerate(tables):
        name = label if label == t.backend else f"{label} ({t.backend})"
        out.add_column(f"{name}, {t.steps} steps", justify="right")
        if i:
            out.add_column(f"{label} / {tables[0][0]}", justify="right")
    for category in (*CATEGORIES, BETWEEN, "step"):
        cells = [category]
        for i, (_, t) in enumerate(tables):
            ns = t.step_ns if category == "step" else t.ns(category)
            cells.append(f"{ns / t.steps / 1e6:.3f} ({ns / (t.step_ns or 1) * 100:.1f}%)")
            if i:
                base = (first.step_ns if category == "step" else first.ns(category)) / first.steps
                cells.append(f"{ns / t.steps / base:.2f}x" if base > 0 else "-")
        out.add_row(*cells)
    return out
