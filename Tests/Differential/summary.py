"""One-line summaries of the differential tests, shown at the end of a run."""

lines: list[str] = []


def report(line: str) -> None:
    """Records a summary line and prints it at once (visible under `pytest -s`;
    without -s, conftest's terminal-summary hook shows it at the end)."""
    lines.append(line)
    print("\n" + line, flush=True)
