"""The package's layering, read from its source: the layers in order and no import running
up, no import cycle among its modules, each agent one set of the same parts and none importing
another, what the agents share below them, and none of pi's field names as a string constant
outside formats/.
"""

from __future__ import annotations

import ast
from pathlib import Path

import gitclaw_compress

PACKAGE = Path(gitclaw_compress.__file__).parent
FORMATS = "gitclaw_compress.formats"
# Inside formats/, lowest first: what the agents' parts share (formats/shared/), the interface
# (formats/base.py), the agent packages, the registry (formats/__init__.py). Every other
# folder of formats/ is an agent.
SHARED = f"{FORMATS}.shared"
INTERFACE = f"{FORMATS}.base"
NOT_AGENTS = frozenset({"shared", "base"})

# The layers, lowest first, by the package's top-level names ("" is the package itself): a
# module imports its own layer and those below it, never one above. Tokens count messages and
# read no setting, pick no format; the core is handed its format and reads a session's
# context with those counts; config declares options and reaches neither into tokens nor
# into the store; secrets and summary report through what the use cases hand them.
LAYERS: tuple[frozenset[str], ...] = (
    frozenset(
        {"", "errors", "settings", "model", "memory", "interrupts", "progress", "special_files"}
        | {"model_limits", "preserved_thinking", "units"}
    ),  # leaves
    frozenset({"config"}),
    frozenset({"tokens"}),
    frozenset({"core"}),
    frozenset({"formats"}),
    frozenset({"store"}),
    frozenset({"secrets", "summary"}),
    frozenset({"ops"}),
    frozenset({"commands", "cli", "action", "entry", "__main__"}),
)

# Layers that import neither way though the order would allow one: counting tokens reads
# no setting, and the core is handed its estimator (core/estimator.py says what it needs).
APART: frozenset[tuple[str, str]] = frozenset({("tokens", "config"), ("core", "tokens")})

# Imports that still run up (importer, imported): each one removed makes this list shorter,
# and the check fails on any arrow up not listed and on any listed that is gone.
KNOWN_UPWARD: frozenset[tuple[str, str]] = frozenset()

# Parts an agent still keeps inside another of its parts.
KNOWN_MISSING_PARTS: dict[str, frozenset[str]] = {}

# Names only pi's files use (entry types, message roles, fields, content block types). Words
# every format or provider API shares ("message", "role", "content", "id") are left out.
PI_FIELDS = frozenset(
    {
        "parentId",
        "firstKeptEntryId",
        "tokensBefore",
        "readFiles",
        "modifiedFiles",
        "model_change",
        "thinking_level_change",
        "branch_summary",
        "custom_message",
        "session_info",
        "modelId",
        "customType",
        "toolCall",
        "toolResult",
        "toolCallId",
        "toolName",
        "isError",
        "stopReason",
        "errorMessage",
        "bashExecution",
        "excludeFromContext",
        "compactionSummary",
        "branchSummary",
        "thinkingSignature",
        "textSignature",
        "partialJson",
        "mimeType",
        "cacheRead",
        "cacheWrite",
        "totalTokens",
        "gitclawSummary",
    }
)


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, Path]:
    return {module_name(path): path for path in sorted(PACKAGE.rglob("*.py"))}


def import_lines(name: str, path: Path, known: dict[str, Path]) -> list[tuple[int, str]]:
    """(line, package module) for each import in `name`, at its top, inside functions or
    under TYPE_CHECKING (a type is a dependency too)."""
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join([*base, *([node.module] if node.module else [])])
            else:
                module = node.module or ""
            for alias in node.names:
                child = f"{module}.{alias.name}"
                found.append((node.lineno, child if child in known else module))
    return sorted((line, m) for line, m in set(found) if m in known and m != name)


