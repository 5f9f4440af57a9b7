"""Where tracing's CPU goes on the hosts' core, sampled in place with perf.

    sudo .venv/bin/python scripts/tracing-profile.py OUT [--rounds 3] [--seconds 30]
        [--payload small|large] [--levels untraced,traced,recorded]
        [--rate 100] [--seed 16]
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

Once the deployment is up, its three hosts are pinned (every thread, with
taskset) to CPU 1, and Jaeger, `svclab up`, the load generator (`svclab
load`, open loop, Poisson) and perf itself to CPU 0: close to what
`experiment.isolation = "cpuset"` with `deploy.telemetry_cpus =
"generator"` does, though the processes start unpinned (their runtimes
size themselves for both CPUs) and this script's own process is not
pinned. While the load runs, `perf record -e cpu-clock -C 1 -g` samples
CPU 1. Each sample of a host goes to one layer by its call stack
(LAYERS), and the report gives each layer's CPU per request beside the
run's p50, per run and as medians over rounds, and each traced level's
cost against the untraced run of its own round.

Needs root (perf on a CPU, taskset of other processes), perf, two CPUs,
and a built bin/svclab and Jaeger (make build jaeger). It finds them
from its own place in the repository, wherever it is run from.
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

ROOT = Path(__file__).resolve().parents[1]
SPEC = ROOT / "experiments" / "tracing-overhead.toml"
SVCLAB = ROOT / "bin" / "svclab"
HOSTS_CPU, OTHERS_CPU = "1", "0"
FREQ = 4000  # perf samples per second of CPU
LEVELS: dict[str, tuple[str, str]] = {  # level → (deploy.tracing, SVCLAB_TRACE_EXPORT)
    "untraced": ("0", ""),
    "traced": ("1.0", ""),
    "recorded": ("1.0", "drop"),
}
SPANS = "spans on the request path (SDK start and end, attributes, propagation)"

# A sample's layer is the first whose pattern matches any frame of its
# stack, so the order matters: the garbage collector and stack growth are
# charged as such even when a span's allocation triggered them.
LAYERS: list[tuple[str, re.Pattern[str]]] = [
    ("garbage collection", re.compile(r"runtime\.(gcBgMarkWorker|gcDrain|bgsweep|gcAssistAlloc|bgscavenge)")),
    ("stack growth", re.compile(r"runtime\.(newstack|copystack)")),
    ("OTLP export", re.compile(r"go\.opentelemetry\.io/(otel/exporters|proto/otlp)")),
    ("batch span processor", re.compile(r"batchSpanProcessor")),
    (SPANS, re.compile(r"go\.opentelemetry\.io/|middleware/tracing\.")),
    ("the rest (grpc, HPACK, kernel, scheduler)", re.compile(r"")),
]


def fail(msg: str) -> None:
    sys.exit(f"tracing-profile: {msg}")


def up(level: str, out: Path) -> tuple[subprocess.Popen[bytes], str, list[int]]:
    """Deploy the chain at level; return `svclab up`, the entry and the hosts' PIDs.

    `svclab up` runs in a session of its own, so that a Ctrl-C meant for
    this script does not stop it half-way; whatever happens here, it is
    stopped before the error goes on."""
    tracing, export = LEVELS[level]
    env = {**os.environ, "SVCLAB_TRACE_EXPORT": export}
    with (out / "up.out").open("wb") as log:
        proc = subprocess.Popen(
            [str(SVCLAB), "up", "--set", f"deploy.tracing={tracing}", str(SPEC)],
            stdout=log, stderr=subprocess.STDOUT, env=env, start_new_session=True, cwd=ROOT,
        )
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            text = (out / "up.out").read_text()
            if m := re.search(r"^entry:\s+\S+://([\d.]+:\d+)", text, re.MULTILINE):
                pids = [int(p) for p in re.findall(r"^  hop\d+\s+(\d+)", text, re.MULTILINE)]
                return proc, m.group(1), pids
            if proc.poll() is not None:
                break
            time.sleep(0.25)
    except BaseException:
        stop(proc)
        raise
    stop(proc)
    fail(f"svclab up did not come up; see {out / 'up.out'}")
    raise AssertionError("unreachable")


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


def commit() -> str:
    git = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
                         check=False, capture_output=True, text=True)
    return git.stdout.strip() or "unknown"


def measure(level: str, out: Path, args: argparse.Namespace, seed: int) -> None:
    out.mkdir(parents=True, exist_ok=True)
    for stale in ("perf.json", "perf.data"):
        (out / stale).unlink(missing_ok=True)
    proc, entry, hosts = up(level, out)
    load: subprocess.Popen[bytes] | None = None
    try:
        pin(HOSTS_CPU, hosts)
        pin(OTHERS_CPU, others(proc.pid, hosts))
        (out / "hosts.json").write_text(json.dumps(hosts))
        with (out / "load.out").open("wb") as log:
            load = subprocess.Popen(
                ["taskset", "-c", OTHERS_CPU, str(SVCLAB), "load", "--protocol", "grpc",
                 "--call", "svclab.chain.Hop/Call", "--body", json.dumps({"payload": args.payload}),
                 "--url", entry, "--rate", str(args.rate), "--arrival", "poisson", "--seed", str(seed),
                 "--warmup", "3s", "--duration", f"{args.seconds + 8}s", "--dir", str(out / "load")],
                stdout=log, stderr=subprocess.STDOUT,
            )
        time.sleep(6)  # the warm-up and a few seconds of the measured window
        if (early := load.poll()) is not None:
            if early == -signal.SIGINT:
                raise KeyboardInterrupt
            fail(f"svclab load ended early; see {out / 'load.out'}")
        rec = subprocess.run(
            ["taskset", "-c", OTHERS_CPU, "perf", "record", "-q", "-e", "cpu-clock", "-F", str(FREQ),
             "-C", HOSTS_CPU, "-g", "-o", str(out / "perf.data"), "--", "sleep", str(args.seconds)],
            check=False, capture_output=True, text=True,
        )
        if rec.returncode == -signal.SIGINT:  # a Ctrl-C reaches perf too
            raise KeyboardInterrupt
        if rec.returncode != 0:
            fail(f"perf record failed ({rec.returncode}): {rec.stderr.strip()[-500:]}")
        status = load.wait(args.seconds + 60)
        if status == -signal.SIGINT:
            raise KeyboardInterrupt
        if status != 0:
            fail(f"svclab load failed; see {out / 'load.out'}")
        # Written last: a run is measured when this file is there.
        (out / "perf.json").write_text(json.dumps({
            "seconds": args.seconds, "freq": FREQ, "rate": args.rate, "payload": args.payload,
            "commit": commit(),
        }))
    finally:
        if load is not None and load.poll() is None:
            load.terminate()
            load.wait()
        stop(proc)


SAMPLE_HEAD = re.compile(r"\s*(\d+)\s*")  # perf script -F pid pads the PID


def stacks(perf_data: Path) -> Iterator[tuple[int, list[str]]]:
    """Each sample's PID and frames, from perf script: a sample is a line
    with the PID, then its frames, each indented with a tab."""
    text = subprocess.run(
        ["perf", "script", "-i", str(perf_data), "-F", "pid,ip,sym"],
        capture_output=True, text=True, check=True,
    ).stdout
    pid: int = -1
    frames: list[str] = []
    for line in text.splitlines():
        if not line.strip():
            continue
        if m := SAMPLE_HEAD.fullmatch(line):
            if pid >= 0:
                yield pid, frames
            pid, frames = int(m.group(1)), []
        else:
            frames.append(line.strip())
    if pid >= 0:
        yield pid, frames


def layer(frames: list[str]) -> str:
    for name, pattern in LAYERS:
        if any(pattern.search(f) for f in frames):
            return name
    raise AssertionError("the last layer matches every stack")


def split(run: Path) -> dict[str, float | str]:
    """A run's hosts' CPU per request, µs, by layer, and its p50."""
    hosts = set(json.loads((run / "hosts.json").read_text()))
    meta = json.loads((run / "perf.json").read_text())
    total = json.loads((run / "load" / "summary.json").read_text())["operations"][0]
    requests = total["completed_rps"] * meta["seconds"]
    counts = Counter(layer(f) for pid, f in stacks(run / "perf.data") if pid in hosts)
    n = sum(counts.values())
    # At 100 req/s the hosts keep CPU 1 some 5% busy: far fewer samples
    # means perf did not see them (another CPU, or PIDs it did not report).
    if n < 0.005 * meta["seconds"] * meta["freq"]:
        fail(f"{run}: {n} samples of the hosts {sorted(hosts)} on CPU {HOSTS_CPU}: too few to split")
    us = {name: counts[name] / meta["freq"] / requests * 1e6 for name, _ in LAYERS}
    return {"payload": meta.get("payload", "small"), "rate": meta.get("rate", 100.0),
            "seconds": meta["seconds"], "p50_us": total["latency"]["p50_ms"] * 1e3, "cpu_us": sum(us.values()), **us}


def report(out: Path) -> pd.DataFrame:
    rows = []
    for run in sorted(out.glob("round*/*")):
        if (run / "perf.json").exists():
            rows.append({"round": run.parent.name, "level": run.name, **split(run)})
        elif run.is_dir():
            print(f"note: {run} was not measured to the end; left out", file=sys.stderr)
    if not rows:
        fail(f"no measured runs under {out}")
    df = pd.DataFrame(rows)
    if df[["payload", "rate", "seconds"]].drop_duplicates().shape[0] > 1:
        fail(f"{out} mixes runs of payloads {sorted(set(df['payload']))}, rates "
             f"{sorted(set(df['rate']))} and windows {sorted(set(df['seconds']))} s: give each its own OUT")
    return df.drop(columns=["payload", "rate", "seconds"])


def print_report(df: pd.DataFrame) -> None:
    pd.set_option("display.width", 250)
    pd.set_option("display.max_colwidth", 80)
    print("Hosts' CPU per request by layer (µs), and p50 (µs), each run:")
    print(df.round(1).to_string(index=False))
    med = df.drop(columns="round").groupby("level").median()
    print("\nMedian over rounds (µs):")
    print(med.round(1).T.to_string())
    if "untraced" not in med.index or len(med) < 2:
        return
    base = med.loc["untraced"]
    shares = ((med.drop(index="untraced") - base) / base["p50_us"] * 100).round(1).T
    shares.index = ["p50" if i == "p50_us" else "CPU, all layers" if i == "cpu_us" else i
                    for i in shares.index]
    print("\nAdded to the untraced run, % of its p50 (medians over rounds):")
    print(shares.to_string())
    # Each round's own ratio: the rounds met different stretches of the
    # machine's drift, and a level is best compared within its round.
    by_round = df.set_index(["round", "level"])
    print("\nEach round against its own untraced run:")
    for rnd in sorted(df["round"].unique()):
        if (rnd, "untraced") not in by_round.index:
            continue
        u = by_round.loc[(rnd, "untraced")]
        parts = []
        for lvl in ("traced", "recorded"):
            if (rnd, lvl) in by_round.index:
                r = by_round.loc[(rnd, lvl)]
                parts.append(f"{lvl} p50 {r['p50_us'] / u['p50_us']:.2f}×, spans "
                             f"{100 * r[SPANS] / u['p50_us']:.1f}% of the untraced p50")
        print(f"  {rnd}: " + "; ".join(parts))


def interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt


def main() -> None:
    # SIGTERM, and SIGINT even where a shell started this in the background
    # with it ignored, stop the run under way as a Ctrl-C does.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGTERM, interrupt)
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", type=Path, help="directory for the rounds' perf data and load results")
    ap.add_argument("--rounds", type=int, default=3, help="rounds of every level (1..50)")
    ap.add_argument("--seconds", type=int, default=30, help="perf's window per run (5..600)")
    ap.add_argument("--rate", type=float, default=100, help="requests per second, open loop")
    ap.add_argument("--seed", type=int, default=16, help="seed of the level order and the arrivals")
    ap.add_argument("--payload", choices=["small", "large"], default="small", help="the chain's payload class")
    ap.add_argument("--levels", default=",".join(LEVELS), help="which of " + ", ".join(LEVELS))
    ap.add_argument("--report", action="store_true", help="only read what OUT holds")
    args = ap.parse_args()
    if not args.report:
        levels = args.levels.split(",")
        if unknown := set(levels) - set(LEVELS):
            fail(f"--levels: unknown {sorted(unknown)}; want some of {list(LEVELS)}")
        if len(set(levels)) != len(levels):
            fail(f"--levels {args.levels}: a level twice")
        if not 1 <= args.rounds <= 50 or not 5 <= args.seconds <= 600 or not 0 < args.rate <= 10000:
            fail("--rounds must be 1..50, --seconds 5..600 and --rate in (0, 10000]")
        if not SVCLAB.exists():
            fail(f"{SVCLAB} is missing: make build")
        settings = {"payload": args.payload, "rate": args.rate, "seconds": args.seconds}
        for old in args.out.glob("round*/*/perf.json"):
            had = json.loads(old.read_text())
            if differ := [f"{k} {had[k]} (asked: {v})" for k, v in settings.items() if had.get(k, v) != v]:
                fail(f"{old.parent} was measured with {', '.join(differ)}: "
                     "give these settings another OUT, as a report cannot mix them")
        rng = random.Random(args.seed)
        for r in range(args.rounds):
            order = list(levels)
            rng.shuffle(order)
            for level in order:
                print(f"round {r + 1}/{args.rounds}: {level}", file=sys.stderr, flush=True)
                measure(level, args.out / f"round{r + 1}" / level, args, args.seed + r)
    print_report(report(args.out))


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt:
        sys.exit("tracing-profile: interrupted; the run under way was stopped, the ones before it kept")
