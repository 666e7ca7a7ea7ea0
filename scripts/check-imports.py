#!/usr/bin/env python3
"""Fails when a target's declared dependencies and its imports differ.

For every target of Package.swift (read through `swift package dump-package`), the package's
own modules it imports (any access level, `@testable` and `@_exported` included) must be
exactly the targets it declares, and the products it declares must each be imported
(by one of their modules). A declared edge nothing imports, or an import the manifest does
not declare (it builds only because another dependency pulls the module in), is reported
with the file and line of the import. And each C library (a system target with a pkg-config
name) is imported by one library or executable target at most: the architecture's one Swift
module per C library (tests may drive the library directly, to build hostile peers). Part of
`make format-check`, so of `make test`.

Usage: scripts/check-imports.py
"""

import json
import os
import re
import subprocess
import sys

# The modules each product dependency provides, for the products the package uses.
PRODUCT_MODULES = {
    "Logging": {"Logging"},
    "CoreMetrics": {"CoreMetrics"},
    "Metrics": {"Metrics"},
    "MetricsTestKit": {"MetricsTestKit"},
    "Tracing": {"Tracing"},
    "Instrumentation": {"Instrumentation"},
    "InMemoryTracing": {"InMemoryTracing"},
    "ServiceLifecycle": {"ServiceLifecycle"},
    "ArgumentParser": {"ArgumentParser"},
    "Prometheus": {"Prometheus"},
}

IMPORT = re.compile(
    r"^\s*(?:@\w+(?:\([^)]*\))?\s+)*(?:public\s+|package\s+|internal\s+|private\s+|fileprivate\s+)?"
    r"import\s+(?:(?:struct|class|enum|protocol|typealias|func|var|let)\s+)?([A-Za-z_][A-Za-z0-9_]*)"
)


def main() -> int:
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    manifest = json.loads(
        subprocess.run(
            ["swift", "package", "dump-package"], cwd=root, check=True, capture_output=True, text=True
        ).stdout
    )
    targets = {t["name"]: t for t in manifest["targets"]}
    problems = []
    c_library_users = {name: [] for name, t in targets.items() if t["type"] == "system" and t.get("pkgConfig")}
    for name, target in targets.items():
        if target["type"] in ("system", "binary", "plugin"):
            continue
        default = "Tests" if target["type"] == "test" else "Sources"
        path = os.path.join(root, target.get("path") or os.path.join(default, name))
        declared_targets, declared_products = set(), {}
        for dependency in target["dependencies"]:
            if "byName" in dependency:
                declared_targets.add(dependency["byName"][0])
            elif "target" in dependency:
                declared_targets.add(dependency["target"][0])
            elif "product" in dependency:
                product = dependency["product"][0]
                declared_products[product] = PRODUCT_MODULES.get(product, {product})
        imported = {}  # own module -> first "file:line"
        imported_other = set()
        for directory, _, files in os.walk(path):
            for file in sorted(files):
                if not file.endswith(".swift"):
                    continue
                full = os.path.join(directory, file)
                with open(full, encoding="utf-8") as source:
                    for number, line in enumerate(source, 1):
                        match = IMPORT.match(line)
                        if not match:
                            continue
                        module = match.group(1)
                        if module in targets and module != name:
                            imported.setdefault(module, f"{os.path.relpath(full, root)}:{number}")
                        else:
                            imported_other.add(module)
        if target["type"] != "test":
            for module in imported:
                if module in c_library_users:
                    c_library_users[module].append(name)
        for module in sorted(set(imported) - declared_targets):
            problems.append(f"{name}: imports {module} ({imported[module]}) without declaring it")
        for module in sorted(declared_targets - set(imported)):
            problems.append(f"{name}: declares {module} but no file imports it")
        for product, modules in sorted(declared_products.items()):
            if not modules & imported_other:
                problems.append(f"{name}: declares product {product} but no file imports it")
    for library, users in sorted(c_library_users.items()):
        if len(users) > 1:
            problems.append(f"{library} is imported by {len(users)} modules ({', '.join(sorted(users))}), not one")
    for problem in problems:
        print(f"check-imports: {problem}", file=sys.stderr)
    if problems:
        print(f"check-imports: {len(problems)} mismatch(es) between Package.swift and the imports", file=sys.stderr)
        return 1
    print(f"check-imports: the declared dependencies of {len(targets)} targets equal their imports")
    return 0


if __name__ == "__main__":
    sys.exit(main())
