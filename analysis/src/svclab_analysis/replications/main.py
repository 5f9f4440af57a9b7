"""The studies, the summary and runs regions, and the command line."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from ..errors import AnalysisError
from ..formatting import duration, md_table, num
from ..results import Experiment, load_experiment
from . import s0, s0boutique, s1, s2, s2mesh, s3, s4, s4hosts
from .common import Claim, Section, StudyData
from .regions import GENERATED_NOTE, rewrite
from .store import latest_results, provenance, replicate_info, study_data, wall_time

PROG = "python -m svclab_analysis.replications"


@dataclass(frozen=True)
class Study:
    key: str
    experiment: str
    spec: str
    metric: str
    section: Callable[[StudyData], Section]
    # The summary and runs regions wait for every required study's results;
    # S1's need PostgreSQL, nginx and cgroups, which not every machine has.
    required: bool = True
    # Experiments read beside the study's own (StudyData.companions).
    companions: tuple[str, ...] = ()


STUDIES: dict[str, Study] = {
    s.key: s
    for s in [
        Study("s3", "s3-style", "experiments/s3-style.toml", s3.METRIC, s3.section),
        # S3's design with back-to-back calls: scripts/replicate.sh runs the same spec
        # with one closed-loop user and experiment.name = "s3-style-closed".
        Study("s3c", "s3-style-closed", "experiments/s3-style.toml", s3.METRIC, s3.section),
        Study("s4", "s4-rpc", "experiments/s4-rpc.toml", s4.METRIC, s4.section),
        # Needs root (the netns deployer's emulated hosts).
        Study("s4h", "s4-hosts", "experiments/s4-hosts.toml", s4hosts.METRIC, s4hosts.section,
              required=False),
        Study("s2", "s2-payload", "experiments/s2-payload.toml", s2.METRIC, s2.section),
        Study("s0", "s0-granularity", "experiments/s0-granularity.toml", s0.METRIC, s0.section),
        # Needs root for its two-host companions (the netns deployer).
        Study("s0b", s0boutique.ONE_HOST, "experiments/s0-boutique.toml", s0boutique.METRIC,
              s0boutique.section, required=False, companions=tuple(s0boutique.companions())),
        Study("s1v", "s1-vertical", "experiments/s1-vertical.toml", s1.METRIC,
              s1.vertical_section, required=False),
        Study("s1h", "s1-horizontal", "experiments/s1-horizontal.toml", s1.METRIC,
              s1.horizontal_section, required=False),
        Study("s1a", "s1-hpa", "experiments/s1-hpa.toml", s1.METRIC, s1.hpa_section,
              required=False),
        Study("s2m", "s2-mesh", "experiments/s2-mesh.toml", s2mesh.METRIC, s2mesh.section,
              required=False),
        Study("s2mp", "s2-mesh-proxyless", "experiments/s2-mesh-proxyless.toml", s2mesh.METRIC,
              s2mesh.proxyless_section, required=False),
    ]
}


def study_section(study: Study, exp: Experiment,
                  companions: Mapping[str, Experiment] | None = None) -> Section:
    """The study's region of one results directory, headed by where its numbers come from."""
    comps = companions or {}
    data = replace(study_data(exp), companions={k: study_data(e) for k, e in comps.items()})
    body = study.section(data)
    used = ", ".join(f"`{e.path.name}`" for e in [exp, *comps.values()])
    head = [GENERATED_NOTE.format(path=used if comps else exp.path.name),
            provenance(exp, f"bin/svclab run {study.spec}"),
            *[provenance(e, f"bin/svclab run experiments/{k}.toml") for k, e in comps.items()],
            *[f"- Note: {n}." for d in [data, *data.companions.values()] for n in d.notes],
            ""]
    return Section("\n".join([*head, body.text]), body.claims)


def load(study: Study, path: Path) -> Experiment:
    return load_experiment(path, metric=study.metric, operation="total")


def build_section(study: Study, path: Path) -> Section:
    return study_section(study, load(study, path))


SUMMARY_KEY = "summary"
RUNS_KEY = "runs"


def runs_section(exps: dict[str, Experiment]) -> str:
    """One line per study: spec, results directory, runs, flags and wall time."""
    rows = []
    for key, exp in exps.items():
        st = STUDIES[key]
        rep = replicate_info(exp)
        runs = exp.runs
        during = rep.get("loadavg_during") or {}
        load = (f"{num(during.get('mean_1m'))} (max {num(during.get('max_1m'))})"
                if isinstance(during, dict) and during.get("samples") else "—")
        rows.append([key, f"[{st.spec.rsplit('/', 1)[-1]}](../{st.spec})", f"`{exp.path.name}`",
                     f"{int((runs['status'] == 'ok').sum())} of {len(runs)}",
                     str(int(runs["bottleneck"].sum())), load,
                     duration(float(rep["wall_s"])) if "wall_s" in rep
                     else wall_time(exp, rep)])
    used = ", ".join(f"`{e.path.name}`" for e in exps.values())
    return "\n".join([
        GENERATED_NOTE.format(path=used),
        md_table(["study", "spec", "results", "runs ok", "runs flagged",
                  "1-min load average while running", "wall time"], rows),
    ])


