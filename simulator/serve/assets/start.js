/* rescue-sim serve, start page: start one session with a model supporter, then watch it on its run's page. */
(function () {
  "use strict";
  var root = document.getElementById("start-run");
  var el = rescueDom.el;
  fetch("/api/cases", { credentials: "same-origin" }).then(function (r) { return r.json(); }).then(function (cases) {
    var err = el("p", { "class": "error", id: "run-error" });
    var f = el("form", { id: "run-form" },
      el("label", { "for": "case", text: "case" }),
      el("select", { id: "case" }, cases.map(function (c) { return el("option", { value: c.id, text: c.id + " — " + c.title + " (" + c.group + ")" }); })),
      el("label", { "for": "supporter", text: "supporter (model id, sides:M, lecture:M, generic:M, silent, scripted)" }),
      el("input", { id: "supporter", value: "scripted" }),
      el("label", { "for": "turns", text: "member turns" }), el("input", { id: "turns", type: "number", min: 1, max: 60, value: 6 }),
      el("label", { "for": "seed", text: "seed" }), el("input", { id: "seed", type: "number", min: 0, value: 0 }),
      el("span"), el("button", { type: "submit", id: "run-btn", text: "Start and watch" }));
    f.addEventListener("submit", function (ev) {
      ev.preventDefault();
      fetch("/api/run", { method: "POST", credentials: "same-origin", headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ "case": f.querySelector("#case").value, supporter: f.querySelector("#supporter").value,
          turns: Number(f.querySelector("#turns").value), seed: Number(f.querySelector("#seed").value) }) })
        .then(function (r) { if (!r.ok) return r.text().then(function (t) { throw new Error(t); }); return r.json(); })
        .then(function (r) { location.href = "/run?name=" + encodeURIComponent(r.run) + "&open=" + encodeURIComponent(r.session); })
        .catch(function (e) { err.textContent = e.message; });
    });
    root.appendChild(el("div", null, el("p", { text: "The personas and tracker use the server's model (--model). The session is written to a new run folder under RUNS_DIR; its page shows it turn by turn as it happens." }), f, err));
  });
})();
