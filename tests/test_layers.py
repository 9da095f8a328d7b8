"""The house has no circle and no climb: the package's own imports, read from the source with `ast`
(function-level imports included), run only downwards through the layers of docs/architecture.md,
and no module reaches itself through them."""
import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"
PKG = SRC / "bgbench"

#: docs/architecture.md's layers, bottom first: a module may import its own layer and those below.
LAYERS = [
    {"version", "_lazy", "errors", "classes", "distributed", "console", "options", "signatures", "intervals",
     "result"},
    {"class_maps", "protocols", "checks", "store"},
    {"provenance", "recording", "data", "models"},
    {"variants", "edits", "evaluation", "drawing", "probing"},
    {"measures", "training", "comparing", "runs", "prediction_files"},
    {"reporting"},
    {"api"},
    {"studies"},
    {"demo"},
    {"cli"},
    {"__main__"},
]


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {_module_name(p): p for p in PKG.rglob("*.py")}


def _resolve(name: str) -> str:
    """The module a dotted name is, or the nearest enclosing module (`pkg.mod.func` -> `pkg.mod`)."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name


def imports_of(module: str) -> set:
    path = MODULES[module]
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found |= {_resolve(a.name) for a in node.names if a.name.startswith("bgbench")}
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            elif node.module and node.module.startswith("bgbench"):
                target = node.module
            else:
                continue
            found |= {_resolve(f"{target}.{a.name}") for a in node.names}
    return {m for m in found if m and m != module}


def layer(module: str) -> int:
    top = module.split(".")[1] if "." in module else "__init__"
    return next(k for k, names in enumerate(LAYERS) if top in names)


def test_the_scan_reads_imports():
    assert "bgbench.measures.registry" in imports_of("bgbench.cli.probe")
    assert "bgbench.drawing.figures" in imports_of("bgbench.reporting.context")


def test_every_module_has_a_layer():
    assert [m for m in MODULES if m != "bgbench" and not any(
        (m.split(".")[1] in names) for names in LAYERS)] == []


def test_no_import_climbs():
    climbs = [f"{m} -> {i}" for m in MODULES if m != "bgbench" for i in imports_of(m)
              if i != "bgbench" and layer(i) > layer(m)]
    assert climbs == []


def test_no_circle():
    graph = {m: imports_of(m) - {"bgbench"} for m in MODULES if m != "bgbench"}
    state, cycles = {}, []

    def visit(m, stack):
        state[m] = "open"
        for n in sorted(graph.get(m, ())):
            if state.get(n) == "open":
                cycles.append(stack[stack.index(n):] + [n])
            elif n not in state:
                visit(n, stack + [n])
        state[m] = "done"
    for m in sorted(graph):
        if m not in state:
            visit(m, [m])
    assert cycles == []


def _measure_folders() -> set:
    """The folders under measures/ that hold a registered measure (its package), by name."""
    from bgbench.measures.registry import list_measures
    return {m.package.split(".")[2] for m in list_measures() if m.package.count(".") >= 2}


def test_no_measure_imports_another_measure():
    """No module under measures/ imports a measure's folder other than its own: what two measures
    share lives in a shared module (measures/common/, the modules at the top of measures/, or a layer
    below), so a measure is read, changed or removed alone. The shared modules import no measure."""
    folders = _measure_folders()
    assert {"eval", "noise", "ablate", "groups"} <= folders  # the scan knows the measures

    def folder(module: str):
        parts = module.split(".")
        return parts[2] if len(parts) > 2 and parts[1] == "measures" and parts[2] in folders else None
    crossings = [f"{m} -> {i}" for m in MODULES if m.startswith("bgbench.measures.") for i in imports_of(m)
                 if folder(i) is not None and folder(i) != folder(m)]
    assert crossings == []


def test_measures_read_neither_the_readers_nor_the_drawing():
    """A measure is handed --data's layout (`runs.run_measure` reads the path as the measure's
    `reads` declares) and draws its section with what the report's context hands it, so no module
    under measures/ imports the dispatch over every release's reader (`data.resolve`), the report or
    its drawing."""
    banned = ("bgbench.data.resolve", "bgbench.drawing", "bgbench.reporting")
    found = [f"{m} -> {i}" for m in MODULES if m.startswith("bgbench.measures") for i in imports_of(m)
             if i.startswith(banned)]
    assert found == []
