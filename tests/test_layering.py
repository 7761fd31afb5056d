"""The package's layering, read from its source: no import cycle among its modules, no
format importing another, and none of pi's field names as a string constant outside formats/.
"""

from __future__ import annotations

import ast
from pathlib import Path

import gitclaw_compress

PACKAGE = Path(gitclaw_compress.__file__).parent
FORMATS = "gitclaw_compress.formats"

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


def imports(name: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The package modules `name` imports, at its top or inside functions."""
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                module = ".".join([*base, *([node.module] if node.module else [])])
            else:
                module = node.module or ""
            for alias in node.names:
                child = f"{module}.{alias.name}"
                found.add(child if child in known else module)
    return {module for module in found if module in known and module != name}


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


def format_of(module: str) -> str | None:
    """The format a module of formats/ belongs to ("pi" for pi.py and pi_*.py); None for the
    registry and the shared base."""
    if not module.startswith(f"{FORMATS}."):
        return None
    leaf = module.split(".")[2]
    return None if leaf == "base" else leaf.split("_")[0]


def test_the_checks_see_a_cycle_and_the_package() -> None:
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    graph = import_graph()
    assert f"{FORMATS}.base" in graph[f"{FORMATS}.pi"]  # function-local imports count too
    assert f"{FORMATS}.pi" in graph[FORMATS]


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
    assert pi_literals(PACKAGE / "formats" / "pi.py"), "the list names pi's fields"
    found = {
        name: literals
        for name, path in modules().items()
        if not name.startswith(FORMATS)
        if (literals := pi_literals(path))
    }
    assert found == {}