def summary_section(claims: Sequence[Claim], sources: dict[str, Path]) -> str:
    """The verdict of every tested claim, from the same results as the sections."""
    rows = [[c.study, c.claim, f"**{c.verdict}**", c.here, c.paper] for c in claims]
    used = ", ".join(f"`{p.name}`" for p in sources.values())
    return "\n".join([
        GENERATED_NOTE.format(path=used),
        md_table(["study", "the paper's finding", "on this machine", "svclab", "paper"], rows),
    ])


def package_doc() -> str:
    # The package's docstring is the command's help; it is read at call time,
    # when the package has finished importing this module.
    from . import __doc__ as doc

    return doc or ""


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog=PROG, description=package_doc().split("\n\n")[0])
    p.add_argument("dirs", nargs="*", metavar="KEY=DIR",
                   help="use this results directory for a study (s3, s3c, s4, s2, s0) instead of "
                        "the newest one under --results")
    p.add_argument("--results", default="results", help="where results directories are")
    p.add_argument("--doc", default="docs/REPLICATIONS.md", help="the document to rewrite")
    p.add_argument("--only", help="comma-separated regions to rewrite: studies (s3, s3c, s4, "
                                  "s2, s0), summary, runs (default: all)")
    p.add_argument("--stdout", action="store_true",
                   help="print the generated regions instead of rewriting the document")
    args = p.parse_args(argv)
    try:
        explicit: dict[str, Path] = {}
        for item in args.dirs:
            key, sep, d = item.partition("=")
            if not sep or key not in STUDIES:
                raise AnalysisError(f"{item!r}: expected KEY=DIR with KEY one of "
                                    f"{', '.join(STUDIES)}")
            explicit[key] = Path(d)
        keys = list(STUDIES)
        if args.only:
            keys = [k.strip() for k in args.only.split(",") if k.strip()]
            for k in keys:
                if k not in STUDIES and k not in (SUMMARY_KEY, RUNS_KEY):
                    raise AnalysisError(f"--only {k}: unknown study; known: {', '.join(STUDIES)}")
        sections: dict[str, str] = {}
        claims: list[Claim] = []
        sources: dict[str, Path] = {}
        exps: dict[str, Experiment] = {}
        for key, st in STUDIES.items():
            path = explicit.get(key) or latest_results(Path(args.results), st.experiment)
            if path is None:
                if key in keys:
                    print(f"{key}: no results of {st.experiment} under {args.results}; region "
                          f"left as it is (run: bash scripts/replicate.sh {key})",
                          file=sys.stderr)
                continue
            exps[key] = load(st, path)
            comps: dict[str, Experiment] = {}
            for name in st.companions:
                cpath = latest_results(Path(args.results), name)
                if cpath is not None:
                    comps[name] = load(st, cpath)
            built = study_section(st, exps[key], comps)
            claims += built.claims
            sources[key] = path
            if key in keys:
                sections[key] = built.text
                print(f"{key}: {path}", file=sys.stderr)
        # The summary and the runs table are rewritten only when every study has
        # results, so that they never mix a fresh study with a missing one.
        if all(k in sources for k, st in STUDIES.items() if st.required):
            if not args.only or SUMMARY_KEY in keys:
                sections[SUMMARY_KEY] = summary_section(claims, sources)
            if not args.only or RUNS_KEY in keys:
                sections[RUNS_KEY] = runs_section(exps)
        if args.stdout:
            for key, body in sections.items():
                print(f"<!-- BEGIN {key} -->\n{body}\n<!-- END {key} -->\n")
            return 0
        doc_path = Path(args.doc)
        try:
            doc = doc_path.read_text(encoding="utf-8")
        except OSError as exc:
            raise AnalysisError(f"{doc_path}: cannot read ({exc.strerror})") from None
        new = rewrite(doc, sections)
        if new != doc:
            doc_path.write_text(new, encoding="utf-8")
        print(f"{doc_path}: {len(sections)} region(s) rewritten", file=sys.stderr)
        return 0
    except AnalysisError as exc:
        print(f"{PROG}: {exc}", file=sys.stderr)
        return 2
