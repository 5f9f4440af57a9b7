"""Where tracing's CPU goes on the hosts' core, sampled in place with perf.

    sudo .venv/bin/python scripts/tracing-profile.py OUT [--rounds 3] [--seconds 30]
        [--payload small|large] [--levels untraced,traced,recorded]
    .venv/bin/python scripts/tracing-profile.py OUT --report

docs/PERFORMANCE.md, "Mesh: what tracing costs a hop, and where", gives
what it measured.

Benchmarks measure a span's price in a hot loop; a run at 100 req/s pays
it on a cold core, several times over. This samples the cores instead.
Each round deploys experiments/tracing-overhead.toml's chain (three hops,
grpc, each its own process) with `svclab up` once per level, in an order
drawn anew each round:

    untraced   deploy.tracing = 0
    traced     deploy.tracing = 1.0, spans batched and exported to Jaeger
    recorded   deploy.tracing = 1.0, SVCLAB_TRACE_EXPORT=drop: spans
               recorded and dropped as each ends, no batcher, no export

The three hosts are pinned to CPU 1 and Jaeger, `svclab up` and the load
generator (`svclab load`, open loop, Poisson) to CPU 0, as
`experiment.isolation = "cpuset"` with `deploy.telemetry_cpus =
"generator"` places them. While the load runs, `perf record -e cpu-clock
-C 1 -g` samples CPU 1. Each sample of a host is put in one layer by its
call stack (LAYERS), and the report gives each layer's CPU per request,
beside the run's p50.

Needs root (perf on a CPU, taskset of other processes), perf, two CPUs,
and a built bin/svclab and Jaeger (make jaeger).
"""

import argparse
import json
import os
import random
import re
import signal
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pandas as pd

SPEC = "experiments/tracing-overhead.toml"
SVCLAB = "bin/svclab"
HOSTS_CPU, OTHERS_CPU = "1", "0"
FREQ = 4000  # perf samples per second of CPU
LEVELS: dict[str, tuple[str, str]] = {  # level → (deploy.tracing, SVCLAB_TRACE_EXPORT)
    "untraced": ("0", ""),
    "traced": ("1.0", ""),
    "recorded": ("1.0", "drop"),
}

# A sample's layer is the first whose pattern matches any frame of its
# stack, so the order matters: the garbage collector and stack growth are
# charged as such even when a span's allocation triggered them.
LAYERS: list[tuple[str, re.Pattern[str]]] = [
    ("garbage collection", re.compile(r"runtime\.(gcBgMarkWorker|gcDrain|bgsweep|gcAssistAlloc|bgscavenge)")),
    ("stack growth", re.compile(r"runtime\.(newstack|copystack)")),
    ("OTLP export", re.compile(r"go\.opentelemetry\.io/(otel/exporters|proto/otlp)")),
    ("batch span processor", re.compile(r"batchSpanProcessor")),
    ("spans on the request path", re.compile(r"go\.opentelemetry\.io/|middleware/tracing\.")),
    ("the rest (grpc, kernel, scheduler)", re.compile(r"")),
]


