"""A torch.export archive (`.pt2`) from a stranger, checked before torch reads it.

`torch.export.load` does more than read tensors. Read as torch reads it (torch/export/pt2_archive,
torch/_export/serde), an archive can make it run code:

- weights and constants marked `"use_pickle": true` in `data/{weights,constants}/*_config.json` are
  read with `torch.load(weights_only=False)`, so a pickle's `__reduce__` runs;
- the example inputs (`data/sample_inputs/<model>.pt`, and the legacy `data/{weights,constants}/<model>.pt`)
  are read with `weights_only=True`, and when that fails torch tries again with `weights_only=False`;
- constants named `custom_obj_*` go through TorchScript's unpickler and `opaque_obj_*` through `pickle.loads`;
- `data/aotinductor/` holds compiled shared libraries, which loading runs;
- the graph (`models/<model>.json`) names each node's function as a path under `torch`, `math` or
  `_operator`, and any callable found there is called when the program runs (`torch.os.system`
  included); its shape expressions go through `sympy.sympify`, which evaluates them as Python; and
  its `guards_code` is pasted into Python source that `ExportedProgram.module()` executes.

So without `--trust-checkpoint` bgbench reads the archive itself first (as a zip, and its JSON with
`json`) and refuses, in one line, anything but tensors, a graph of PyTorch operators, and shape
expressions and guards built from an allow-list of names. Pickled entries are tried with torch's
restricted unpickler (`weights_only=True`) and refused when it refuses them; then torch loads the
archive with every `torch.load` forced to `weights_only=True` (`TORCH_FORCE_WEIGHTS_ONLY_LOAD`), so
its fallback to a full unpickler cannot be reached even by an entry this check missed.
"""
from __future__ import annotations

import ast
import contextlib
import io
import json
import os
import re
import warnings
import zipfile
from pathlib import Path
from typing import Iterator, List

from ..errors import CheckpointError

#: What to do about a refusal.
TRUST = "load it with --trust-checkpoint only if you trust its source"
#: Folders and files (relative to the archive's root folder) that `torch.export.save` writes and
#: bgbench reads from a stranger; anything else (compiled AOTInductor libraries, ExecuTorch or MTIA
#: payloads, files outside the root folder) is refused.
KNOWN_FILES = ("archive_format", "archive_version", "byteorder", ".data/version", ".data/serialization_id")
KNOWN_DIRS = ("models/", "data/weights/", "data/constants/", "data/sample_inputs/", "extra/")
#: The most bytes a graph, a payload config or the example inputs may unpack to.
MAX_ENTRY = 1 << 30
#: torch's own names for the three kinds of constant file.
TENSOR_PREFIX, CUSTOM_OBJ_PREFIX, OPAQUE_OBJ_PREFIX = "tensor_", "custom_obj_", "opaque_obj_"
#: Operators that read or write files by name: refused in a stranger's graph.
FILE_OPS = ("from_file", "save", "load")
#: `_operator` functions a graph may call (the symbolic-shape arithmetic and getitem torch emits).
OPERATORS = ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "neg", "pos", "eq", "ne", "lt", "le", "gt",
             "ge", "and_", "or_", "not_", "getitem", "abs", "invert", "xor", "lshift", "rshift")
#: The sympy and torch names a shape expression or a guard may call (what torch prints them with).
SYMPY_NAMES = frozenset((
    "Symbol", "Integer", "Rational", "Float", "Add", "Mul", "Pow", "Max", "Min", "Abs", "floor", "ceiling", "sqrt",
    "Eq", "Ne", "Lt", "Le", "Gt", "Ge", "Equality", "Unequality", "StrictLessThan", "StrictGreaterThan", "LessThan",
    "GreaterThan", "And", "Or", "Not", "Piecewise", "ExprCondPair", "oo", "zoo", "nan", "true", "false", "True",
    "False", "None", "Mod", "FloorDiv", "ModularIndexing", "Where", "PythonMod", "CleanDiv", "CeilToInt", "FloorToInt",
    "CeilDiv", "LShift", "RShift", "PowByNatural", "FloatPow", "FloatTrueDiv", "IntTrueDiv",
    "IsNonOverlappingAndDenseIndicator", "TruncToFloat", "TruncToInt", "RoundToInt", "RoundDecimal", "ToFloat",
    "Identity", "OpaqueUnaryFn_sqrt", "BitwiseFn_bitwise_and", "BitwiseFn_bitwise_or", "sym_sum", "Sum", "inf"))
