/* rescue-sim serve, play page: start a room, then answer each pause as the counsellor. The page sees only the
   supporter's view (intake + public transcript) the server sends; every text is set with textContent. */
(function () {
  "use strict";
  var root = document.getElementById("play");
  var room = null, version = -1, shownPause = null;

  var el = rescueDom.el, clear = rescueDom.clear;
  function send(url, body) { return rescueDom.json(url, body); }

  // ---- start form -------------------------------------------------------------------------------------------
  function startForm(cases) {
    var err = el("p", { "class": "error", id: "start-error" });
    var f = el("form", { id: "start" },
      el("label", { "for": "case", text: "case" }),
      el("select", { id: "case" }, cases.map(function (c) { return el("option", { value: c.id, text: c.id + " — " + c.title + " (" + c.group + ")" }); })),
      el("label", { "for": "name", text: "your name (recorded as human:<name>)" }), el("input", { id: "name", value: "counsellor", pattern: "[A-Za-z0-9_.\\-]{1,40}", required: true }),
      el("label", { "for": "turns", text: "member turns" }), el("input", { id: "turns", type: "number", min: 1, max: 60, value: 6 }),
      el("label", { "for": "seed", text: "seed" }), el("input", { id: "seed", type: "number", min: 0, value: 0 }),
      el("span"), el("button", { type: "submit", id: "start-btn", text: "Start the session" }));
    f.addEventListener("submit", function (ev) {
      ev.preventDefault();
      send("/api/play", { "case": f.querySelector("#case").value, name: f.querySelector("#name").value,
        turns: Number(f.querySelector("#turns").value), seed: Number(f.querySelector("#seed").value) })
        .then(function (r) { room = r.id; history.replaceState(null, "", "/play?room=" + encodeURIComponent(room)); render(r); poll(); })
        .catch(function (e) { err.textContent = e.message; });
    });
    clear(root).appendChild(el("div", null, el("p", { text: "You are the counsellor. After each member turn you decide: speak (to whom, with which strategy, what) or stay silent. You see what a model supporter sees: the intake and what is said in the room." }), f, err));
  }

  // ---- the room ---------------------------------------------------------------------------------------------
  function intakeBox(v) {
    var i = v.intake;
    return el("div", { "class": "intake", id: "intake", text: "Setting: " + i.setting + "\nPresenting problem: " + i.presenting_problem +
      "\nHistory (as told at intake): " + i.history + "\nWho came: " + i.members.map(function (m) {
        return m.name + " (" + m.role + (m.age !== null ? ", " + m.age : "") + ")";
      }).join(", ") });
  }

  function transcript(v) {
    return el("div", { "class": "transcript", id: "transcript" }, v.transcript.map(function (t) {
      return el("div", { "class": "turn " + t.kind, id: "turn-" + t.index },
        el("div", null, el("span", { "class": "who", text: "[" + t.index + "] " + t.speaker }),
          t.addressees.length ? el("span", { "class": "to", text: " → " + t.addressees.join(", ") }) : null),
        el("div", { "class": "text", text: t.text }));
    }));
  }

  function moveForm(a) {
    var err = el("p", { "class": "error", id: "move-error" });
    var targets = el("div", { "class": "targets", id: "targets" }, a.members.concat([a.group_label]).map(function (m) {
      return el("label", null, el("input", { type: "checkbox", name: "target", value: m, checked: m === a.group_label }), " " + m);
    }));
    var strategy = el("select", { id: "strategy" }, el("option", { value: "", text: "(none)" }),
      Object.keys(a.strategies).map(function (s) { return el("option", { value: s, title: a.strategies[s], text: s }); }));
    var text = el("textarea", { id: "text", placeholder: "What you say" });
    var close = el("input", { type: "checkbox", id: "close" });
    function submit(speak) {
      var chosen = Array.prototype.slice.call(targets.querySelectorAll("input:checked")).map(function (x) { return x.value; });
      send("/api/play/move?id=" + encodeURIComponent(room), speak ?
        { speak: true, text: text.value, targets: chosen, strategy: strategy.value || null, close: close.checked } : { speak: false })
        .then(function () { clear(box).appendChild(el("p", { "class": "note", text: "…the room goes on" })); })
        .catch(function (e) { err.textContent = e.message; });
    }
    var box = el("div", { "class": "move", id: "move" },
      el("span", { "class": "status", text: "Your move (after turn " + a.after_turn + ")" }), el("span", { text: a.reask ? "Asked again: " + a.reask : "" }),
      el("label", { text: "to" }), targets,
      el("label", { "for": "strategy", text: "strategy" }), strategy,
      el("label", { "for": "text", text: "you say" }), text,
      el("label", { "for": "close", text: "close the session after this" }), close,
      el("div", { "class": "actions" },
        el("button", { type: "button", id: "speak", text: "Speak", onclick: function () { submit(true); } }),
        el("button", { type: "button", id: "silent", text: "Stay silent", onclick: function () { submit(false); } })),
      err);
    return box;
  }

  var STATUS = { starting: "starting…", running: "the members are speaking…", your_move: "your move",
    finished: "session finished", abandoned: "session left", failed: "session failed" };

  function render(r) {
    version = r.version;
    var pauseKey = r.awaiting ? r.awaiting.after_turn + ":" + (r.awaiting.reask || "") : null;
    var keepForm = pauseKey !== null && pauseKey === shownPause && document.getElementById("move");
    var done = ["finished", "abandoned", "failed"].indexOf(r.status) >= 0;
    var head = el("div", null,
      el("p", { "class": "status", id: "status", "data-status": r.status,
        text: r.supporter + " · " + STATUS[r.status] + (r.outcome ? " — " + r.outcome : "") }),
      el("p", { "class": "note" }, "recorded in run folder ", done ? el("a", { href: "/run?name=" + encodeURIComponent(r.run), text: r.run }) : r.run),
      done ? null : el("button", { type: "button", id: "leave", text: "Leave (saves as interrupted)", onclick: function () {
        send("/api/play/leave?id=" + encodeURIComponent(room), {}).then(render);
      } }));
    if (keepForm) { root.replaceChild(head, root.firstChild); swapTranscript(r); return; }
    clear(root).appendChild(head);
    if (r.view) { root.appendChild(el("h3", { text: "Intake" })); root.appendChild(intakeBox(r.view)); root.appendChild(el("h3", { text: "Transcript" })); root.appendChild(transcript(r.view)); }
    shownPause = pauseKey;
    if (r.status === "your_move" && r.awaiting) root.appendChild(moveForm(r.awaiting));
    document.body.setAttribute("data-status", r.status);
    document.body.setAttribute("data-version", String(r.version));
  }
  function swapTranscript(r) {
    var old = document.getElementById("transcript");
    if (old && r.view) old.parentNode.replaceChild(transcript(r.view), old);
    document.body.setAttribute("data-status", r.status);
    document.body.setAttribute("data-version", String(r.version));
  }

  function poll() {
    fetch("/api/play/state?id=" + encodeURIComponent(room) + "&since=" + version, { credentials: "same-origin" })
      .then(function (r) { if (!r.ok) return r.text().then(function (t) { throw new Error(t); }); return r.json(); })
      .then(function (r) {
        if (r.version !== version) render(r);
        if (["finished", "abandoned", "failed"].indexOf(r.status) < 0) poll();
      })
      .catch(function (e) { root.appendChild(el("p", { "class": "error", text: "lost the room: " + e.message })); });
  }

  var params = new URLSearchParams(location.search);
  if (params.get("room")) { room = params.get("room"); poll(); }
  else fetch("/api/cases", { credentials: "same-origin" }).then(function (r) { return r.json(); }).then(startForm);
  window.__play = { ready: true };
})();
