#!/usr/bin/env python3
"""Every example scenario's digest from one dcsim binary, against scenarios/digests.json.

    tools/digests.py BIN            run scenarios/*.toml with BIN, compare, exit 1 on a change
    tools/digests.py BIN --update   write the digests BIN gives into scenarios/digests.json

A run's digest (summary.json, "digest") hashes its flow, port and sample tables, so two
builds that give every example the recorded digest give the same results. CI runs this
with its one optimised build, `.ci/extended` with the release and profile-guided builds,
and `cargo test` compares the same file in the test build (crates/dcsim/tests/it/golden.rs).
A change that is meant to alter results updates the file (`--update`) in the same commit
and says why.
"""

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GOLDEN = ROOT / "scenarios" / "digests.json"


def digest(binary: str, scenario: Path, out: Path) -> str:
    """Runs one scenario and returns its digest."""
    subprocess.run(
        [binary, "run", str(scenario), "--out", str(out), "--quiet"],
        check=True,
        stdout=subprocess.DEVNULL,
    )
    return json.loads((out / "summary.json").read_text())["digest"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("binary", help="the dcsim binary to run")
    ap.add_argument("--update", action="store_true", help="write the digests instead of comparing")
    args = ap.parse_args()

    scenarios = sorted((ROOT / "scenarios").glob("*.toml"))
    got = {}
    with tempfile.TemporaryDirectory(prefix="dcsim-digests-") as tmp:
        for s in scenarios:
            got[s.stem] = digest(args.binary, s, Path(tmp) / s.stem)

    if args.update:
        GOLDEN.write_text(json.dumps(got, indent=2) + "\n")
        print(f"digests: wrote {len(got)} digests to {GOLDEN.relative_to(ROOT)}")
        return 0

    want = json.loads(GOLDEN.read_text())
    bad = []
    for name in sorted(set(got) | set(want)):
        g, w = got.get(name), want.get(name)
        if g != w:
            bad.append(f"  {name}: recorded {w or '(none)'}, this build {g or '(no scenario)'}")
    if bad:
        print(f"digests: {len(bad)} of {len(want)} differ from scenarios/digests.json ({args.binary}):")
        print("\n".join(bad))
        return 1
    print(f"digests: all {len(got)} example scenarios give the recorded digests ({args.binary})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
