"""The layout holds the architecture: each floor imports only the floors under it.

    foundation   errors, clock, fsync, settings, settings_env, texts (and the package's __init__)
    eventlog     the log                          -> foundation
    embedding    local embedders                  -> eventlog, foundation
    projections  folds over the log               -> embedding, eventlog, foundation
    memory       the domain                       -> projections, embedding, eventlog, foundation
    web          what the HTTP shells share       -> memory, embedding, eventlog, foundation
    shells       api, proxy, replay, portability, audit, mcp_server, runtime, cli, keys_cli,
                 reembed_cli, erase_cli, relay_cli, verbs_cli, import_cli, migrate_cli, reach,
                 progress, cli_options, serving, banner, views, ui
                 -> memory, embedding, eventlog, web, client, foundation, each other; never a
                 projection
    client       the REST API's Python client     -> foundation only: it speaks HTTP, nothing else

Every import in ``src/`` is read with ``ast`` (also those inside functions and under
``TYPE_CHECKING``), resolved to the module it names, and held against these rules; the parts
must also import each other without a loop.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parent.parent / "src"

FOUNDATION = {"errors", "clock", "fsync", "settings", "settings_env", "texts", "__init__"}
SHELLS = {
    "api",
    "proxy",
    "replay",
    "portability",
    "audit",
    "mcp_server",
    "runtime",
    "cli",
    "keys_cli",
    "reembed_cli",
    "erase_cli",
    "cli_options",
    "serving",
    "views",
    "ui",
    "banner",
    "relay_cli",
    "verbs_cli",
    "import_cli",
    "migrate_cli",
    "reach",
    "progress",
}
BELOW: dict[str, set[str]] = {
    "foundation": set(),
    "eventlog": {"foundation"},
    "embedding": {"eventlog", "foundation"},
    "projections": {"embedding", "eventlog", "foundation"},
    "memory": {"projections", "embedding", "eventlog", "foundation"},
    "web": {"memory", "embedding", "eventlog", "foundation"},
    "shells": {"memory", "embedding", "eventlog", "web", "client", "foundation"},
    "client": {"foundation"},
}


def part_of(module: str) -> str:
    """The floor of a module named relative to the package (``memory.core``, ``cli``)."""
    top = module.split(".")[0]
    if top in FOUNDATION:
        return "foundation"
    if top in SHELLS:
        return "shells"
    if top in BELOW:
        return top
    raise AssertionError(f"{module!r} is in no part of the layout: add it to tests/test_layout.py")


def imports_of(path: Path, root: Path) -> Iterator[tuple[str, int]]:
    """Every module of the package that ``path`` imports (relative to the package), with
    the line that imports it."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    package = parts[:-1]
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level == 0:
                name = node.module or ""
                if name == "mnemolog" or name.startswith("mnemolog."):
                    yield from _named(name.split(".")[1:], node, root)
                continue
            base = package[: len(package) - (node.level - 1)]
            yield from _named([*base, *(node.module.split(".") if node.module else [])], node, root)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("mnemolog."):
                    yield ".".join(alias.name.split(".")[1:]), node.lineno


def _named(target: list[str], node: ast.ImportFrom, root: Path) -> Iterator[tuple[str, int]]:
    if target:
        yield ".".join(target), node.lineno
        return
    # ``from .. import x``: x is a module of the package, or a name its __init__ defines.
    for alias in node.names:
        is_module = (root / f"{alias.name}.py").exists() or (root / alias.name).is_dir()
        yield (alias.name if is_module else "__init__"), node.lineno


def module_name(path: Path, root: Path) -> str:
    relative = path.relative_to(root).with_suffix("")
    parts = [p for p in relative.parts if p != "__init__"] or ["__init__"]
    return ".".join(parts)