#: A shape symbol's name (`s77`, `u0`, `zuf3`, `ps1`) or a plain identifier a guard indexes with.
SYMBOL = re.compile(r"^[a-z]{1,4}\d+$")
IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,99}$")
#: What a guard may ask of an input tensor (`L['x'].size()[0] == 2`).
TENSOR_ATTRS = ("size", "stride", "storage_offset", "dim", "shape", "numel")
#: Characters no string in the graph may hold: Python reads a lone carriage return as a line break,
#: and torch pastes some of these strings into the Python source it generates.
BAD_CHARS = re.compile(r"[\r\x00\x0b\x0c\x1c-\x1e\x85\u2028\u2029]")


def check_archive(path: Path) -> None:
    """Refuse, in one line, a `.pt2` that would make `torch.export.load` (or the program it gives)
    run anything but PyTorch operators on tensors (see the module docstring)."""
    try:
        with zipfile.ZipFile(path) as z:
            _check(path, z)
    except (zipfile.BadZipFile, OSError, UnicodeDecodeError, json.JSONDecodeError, RecursionError) as e:
        raise CheckpointError(f"cannot read the torch.export archive {path}: {' '.join(str(e).split())[:160]}") from None


@contextlib.contextmanager
def weights_only_loads() -> Iterator[None]:
    """Every `torch.load` inside reads with `weights_only=True`, whatever its caller asks (torch's
    `TORCH_FORCE_WEIGHTS_ONLY_LOAD`, read at each call): torch.export's own fallback to a full
    unpickler is then one more refusal."""
    saved = {k: os.environ.get(k) for k in ("TORCH_FORCE_WEIGHTS_ONLY_LOAD", "TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD")}
    os.environ["TORCH_FORCE_WEIGHTS_ONLY_LOAD"] = "1"
    os.environ.pop("TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD", None)
    try:
        yield
    finally:  # only these two keys: another thread's changes to the environment stay
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def _refuse(path: Path, what: str) -> CheckpointError:
    return CheckpointError(f"{path} {what}, which can run code when torch loads it; {TRUST}")


def _check(path: Path, z: zipfile.ZipFile) -> None:
    names = z.namelist()
    folded = [n.casefold() for n in names]
    if len(set(folded)) != len(folded):  # torch's reader (miniz) finds names ignoring case, and may find another
        twice = next(n for n, f in zip(names, folded) if folded.count(f) > 1)  # copy than the one checked here
        raise _refuse(path, f"holds {twice!r} twice (names that differ only in case count as one)")
    root = names[0].split("/", 1)[0] + "/" if names and "/" in names[0] else ""
    inside = {}
    for name in names:
        rel = name[len(root):] if root and name.startswith(root) else None
        if rel is None or ".." in rel.split("/") or name.startswith("/") or "\\" in name:
            raise _refuse(path, f"holds {name!r} outside its root folder")
        if rel.endswith("/"):
            continue
        if rel not in KNOWN_FILES and not rel.startswith(KNOWN_DIRS):
            raise _refuse(path, f"holds {rel!r}, which is not a tensor, a graph or a shape (compiled code or a "
                                f"payload bgbench does not read from a stranger)")
        inside[rel] = name
    for rel, name in inside.items():
        if rel.startswith("models/"):
            _check_graph(path, rel, json.loads(_read(path, z, name)))
        elif rel.endswith("_config.json") and rel.startswith(("data/weights/", "data/constants/")):
            _check_payloads(path, z, root, rel, json.loads(_read(path, z, name)))
        elif rel.startswith("data/sample_inputs/") or (rel.startswith(("data/weights/", "data/constants/"))
                                                       and rel.casefold().endswith(".pt")):
            _check_pickle(path, rel, _read(path, z, name))