def imports(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The package modules `name` imports, at its top or inside functions."""
    return {module for _, module in import_lines(name, path, known)}


def import_graph() -> dict[str, set[str]]:
    known = modules()
    return {name: imports(name, path, known) for name, path in known.items()}


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for child in sorted(graph[node]):
            if child not in index:
                visit(child)
                low[node] = min(low[node], low[child])
            elif child in on_stack:
                low[node] = min(low[node], index[child])
        if low[node] == index[node]:
            component = []
            while True:
                child = stack.pop()
                on_stack.discard(child)
                component.append(child)
                if child == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def top(module: str) -> str:
    """A package module's top-level name: "core" for gitclaw_compress.core.lines."""
    return module.split(".")[1] if "." in module else ""


def layer(module: str) -> int:
    """The index in LAYERS of a package module's top-level name."""
    return next(i for i, names in enumerate(LAYERS) if top(module) in names)


def upward_imports() -> list[tuple[str, int, str]]:
    """(importer's path, line, imported module) for each import that runs up a layer."""
    known = modules()
    return [
        (str(path.relative_to(PACKAGE.parent)), line, imported)
        for name, path in known.items()
        for line, imported in import_lines(name, path, known)
        if layer(imported) > layer(name) or (top(name), top(imported)) in APART
    ]


def format_of(module: str) -> str | None:
    """The agent a module of formats/ belongs to ("pi" for formats/pi/ and its modules); None
    for the registry, the interface and formats/shared/."""
    parts = module.split(".")
    if len(parts) < 3 or module.split(".")[:2] != FORMATS.split("."):
        return None
    return None if parts[2] in NOT_AGENTS else parts[2]


def part_of(module: str) -> str | None:
    """The part of its agent a module holds: "rules" for formats/pi/rules.py; None for the
    agent package's __init__ and for what is no agent's."""
    parts = module.split(".")
    return parts[3] if format_of(module) is not None and len(parts) > 3 else None


def test_the_checks_see_a_cycle_and_the_package() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    graph = import_graph()
    pi = "gitclaw_compress.formats.pi.rules"  # pi's rules module
    assert INTERFACE in graph[pi]
    assert f"{SHARED}.rules" in graph[pi]
    assert pi in graph[FORMATS]  # function-local imports count too
    assert format_of(pi) == "pi" and part_of(pi) == "rules"
    assert format_of(f"{SHARED}.home") is None and format_of(INTERFACE) is None


def test_every_top_level_module_has_a_layer() -> None:
    tops = {top(name) for name in modules()}
    placed = set().union(*LAYERS)
    assert tops - placed == set(), "place a new module in LAYERS"
    assert layer("gitclaw_compress.core.lines") < layer("gitclaw_compress.formats.base")


def test_no_import_runs_up_a_layer() -> None:
    found = upward_imports()
    pairs = {(path, imported) for path, _, imported in found}
    new = sorted(
        f"{path}:{line} -> {imported}"
        for path, line, imported in found
        if (path, imported) not in KNOWN_UPWARD
    )
    gone = sorted(KNOWN_UPWARD - pairs)
    assert new == [], "imports that run up a layer"
    assert gone == [], "fixed: take them out of KNOWN_UPWARD"


def test_the_core_imports_neither_formats_nor_tokens() -> None:
    """The core is handed its format and its estimator by its caller."""
    graph = import_graph()
    reached = {
        (module, imported)
        for module, imported_modules in graph.items()
        if top(module) == "core"
        for imported in imported_modules
        if top(imported) in {"formats", "tokens"}
    }
    assert reached == set()
    assert ("core", "tokens") in APART  # and the layer check names any that comes back
    assert "gitclaw_compress.core.estimator" in graph["gitclaw_compress.core.context"]


def test_no_import_cycle_among_the_package_modules() -> None:
    assert cycles(import_graph()) == []


def test_no_format_imports_another() -> None:
    wrong = [
        (module, imported)
        for module, imported_modules in import_graph().items()
        for imported in imported_modules
        if format_of(module) is not None
        and format_of(imported) is not None
        and format_of(imported) != format_of(module)
    ]
    assert wrong == []


def agent_parts() -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for module in modules():
        agent, part = format_of(module), part_of(module)
        if agent is not None and part is not None:
            found.setdefault(agent, set()).add(part)
    return found


def test_every_agent_has_the_same_parts() -> None:
    parts = agent_parts()
    assert {"pi", "claude", "codex", "copilot"} <= set(parts)
    every = set().union(*parts.values())
    missing = {agent: frozenset(every - own) for agent, own in parts.items() if every - own}
    assert missing == KNOWN_MISSING_PARTS


def test_every_agent_is_one_package() -> None:
    flat = sorted(p.name for p in (PACKAGE / "formats").glob("*.py"))
    assert flat == ["__init__.py", "base.py"]
    folders = {p.parent.name for p in (PACKAGE / "formats").glob("*/__init__.py")}
    assert folders - NOT_AGENTS == set(agent_parts())
    for agent in agent_parts():
        assert (PACKAGE / "formats" / agent / "rules.py").is_file()


def test_what_the_agents_share_sits_below_them() -> None:
    """formats/shared/ imports no agent, nor the interface or the registry above it; the
    interface imports no agent nor the registry."""
    graph = import_graph()
    shared = [module for module in graph if module.startswith(SHARED)]
    assert f"{SHARED}.rules" in shared and f"{SHARED}.home" in shared
    wrong = [
        (module, imported)
        for module in [*shared, INTERFACE]
        for imported in graph[module]
        if format_of(imported) is not None
        or imported == FORMATS
        or (module in shared and imported == INTERFACE)
    ]
    assert wrong == []
    assert f"{SHARED}.hooks" in graph[INTERFACE]  # the check reads the interface's imports


def test_layers_import_only_the_interface_of_the_formats() -> None:
    wrong = [
        (module, imported)
        for module, imported_modules in import_graph().items()
        if not module.startswith(FORMATS)
        for imported in imported_modules
        if format_of(imported) is not None
    ]
    assert wrong == []


def _docstrings(tree: ast.Module) -> set[int]:
    """ids of the string constants that are docstrings."""
    found: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                found.add(id(body[0].value))
    return found


def pi_literals(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text())
    skip = _docstrings(tree)
    return [
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant)
        and isinstance(node.value, str)
        and id(node) not in skip
        and node.value in PI_FIELDS
    ]


def test_no_pi_field_name_in_code_outside_formats() -> None:
    assert pi_literals(PACKAGE / "formats/pi/rules.py"), "the list names pi's fields"
    found = {
        name: literals
        for name, path in modules().items()
        if not name.startswith(FORMATS)
        if (literals := pi_literals(path))
    }
    assert found == {}
