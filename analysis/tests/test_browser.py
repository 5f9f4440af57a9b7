"""Open report.html in headless Chromium: the plots render, nothing errs."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import chromium

CHROMIUM = chromium()
pytestmark = pytest.mark.skipif(
    CHROMIUM is None, reason="chromium is not installed (CI installs Debian's chromium)")

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--hide-scrollbars"]

# Injected into a copy of the report (the report itself has no script): it
# records script errors, console.error calls and failed resource loads from
# the first byte on, then after `load` writes what it saw into the DOM, where
# --dump-dom shows it.
PROBE_HEAD = """<script>
window.__errors = [];
window.addEventListener("error", function (e) {
  var t = e.target || {};
  window.__errors.push(String(e.message || ("failed to load " + (t.src || t.href || t.tagName))));
}, true);
(function () {
  var orig = console.error;
  console.error = function () {
    window.__errors.push(Array.prototype.join.call(arguments, " "));
    orig.apply(console, arguments);
  };
})();
window.addEventListener("load", function () {
  var imgs = Array.prototype.slice.call(document.images);
  var ok = imgs.filter(function (i) { return i.complete && i.naturalWidth > 0 &&
                                             i.naturalHeight > 0; }).length;
  var shown = imgs.filter(function (i) { return i.getBoundingClientRect().width > 100; }).length;
  document.body.setAttribute("data-probe", "images=" + ok + "/" + imgs.length +
    ";shown=" + shown + ";errors=" + window.__errors.length);
  document.body.setAttribute("data-errors", JSON.stringify(window.__errors));
});
</script>"""


def chrome(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    profile = tmp_path / f"profile-{len(list(tmp_path.glob('profile-*')))}"
    return subprocess.run([CHROMIUM or "chromium", *FLAGS, f"--user-data-dir={profile}", *args],
                          capture_output=True, text=True, timeout=180)


def test_report_renders_in_chromium(report_dir: Path, tmp_path: Path) -> None:
    html = (report_dir / "report.html").read_text()
    n_images = html.count("<img ")
    assert n_images >= 5
    probe = tmp_path / "probe.html"
    probe.write_text(html.replace("<head>", "<head>" + PROBE_HEAD, 1))

    r = chrome(tmp_path, "--enable-logging=stderr", "--v=0", "--virtual-time-budget=10000",
               "--window-size=1280,900", "--dump-dom", probe.as_uri())
    assert r.returncode == 0, r.stderr[-2000:]
    m = re.search(r'data-probe="([^"]*)"', r.stdout)
    assert m, "the probe did not run: " + r.stderr[-2000:]
    assert m.group(1) == f"images={n_images}/{n_images};shown={n_images};errors=0", \
        re.search(r'data-errors="([^"]*)"', r.stdout)
    # Console messages also reach Chromium's log; the page itself logs nothing.
    console = [ln for ln in r.stderr.splitlines() if ":CONSOLE" in ln or "Uncaught" in ln]
    assert console == []

    shot = tmp_path / "report.png"
    r = chrome(tmp_path, "--window-size=1280,3000", f"--screenshot={shot}",
               (report_dir / "report.html").as_uri())
    assert r.returncode == 0, r.stderr[-2000:]
    png = shot.read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 50_000
    keep = Path(__file__).parent / ".artifacts"
    if keep.is_dir():
        shutil.copy(shot, keep / "report.png")
