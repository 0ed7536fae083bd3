/* rescue-sim serve, rating page: one blinded item at a time, the batch's instructions and anchors, each rating
   saved as it is given. Keys: 1-9/0 rate the highlighted question and move to the next; ↑/↓ pick a question;
   → or n next item, ← or p previous. Every text is set with textContent. */
(function () {
  "use strict";
  var root = document.getElementById("rate");
  var params = new URLSearchParams(location.search);
  var B = null, rater = params.get("rater") || "", batch = params.get("batch") || "";
  var given = {}, at = 0, dimAt = 0;

  var el = rescueDom.el, clear = rescueDom.clear, get = rescueDom.json;
  function key(item, dim) { return item + "\u0000" + dim; }

  function chooser() {
    get("/api/rate/batches").then(function (batches) {
      if (!batches.length) {
        root.appendChild(el("p", { "class": "note", text: "No batch to rate: start the server with --rate ITEMS.jsonl (an `rescue-sim export --format jsonl` file)." }));
        return;
      }
      var name = el("input", { id: "rater", value: rater || "", placeholder: "your rater name", pattern: "[A-Za-z0-9_.\\-]{1,40}" });
      root.appendChild(el("p", null, el("label", { "for": "rater", text: "Your name as a rater " }), name));
      root.appendChild(el("ul", null, batches.map(function (b) {
        return el("li", null, el("a", { href: "#", "data-batch": b.batch, text: b.name, onclick: function (ev) {
          ev.preventDefault();
          location.href = "/rate?batch=" + encodeURIComponent(b.batch) + "&rater=" + encodeURIComponent(name.value);
        } }), " · " + b.items + " item(s) · " + b.dimensions.join(", "));
      })));
    });
  }

  function rated(item) { return item.dimensions.filter(function (d) { return given[key(item.item_id, d)] !== undefined; }).length; }
  function done() { return B.items.filter(function (i) { return rated(i) === i.dimensions.length; }).length; }

  function save(item, dim, value) {
    var status = document.getElementById("saved");
    return fetch("/api/rate/save?batch=" + encodeURIComponent(batch), { method: "POST", credentials: "same-origin",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ rater: rater, item_id: item.item_id, dimension: dim, value: value }) })
      .then(function (r) { if (!r.ok) return r.text().then(function (t) { throw new Error(t); }); return r.json(); })
      .then(function () { given[key(item.item_id, dim)] = value; show(); })
      .catch(function (e) { if (status) { status.className = "error"; status.textContent = "not saved: " + e.message; } });
  }

  function show() {
    var item = B.items[at];
    dimAt = Math.min(dimAt, item.dimensions.length - 1);
    clear(root);
    root.appendChild(el("p", { "class": "status", id: "progress", text: "Item " + (at + 1) + " of " + B.items.length +
      " · " + done() + " of " + B.items.length + " fully rated · rater " + rater }));
    root.appendChild(el("details", null, el("summary", { text: "Instructions" }), el("div", { "class": "intake", text: B.instructions })));
    var c = item.case;
    root.appendChild(el("div", { "class": "intake", id: "case", text: c.title + " (" + c.group + "): " + c.members.map(function (m) {
      return m.name + " (" + m.role + (m.age !== null ? ", " + m.age : "") + ")"; }).join(", ") + "\nSetting: " + c.setting +
      "\nPresenting problem: " + c.presenting_problem + "\n" + item.supporter + (item.pair ? " · pair " + item.pair + ", position " + item.position : "") +
      (item.unit === "intervention" ? " · rate the marked turn " + item.turn + " only" : " · rate the whole session") }));
    root.appendChild(el("div", { "class": "transcript", id: "transcript" }, item.transcript.map(function (t) {
      return el("div", { "class": "turn" + (t.focus ? " supporter focus" : "") },
        el("div", null, el("span", { "class": "who", text: (t.focus ? "▶ " : "") + "[" + t.turn + "] " + t.speaker }),
          t.to.length ? el("span", { "class": "to", text: " → " + t.to.join(", ") }) : null),
        el("div", { "class": "text", text: t.text }));
    })));
    root.appendChild(el("div", { id: "questions" }, item.dimensions.map(function (d, di) {
      var info = B.dimensions[d] || { question: d, min: 1, max: 5, anchors: {} };
      var values = [];
      for (var v = info.min; v <= info.max; v++) values.push(v);
      return el("fieldset", { "class": "question" + (di === dimAt ? " active" : ""), "data-dim": d },
        el("legend", { text: d + ": " + info.question }),
        values.map(function (v) {
          return el("label", { "class": "anchor" }, el("input", { type: "radio", name: "q-" + d, value: v,
            checked: given[key(item.item_id, d)] === v,
            onchange: function () { dimAt = di; save(item, d, v); } }), " " + v + (info.anchors[String(v)] ? ": " + info.anchors[String(v)] : ""));
        }));
    })));
    root.appendChild(el("p", { "class": "actions" },
      el("button", { type: "button", id: "prev", text: "← previous", onclick: function () { move(-1); } }),
      el("button", { type: "button", id: "next", text: "next →", onclick: function () { move(1); } }),
      el("span", { id: "saved", "class": "note", text: rated(item) + " of " + item.dimensions.length + " question(s) answered (each saved as given)" })));
    root.appendChild(el("p", { "class": "note", text: "Keys: 1–9 (0 for 10) rate the highlighted question and go to the next; ↑ ↓ pick a question; → or n next item; ← or p previous." }));
    document.body.setAttribute("data-item", item.item_id);
  }

  function move(step) { at = Math.max(0, Math.min(B.items.length - 1, at + step)); dimAt = 0; show(); window.scrollTo(0, 0); }

  document.addEventListener("keydown", function (ev) {
    if (!B || ev.target.tagName === "INPUT" && ev.target.type !== "radio" || ev.ctrlKey || ev.metaKey || ev.altKey) return;
    var item = B.items[at], k = ev.key;
    if (k === "ArrowRight" || k === "n") { move(1); ev.preventDefault(); return; }
    if (k === "ArrowLeft" || k === "p") { move(-1); ev.preventDefault(); return; }
    if (k === "ArrowDown") { dimAt = Math.min(item.dimensions.length - 1, dimAt + 1); show(); ev.preventDefault(); return; }
    if (k === "ArrowUp") { dimAt = Math.max(0, dimAt - 1); show(); ev.preventDefault(); return; }
    if (/^[0-9]$/.test(k)) {
      var d = item.dimensions[dimAt], info = B.dimensions[d] || {}, v = k === "0" ? 10 : Number(k);
      if (v < info.min || v > info.max) return;
      ev.preventDefault();
      var di = dimAt;
      save(item, d, v).then(function () { if (dimAt === di && di < item.dimensions.length - 1) { dimAt = di + 1; show(); } });
    }
  });

  if (!batch || !rater) chooser();
  else get("/api/rate/batch?batch=" + encodeURIComponent(batch) + "&rater=" + encodeURIComponent(rater)).then(function (r) {
    B = r;
    r.given.forEach(function (g) { given[key(g.item_id, g.dimension)] = g.value; });
    var first = B.items.findIndex(function (i) { return rated(i) < i.dimensions.length; });
    at = first < 0 ? 0 : first;
    if (!B.items.length) { root.appendChild(el("p", { text: "This batch has no items." })); return; }
    show();
  }).catch(function (e) { root.appendChild(el("p", { "class": "error", text: e.message })); });
  window.__rate = { ready: true };
})();
