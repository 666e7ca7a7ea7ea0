"""The README's Swift code, built and run the way a user would.

Every ```swift block of README.md is used: the one that starts with
`// swift-tools-version` is the manifest of a new package, every other one
starts with `// NAME.swift` (or `// NAME.swift (continued)`) and becomes that
file of the package's one target, in order. The manifest is used as written
but for its one `.package(url: …JourneySharing.git…)` line, which becomes
`.package(path:)` to a folder named JourneySharing that links to this
checkout, so the package identity (and every `.product(name:package:)` line)
is the one the README shows. Its executable, the simulator example, must
follow its trips to the end.

Two ways to build it (README_BUILD):

- `package`: `swift build` of the example package, exactly as a user would.
  That compiles the whole library and its dependencies a second time (minutes
  on two cores), so CI does not use it; run it before a release.
- `modules` (the default, what `make test` runs): the example package's
  manifest is loaded and its package graph resolved (`swift package
  show-dependencies`: an unknown product, package or version fails here),
  then its sources are compiled with swiftc against the modules of this
  checkout's debug build (`swift build` first) and linked with its objects.
  The sources are compiled as a user's: Swift 6 mode, no `-package-name`, so
  nothing but the public API is visible, and none of the package's upcoming
  features.

Run from the package root:

    python -m pytest -q Tests/Readme

The example package lives in .build-readme/ (ignored by git) so that a second
run builds incrementally. README_SWIFT sets the swift executable.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent.parent
WORK = ROOT / ".build-readme"
SWIFT = os.environ.get("README_SWIFT", "swift")
URL_LINE = re.compile(r'\.package\(url: "https://github\.com/[^"]+/JourneySharing\.git", from: "([0-9.]+)"\)')
FILE_HEADER = re.compile(r"^// ([A-Za-z0-9_+-]+\.swift)( \(continued\))?$")


def swift_blocks(text: str) -> list[str]:
    return re.findall(r"^```swift\n(.*?)^```$", text, flags=re.M | re.S)


def assemble() -> tuple[str, dict[str, str], str]:
    """(manifest, files, the version the manifest asks for) from README.md."""
    blocks = swift_blocks((ROOT / "README.md").read_text())
    assert blocks, "README.md has no swift blocks"
    manifests = [b for b in blocks if b.startswith("// swift-tools-version")]
    assert len(manifests) == 1, "expected exactly one manifest block, found %d" % len(manifests)
    manifest = manifests[0]
    urls = URL_LINE.findall(manifest)
    assert len(urls) == 1, "the manifest must depend on JourneySharing by URL exactly once:\n" + manifest
    files: dict[str, str] = {}
    for block in blocks:
        if block is manifest:
            continue
        first = block.split("\n", 1)[0]
        match = FILE_HEADER.match(first)
        assert match, "a swift block of README.md does not start with `// NAME.swift`:\n" + block[:200]
        name, continued = match.group(1), match.group(2)
        if continued:
            assert name in files, "%s (continued) comes before %s" % (name, name)
            files[name] += block
        else:
            assert name not in files, "%s appears twice without (continued)" % name
            files[name] = block
    assert "main.swift" in files, "no main.swift block: nothing to run"
    return manifest, files, urls[0]


def run_checked(cmd: list[str], what: str, timeout: float, **kwargs) -> subprocess.CompletedProcess:
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, **kwargs)
    assert result.returncode == 0, "%s failed (exit %d): %s\n%s\n%s" % (
        what, result.returncode, " ".join(cmd)[:300], result.stdout[-6000:], result.stderr[-4000:])
    return result


def llbuild_args(manifest: Path, command: str) -> list[str]:
    """The `args` of one command of SwiftPM's llbuild manifest (.build/debug.yaml)."""
    lines = manifest.read_text().splitlines()
    start = lines.index('  "%s":' % command)
    for line in lines[start + 1:]:
        if not line.startswith("    "):
            break
        if line.startswith("    args: "):
            return json.loads(line[len("    args: "):])
    raise AssertionError("no args for %s in %s" % (command, manifest))


