"""Tracer overhead: our smartcomment vs the reference smartcomment 0.1.2.

Runs ``benchmarks/_tracer_workload.py`` (a synthetic Mem0-style memory pipeline written against
the public smartcomment API) once per implementation, each in its own subprocess:

* ours: this repo's package, ``PYTHONPATH=<repo root>``, our venv's python;
* reference: smartcomment 0.1.2 from a separate virtualenv (created on first use), run with
  ``python -I`` from a temporary directory so that this repo is not on its ``sys.path``.

Each repeat starts one fresh process per implementation, alternating ours/reference, so that load
changes on a shared machine hit both alike. Prints a table (wall time, best and median of
``--repeat`` runs, plus the process-CPU-time ratio) with the ratios ours/reference, and the graph
counts, which must be identical for both implementations (exit status 1 otherwise).

    python benchmarks/tracer_overhead.py                       # 2000 messages, 3 repeats
    python benchmarks/tracer_overhead.py --messages 10000 --ref-venv /tmp/refsc/venv
    python benchmarks/tracer_overhead.py --skip-reference --json-out /tmp/ours.json
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
WORKLOAD = Path(__file__).resolve().parent / "_tracer_workload.py"
DEFAULT_REF_VENV = Path("~/.cache/memtrace-bench/sc012-venv").expanduser()
REF_PACKAGES = ["smartcomment==0.1.2", "pydantic", "loguru"]
METRICS = [
    ("record", "recording (traced pipeline)"),
    ("export", "export_graph()"),
    ("json_dumps", "json.dumps(export, indent=4)"),
    ("import", "ExecNetwork.import_graph"),
    ("xml_200_ops", "filter_by_operation(200 ops).to_xml()"),
    ("disabled", "pipeline, tracing disabled"),
    ("baseline", "pipeline, no tracing calls"),
]
GOALS = {"record": 0.5, "export": 0.5}


def _venv_python(venv: Path) -> Path:
    return venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def _ref_ok(python: Path) -> bool:
    if not python.exists():
        return False
    probe = (
        "import importlib.metadata as m, smartcomment; "
        "assert m.version('smartcomment') == '0.1.2', m.version('smartcomment')"
    )
    with tempfile.TemporaryDirectory() as tmp:
        proc = subprocess.run(
            [str(python), "-I", "-c", probe], cwd=tmp, capture_output=True, text=True, env=_clean_env()
        )
    return proc.returncode == 0


def ensure_reference_venv(venv: Path) -> Path:
    """Return the reference venv's python, creating the venv (and installing 0.1.2) if needed."""
    python = _venv_python(venv)
    if _ref_ok(python):
        return python
    print(f"[setup] creating reference virtualenv at {venv}", file=sys.stderr)
    venv.parent.mkdir(parents=True, exist_ok=True)
    base = "python3" if os.name != "nt" else sys.executable
    subprocess.run([base, "-m", "venv", str(venv)], check=True)
    subprocess.run(
        [str(python), "-m", "pip", "install", "--quiet", "--ignore-requires-python", *REF_PACKAGES],
        check=True,
        env=_clean_env(),
    )
    if not _ref_ok(python):
        raise SystemExit(f"reference venv at {venv} does not provide smartcomment 0.1.2")
    return python


def _clean_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV")}
    env["PYTHONHASHSEED"] = "0"
    return env


def _ours_python() -> Path:
    venv_python = _venv_python(REPO_ROOT / ".venv")
    return venv_python if venv_python.exists() else Path(sys.executable)


def run_workload(label: str, python: Path, *, reference: bool, messages: int, repeat: int) -> dict:
    env = _clean_env()
    cmd = [str(python)]
    if reference:
        cmd.append("-I")  # no PYTHONPATH, no user site, no script/cwd dir on sys.path
    else:
        env["PYTHONPATH"] = str(REPO_ROOT)
    cmd += [str(WORKLOAD), "--messages", str(messages), "--repeat", str(repeat)]
    print(f"[run] {label}: {' '.join(cmd)}", file=sys.stderr, flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        proc = subprocess.run(
            cmd, cwd=tmp if reference else str(REPO_ROOT), env=env, capture_output=True, text=True
        )
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("BENCH_RESULT ")]
    if proc.returncode != 0 or not lines:
        sys.stderr.write(proc.stdout[-4000:] + proc.stderr[-4000:])
        raise SystemExit(f"{label} workload failed (exit {proc.returncode})")
    result = json.loads(lines[-1].removeprefix("BENCH_RESULT "))
    module = Path(result["module_file"]).resolve()
    inside_repo = module.is_relative_to(REPO_ROOT)
    if reference and inside_repo:
        raise SystemExit(f"reference run imported our package ({module})")
    if not reference and not inside_repo:
        raise SystemExit(f"our run imported a foreign smartcomment ({module})")
    result["label"] = label
    result["python_exe"] = str(python)
    return result


def merge_runs(runs: list[dict]) -> dict:
    """Pool the timings of several workload processes of one implementation."""
    merged = dict(runs[0])
    for key in ("times", "cpu_times"):
        merged[key] = {k: [t for r in runs for t in r[key][k]] for k in runs[0][key]}
    for name, fn in (("best", min), ("median", statistics.median)):
        merged[name] = {k: fn(v) for k, v in merged["times"].items()}
        merged["cpu_" + name] = {k: fn(v) for k, v in merged["cpu_times"].items()}
    merged["runs"] = len(runs)
    merged["repeat"] = sum(r["repeat"] for r in runs)
    merged["consistent"] = all(
        r["counts"] == runs[0]["counts"] and r["checks"] == runs[0]["checks"] for r in runs
    )
    return merged