def broken_rules(root: Path) -> list[str]:
    """Each import under ``root`` that a layout rule forbids, as ``file:line: a -> b``."""
    found: list[str] = []
    for path in sorted(root.rglob("*.py")):
        source = module_name(path, root)
        floor = part_of(source)
        for target, line in imports_of(path, root):
            to = part_of(target)
            if to != floor and to not in BELOW[floor]:
                where = path.relative_to(root)
                found.append(f"{where}:{line}: {floor} ({source}) -> {to} ({target})")
    return found


def part_loops(root: Path) -> list[list[str]]:
    """Loops among the packages and root modules (a shell importing another shell is allowed,
    but not both ways round)."""
    edges: dict[str, set[str]] = {}
    for path in root.rglob("*.py"):
        source = module_name(path, root).split(".")[0]
        for target, _ in imports_of(path, root):
            top = target.split(".")[0]
            if top != source and top != "__init__":
                edges.setdefault(source, set()).add(top)
    loops: list[list[str]] = []
    for start in sorted(edges):
        stack = [(start, [start])]
        while stack:
            node, trail = stack.pop()
            for nxt in sorted(edges.get(node, ())):
                if nxt == start:
                    loops.append([*trail, start])
                elif nxt not in trail and nxt > start:
                    stack.append((nxt, [*trail, nxt]))
    return loops


def module_loops(root: Path) -> list[list[str]]:
    """Groups of modules that import each other in a loop (a package's face counts as the
    module ``package``), found with Tarjan's algorithm."""
    known = {module_name(path, root) for path in root.rglob("*.py")}
    edges: dict[str, set[str]] = {name: set() for name in known}
    for path in root.rglob("*.py"):
        source = module_name(path, root)
        for target, _ in imports_of(path, root):
            while target not in known and "." in target:
                target = target.rpartition(".")[0]  # a name imported from a module
            if target in known and target != source:
                edges[source].add(target)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    loops: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for nxt in edges[node]:
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            group = []
            while True:
                member = stack.pop()
                group.append(member)
                if member == node:
                    break
            if len(group) > 1:
                loops.append(sorted(group))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return loops


def test_no_import_breaks_the_layout() -> None:
    assert broken_rules(SRC) == []


def test_the_parts_import_each_other_without_a_loop() -> None:
    assert part_loops(SRC) == []


def test_no_modules_import_each_other_in_a_loop() -> None:
    assert module_loops(SRC) == []


def test_every_package_is_in_the_layout() -> None:
    for path in SRC.rglob("*.py"):
        part_of(module_name(path, SRC))  # raises for a module of no part


@pytest.mark.parametrize(
    ("where", "line", "expected"),
    [
        # A shell reaching a projection adapter past the domain.
        (
            "api/x.py",
            "from ..projections.memories import MemoryProjection",
            "shells (api.x) -> projections",
        ),
        # A projection importing the domain above it.
        ("projections/x.py", "from ..memory import Core", "projections (projections.x) -> memory"),
        # The log importing anything above the foundation, also inside a function.
        (
            "eventlog/x.py",
            "def f():\n    from ..projections import runner",
            "eventlog (eventlog.x) -> projections",
        ),
        # The domain importing a shell, absolutely.
        ("memory/x.py", "from mnemolog.proxy.turn import Turn", "memory (memory.x) -> shells"),
        ("memory/x.py", "from .. import api", "memory (memory.x) -> shells"),
    ],
)
def test_a_forbidden_import_is_found(tmp_path: Path, where: str, line: str, expected: str) -> None:
    path = tmp_path / where
    path.parent.mkdir(parents=True)
    path.write_text(line + "\n", encoding="utf-8")
    for package in ("memory", "api"):
        (tmp_path / package).mkdir(exist_ok=True)
    (tmp_path / "memory" / "ok.py").write_text("from ..projections import runner\n")
    found = broken_rules(tmp_path)
    assert len(found) == 1 and expected in found[0]


