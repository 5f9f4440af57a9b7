// The live view's page: it reads the server's events (board.go) and shows
// them; the charts are uPlot's. Nothing here sends anything back.
"use strict";
(function () {
  const $ = (id) => document.getElementById(id);
  const fmt = (v, d) => (v === undefined || v === null || Number.isNaN(v)) ? "–" : Number(v).toFixed(d === undefined ? 3 : d);
  const roles = ["host", "sidecar", "node-proxy", "telemetry", "loadgen"];
  const st = { exp: null, expAt: 0, done: 0, kept: 0, lastAt: 0, ended: false, levels: {} };
  let cur = null; // the current run's series

  function newRun() {
    return { t: [], rps: [], p50: [], p90: [], p99: [], max: [], lag: [], errs: [],
      rt: [], cpu: roles.map(() => []), mem: roles.map(() => []) };
  }

  // Charts: one uPlot each, redrawn at most once a frame.
  const charts = {};
  const colors = ["#1f77b4", "#ff7f0e", "#d62728", "#7f7f7f", "#2ca02c", "#9467bd"];
  function makeChart(id, title, labels, yLabel) {
    if (!window.uPlot) return null;
    const series = [{ label: "s" }].concat(labels.map((l, i) => ({ label: l, stroke: colors[i % colors.length], width: 1.5 })));
    return new uPlot({ title: title, width: 470, height: 220, series: series,
      scales: { x: { time: false } }, axes: [{ label: "s" }, { label: yLabel }] },
    [[]].concat(labels.map(() => [])), $(id));
  }
  function setupCharts() {
    charts.rps = makeChart("chart-rps", "throughput", ["req/s"], "req/s");
    charts.latency = makeChart("chart-latency", "latency (each second)", ["p50", "p90", "p99", "max", "send lag p99"], "ms");
    charts.errors = makeChart("chart-errors", "errors", ["errors/s"], "errors/s");
    charts.cpu = makeChart("chart-cpu", "CPU by role", roles, "cores");
    charts.memory = makeChart("chart-memory", "memory by role", roles, "MiB");
  }
  // keep trims a chart's series to the last hour, as the server keeps.
  const keepPoints = 3600;
  function keep(arrays) {
    if (arrays[0].length > keepPoints) for (const a of arrays) a.splice(0, a.length - keepPoints);
  }
  let drawPending = false;
  function draw() {
    if (drawPending || !cur) return;
    drawPending = true;
    requestAnimationFrame(() => {
      drawPending = false;
      if (!cur || !charts.rps) return;
      charts.rps.setData([cur.t, cur.rps]);
      charts.latency.setData([cur.t, cur.p50, cur.p90, cur.p99, cur.max, cur.lag]);
      charts.errors.setData([cur.t, cur.errs]);
      charts.cpu.setData([cur.rt].concat(cur.cpu));
      charts.memory.setData([cur.rt].concat(cur.mem));
    });
  }

  function cell(tr, text, cls) {
    const td = document.createElement("td");
    td.textContent = text;
    if (cls) td.className = cls;
    tr.appendChild(td);
    return td;
  }
  function levelsText(levels) {
    return Object.keys(levels || {}).sort().map((k) => k.slice(k.lastIndexOf(".") + 1) + "=" + levels[k]).join(" ");
  }
  function clock(ms) {
    const s = Math.max(0, Math.round(ms / 1000));
    return Math.floor(s / 60) + ":" + String(s % 60).padStart(2, "0");
  }

  function progress() {
    const e = st.exp;
    if (!e || !e.runs || !e.runs.length) return;
    const n = e.runs.length;
    $("progress").textContent = st.done + "/" + n + " runs";
    // The time a run takes, from the runs this command did (not the
    // ones a resumed experiment kept), else the plan's estimate.
    let per = (e.estimate_ns || 0) / 1e6 / n;
    const ran = st.done - st.kept;
    if (ran > 0 && st.lastAt > st.expAt) per = (st.lastAt - st.expAt) / ran;
    $("eta").textContent = st.ended ? "" : "· left ~" + clock((n - st.done) * per);
  }

  const on = {
    experiment(e) {
      st.exp = e; st.expAt = e.at;
      $("command").textContent = e.command;
      $("name").textContent = e.name || "";
      const parts = [];
      if (e.design) parts.push(e.design);
      if (e.order) parts.push("order " + e.order + (e.seed ? " (seed " + e.seed + ")" : ""));
      if (e.duration_ns) parts.push("each run " + (e.warmup_ns ? clock(e.warmup_ns / 1e6) + " warm-up + " : "") + clock(e.duration_ns / 1e6) + " measured");
      if (e.estimate_ns) parts.push("estimated " + clock(e.estimate_ns / 1e6));
      if (e.kept) parts.push(e.kept + (e.kept === 1 ? " run" : " runs") + " kept from before (--resume)");
      $("design").textContent = parts.join(" · ");
      $("status").textContent = "running"; $("status").className = "status running";
      progress();
    },
    run(r) {
      cur = newRun();
      st.levels[r.id] = r.levels;
      $("run-id").textContent = r.id;
      $("run-id").dataset.index = r.index;
      $("run-levels").textContent = levelsText(r.levels);
      $("phase").textContent = "";
      for (const id of ["cur-requests", "cur-errors", "cur-rps", "cur-p50", "cur-p90", "cur-p99", "cur-max", "cur-lag", "cur-late"]) $(id).textContent = "–";
      $("errors-by-class").textContent = "";
      $("links").textContent = "";
      $("hops-section").hidden = true; $("hops").textContent = ""; $("hops-jaeger").hidden = true;
      $("thresholds").textContent = ""; $("thresholds-judged").textContent = "";
      $("processes").textContent = "";
      $("changes").textContent = "";
      draw();
    },
    phase(p) { $("phase").textContent = p.phase; },
    second(s) {
      if (!cur) cur = newRun();
      cur.t.push(s.t); cur.rps.push(s.rps); cur.errs.push(s.errors);
      cur.p50.push(s.latency.p50_ms); cur.p90.push(s.warmup ? null : s.latency.p90_ms);
      cur.p99.push(s.latency.p99_ms); cur.max.push(s.warmup ? null : s.latency.max_ms);
      cur.lag.push(s.warmup ? null : s.lag_p99_ms);
      keep([cur.t, cur.rps, cur.errs, cur.p50, cur.p90, cur.p99, cur.max, cur.lag]);
      $("cur-rps").textContent = fmt(s.rps, 1);
      if (!s.warmup) {
        const t = s.total;
        $("cur-requests").textContent = t.requests;
        $("cur-errors").textContent = t.errors;
        $("cur-p50").textContent = fmt(t.latency.p50_ms);
        $("cur-p90").textContent = fmt(t.latency.p90_ms);
        $("cur-p99").textContent = fmt(t.latency.p99_ms);
        $("cur-max").textContent = fmt(t.latency.max_ms);
        $("cur-lag").textContent = fmt(s.lag_p99_ms) + " / " + fmt(s.lag_max_ms);
        $("cur-late").textContent = s.late_sends + " / " + s.dropped;
        const classes = t.errors_by_class || {};
        $("errors-by-class").textContent = Object.keys(classes).sort().map((k) => k + " " + classes[k]).join(" · ");
      }
      draw();
    },
    resources(r) {
      if (!cur) cur = newRun();
      const tb = $("processes");
      tb.textContent = "";
      const cpu = roles.map(() => 0), mem = roles.map(() => 0);
      for (const p of r.processes) {
        const tr = document.createElement("tr");
        cell(tr, p.role); cell(tr, p.name); cell(tr, fmt(p.cpu, 2), "num"); cell(tr, fmt(p.memory / 1048576, 1), "num");
        tb.appendChild(tr);
        const i = roles.indexOf(p.role);
        if (i >= 0) { cpu[i] += p.cpu; mem[i] += p.memory / 1048576; }
      }
      cur.rt.push(r.t);
      roles.forEach((_, i) => { cur.cpu[i].push(cpu[i]); cur.mem[i].push(mem[i]); });
      keep([cur.rt].concat(cur.cpu, cur.mem));
      draw();
    },
    scale(s) {
      const tr = document.createElement("tr");
      cell(tr, cur && cur.t.length ? fmt(cur.t[cur.t.length - 1], 0) : "");
      cell(tr, "replicas of " + s.group + ": " + s.from + " → " + s.to + (s.reason ? " (" + s.reason + ")" : ""));
      $("changes").appendChild(tr);
    },
    fault(f) {
      const tr = document.createElement("tr");
      cell(tr, fmt(f.from_s, 1) + "–" + fmt(f.to_s, 1));
      cell(tr, "fault " + f.kind + " on " + f.target);
      $("changes").appendChild(tr);
    },
    links(l) {
      const p = $("links");
      p.textContent = "";
      if (l.jaeger) { $("hops-jaeger").href = l.jaeger; $("hops-jaeger").hidden = false; }
      for (const [name, url] of [["Jaeger", l.jaeger], ["Prometheus", l.prometheus]]) {
        if (!url) continue;
        const a = document.createElement("a");
        a.href = url; a.textContent = name + " " + url; a.target = "_blank"; a.rel = "noopener";
        p.appendChild(a); p.appendChild(document.createTextNode("  "));
      }
    },
    thresholds(j) {
      $("thresholds-section").hidden = false;
      $("thresholds-judged").textContent = j.final ? "the run's verdict" : "on the measurement so far";
      const tb = $("thresholds");
      tb.textContent = "";
      for (const t of j.thresholds) {
        const tr = document.createElement("tr");
        cell(tr, t.expr, "expr");
        cell(tr, t.state + (j.final || t.state === "pending" ? "" : " so far"), "state " + t.state);
        tb.appendChild(tr);
      }
    },
    hops(h) {
      $("hops-section").hidden = false;
      $("hops-window").textContent = "the last " + fmt(h.window_s, 0) + " s of traces: " + h.traces + " traces";
      const tb = $("hops");
      tb.textContent = "";
      for (const x of h.hops || []) {
        const tr = document.createElement("tr");
        tr.dataset.hop = x.hop;
        cell(tr, x.hop, "hop"); cell(tr, String(x.calls), "num calls");
        cell(tr, fmt(x.server_p50_ms), "num"); cell(tr, fmt(x.server_p99_ms), "num");
        cell(tr, fmt(x.self_p50_ms), "num"); cell(tr, fmt(x.self_p99_ms), "num");
        cell(tr, fmt(x.wire_p50_ms), "num"); cell(tr, fmt(100 * x.share, 1) + " %", "num share");
        tb.appendChild(tr);
      }
    },
    result(r) {
      st.done++;
      if (r.kept) st.kept++; else st.lastAt = r.at;
      const e = st.exp, idx = e && e.runs ? e.runs.findIndex((x) => x.id === r.id) : -1;
      const tr = document.createElement("tr");
      tr.dataset.id = r.id;
      if (r.status !== "ok" && r.status !== "pass") tr.className = "failed";
      cell(tr, idx >= 0 ? String(e.runs[idx].index) : String(st.done));
      cell(tr, r.id);
      cell(tr, levelsText(idx >= 0 ? e.runs[idx].levels : st.levels[r.id]));
      cell(tr, r.status + (r.reason ? ": " + r.reason : "") + (r.kept ? " (kept from before)" : ""), "run-status");
      const t = r.total;
      cell(tr, String(t.requests), "num requests"); cell(tr, String(t.errors), "num errors");
      cell(tr, fmt(r.rps, 1), "num rps");
      cell(tr, fmt(t.latency.p50_ms), "num p50"); cell(tr, fmt(t.latency.p90_ms), "num p90");
      cell(tr, fmt(t.latency.p99_ms), "num p99"); cell(tr, fmt(t.latency.max_ms), "num max");
      cell(tr, (r.warnings || []).concat((r.thresholds || []).map((x) => "threshold broken: " + x)).join("; "), "flags");
      $("runs").appendChild(tr);
      if (cur && $("run-id").textContent === r.id) $("phase").textContent = r.status;
      progress();
    },
    step(s) {
      $("steps-section").hidden = false;
      const tr = document.createElement("tr");
      cell(tr, String($("steps").children.length + 1));
      cell(tr, fmt(s.rate, 1), "num rate"); cell(tr, s.verdict, "verdict");
      cell(tr, s.p99_ms ? fmt(s.p99_ms) : "", "num"); cell(tr, s.reason || "");
      $("steps").appendChild(tr);
    },
    end(e) {
      st.ended = true;
      const s = $("status");
      s.textContent = e.error ? "ended: " + e.error : "ended";
      s.className = "status " + (e.error ? "failed" : "ended");
      progress();
      source.close();
    },
  };

  setupCharts();
  const source = new EventSource("events");
  for (const kind of Object.keys(on)) {
    source.addEventListener(kind, (m) => on[kind](JSON.parse(m.data)));
  }
  source.onerror = () => {
    if (!st.ended) { $("status").textContent = "reconnecting"; $("status").className = "status"; }
  };
  source.onopen = () => {
    if (!st.ended && st.exp) { $("status").textContent = "running"; $("status").className = "status running"; }
  };
})();
