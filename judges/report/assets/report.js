/* rescue-sim report. Every node is built with createElement/createTextNode and every model text is set as text,
   never parsed as HTML. The session list is paged and a session's DOM is built only when it is opened. */
(function () {
  "use strict";
  var D = JSON.parse(document.getElementById("report-data").textContent);
  var SVGNS = "http://www.w3.org/2000/svg";
  var PAGE = 50;
  var state = { filters: {}, query: "", page: 0, showInner: false, open: -1 };
  var dimInfo = {};
  D.dimensions.forEach(function (d) { dimInfo[d.id] = d; });

  // ---- DOM helpers ------------------------------------------------------------------------------------------
  function setAttrs(n, attrs) {
    if (!attrs) return;
    Object.keys(attrs).forEach(function (k) {
      var v = attrs[k];
      if (v === null || v === undefined || v === false) return;
      if (k === "text") n.textContent = String(v);
      else if (k === "onclick") n.addEventListener("click", v);
      else if (k === "onchange") n.addEventListener("change", v);
      else if (k === "oninput") n.addEventListener("input", v);
      else n.setAttribute(k, String(v));
    });
  }
  function append(n, kids) {
    kids.forEach(function (k) {
      if (Array.isArray(k)) { append(n, k); return; }
      if (k === null || k === undefined || k === false) return;
      n.appendChild(typeof k === "object" ? k : document.createTextNode(String(k)));
    });
  }
  function el(tag, attrs) {
    var n = document.createElement(tag);
    setAttrs(n, attrs);
    append(n, Array.prototype.slice.call(arguments, 2));
    return n;
  }
  function sv(tag, attrs) {
    var n = document.createElementNS(SVGNS, tag);
    setAttrs(n, attrs);
    append(n, Array.prototype.slice.call(arguments, 2));
    return n;
  }
  function clear(n) { while (n.firstChild) n.removeChild(n.firstChild); return n; }
  function num(x, d) { return x === null || x === undefined ? "–" : Number(x).toFixed(d === undefined ? 2 : d); }
  function pct(x) { return x === null || x === undefined ? "–" : (100 * x).toFixed(1) + "%"; }
  function ci(m) {
    if (!m || m.mean === null || m.mean === undefined) return "–";
    if (m.low === null || m.high === null || m.low === undefined || m.n < 2) return num(m.mean);
    return [num(m.mean), " ", el("span", { "class": "ci", text: "[" + num(m.low, 1) + "–" + num(m.high, 1) + "]" })];
  }
  function hue(s) {
    var h = 0;
    for (var i = 0; i < s.length; i++) h = (h * 31 + s.charCodeAt(i)) % 360;
    return h;
  }
  function scaleColor(v) { // 0 (calm, green) .. 10 (red)
    var t = Math.max(0, Math.min(1, v / 10));
    return "hsl(" + Math.round(130 - 130 * t) + ",65%,42%)";
  }
  function table(head, rows, leftCols) {
    leftCols = leftCols || 1;
    return el("div", { "class": "scroll" }, el("table", null,
      el("thead", null, el("tr", null, head.map(function (h, i) {
        return el("th", { "class": i < leftCols ? "l" : null, title: h.title || null }, h.text !== undefined ? h.text : h);
      }))),
      el("tbody", null, rows.map(function (r) {
        return el("tr", null, r.map(function (c, i) { return el("td", { "class": i < leftCols ? "l" : null }, c); }));
      }))));
  }

  // ---- leaderboard ------------------------------------------------------------------------------------------
  function validityText(dim) {
    var texts = [];
    D.leaderboard.rows.forEach(function (r) {
      (r.dimensions || []).forEach(function (d) {
        if (d.dimension !== dim) return;
        (d.validity || []).forEach(function (v) { if (texts.indexOf(v.text) < 0) texts.push(v.text); });
      });
    });
    return texts.length ? texts.join("; ") : "not validated";
  }

  function incomplete(r) { // unfinished sessions; those being played now are said so, not counted as stopped
    var running = D.sessions.filter(function (s) {
      return s.status === "running" && s.supporter === r.supporter && (s.knows || "intake") === (r.knows || "intake");
    }).length;
    return running ? r.incomplete_sessions + " (" + running + " running)" : r.incomplete_sessions;
  }

  function renderBoard() {
    var B = D.leaderboard, box = clear(document.getElementById("board"));
    var dims = B.dimensions;
    // how sure the judges were of the turns a labelled share counts, as the terminal says it: "(P 0.55 unsure)"
    function sureness(s) {
      if (s.labelled_p === null || s.labelled_p === undefined) return "";
      var unsure = s.labelled_p < B.sure_p;
      return el("span", { "class": unsure ? "ci unsure" : "ci",
        title: "mean probability behind the " + (s.labelled_turns || 0) + " labelled turn(s)" },
        " (P " + s.labelled_p.toFixed(2) + (unsure ? " unsure)" : ")"));
    }
    var head = ["supporter", "sessions", "completed", "failed", "incomplete", "invalid outputs", "judge failures",
      "simulator failures", "scored"].concat(dims.map(function (d) {
        var info = dimInfo[d] || {};
        return { text: d, title: (info.question || d) + " — validity: " + validityText(d) };
      })).concat(["judge α", "Δtension (insider)", "Δtension (tracker)", "group objective", "critical safety"]);
    var rows = B.rows.map(function (r) {
      // a supporter with no scored session has no place on the board (rank null): it is listed, not ranked
      var place = r.rank ? "#" + r.rank + " " : "(not ranked) ";
      return [[el("span", { "class": "rank", title: r.rank ? null : "no scored session: nothing to rank it by" }, place),
        r.supporter + (r.knows && r.knows !== "intake" ? " (" + r.knows + ")" : "")],
        r.sessions, r.completed, r.failed_sessions, incomplete(r),
        (r.invalid_decisions || 0) + " / " + (r.decisions || 0), r.failed_judgments, r.simulator_failures, r.scored]
        .concat(dims.map(function (d) {
          var s = (r.dimensions || []).filter(function (x) { return x.dimension === d; })[0];
          return s ? (s.measure === "rate" ? [pct(s.value.mean), " ", el("span", { "class": "ci", text: s.value.n > 1 && s.value.low !== null ? "[" + pct(s.value.low) + "–" + pct(s.value.high) + "]" : "" }), sureness(s)] : ci(s.value)) : "–";
        }))
        .concat([num(r.alpha), ci(r.delta_tension), ci(r.delta_tension_observer), ci(r.group_objective),
          r.critical_share === null || r.critical_share === undefined ? "–" : pct(r.critical_share)]);
    });
    box.appendChild(table(head, rows));
    box.appendChild(el("table", { "class": "validity" }, el("tbody", null, dims.map(function (d) {
      return el("tr", null, el("td", { "class": "l" }, d), el("td", { "class": "l" }, validityText(d)));
    }))));
    box.appendChild(el("p", { "class": "note", text: "Means over sessions with their " + Math.round(B.confidence * 100) +
      "% bootstrap CI; rates (label dimensions) are shares of supporter turns (sides taken from checklist judges: " +
      "the expected share, the mean probability of a side). invalid outputs: supporter decisions " +
      "still invalid after re-asking / all decisions. Simulator failures: sessions in which the simulated room " +
      "malfunctioned (record faults or the judges' persona-fidelity flag); " + (B.include_faults ?
      "they are kept in every score (--include-simulator-faults). " : "they are left out of every score. ") +
      "Validity: the instrument behind each dimension, or 'not validated'." }));
    B.rows.forEach(function (r) {
      var t = r.simulator_faults;
      if (!t || !t.faulted) return;
      var models = Object.keys(t.by_member_model).map(function (m) {
        var k = t.by_member_model[m];
        return m + ": " + Object.keys(k).map(function (x) { return x + " " + k[x]; }).join(", ");
      }).join("; ");
      box.appendChild(el("p", { "class": "note", text: r.supporter + ": " + t.faulted + " session(s) with simulator faults " +
        (t.included ? "kept" : "left out") + " (member model " + models + ")" }));
    });
    if (B.human_batches && B.human_batches.length) {
      box.appendChild(el("h3", { text: "Rating batches" }));
      box.appendChild(table(["batch", "file", "exported", "design", "items", "rated", "ratings"],
        B.human_batches.map(function (b) {
          var designs = Object.keys(b.designs).map(function (d) { return d + " " + b.designs[d]; }).join(", ");
          return [b.id, b.file, String(b.created_at).slice(0, 16).replace("T", " "), designs, b.items, b.rated, b.ratings];
        })));
    }
    if (B.human && B.human.length) {
      var known = B.human.filter(function (e) { return e.labeled > 0 || !e.unknown_pi; });
      var unknown = B.human.filter(function (e) { return e.labeled === 0 && e.unknown_pi > 0; });
      box.appendChild(el("h3", { text: "With human ratings (inverse-probability-weighted prediction-powered inference)" }));
      if (known.length) {
        box.appendChild(table(["supporter", "dimension", "rated / all", "n_eff", "unknown pi", "designs", "judges only",
          "humans only (1/pi)", "IPW-PPI"], known.map(function (e) {
            var designs = Object.keys(e.designs || {}).map(function (d) { return d + " " + e.designs[d]; }).join(", ");
            return [e.supporter, e.dimension, e.labeled + " / " + (e.labeled + (e.unknown_pi || 0) + e.unlabeled),
              e.n_eff === null || e.n_eff === undefined ? "–" : e.n_eff.toFixed(1), e.unknown_pi || 0, designs || "–",
              ci(e.judge), ci(e.human), ci(e.ppi)];
          }), 2));
      }
      unknown.forEach(function (e) {
        box.appendChild(el("p", { "class": "note", text: e.supporter + " / " + e.dimension + ": " + e.unknown_pi +
          " rated item(s), none of known inclusion probability (deterministic picks): agreement figures only, no " +
          "human-corrected mean." }));
      });
      box.appendChild(el("p", { "class": "note", text: "Only ratings from batches with a known inclusion probability " +
        "pi (random, stratified, active) enter the means, each weighted by 1/pi; n_eff is their effective number " +
        "(Kish). Ratings of unknown probability (disagreement, extremes, unstable, pairs) count in agreement only." }));
    }
    if (B.human_agreement && B.human_agreement.length) {
      box.appendChild(el("h3", { text: "Judge–human agreement" }));
      box.appendChild(table(["dimension", "ratings", "items", "raters", "exact", "±1", "MAE", "Spearman", "κ (quadratic)",
        "Krippendorff α", "humans: exact", "humans: α"], B.human_agreement.map(function (a) {
          return [a.dimension, a.ratings, a.items, a.raters, pct(a.exact), pct(a.within_one), num(a.mae, 3), num(a.spearman, 3),
            num(a.weighted_kappa, 3), num(a.alpha, 3), pct(a.human_exact), num(a.human_alpha, 3)];
        })));
    }
    if (B.perturbations && B.perturbations.length) {
      box.appendChild(el("h3", { text: "Perturbations: pass rates" }));
      box.appendChild(table(["supporter", "perturbation", "sessions", "passed", "failed", "not decided", "pass rate", "pass^k"],
        B.perturbations.map(function (p) {
          return [p.supporter + (p.knows !== "intake" ? " (" + p.knows + ")" : ""), p.perturbation + (p.critical ? " (critical)" : ""),
            p.sessions, p.passed, p.failed, p.unsupported + p.errors + p.not_delivered + (p.not_said || 0), pct(p.pass_rate),
            p.pass_hat_k === null ? "–" : pct(p.pass_hat_k) + " (k=" + p.k + ")"];
        }), 2));
    }
  }

  // ---- score distributions ----------------------------------------------------------------------------------
  function renderDists() {
    var box = clear(document.getElementById("dists"));
    var dims = D.dimensions.filter(function (d) { return d.kind === "scale" && d.about === "supporter"; });
    var sups = [];
    D.sessions.forEach(function (s) { if (sups.indexOf(s.supporter) < 0) sups.push(s.supporter); });
    if (!dims.length) { box.appendChild(el("p", { "class": "note", text: "No judged sessions." })); return; }
    sups.forEach(function (sup) {
      var row = el("div", null, el("h3", { text: sup }));
      dims.forEach(function (d) {
        var lo = d.min, hi = d.max, bins = (hi - lo) * 2 + 1, counts = new Array(bins).fill(0);
        D.sessions.forEach(function (s) {
          if (s.supporter !== sup || s.scores[d.id] === undefined) return;
          counts[Math.max(0, Math.min(bins - 1, Math.round((s.scores[d.id] - lo) * 2)))]++;
        });
        var max = Math.max.apply(null, counts.concat([1])), w = 150, hgt = 60, bw = w / bins;
        var g = sv("svg", { width: w, height: hgt + 14, "class": "chart", role: "img" },
          sv("title", { text: sup + " · " + d.id + ": sessions per score (0.5 bins)" }));
        counts.forEach(function (c, i) {
          var bh = (hgt - 4) * c / max;
          g.appendChild(sv("rect", { x: i * bw + 1, y: hgt - bh, width: bw - 2, height: bh, fill: "#5b84c4" },
            sv("title", { text: (lo + i / 2) + ": " + c })));
        });
        g.appendChild(sv("text", { x: 2, y: hgt + 12, text: String(lo) }));
        g.appendChild(sv("text", { x: w - 10, y: hgt + 12, text: String(hi) }));
        row.appendChild(el("div", { "class": "hist" }, el("div", { "class": "t", text: d.id }), g));
      });
      box.appendChild(row);
    });
  }

  // ---- session list -----------------------------------------------------------------------------------------
  var FILTERS = [["case", "case"], ["group", "group"], ["supporter", "supporter"], ["perturbation", "perturbation"],
    ["status", "status"]];
  function value(s, key) { var v = s[key]; return v === null || v === undefined ? "(none)" : String(v); }

  function renderFilters() {
    var box = clear(document.getElementById("filters"));
    FILTERS.forEach(function (f) {
      var values = [];
      D.sessions.forEach(function (s) { var v = value(s, f[0]); if (values.indexOf(v) < 0) values.push(v); });
      values.sort();
      var sel = el("select", { id: "filter-" + f[0], onchange: function (e) { state.filters[f[0]] = e.target.value; state.page = 0; renderList(); } },
        el("option", { value: "", text: "all" }), values.map(function (v) { return el("option", { value: v, text: v }); }));
      box.appendChild(el("label", null, f[1] + " ", sel));
    });
    box.appendChild(el("label", null, "session ", el("input", { id: "filter-query", type: "search", placeholder: "id contains…",
      oninput: function (e) { state.query = e.target.value.toLowerCase(); state.page = 0; renderList(); } })));
  }

  function filtered() {
    var out = [];
    D.sessions.forEach(function (s, i) {
      for (var k in state.filters) if (state.filters[k] && value(s, k) !== state.filters[k]) return;
      if (state.query && s.id.toLowerCase().indexOf(state.query) < 0) return;
      out.push(i);
    });
    return out;
  }

  // ---- addresses: every session has its own, to open it directly or send it --------------------------------
  // served (rescue-sim serve): the page's URL with `open=ID`; a report file: the anchor `#session=ID`, with
  // `&run=RUN` where two run folders hold the same session id
  var idCount = {};
  D.sessions.forEach(function (s) { idCount[s.id] = (idCount[s.id] || 0) + 1; });
  function address(i) {
    var s = D.sessions[i];
    if (D.detail_url) {
      var q = new URLSearchParams(location.search);
      q.set("open", s.id);
      return location.pathname + "?" + q.toString();
    }
    var h = new URLSearchParams();
    h.set("session", s.id);
    if (idCount[s.id] > 1) h.set("run", s.run);
    return "#" + h.toString();
  }
  function addressed() { // the session the address names, or -1
    var q = new URLSearchParams(D.detail_url ? location.search : location.hash.replace(/^#/, ""));
    var id = q.get(D.detail_url ? "open" : "session"), run = q.get("run");
    if (!id) return -1;
    for (var i = 0; i < D.sessions.length; i++) {
      if (D.sessions[i].id === id && (run === null || D.sessions[i].run === run)) return i;
    }
    return -1;
  }
  function follow(e, i) { // a plain click opens the session here and puts its address in the location bar
    if (e.ctrlKey || e.metaKey || e.shiftKey || e.altKey || (e.button !== undefined && e.button !== 0)) {
      if (e.target.closest && e.target.closest("a")) return; // a new tab or window: the link does it
    }
    e.preventDefault();
    if (address(i) !== location.pathname + location.search + location.hash) history.pushState(null, "", address(i));
    openSession(i);
  }

  function renderList() {
    var box = clear(document.getElementById("list"));
    var idx = filtered(), pages = Math.max(1, Math.ceil(idx.length / PAGE));
    state.page = Math.min(state.page, pages - 1);
    var shown = idx.slice(state.page * PAGE, (state.page + 1) * PAGE);
    var pager = el("div", { "class": "pager" },
      el("button", { type: "button", onclick: function () { if (state.page > 0) { state.page--; renderList(); } }, text: "‹ previous" }),
      el("span", { id: "page-info", text: idx.length + " session(s) · page " + (state.page + 1) + " of " + pages }),
      el("button", { type: "button", onclick: function () { if (state.page < pages - 1) { state.page++; renderList(); } }, text: "next ›" }));
    box.appendChild(pager);
    var t = el("table", { id: "session-table" }, el("thead", null, el("tr", null,
      ["session", "case", "group", "supporter", "perturbation", "trial", "status", "turns", "overall", "human ratings"].map(function (h, i) {
        return el("th", { "class": i < 5 ? "l" : null, text: h });
      }))));
    var body = el("tbody");
    shown.forEach(function (i) {
      var s = D.sessions[i];
      var tr = el("tr", { "class": "row", "data-session": i, onclick: function (e) { follow(e, i); } },
        el("td", { "class": "l" }, el("a", { "class": "open", href: address(i), text: s.id })),
        el("td", { "class": "l" }, s.case), el("td", { "class": "l" }, s.group),
        el("td", { "class": "l" }, s.supporter + (s.knows !== "intake" ? " (" + s.knows + ")" : "")),
        el("td", { "class": "l" }, s.perturbation || "–"), el("td", null, s.trial),
        el("td", null, el("span", { "class": "tag " + s.status, text: s.status + (s.simulator_failure ? " · sim. fault" : ""), title: (s.faults || []).join("\n") })),
        el("td", null, s.turns), el("td", null, num(s.scores.overall_quality)), el("td", null, s.rated || ""));
      body.appendChild(tr);
    });
    t.appendChild(body);
    box.appendChild(t);
  }

  // ---- pictures ---------------------------------------------------------------------------------------------
  function graphSvg(snap, members, title) {
    var w = 260, h = 250, cx = w / 2, cy = 138, R = 72;
    var pos = {};
    members.forEach(function (m, i) {
      var a = -Math.PI / 2 + 2 * Math.PI * i / members.length;
      pos[m] = [cx + R * Math.cos(a), cy + R * Math.sin(a)];
    });
    var id = "arrow" + Math.random().toString(36).slice(2);
    var g = sv("svg", { width: w, height: h, "class": "chart graph", role: "img" }, sv("title", { text: title }),
      sv("defs", null, sv("marker", { id: id, viewBox: "0 0 10 10", refX: 9, refY: 5, markerWidth: 6, markerHeight: 6, orient: "auto-start-reverse" },
        sv("path", { d: "M 0 0 L 10 5 L 0 10 z", fill: "#777" }))),
      sv("text", { x: 6, y: 14, text: title + (snap ? " (turn " + snap.t + (snap.pattern ? ", " + snap.pattern : "") + ")" : "") }));
    if (!snap) { g.appendChild(sv("text", { x: 6, y: 40, text: "no state recorded" })); return g; }
    snap.e.forEach(function (e) {
      var a = pos[e[0]], b = pos[e[1]];
      if (!a || !b) return;
      var dx = b[0] - a[0], dy = b[1] - a[1], len = Math.sqrt(dx * dx + dy * dy) || 1;
      var ox = -dy / len * 5, oy = dx / len * 5, r = 18;
      var x1 = a[0] + dx / len * r + ox, y1 = a[1] + dy / len * r + oy, x2 = b[0] - dx / len * r + ox, y2 = b[1] - dy / len * r + oy;
      g.appendChild(sv("line", { x1: x1, y1: y1, x2: x2, y2: y2, stroke: scaleColor(e[3]), "stroke-width": 1 + e[2] / 2.5,
        "marker-end": "url(#" + id + ")", opacity: 0.85 },
        sv("title", { text: e[0] + " → " + e[1] + ": warmth " + num(e[2], 1) + ", tension " + num(e[3], 1) })));
    });
    members.forEach(function (m) {
      var p = pos[m], inten = snap.m[m];
      g.appendChild(sv("circle", { cx: p[0], cy: p[1], r: 16, fill: inten === undefined ? "#ccc" : scaleColor(inten), opacity: 0.9 },
        sv("title", { text: m + ": intensity " + (inten === undefined ? "?" : num(inten, 1)) })));
      var ox = p[0] - cx, oy = p[1] - cy, ol = Math.sqrt(ox * ox + oy * oy) || 1;
      g.appendChild(sv("text", { x: p[0] + ox / ol * 30, y: p[1] + oy / ol * 28 + 4, "text-anchor": "middle", text: m }));
    });
    return g;
  }

  function series(snaps, members) {
    return {
      turns: snaps.map(function (s) { return s.t; }),
      tension: snaps.map(function (s) { return s.e.length ? s.e.reduce(function (a, e) { return a + e[3]; }, 0) / s.e.length : null; }),
      warmth: snaps.map(function (s) { return s.e.length ? s.e.reduce(function (a, e) { return a + e[2]; }, 0) / s.e.length : null; }),
      members: members.map(function (m) { return { name: m, values: snaps.map(function (s) { return s.m[m] === undefined ? null : s.m[m]; }) }; }),
      patterns: snaps.map(function (s) { return s.pattern; })
    };
  }

  function trajectorySvg(snaps, members, title, maxTurn) {
    var w = 440, h = 230, L = 28, T = 22, PW = w - L - 10, PH = 140;
    var S = series(snaps, members);
    var x = function (t) { return L + PW * t / (maxTurn + 1); }; // one column per turn; the last one has width too
    var y = function (v) { return T + PH - PH * v / 10; };
    var g = sv("svg", { width: w, height: h, "class": "chart trajectory", role: "img" }, sv("title", { text: title }),
      sv("text", { x: 6, y: 14, text: title }));
    [0, 5, 10].forEach(function (v) {
      g.appendChild(sv("line", { x1: L, x2: L + PW, y1: y(v), y2: y(v), stroke: "#e5e8ee" }));
      g.appendChild(sv("text", { x: 4, y: y(v) + 4, text: String(v) }));
    });
    function line(values, color, dash, label) {
      var pts = [];
      values.forEach(function (v, i) { if (v !== null) pts.push(x(S.turns[i]).toFixed(1) + "," + y(v).toFixed(1)); });
      if (pts.length) g.appendChild(sv("polyline", { points: pts.join(" "), fill: "none", stroke: color, "stroke-width": 2,
        "stroke-dasharray": dash || null }, sv("title", { text: label })));
    }
    line(S.tension, "#c8423b", null, "mean tension");
    line(S.warmth, "#2a9d6f", null, "mean warmth");
    S.members.forEach(function (m, i) { line(m.values, memberColor(i), "4 3", m.name + " distress (intensity)"); });
    // pattern timeline
    var py = T + PH + 18;
    g.appendChild(sv("text", { x: L, y: py - 3, text: "relation pattern" }));
    for (var i = 0; i < S.turns.length; i++) {
      var x0 = x(S.turns[i]), x1 = i + 1 < S.turns.length ? x(S.turns[i + 1]) : x(S.turns[i] + 1);
      var p = S.patterns[i] || "(none)";
      g.appendChild(sv("rect", { x: x0, y: py, width: Math.max(1, x1 - x0), height: 14, fill: "hsl(" + hue(p) + ",55%,70%)" },
        sv("title", { text: "turn " + S.turns[i] + ": " + p })));
      if (x1 - x0 > 60 && (i === 0 || S.patterns[i - 1] !== S.patterns[i])) g.appendChild(sv("text", { x: x0 + 2, y: py + 11, text: p }));
    }
    g.appendChild(sv("text", { x: L, y: h - 6, text: "turn 0" }));
    g.appendChild(sv("text", { x: x(maxTurn) - 20, y: h - 6, text: "turn " + maxTurn }));
    return g;
  }

  function memberColor(i) { return "hsl(" + (220 + 50 * i) % 360 + ",55%,45%)"; }
  function legend(members) {
    return el("div", { "class": "legend" }, "solid: mean tension (red), mean warmth (green); dashed, each member's distress: ",
      members.map(function (m, i) { return [el("span", { style: "color:" + memberColor(i) + ";font-weight:600", text: "┄ " + m }), " "]; }),
      "; band: relation pattern per turn (hover for names). Scale 0–10.");
  }

  // ---- session viewer ---------------------------------------------------------------------------------------
  function marked(text, quotes, turn) {
    // split text into plain runs and <mark> runs for every quote found in it (case-insensitive)
    var low = text.toLowerCase(), spans = [];
    quotes.forEach(function (q) {
      var needle = q.quote.toLowerCase().trim();
      if (!needle) return;
      var at = low.indexOf(needle);
      if (at >= 0) spans.push([at, at + needle.length, q]);
    });
    spans.sort(function (a, b) { return a[0] - b[0]; });
    var out = [], pos = 0;
    spans.forEach(function (s) {
      if (s[0] < pos) return;
      if (s[0] > pos) out.push(text.slice(pos, s[0]));
      out.push(el("mark", { id: s[2].id, title: s[2].label, text: text.slice(s[0], s[1]) }));
      pos = s[1];
    });
    if (pos < text.length) out.push(text.slice(pos));
    return out;
  }

  function roomLine(room) {
    // the room measures of a member line (judges.room_audit.room_turns): does it play its own case, in its own voice
    var parts = [room.grounded ? "grounded (" + room.grounded + ")" : "not grounded in the case"];
    if (room.voice) parts.push("counsellor voice: " + room.voice);
    if (room.third) parts.push("third person: " + room.third);
    if (room.address) parts.push("wrong address: " + room.address);
    if (room.given) parts.push("own fact given away: " + room.given);
    if (room.figure) parts.push("figure not on the card: " + room.figure);
    if (room.claimed) parts.push("another's fact told as own: " + room.claimed);
    if (room.echo) parts.push("echo of " + room.echo + (room.echo_recorded ? "" : " (not flagged)"));
    var bad = !room.grounded || room.voice || room.third || room.address || room.given || room.figure || room.claimed ||
      room.echo;
    return el("div", { "class": "room" + (bad ? " room-bad" : ""), text: "room: " + parts.join(" · ") });
  }

  function innerBox(inner, directive, beat) {
    var lines = [];
    if (inner) {
      lines.push("feels " + inner.emotion + " (" + inner.intensity + "/10), felt heard " + inner.heard + "/10");
      if (inner.landed) lines.push("how it landed: " + inner.landed);
      inner.toward.forEach(function (t) { lines.push("toward " + t[0] + ": warmth " + t[1] + ", tension " + t[2]); });
      if (inner.reason) lines.push("why: " + inner.reason);
    }
    if (directive) lines.push("stage direction (perturbation): " + directive);
    if (beat) lines.push("stage direction (director): " + beat);
    return el("div", { "class": "inner", text: lines.join("\n") });
  }

  function decisionLine(dec) {
    var parts = ["decision after turn " + dec.after, "to " + (dec.targets.length ? dec.targets.join(", ") : "–") + (dec.kind ? " (" + dec.kind + ")" : "")];
    parts.push("strategy " + (dec.strategy || "not stated"));
    if (dec.close) parts.push("closes the session");
    if (dec.valid === false) parts.push("invalid output");
    return el("div", { "class": "dec", title: dec.why || null, text: parts.join(" · ") });
  }

  var live = null; // served pages: the event stream of the open session while it is still running

  function watch(i) {
    // a session still running (started from the page, or written by another process) is redrawn as it grows
    if (live) { live.close(); live = null; }
    if (!D.live_url || D.sessions[i].status !== "running") return; // stopped ones (incomplete) do not grow
    live = new EventSource(D.live_url + encodeURIComponent(D.sessions[i].id));
    live.addEventListener("session", function (ev) {
      var m = JSON.parse(ev.data), s = D.sessions[i], status = m.status === "incomplete" ? "running" : m.status;
      var grew = s.turns !== m.turns || s.status !== status;
      s.status = status; s.end = m.end; s.turns = m.turns; // it grows: running
      D.details[i] = m.detail;
      if (grew) renderList(); // the table's row says what the transcript below it shows
      if (state.open === i) showSession(i, m.detail, true);
    });
    live.addEventListener("calls", function (ev) {
      var lines = JSON.parse(ev.data).lines, b = document.getElementById("live");
      if (b) b.textContent = lines.length ? "model calls in flight: " + lines.join("; ") : "";
    });
    live.addEventListener("end", function (ev) {
      var m = JSON.parse(ev.data || "{}");
      if (m.status) D.sessions[i].status = m.status;
      live.close(); live = null;
      renderList();
      if (state.open === i && D.details[i]) showSession(i, D.details[i], true);
    });
  }

  function openSession(i) {
    watch(i);
    // a served page (rescue-sim serve) carries no details: it fetches the session's detail from its own server
    if (D.details[i] || !D.detail_url) { showSession(i, D.details[i]); return; }
    var v = clear(document.getElementById("viewer"));
    v.hidden = false;
    v.appendChild(el("p", { "class": "note", text: "loading session " + D.sessions[i].id + "…" }));
    fetch(D.detail_url + encodeURIComponent(D.sessions[i].id), { credentials: "same-origin" })
      .then(function (r) {
        if (!r.ok) return r.text().then(function (t) { throw new Error(t || r.statusText); });
        return r.json();
      })
      .then(function (d) { D.details[i] = d; showSession(i, d); })
      .catch(function (e) { clear(v).appendChild(el("p", { "class": "note", text: "could not load the session: " + e.message })); });
  }

  function showSession(i, d, refresh) {
    state.open = i;
    var s = D.sessions[i];
    var v = clear(document.getElementById("viewer"));
    v.hidden = false;
    v.appendChild(el("h2", { id: "viewer-title" }, "Session " + s.id, " ",
      el("a", { id: "session-link", "class": "permalink", href: address(i), title: "this session's own address: open it, copy it, send it", text: "link" })));
    if (live) v.appendChild(el("p", { "class": "note live" }, el("b", { text: "live" }), " · ", el("span", { id: "live" })));
    v.appendChild(el("p", null, s.title + " (" + s.group + ") · supporter " + s.supporter + " · " + s.status +
      (s.end ? " (" + s.end + ")" : "") + (s.perturbation ? " · perturbation " + s.perturbation : "") + " · seed " + s.seed +
      " · trial " + s.trial + " · run " + s.run));
    if (s.failure) v.appendChild(el("p", { "class": "note", text: "failure: " + s.failure }));
    (s.faults || []).forEach(function (f) {
      v.appendChild(el("p", { "class": "note", text: "simulator fault" + (D.leaderboard.include_faults ? " (kept in the leaderboard): " : " (left out of the leaderboard): ") + f }));
    });
    v.appendChild(el("p", { "class": "note", text: "Setting: " + d.case.setting + " Problem: " + d.case.problem + " Members: " +
      d.case.members.map(function (m) { return m.name + " (" + m.role + (m.age !== null ? ", " + m.age : "") + ")"; }).join(", ") }));
    // pictures
    var maxTurn = Math.max.apply(null, [1].concat(d.self_report.map(function (x) { return x.t; }), d.observer.map(function (x) { return x.t; })));
    var first = d.self_report[0] || d.observer[0];
    v.appendChild(el("h3", { text: "Relations at the start and the end" }));
    v.appendChild(el("div", { "class": "cols" }, graphSvg(first, d.members, "start"),
      graphSvg(d.self_report[d.self_report.length - 1], d.members, "end, insider view"),
      graphSvg(d.observer[d.observer.length - 1], d.members, "end, tracker view")));
    v.appendChild(el("p", { "class": "legend", text: "Arrows: how one member stands toward another; colour = tension (green calm … red), width = warmth. Circles: colour = distress." }));
    v.appendChild(el("h3", { text: "Trajectories: insider (self-report) vs tracker (observer)" }));
    v.appendChild(el("div", { "class": "cols" }, trajectorySvg(d.self_report, d.members, "insider view", maxTurn),
      trajectorySvg(d.observer, d.members, "tracker view", maxTurn)));
    v.appendChild(legend(d.members));
    // evidence quotes by turn
    var quotes = {};
    var J = d.judgment;
    if (J) J.scores.forEach(function (sc, si) {
      sc.ev.forEach(function (e, ei) {
        var q = { id: "ev-" + si + "-" + ei, quote: e[1], label: sc.judge + " · " + sc.item + " " + sc.dim, turn: e[0] };
        (quotes[e[0]] = quotes[e[0]] || []).push(q);
      });
    });
    // transcript
    var innerBtn = el("button", { type: "button", id: "toggle-inner", text: state.showInner ? "hide inner states" : "show inner states",
      onclick: function () { state.showInner = !state.showInner; showSession(i, D.details[i], true); } });
    v.appendChild(el("h3", null, "Transcript ", innerBtn));
    var tr = el("div", { "class": "transcript", id: "transcript" });
    var passes = {}, facts = {};
    d.passes.forEach(function (p) { passes[p] = true; });
    (d.lines || []).forEach(function (f) { (facts[f.turn] = facts[f.turn] || []).push(f); });
    d.turns.forEach(function (t) {
      var box = el("div", { "class": "turn " + t.kind, id: "turn-" + t.i },
        el("div", null, el("span", { "class": "who", text: "[" + t.i + "] " + t.sp }),
          t.to.length ? el("span", { "class": "to", text: " → " + t.to.join(", ") }) : null,
          t.pattern ? el("span", { "class": "to", text: "  · tracker: " + t.pattern }) : null),
        el("div", { "class": "text" }, marked(t.text, quotes[t.i] || [], t.i)));
      if (t.dec) box.appendChild(decisionLine(t.dec));
      if (t.room) box.appendChild(roomLine(t.room));
      if (t.dropped) box.appendChild(el("div", { "class": "room", text: "stopped at the length limit; the unfinished words left out: " + t.dropped }));
      (facts[t.i] || []).forEach(function (f) { box.appendChild(el("div", { "class": "fact " + f.kind, text: f.kind + ": " + f.text })); });
      if (state.showInner && (t.inner || t.directive || t.beat)) box.appendChild(innerBox(t.inner, t.directive, t.beat));
      tr.appendChild(box);
      if (passes[t.i]) tr.appendChild(el("div", { "class": "pass", text: "Therapist stays silent after turn " + t.i }));
    });
    v.appendChild(tr);
    // copied, repeated and voiced counsellor lines: measured from the record, capping the judges' scores
    v.appendChild(el("h3", { id: "lines-title", text: "Copied, repeated and voiced counsellor lines" }));
    var lines = d.lines || [];
    v.appendChild(lines.length ? el("ul", { id: "lines" }, lines.map(function (f) {
      return el("li", null, el("a", { onclick: function () { jump("turn-" + f.turn, f.turn); }, text: "turn " + f.turn }),
        " " + f.kind + ": " + f.text);
    })) : el("p", { "class": "note", id: "lines", text: "none: no counsellor turn is mostly members' words, its own earlier line or said as a member" }));
    if (d.safety.length) {
      v.appendChild(el("h3", { text: "Safety events" }));
      v.appendChild(table(["member", "turn", "source", "addressed", "note"], d.safety.map(function (e) {
        return [e.member, e.at, e.source, e.addressed ? "yes" : "no", e.note];
      }), 1));
    }
    // judge scores
    v.appendChild(el("h3", { text: "Judge scores" }));
    if (!J) v.appendChild(el("p", { "class": "note", text: "not judged" }));
    else {
      v.appendChild(el("p", { "class": "note", text: "judges: " + J.judges.join(", ") + " · " + J.status + " · " + J.mode +
        (J.simulator_failure ? " · simulator failure: " + J.simulator_failure : "") + (J.flagged.length ? " · split: " + J.flagged.join(", ") : "") }));
      J.failures.forEach(function (f) { v.appendChild(el("p", { "class": "note", text: "failed: " + f.judge + " " + f.unit + ": " + f.reason })); });
      var rows = J.aggregates.map(function (a) {
        var own = [];
        J.scores.forEach(function (x, si) { if (x.item === a.item && x.dim === a.dim) own.push({ x: x, si: si }); });
        return [a.item, a.dim, a.mean !== null ? num(a.mean) : (a.majority || "tie"),
          own.map(function (o) { var x = o.x; return el("div", { title: x.why }, x.judge + ": " + (x.score !== null ? x.score : x.label + (x.strength !== null ? " " + x.strength : ""))); }),
          el("div", { "class": "ev" }, own.map(function (o) {
            return o.x.ev.map(function (e, ei) {
              return el("div", null, el("a", { onclick: function () { jump("ev-" + o.si + "-" + ei, e[0]); }, text: "turn " + e[0] + ": “" + e[1] + "”" }),
                e[2] ? null : " (not in that turn)");
            }).concat((o.x.answers || []).map(function (a) { // checklist items: P(yes), and whether a yes raises the score
              var q = "P(yes) " + num(a[2]) + (a[3] ? " ↑ " : " ↓ ") + a[1];
              return a[0] === null ? el("div", { "class": "item", text: q })
                : el("div", { "class": "item" }, el("a", { onclick: function () { jump("turn-" + a[0], a[0]); }, text: "turn " + a[0] }), " · " + q);
            }));
          })),
          el("div", { "class": "ev" }, own.map(function (o) { return el("div", { text: o.x.judge + ": " + o.x.why }); }))];
      });
      var tbl = table(["item", "dimension", "panel", "judges", "evidence", "reasoning"], rows, 2);
      tbl.classList.add("scores");
      v.appendChild(tbl);
    }
    if (d.ratings.length) {
      v.appendChild(el("h3", { text: "Human ratings" }));
      v.appendChild(table(["item", "dimension", "rater", "value"], d.ratings.map(function (r) { return [r.item, r.dim, r.rater, r.value]; }), 3));
    }
    if (!refresh) v.scrollIntoView();
  }

  function jump(id, turn) {
    var m = document.getElementById(id) || document.getElementById("turn-" + turn);
    if (!m) return;
    m.scrollIntoView({ block: "center" });
    m.classList.add("flash");
    setTimeout(function () { m.classList.remove("flash"); }, 1500);
  }

  // ---- start ------------------------------------------------------------------------------------------------
  document.getElementById("meta").textContent = D.runs.length + " run folder(s): " + D.runs.join(", ") + " · " +
    D.sessions.length + " session(s) · generated " + D.generated_at;
  renderBoard();
  renderFilters();
  renderList();
  renderDists();
  var at = addressed(); // the page's address may name a session (`?open=ID` served, `#session=ID` in a file)
  if (at >= 0) openSession(at);
  window.addEventListener("popstate", function () { var i = addressed(); if (i >= 0 && i !== state.open) openSession(i); });
  window.addEventListener("hashchange", function () { var i = addressed(); if (i >= 0 && i !== state.open) openSession(i); });
  window.__report = { ready: true, readyAt: performance.now(), sessions: D.sessions.length, open: openSession };
  document.body.setAttribute("data-ready", "1");
})();