def test_a_loop_between_parts_is_found(tmp_path: Path) -> None:
    for package, line in (("api", "from ..proxy.m import x"), ("proxy", "from ..api.m import y")):
        (tmp_path / package).mkdir()
        (tmp_path / package / "m.py").write_text(line + "\n", encoding="utf-8")
    assert part_loops(tmp_path) == [["api", "proxy", "api"]]
    assert module_loops(tmp_path) == [["api.m", "proxy.m"]]


# The services ``memory.core.Core`` (and a replay's ``memory.world.World``) compose: each gets
# its ports as constructor arguments, so what a service holds is read where it is built.
COMPOSED = {
    "agents",
    "chains",
    "combiner",
    "detector",
    "erasure",
    "importer",
    "ingest",
    "keyed",
    "quarantine",
    "recall",
    "rollbacks",
    "splits",
    "trust",
    "turns",
    "usage",
    "writes",
}


def patched_after_construction(root: Path) -> list[str]:
    """Each assignment to an attribute of a composed service (``core.recall.reranker = ...``)
    under ``root``, as ``file:line: target``."""
    found: list[str] = []
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Assign):
                targets = node.targets
            elif isinstance(node, ast.AugAssign | ast.AnnAssign):
                targets = [node.target]
            else:
                continue
            for target in targets:
                owner = target.value if isinstance(target, ast.Attribute) else None
                if isinstance(owner, ast.Attribute) and owner.attr in COMPOSED:
                    where = path.relative_to(root)
                    found.append(f"{where}:{node.lineno}: {ast.unparse(target)}")
    return found


def test_no_composed_service_is_patched_after_construction() -> None:
    assert patched_after_construction(SRC) == []


def test_a_patch_after_construction_is_found(tmp_path: Path) -> None:
    (tmp_path / "x.py").write_text(
        "runtime.core.writes.arbiter = arbiter\nself.recall = Recall()\nx.y = 1\n"
    )
    assert patched_after_construction(tmp_path) == ["x.py:1: runtime.core.writes.arbiter"]


# The read models a shell reaches only through ``core.reads`` (``memory/reads.py``), where the
# read rules (the caller's reach, settling before traces, quarantine) are applied once.
READ_MODELS = {
    "memories",
    "documents",
    "traces",
    "vectors",
    "fulltext",
    "context_fulltext",
    "document_vectors",
    "document_fulltext",
    "snapshots",
}


def reads_past_the_facade(root: Path) -> list[str]:
    """Each place a shell under ``root`` reads a read model of the core directly."""
    found: list[str] = []
    for path in sorted(root.rglob("*.py")):
        where = path.relative_to(root)
        if part_of(module_name(path, root)) != "shells":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        for node in ast.walk(tree):
            if not isinstance(node, ast.Attribute) or node.attr not in READ_MODELS:
                continue
            owner = node.value
            if (isinstance(owner, ast.Name) and owner.id == "core") or (
                isinstance(owner, ast.Attribute) and owner.attr in ("core", "_core")
            ):
                found.append(f"{where}:{node.lineno}: {ast.unparse(node)}")
    return found


def test_shells_read_only_through_the_facade() -> None:
    assert reads_past_the_facade(SRC) == []


def test_a_read_past_the_facade_is_found(tmp_path: Path) -> None:
    (tmp_path / "api").mkdir()
    (tmp_path / "api" / "x.py").write_text(
        "rows = self._core.memories.latest(m)\nrows = core.reads.latest(m, c)\n"
    )
    assert reads_past_the_facade(tmp_path) == ["api/x.py:1: self._core.memories"]


def test_the_domain_face_hands_out_no_projection() -> None:
    """The shells get row types from ``memory``'s face, never a read model to query past the
    read rules (``memory/reads.py``)."""
    import mnemolog.memory as face

    for name in face.__all__:
        value = getattr(face, name)
        module = getattr(value, "__module__", "") or ""
        if module.startswith("mnemolog.projections."):
            assert not hasattr(value, "apply"), f"memory exports the projection {name}"