def _read(path: Path, z: zipfile.ZipFile, name: str) -> bytes:
    """An entry this check parses (a graph, a config, a pickle), refused above `MAX_ENTRY` bytes
    unpacked (a zip entry can unpack to far more than the file's size)."""
    if z.getinfo(name).file_size > MAX_ENTRY:
        raise CheckpointError(f"{path}: its entry {name} unpacks to {z.getinfo(name).file_size} bytes, more than "
                              f"a graph, a config or example inputs hold (at most {MAX_ENTRY}); {TRUST}")
    return z.read(name)


def _check_payloads(path: Path, z: zipfile.ZipFile, root: str, rel: str, config) -> None:
    """A weights or constants config: tensors stored raw, or pickles the restricted unpickler reads."""
    folder = rel.rsplit("/", 1)[0] + "/"
    entries = config.get("config") if isinstance(config, dict) else None
    if not isinstance(entries, dict):
        raise CheckpointError(f"cannot read the torch.export archive {path}: {rel} is not a payload config")
    for fqn, meta in entries.items():
        meta = meta if isinstance(meta, dict) else {}
        name = str(meta.get("path_name", ""))
        if not IDENT.match(name.replace(".", "_")):
            raise _refuse(path, f"names {name!r} as the file of {fqn} in {rel}")
        if name.startswith((CUSTOM_OBJ_PREFIX, OPAQUE_OBJ_PREFIX)):
            raise _refuse(path, f"holds {fqn} as a pickled Python or TorchScript object ({folder}{name})")
        if meta.get("use_pickle"):
            try:
                data = _read(path, z, root + folder + name)
            except KeyError:
                raise CheckpointError(f"cannot read the torch.export archive {path}: {folder}{name} is missing") \
                    from None
            _check_pickle(path, f"{folder}{name} ({fqn}, marked use_pickle)", data)


def _check_pickle(path: Path, what: str, data: bytes) -> None:
    """A pickled entry is read by torch's restricted unpickler (tensors and plain containers) or refused."""
    import torch
    try:
        # torch warns of a pickle protocol it did not write: the refusal says enough
        with warnings.catch_warnings(action="ignore"):
            torch.load(io.BytesIO(data), map_location="cpu", weights_only=True)
    except Exception as e:  # noqa: BLE001 - any refusal or damage: the entry is not plain tensors
        raise _refuse(path, f"holds {what}, a pickle that needs full unpickling ({unpickling_reason(e)})") from None


def _check_graph(path: Path, rel: str, graph) -> None:
    """Every node calls a PyTorch operator; every shape expression and guard is arithmetic on shapes."""
    for guard in graph.get("guards_code") or [] if isinstance(graph, dict) else []:
        if not isinstance(guard, str) or not _safe_expression(guard, guard=True):
            raise _refuse(path, f"has a guard in {rel} that is not arithmetic on input shapes ({str(guard)[:80]!r})")
    for node in _walk(graph):
        if isinstance(node, str) and BAD_CHARS.search(node):
            raise _refuse(path, f"has a string with a line-break or control character in {rel} ({node[:60]!r})")
        if not isinstance(node, dict):
            continue
        target = node.get("target")
        if isinstance(target, str) and "inputs" in node and "outputs" in node and not _safe_target(target):
            raise _refuse(path, f"has a node in {rel} that calls {target[:80]!r}, not a PyTorch operator")
        operator = node.get("as_operator")  # an operator passed as an argument (to a higher-order op)
        if isinstance(operator, str) and not _safe_target(operator):
            raise _refuse(path, f"passes {operator[:80]!r} as an operator in {rel}, not a PyTorch operator")
        expr = node.get("expr_str")
        if isinstance(expr, str) and not _safe_expression(expr):
            raise _refuse(path, f"has a shape expression in {rel} that is not arithmetic on shapes ({expr[:80]!r})")


def _walk(obj) -> Iterator:
    """Every value of a JSON document, depth first, without recursion (a deep document is no crash)."""
    stack: List = [obj]
    while stack:
        item = stack.pop()
        yield item
        if isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)


