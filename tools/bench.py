"""Run the benchmarks (`make bench`) and write JSON results under .bench/.

Each package may ship `benchmarks/bench_*.py`; each script is run in a fresh process with
`--out <json>` and must write its own result file. `--peers` runs `benchmarks/peers_*.py` instead,
which install peer frameworks into throwaway venvs. The combined report is .bench/results.json.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main() -> int:
    peers = "--peers" in sys.argv[1:]
    pattern = "peers_*.py" if peers else "bench_*.py"
    scripts = sorted(ROOT.glob(f"packages/*/benchmarks/{pattern}"))
    out_dir = ROOT / ".bench"
    out_dir.mkdir(exist_ok=True)
    combined: dict[str, object] = {}
    failed: list[str] = []
    for script in scripts:
        package = script.parent.parent.name
        out = out_dir / f"{package}.{script.stem}.json"
        print(f"=== {package}/{script.name}", flush=True)
        if subprocess.call([sys.executable, str(script), "--out", str(out)], cwd=ROOT):
            failed.append(str(script.relative_to(ROOT)))
            continue
        combined[f"{package}.{script.stem}"] = json.loads(out.read_text("utf-8"))
    name = "peers.json" if peers else "results.json"
    (out_dir / name).write_text(json.dumps(combined, indent=2) + "\n", "utf-8")
    print(f"wrote {out_dir / name} ({len(combined)} benchmark file(s))")
    for script in failed:
        print(f"FAILED: {script}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
