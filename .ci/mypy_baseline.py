"""Type-check the package with mypy and hold its errors to the committed baseline: the
total may only go down. Errors are counted per file too, and the files whose counts
changed are printed, but only the total decides, because modules being split move errors
between files without adding any.

    python .ci/mypy_baseline.py            # check (what .ci/run does)
    python .ci/mypy_baseline.py --update   # write the current counts as the baseline
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BASELINE = ROOT / ".ci" / "mypy-baseline.json"
ERROR = re.compile(r"^(?P<file>[^:\s]+\.py):\d+: error: ")


def current() -> Counter[str]:
    """Errors per file, from mypy run as ``pyproject.toml`` configures it."""
    done = subprocess.run([sys.executable, "-m", "mypy", "--no-error-summary"], cwd=ROOT,
                          capture_output=True, text=True)
    if done.returncode not in (0, 1):  # 2: mypy itself failed (bad config, crash)
        sys.exit(f"mypy failed:\n{done.stdout}{done.stderr}")
    return Counter(match["file"] for line in done.stdout.splitlines()
                   if (match := ERROR.match(line)))


def main(argv: list[str]) -> int:
    now = current()
    if argv == ["--update"]:
        BASELINE.write_text(json.dumps({"total": now.total(), "files": dict(sorted(now.items()))},
                                       indent=1) + "\n")
        print(f"mypy baseline written: {now.total()} errors in {len(now)} files")
        return 0
    if argv:
        sys.exit(__doc__)
    baseline = json.loads(BASELINE.read_text())
    before = Counter(baseline["files"])
    for file in sorted(set(before) | set(now)):
        if before[file] != now[file]:
            print(f"  {file}: {before[file]} -> {now[file]}")
    print(f"mypy errors: {now.total()} (baseline {baseline['total']})")
    if now.total() > baseline["total"]:
        print("mypy: more errors than the baseline; fix the new ones (`python -m mypy`).")
        return 1
    if now.total() < baseline["total"]:
        print("mypy: fewer errors than the baseline; lock that in with "
              "`python .ci/mypy_baseline.py --update`.")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