def build_against_this_checkout(package: Path, sources: list[Path]) -> Path:
    """The example's manifest resolved, its sources compiled against the debug build's modules."""
    run_checked([SWIFT, "package", "--package-path", str(package), "show-dependencies"],
                "resolving the README's manifest", timeout=600)
    bin_path = Path(run_checked([SWIFT, "build", "--show-bin-path"], "swift build --show-bin-path", timeout=300,
                                cwd=ROOT).stdout.strip())
    triple = bin_path.parent.name
    manifest = bin_path.parent.parent / ("debug.yaml" if bin_path.name == "debug" else bin_path.name + ".yaml")
    linked = bin_path / "tripwatch"
    assert linked.exists() and manifest.exists(), "build this checkout first (swift build): no %s" % linked
    # The module search paths, C module maps and target of the executable that imports what the README does,
    # and the libraries and objects it links, but for its own.
    compile_args = llbuild_args(manifest, "C.tripwatch-%s-debug.module" % triple)
    link_args = llbuild_args(manifest, "C.tripwatch-%s-debug.exe" % triple)
    flags: list[str] = []
    index = 0
    while index < len(compile_args):
        arg = compile_args[index]
        if arg in ("-I", "-target") or (arg == "-Xcc" and not compile_args[index + 1].startswith("-fPIC")):
            flags += compile_args[index:index + 2]
            index += 2
            continue
        if arg in ("-swift-version",):
            flags += compile_args[index:index + 2]
            index += 2
            continue
        if arg in ("-Onone", "-g", "-DSWIFT_PACKAGE", "-DDEBUG"):
            flags.append(arg)
        index += 1
    assert "-package-name" not in flags and not any(f.startswith("-enable-upcoming") for f in flags), flags
    libraries = [a for a in link_args if a.startswith(("-L", "-l")) and a not in ("-L",)]
    file_list = next(a[1:] for a in link_args if a.startswith("@"))
    objects = [line for line in Path(file_list).read_text().splitlines()
               if line and "/tripwatch.build/" not in line]
    assert objects, "no objects in %s" % file_list
    work = package / ".build-modules"
    work.mkdir(exist_ok=True)
    (work / "objects").write_text("\n".join(objects) + "\n")
    binary = work / "TripFollower"
    run_checked([SWIFT + "c", "-module-name", "TripFollower", "-emit-executable", "-o", str(binary),
                 *map(str, sources), *flags, "-module-cache-path", str(work / "ModuleCache"),
                 *libraries, "@%s" % (work / "objects")],
                "compiling the README's code against this checkout", timeout=900)
    return binary


def test_every_swift_block_builds_and_the_simulator_example_runs_to_the_end():
    manifest, files, version = assemble()
    release = re.search(r'static let version = "([0-9.]+)"', (ROOT / "Sources/Primitives/Release.swift").read_text())
    assert release and release.group(1) == version, "the README installs %s, the package is %s" % (
        version, release.group(1) if release else "?")

    WORK.mkdir(exist_ok=True)
    link = WORK / "JourneySharing"
    if link.is_symlink() or link.exists():
        if not (link.is_symlink() and Path(os.readlink(link)) == ROOT):
            link.unlink()
    if not link.exists():
        link.symlink_to(ROOT, target_is_directory=True)
    package = WORK / "example"
    sources = package / "Sources" / "TripFollower"
    if sources.exists():
        shutil.rmtree(sources)
    sources.mkdir(parents=True)
    (package / "Package.swift").write_text(URL_LINE.sub('.package(path: "%s")' % link, manifest))
    for name, text in files.items():
        (sources / name).write_text(text)

    mode = os.environ.get("README_BUILD", "modules")
    assert mode in ("modules", "package"), "README_BUILD is modules or package, not %r" % mode
    if mode == "package":
        run_checked([SWIFT, "build", "--package-path", str(package)], "swift build of the README's package",
                    timeout=1800)
        binary = package / ".build" / "debug" / "TripFollower"
    else:
        binary = build_against_this_checkout(package, [sources / name for name in files])
    print("\nreadme: %d swift blocks in %d files built (%s; README_BUILD=%s)" % (
        len(swift_blocks((ROOT / "README.md").read_text())), len(files), ", ".join(sorted(files)), mode))

    run = subprocess.run([str(binary)], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, "the simulator example failed (exit %d):\n%s\n%s" % (
        run.returncode, run.stdout[-3000:], run.stderr[-3000:])
    last = run.stdout.strip().splitlines()[-1] if run.stdout.strip() else ""
    match = re.fullmatch(r"followed 3 trips to the end: (\d+) updates, (\d+) errors", last)
    assert match, "unexpected last line: %r\n%s" % (last, run.stdout[-2000:])
    assert int(match.group(1)) > 0
    print("readme: the simulator example printed: %s" % last)