def _ms(x: float) -> str:
    return f"{x * 1000:9.1f}"


def _ratio(a: float, b: float) -> float:
    return a / b if b else float("nan")


def render(results: list[dict], messages: int, repeat: int) -> str:
    ours = results[0]
    ref = results[1] if len(results) > 1 else None
    out = [
        f"messages={messages} repeats={repeat} python={ours['python']} machine={platform.machine()} "
        f"cpus={os.cpu_count()} date={_dt.date.today().isoformat()}",
        "wall ms (time.perf_counter): best and median of the repeats; cpu = time.process_time ratio",
    ]
    head = f"{'step':38} {'ours best':>9} {'median':>9}"
    if ref:
        head += f" {'ref best':>9} {'median':>9} {'ratio best':>10} {'median':>7} {'cpu':>6}  goal"
    out += [head, "-" * len(head)]
    for key, title in METRICS:
        row = f"{title:38} {_ms(ours['best'][key])} {_ms(ours['median'][key])}"
        if ref:
            ratio = _ratio(ours["best"][key], ref["best"][key])
            goal = GOALS.get(key)
            mark = "" if goal is None else f"<= {goal} {'ok' if ratio <= goal else 'MISSED'}"
            row += (
                f" {_ms(ref['best'][key])} {_ms(ref['median'][key])} {ratio:10.3f}"
                f" {_ratio(ours['median'][key], ref['median'][key]):7.3f}"
                f" {_ratio(ours['cpu_best'][key], ref['cpu_best'][key]):6.3f}  {mark}"
            )
        out.append(row)
    for r in results:
        b = r["best"]
        out.append(
            f"{r['label']}: disabled/baseline = {_ratio(b['disabled'], b['baseline']):.2f}x "
            f"(+{(b['disabled'] - b['baseline']) * 1e6 / messages:.1f} us/message, best wall); "
            f"cpu {_ratio(r['cpu_best']['disabled'], r['cpu_best']['baseline']):.2f}x"
        )
    c = ours["counts"]
    out.append(
        f"graph: nodes={c['nodes']} edges={c['edges']} ops={c['ops']} sessions={c['sessions']}"
        + (" (identical for both implementations)" if ref and ref["counts"] == c else "")
    )
    for r in results:
        ch = r["checks"]
        out.append(
            f"{r['label']}: json chars={ch['json_chars']} xml chars={ch['xml_chars']} "
            f"import->export round trip equal={ch['roundtrip_equal']}"
        )
    return "\n".join(out)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description="Time our smartcomment against the reference smartcomment 0.1.2."
    )
    ap.add_argument("--messages", type=int, default=2000, help="messages in the synthetic pipeline (2000)")
    ap.add_argument(
        "--repeat", type=int, default=3, help="runs per measurement; best and median reported (3)"
    )
    ap.add_argument(
        "--ref-venv",
        type=Path,
        default=DEFAULT_REF_VENV,
        help=f"virtualenv with smartcomment 0.1.2 (default {DEFAULT_REF_VENV}; created if missing)",
    )
    ap.add_argument("--skip-reference", action="store_true", help="time our implementation only")
    ap.add_argument("--json-out", type=Path, help="also write all raw results as JSON here")
    args = ap.parse_args(argv)

    impls = [("ours", _ours_python(), False)]
    if not args.skip_reference:
        impls.append(("reference 0.1.2", ensure_reference_venv(args.ref_venv.expanduser()), True))
    # one process per implementation and repeat, alternating, so that load changes on a shared
    # machine hit both implementations alike
    runs: dict[str, list[dict]] = {label: [] for label, _, _ in impls}
    for _ in range(args.repeat):
        for label, python, reference in impls:
            runs[label].append(
                run_workload(label, python, reference=reference, messages=args.messages, repeat=1)
            )
    results = [merge_runs(runs[label]) for label, _, _ in impls]

    failures = []
    for r in results:
        if not r["consistent"]:
            failures.append(f"{r['label']}: counts/sizes differ between repeats")
        if r["counts"] != r["imported_counts"]:
            failures.append(
                f"{r['label']}: import changed the counts {r['counts']} -> {r['imported_counts']}"
            )
        if not r["checks"]["roundtrip_equal"]:
            failures.append(f"{r['label']}: export(import(export)) != export")
    if len(results) == 2 and results[0]["counts"] != results[1]["counts"]:
        failures.append(
            f"graph counts differ: ours {results[0]['counts']} vs reference {results[1]['counts']}"
        )

    table = render(results, args.messages, args.repeat)
    print(table)
    if args.json_out:
        payload = {
            "messages": args.messages,
            "repeat": args.repeat,
            "date": _dt.datetime.now().isoformat(),
            "machine": platform.machine(),
            "cpus": os.cpu_count(),
            "results": results,
            "failures": failures,
            "table": table,
        }
        if len(results) == 2:
            payload["ratios"] = {
                name: {k: _ratio(results[0][name][k], results[1][name][k]) for k, _ in METRICS}
                for name in ("best", "median", "cpu_best", "cpu_median")
            }
        args.json_out.parent.mkdir(parents=True, exist_ok=True)
        args.json_out.write_text(json.dumps(payload, indent=2))
    for f in failures:
        print("FAIL:", f, file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
