"""Replay search on faultbench: how often does the earliest rescuing repair find the injected fault's op?

Builds faultbench with the committed example's configuration (examples/faultbench/faultbench_manifest.json),
replays every graph with its faults in place, labels each case by ``--replay-search earliest`` (the
search knows nothing of the fault) and compares the label with the injected one. Prints a Markdown
table per split and every miss; ``--json`` keeps the per-case results.

    python benchmarks/faultbench_replay.py [--splits rag,long_context] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main(argv: list[str] | None = None) -> int:
    from toolkits.faultbench import BuildConfig, check_labels_by_replay

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--locomo", default=str(ROOT.parent / "shared" / "data" / "locomo" / "locomo10.json"))
    parser.add_argument("--splits", default="long_context,rag,mem0,evermemos")
    parser.add_argument("--json", default=None, help="write the per-case results here")
    args = parser.parse_args(argv)
    config = json.loads((ROOT / "examples" / "faultbench" / "faultbench_manifest.json").read_text())["config"]
    config["splits"] = args.splits.split(",")
    started = time.perf_counter()
    result = check_labels_by_replay(BuildConfig(locomo_path=args.locomo, out_dir="unused", **config),
                                    progress=lambda line: print(line, file=sys.stderr, flush=True))
    print("| split | cases | repairable | error type agrees | op agrees | no single-op rescue |")
    print("|---|---|---|---|---|---|")
    for name, row in [*result["by_split"].items(), ("all", result["agreement"])]:
        print(f"| {name} | {row['cases']} | {row['repairable']} | {row['type_agreement']} | {row['op_agreement']} "
              f"| {row['no_rescue']} |")
    print("\nMisses (injected label vs replay label):")
    for case in result["cases"]:
        if case["injected_type"] != "ResponseError" and case["replay_op"] != case["injected_op"]:
            print(f"- {case['split']} {case['kind']} {case['query_id']}: injected {case['injected_type']}, "
                  f"replay {case['replay_type'] or 'no rescue'} ({case['replay_op_name'] or '-'})")
    print(f"\n{time.perf_counter() - started:.0f} s")
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
