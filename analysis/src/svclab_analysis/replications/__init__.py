"""Regenerate the tables of docs/REPLICATIONS.md from svclab results directories.

docs/REPLICATIONS.md is hand-written prose with marked regions::

    <!-- BEGIN s3 -->
    ... generated: never edit by hand ...
    <!-- END s3 -->

This module rewrites each region from the newest results directory of its
spec (``results/s3-style-YYYYMMDD-HHMMSS``), putting the published study's
numbers (constants below, from SEEDS.md) next to svclab's, with confidence
intervals over runs: the run is the unit of replication. Every verdict
("holds", "does not hold", "inconclusive") is computed from those
intervals, never typed in.

    python -m svclab_analysis.replications                  # newest results of every spec
    python -m svclab_analysis.replications --results results --doc docs/REPLICATIONS.md
    python -m svclab_analysis.replications s3=results/s3-style-20261122-040000

A region whose spec has no results is left as it is, so running this on a
fresh clone does not erase the committed tables.

A run that got no answer for one operation in its measured window (a
slow first call, a short window) is left out of that operation's figures
only, and the region's head says which run and operation; its other
operations still count.

``scripts/replicate.sh`` writes ``replicate.json`` into each results
directory (the command, its wall time and the load average around it);
the regions quote it when it is there.

One module per study (s3, s4, s4hosts, s2, s0, …), each going compute → dataclass →
render: ``compute(StudyData)`` fits and judges into a frozen dataclass with
no I/O and no formatting, ``render`` writes that as Markdown and returns it
with the claims it tested as a ``Section``, with no statistics. common.py
holds the types and statistics they share, store.py reads results
directories (``study_data`` gathers a StudyData), regions.py rewrites the
marked regions and main.py lists the studies, heads each section with its
provenance, collects the claims and is the command line.
"""

from .common import verdict
from .main import STUDIES, build_section, main
from .regions import rewrite
from .store import latest_results

__all__ = ["STUDIES", "build_section", "latest_results", "main", "rewrite", "verdict"]
