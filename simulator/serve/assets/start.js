/* rescue-sim serve, start page: start one session with a model supporter (optionally under a stressor, with
   per-role models), then watch it on its run's page. */
(function () {
  "use strict";
  var root = document.getElementById("start-run");
  var el = rescueDom.el, clear = rescueDom.clear;
  Promise.all([rescueDom.json("/api/cases"), rescueDom.json("/api/run/options")]).then(function (got) {
    var cases = got[0], options = got[1];
    var err = el("p", { "class": "error", id: "run-error" });
    var stressor = el("select", { id: "stressor" });
    function fitStressors() {  // only the stressors written for the chosen case's group
      var group = (cases.filter(function (c) { return c.id === f.querySelector("#case").value; })[0] || {}).group;
      var was = stressor.value;
      clear(stressor).appendChild(el("option", { value: "", text: "none" }));
      options.stressors.forEach(function (s) {
        if (s.groups.indexOf(group) >= 0) stressor.appendChild(el("option", { value: s.name, text: s.name + " — " + s.title }));
      });
      stressor.value = was;
      if (stressor.value !== was) stressor.value = "";
    }
    function model(role) {
      return [el("label", { "for": role + "-model", text: role + " model" }),
        el("input", { id: role + "-model", placeholder: options.models[role] + " (the server's)" })];
    }
    var f = el("form", { id: "run-form" },
      el("label", { "for": "case", text: "case" }),
      el("select", { id: "case", onchange: function () { fitStressors(); } },
        cases.map(function (c) { return el("option", { value: c.id, text: c.id + " — " + c.title + " (" + c.group + ")" }); })),
      el("label", { "for": "supporter", text: "supporter (model id, sides:M, lecture:M, generic:M, silent, scripted)" }),
      el("input", { id: "supporter", value: "scripted" }),
      el("label", { "for": "turns", text: "member turns" }), el("input", { id: "turns", type: "number", min: 1, max: 60, value: 6 }),
      el("label", { "for": "seed", text: "seed" }), el("input", { id: "seed", type: "number", min: 0, value: 0 }),
      el("label", { "for": "stressor", text: "stressor (as rescue-sim stress plays it)" }), stressor,
      model("member"), model("tracker"), model("judge"),
      el("label", { "for": "judge", text: "judge it when it ends" }), el("input", { id: "judge", type: "checkbox" }),
      el("label", { "for": "judge-mode", text: "judge mode" }),
      el("select", { id: "judge-mode" }, ["checklist", "verdict"].map(function (m) { return el("option", { value: m, text: m }); })),
      el("span"), el("button", { type: "submit", id: "run-btn", text: "Start and watch" }));
    fitStressors();
    f.addEventListener("submit", function (ev) {
      ev.preventDefault();
      err.textContent = "";
      var v = function (id) { return f.querySelector("#" + id).value; };
      rescueDom.json("/api/run", { "case": v("case"), supporter: v("supporter"), turns: Number(v("turns")),
        seed: Number(v("seed")), stressor: v("stressor"), member_model: v("member-model"), tracker_model: v("tracker-model"),
        judge_model: v("judge-model"), judge: f.querySelector("#judge").checked, judge_mode: v("judge-mode") })
        .then(function (r) { location.href = "/run?name=" + encodeURIComponent(r.run) + "&open=" + encodeURIComponent(r.session); })
        .catch(function (e) { err.textContent = e.message; });
    });
    root.appendChild(el("div", null, el("p", { text: "A model left empty is the server's (--model). A stressor changes the card or directs a member mid-session, as in a stress run; its check runs when the session ends. The session is written to a new run folder under RUNS_DIR; its page shows it turn by turn as it happens." }), f, err));
  }).catch(function (e) { root.appendChild(el("p", { "class": "error", text: e.message })); });
})();
