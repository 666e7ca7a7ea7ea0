"""The README's Swift code, built and run the way a user would.

Every ```swift block of README.md is used: the one that starts with
`// swift-tools-version` is the manifest of a new package, every other one
starts with `// NAME.swift` (or `// NAME.swift (continued)`) and becomes that
file of the package's one target, in order. The manifest is used as written
but for its one `.package(url: …JourneySharing.git…)` line, which becomes
`.package(path:)` to a folder named JourneySharing that links to this
checkout, so the package identity (and every `.product(name:package:)` line)
is the one the README shows. The package is built with `swift build` and its
executable, the simulator example, must follow its trips to the end.

Run from the package root:

    python -m pytest -q Tests/Readme

The example package lives in .build-readme/ (ignored by git) so that a second
run builds incrementally. README_SWIFT sets the swift executable.
"""

from __future__ import annotations

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

    build = subprocess.run([SWIFT, "build", "--package-path", str(package)], capture_output=True, text=True,
                           timeout=1800)
    assert build.returncode == 0, "the README's code does not build:\n%s\n%s" % (
        build.stdout[-6000:], build.stderr[-4000:])
    print("\nreadme: %d swift blocks in %d files built (%s)" % (
        len(swift_blocks((ROOT / "README.md").read_text())), len(files), ", ".join(sorted(files))))

    binary = package / ".build" / "debug" / "TripFollower"
    run = subprocess.run([str(binary)], capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, "the simulator example failed (exit %d):\n%s\n%s" % (
        run.returncode, run.stdout[-3000:], run.stderr[-3000:])
    last = run.stdout.strip().splitlines()[-1] if run.stdout.strip() else ""
    match = re.fullmatch(r"followed 3 trips to the end: (\d+) updates, (\d+) errors", last)
    assert match, "unexpected last line: %r\n%s" % (last, run.stdout[-2000:])
    assert int(match.group(1)) > 0
    print("readme: the simulator example printed: %s" % last)