def up(level: str, out: Path) -> tuple[subprocess.Popen[bytes], str, list[int]]:
    """Deploy the chain at level; return `svclab up`, the entry and the hosts' PIDs."""
    tracing, export = LEVELS[level]
    env = {**os.environ, "SVCLAB_TRACE_EXPORT": export}
    log = (out / "up.out").open("wb")
    proc = subprocess.Popen(
        [SVCLAB, "up", "--set", f"deploy.tracing={tracing}", SPEC],
        stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        text = (out / "up.out").read_text()
        if m := re.search(r"^entry:\s+\S+://([\d.]+:\d+)", text, re.MULTILINE):
            pids = [int(p) for p in re.findall(r"^  hop\d+\s+(\d+)", text, re.MULTILINE)]
            return proc, m.group(1), pids
        if proc.poll() is not None:
            break
        time.sleep(0.25)
    stop(proc)
    sys.exit(f"tracing-profile: svclab up did not come up; see {out / 'up.out'}")


def stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def pin(cpu: str, pids: list[int]) -> None:
    for pid in pids:
        subprocess.run(["taskset", "-a", "-cp", cpu, str(pid)], check=True, capture_output=True)


def others(up_pid: int, hosts: list[int]) -> list[int]:
    """`svclab up` and its children that are not hosts (Jaeger)."""
    ps = subprocess.run(["pgrep", "-P", str(up_pid)], check=False, capture_output=True, text=True).stdout
    return [up_pid, *(int(p) for p in ps.split() if int(p) not in hosts)]


def measure(level: str, out: Path, seconds: int, rate: float, seed: int, payload: str) -> None:
    out.mkdir(parents=True, exist_ok=True)
    proc, entry, hosts = up(level, out)
    try:
        pin(HOSTS_CPU, hosts)
        pin(OTHERS_CPU, others(proc.pid, hosts))
        (out / "hosts.json").write_text(json.dumps(hosts))
        load = subprocess.Popen(
            ["taskset", "-c", OTHERS_CPU, SVCLAB, "load", "--protocol", "grpc",
             "--call", "svclab.chain.Hop/Call", "--body", json.dumps({"payload": payload}),
             "--url", entry, "--rate", str(rate), "--arrival", "poisson", "--seed", str(seed),
             "--warmup", "3s", "--duration", f"{seconds + 8}s", "--dir", str(out / "load")],
            stdout=(out / "load.out").open("wb"), stderr=subprocess.STDOUT,
        )
        time.sleep(6)  # the warm-up and a few seconds of the measured window
        subprocess.run(
            ["perf", "record", "-q", "-e", "cpu-clock", "-F", str(FREQ), "-C", HOSTS_CPU, "-g",
             "-o", str(out / "perf.data"), "--", "sleep", str(seconds)],
            check=True, capture_output=True,
        )
        (out / "perf.json").write_text(json.dumps({"seconds": seconds, "freq": FREQ}))
        if load.wait(seconds + 60) != 0:
            sys.exit(f"tracing-profile: svclab load failed; see {out / 'load.out'}")
    finally:
        stop(proc)


def stacks(perf_data: Path) -> Iterator[tuple[int, list[str]]]:
    """Each sample's PID and frames, from perf script."""
    text = subprocess.run(
        ["perf", "script", "-i", str(perf_data), "-F", "pid,ip,sym"],
        capture_output=True, text=True, check=True,
    ).stdout
    pid, frames = -1, []
    for line in text.splitlines():
        if not line.strip():
            continue
        if not line[0].isspace():
            if frames:
                yield pid, frames
            pid, frames = int(line.split()[0]), []
        else:
            frames.append(line.strip())
    if frames:
        yield pid, frames


def layer(frames: list[str]) -> str:
    for name, pattern in LAYERS:
        if any(pattern.search(f) for f in frames):
            return name
    raise AssertionError("the last layer matches every stack")


def split(run: Path) -> dict[str, float]:
    """A run's hosts' CPU per request, µs, by layer, and its p50."""
    hosts = set(json.loads((run / "hosts.json").read_text()))
    meta = json.loads((run / "perf.json").read_text())
    total = json.loads((run / "load" / "summary.json").read_text())["operations"][0]
    requests = total["completed_rps"] * meta["seconds"]
    counts = Counter(layer(f) for pid, f in stacks(run / "perf.data") if pid in hosts)
    us = {name: counts[name] / meta["freq"] / requests * 1e6 for name, _ in LAYERS}
    return {"p50_us": total["latency"]["p50_ms"] * 1e3, "cpu_us": sum(us.values()), **us}


def report(out: Path) -> pd.DataFrame:
    rows = []
    for run in sorted(out.glob("round*/*")):
        if (run / "perf.json").exists():
            rows.append({"round": run.parent.name, "level": run.name, **split(run)})
    if not rows:
        sys.exit(f"tracing-profile: no measured runs under {out}")
    return pd.DataFrame(rows)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", type=Path, help="directory for the rounds' perf data and load results")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=int, default=30, help="perf's window per run")
    ap.add_argument("--rate", type=float, default=100)
    ap.add_argument("--seed", type=int, default=16)
    ap.add_argument("--payload", choices=["small", "large"], default="small", help="the chain's payload class")
    ap.add_argument("--levels", default=",".join(LEVELS), help="which of " + ", ".join(LEVELS))
    ap.add_argument("--report", action="store_true", help="only read what OUT holds")
    args = ap.parse_args()
    if not args.report:
        if not 1 <= args.rounds <= 50 or not 5 <= args.seconds <= 600:
            sys.exit("tracing-profile: --rounds must be 1..50 and --seconds 5..600")
        levels = args.levels.split(",")
        if unknown := set(levels) - set(LEVELS):
            sys.exit(f"tracing-profile: --levels: unknown {sorted(unknown)}; want some of {list(LEVELS)}")
        rng = random.Random(args.seed)
        for r in range(args.rounds):
            order = list(levels)
            rng.shuffle(order)
            for level in order:
                print(f"round {r + 1}/{args.rounds}: {level}", file=sys.stderr, flush=True)
                measure(level, args.out / f"round{r + 1}" / level, args.seconds, args.rate, args.seed + r, args.payload)
    df = report(args.out)
    pd.set_option("display.width", 200)
    print("Hosts' CPU per request by layer (µs), and p50 (µs), each run:")
    print(df.round(1).to_string(index=False))
    med = df.drop(columns="round").groupby("level").median()
    print("\nMedian over rounds:")
    print(med.round(1).T.to_string())
    if "untraced" in med.index:
        base = med.loc["untraced"]
        print("\nAdded to the untraced run, as a share of its p50:")
        print(((med - base) / base["p50_us"] * 100).round(1).T.to_string())


if __name__ == "__main__":
    main()