def _safe_target(target: str) -> bool:
    """`torch.ops.NS.OP.OVERLOAD`, `torch.ops.higher_order.OP`, a `torch.sym_*` function, a `math`
    function or a `_operator` function: what export writes. Any other path under `torch` (or an
    operator that reads or writes a file) is refused."""
    parts = target.split(".")
    if any(not IDENT.match(p) or p.startswith("__") for p in parts):
        return target.startswith("#") and bool(re.match(r"^#[A-Za-z0-9_]+:[A-Za-z0-9_.:]+$", target))
    if parts[:2] == ["torch", "ops"]:
        return (len(parts) == 4 and parts[2] == "higher_order") or (
            len(parts) in (4, 5) and parts[3] not in FILE_OPS and parts[2] != "higher_order")
    return len(parts) == 2 and (parts[0] == "math" or (parts[0] == "torch" and parts[1].startswith("sym_"))
                                or (parts[0] == "_operator" and parts[1] in OPERATORS))


def _safe_expression(text: str, guard: bool = False) -> bool:
    """A Python expression built only of numbers, shape symbols, allow-listed sympy names and
    arithmetic (and, in a guard, `L['x'].size()[0]`-style reads of the inputs' shapes)."""
    if len(text) > 10_000 or BAD_CHARS.search(text):
        return False
    try:
        tree = ast.parse(text, mode="eval")
    except (SyntaxError, ValueError, RecursionError):
        return False
    return all(_safe_node(node, guard) for node in ast.walk(tree))


#: The other nodes an expression may hold: arithmetic, comparisons, logic and tuples.
ALLOWED_NODES = (ast.Expression, ast.BinOp, ast.UnaryOp, ast.BoolOp, ast.Compare, ast.Call, ast.keyword, ast.Name,
                 ast.Constant, ast.Load, ast.Tuple, ast.operator, ast.unaryop, ast.boolop, ast.cmpop)


def _safe_node(node: ast.AST, guard: bool) -> bool:
    """Whether one node of a shape expression (or of a guard) is allowed."""
    if isinstance(node, ast.Name):
        return node.id in SYMPY_NAMES or bool(SYMBOL.match(node.id)) or (guard and node.id in ("L", "math"))
    if isinstance(node, ast.Constant):
        value = node.value
        return bool(IDENT.match(value)) if isinstance(value, str) else isinstance(value, (int, float, bool, type(None)))
    if isinstance(node, ast.Call):
        func = node.func
        return (isinstance(func, ast.Name) and func.id in SYMPY_NAMES) or (
            guard and isinstance(func, ast.Attribute) and (func.attr in TENSOR_ATTRS or _math_attr(func)))
    if guard and isinstance(node, ast.Attribute):
        return not node.attr.startswith("_") and (node.attr in TENSOR_ATTRS or _math_attr(node))
    if guard and isinstance(node, ast.Subscript):
        return isinstance(node.slice, ast.Constant)
    return isinstance(node, ALLOWED_NODES)


def _math_attr(node: ast.Attribute) -> bool:
    return isinstance(node.value, ast.Name) and node.value.id == "math" and not node.attr.startswith("_")


_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def unpickling_reason(error: Exception) -> str:
    """The gist of torch's weights_only refusal, on one line and without terminal escape codes.

    torch's message is a paragraph with bold escapes; the line that names the offending global
    ("Unsupported global: GLOBAL x.Y ...") is what tells a user what the file holds.
    """
    text = _ANSI.sub("", str(error)).strip()
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    at = next((k for k, line in enumerate(lines) if "Unsupported global" in line or "WeightsUnpickler error" in line),
              0)
    reason = lines[at] if lines else type(error).__name__
    reason = reason.split("WeightsUnpickler error:", 1)[-1].strip()
    if not reason and at + 1 < len(lines):  # 'WeightsUnpickler error:' alone; the gist is on the next line
        reason = lines[at + 1]
    reason = reason.split(" was not an allowed global")[0]
    return reason[:160]
