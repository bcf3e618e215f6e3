// The agui-fast report page: draws the JSON in #agui-data. Every string from the log is
// inserted as text (textContent, Text nodes), never parsed as markup.
(function () {
  "use strict";
  var D = JSON.parse(document.getElementById("agui-data").textContent);
  var app = document.getElementById("app");
  var PAGE = 200;
  var KIND = {run: "run", finish: "run end", error: "error", text: "message", reasoning: "reasoning",
    phase: "reasoning", tool: "tool call", result: "tool result", state: "state", messages: "messages",
    activity: "activity", step: "step", subagent: "subagent", custom: "custom", raw: "raw", event: "event"};

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  }
  function add(parent) {
    for (var i = 1; i < arguments.length; i++) {
      var k = arguments[i];
      if (k === null || k === undefined || k === false) continue;
      parent.append(typeof k === "object" ? k : String(k));
    }
    return parent;
  }
  function num(n) { return Number(n).toLocaleString("en-US"); }
  function dur(ms) {
    if (ms < 1000) return Math.round(ms) + " ms";
    if (ms < 60000) return (ms / 1000).toFixed(ms < 10000 ? 2 : 1) + " s";
    var m = Math.floor(ms / 60000);
    return m + " min " + Math.round((ms - m * 60000) / 1000) + " s";
  }
  function when(t) {
    var d = new Date(t);
    return isNaN(d.getTime()) ? String(t) : d.toISOString().replace("T", " ").replace("Z", " UTC");
  }
  function json(v, pretty) {
    var s = JSON.stringify(v, null, pretty ? 2 : undefined);
    return s === undefined ? "undefined" : s;
  }
  function shown(v) { return typeof v === "string" ? v : json(v, true); }
  function cut(s, n) { return s.length > n ? s.slice(0, n) + "\u2026" : s; }
  function one(v, n) { return cut(typeof v === "string" ? v : json(v), n); }
  function pre(text, cls) { return el("pre", cls, text); }
  function laneColor(i) { return "hsl(" + ((i * 137) % 360) + ",55%,45%)"; }

  var items = D.items || [];
  function itemAt(i) { // the last item starting at or before event i
    var lo = 0, hi = items.length;
    while (lo < hi) { var mid = (lo + hi) >> 1; if (items[mid].i <= i) lo = mid + 1; else hi = mid; }
    return lo - 1;
  }
  var findings = D.findings || [];
  var runs = D.runs || [];
  var lanes = D.lanes || [{id: null, name: "main"}];
  var t0 = D.span ? D.span[0] : null;

  // ---- titles and bodies of items --------------------------------------------------------

  function delta(it) { // a STATE_DELTA's operations, from its raw event
    var ev = it.raw && it.raw.length ? it.raw[0][1] : null;
    return ev && typeof ev === "object" ? ev.delta : undefined;
  }

  function title(it) {
    switch (it.k) {
      case "run": return "Run " + it.id + (it.thread ? "  \u00b7  thread " + it.thread : "");
      case "finish": return "Run finished: " + ((it.outcome && it.outcome.type) || "success");
      case "error": return (it.ty[0] === "SUBAGENT_ERROR" ? "Subagent error: " : "Run error: ") + (it.message || "") + (it.code ? " (" + it.code + ")" : "");
      case "text": return (it.role || "assistant") + " message" + (it.name ? " \u00b7 " + it.name : "") + (it.id ? "  " + it.id : "");
      case "reasoning": return "reasoning message" + (it.id ? "  " + it.id : "");
      case "phase": return "reasoning phase" + (it.id ? "  " + it.id : "");
      case "tool": return (it.name || "?") + (it.id ? "  " + it.id : "");
      case "result": var c = it.call !== undefined ? items[it.call] : null;
        return "result of " + (c && c.name ? c.name : "tool call") + (it.id ? "  " + it.id : "");
      case "state": var ops = delta(it);
        return it.ty[0] === "STATE_SNAPSHOT" ? "state snapshot" : "state delta" + (Array.isArray(ops) ? " (" + ops.length + " op" + (ops.length === 1 ? "" : "s") + ")" : "");
      case "messages": return "messages snapshot" + (it.count !== undefined ? " (" + it.count + " messages)" : "");
      case "activity": return (it.atype || "activity") + (it.ty[0] === "ACTIVITY_DELTA" ? " delta" : " snapshot") + (it.id ? "  " + it.id : "");
      case "step": return "step " + (it.id === null || it.id === undefined ? "" : it.id);
      case "subagent": return "subagent " + (it.name || "") + (it.ty[0] === "SUBAGENT_FINISHED" ? " finished: " + ((it.outcome && it.outcome.type) || "success") : " started");
      case "custom": return "custom " + (it.name === undefined ? "" : it.name);
      case "raw": return "raw event" + (it.source ? " from " + it.source : "");
      default: return it.ty[0] || "event";
    }
  }

  function diffView(entries, more) {
    var box = el("div", "diff");
    entries.forEach(function (d) {
      var row = el("div", "d " + (d[0] === "+" ? "add" : d[0] === "-" ? "del" : "chg"));
      add(row, el("span", "s", d[0]), el("span", "p", d[1] === "" ? "(whole state)" : d[1]));
      if (d[0] !== "+") add(row, el("span", "old", cut(json(d[2]), 400)));
      if (d[0] === "~") add(row, "\u2192");
      if (d[0] !== "-") add(row, el("span", "new", cut(json(d[3]), 400)));
      box.append(row);
    });
    if (more) box.append(el("div", "sub", "\u2026 more changes not shown"));
    if (!entries.length) box.append(el("div", "sub", "no change"));
    return box;
  }

  function usageText(u) {
    return (u || []).map(function (x) {
      var parts = [];
      if (x.inputTokens !== undefined) parts.push(num(x.inputTokens) + " in");
      if (x.outputTokens !== undefined) parts.push(num(x.outputTokens) + " out");
      if (x.totalTokens !== undefined) parts.push(num(x.totalTokens) + " total");
      if (x.reasoningTokens !== undefined) parts.push(num(x.reasoningTokens) + " reasoning");
      if (x.cachedInputTokens !== undefined) parts.push(num(x.cachedInputTokens) + " cached");
      var who = [x.provider, x.model].filter(function (s) { return s; }).join("/");
      return (who ? who + ": " : "") + parts.join(", ") + " tokens";
    }).join("; ");
  }

  function body(it, full) {
    var b = el("div");
    function txt(s, cls) {
      var d = el("div", "body" + (full ? "" : " clamp") + (cls ? " " + cls : ""), s);
      b.append(d);
    }
    switch (it.k) {
      case "text": case "reasoning":
        if (it.text !== undefined) txt(shown(it.text));
        break;
      case "tool":
        if (it.args !== undefined) {
          var a = it.args;
          try { a = json(JSON.parse(it.args), full); } catch (e) { /* not JSON: as streamed */ }
          txt(a, "mono");
        }
        if (it.res !== undefined && items[it.res] && items[it.res].content !== undefined)
          txt("\u2192 " + shown(items[it.res].content), "mono");
        if (it.parent) b.append(el("div", "sub", "in message " + it.parent));
        break;
      case "result":
        if (it.content !== undefined) txt(shown(it.content), "mono");
        if (it.error) txt("error: " + it.error);
        break;
      case "state": case "activity":
        if (it.diff) b.append(diffView(full ? it.diff : it.diff.slice(0, 8), it.dmore || (!full && it.diff.length > 8)));
        else if (it.changed === false) b.append(el("div", "sub", "state unchanged"));
        if (full && it.after !== undefined) add(b, el("div", "sub", "state after:"), pre(json(it.after, true)));
        if (!it.diff && it.content !== undefined) txt(json(it.content, full), "mono");
        break;
      case "messages":
        (it.messages || []).slice(0, full ? 200 : 5).forEach(function (m) {
          txt((m.role || "?") + ": " + (m.content !== undefined ? one(m.content, 300) : m.toolCalls ? "tool calls " + one(m.toolCalls, 200) : ""));
        });
        break;
      case "run":
        var r = runs[it.r];
        if (r) {
          var bits = [];
          if (r.outcome) bits.push("outcome " + r.outcome.type);
          if (r.error) bits.push("error");
          if (r.usage) bits.push(usageText(r.usage));
          if (r.interrupts) bits.push(r.interrupts + " interrupt" + (r.interrupts > 1 ? "s" : "") + " pending");
          if (bits.length) b.append(el("div", "sub", bits.join("  \u00b7  ")));
        }
        if (full && it.input !== undefined) add(b, el("div", "sub", "input:"), pre(json(it.input, true)));
        break;
      case "finish":
        if (it.usage) b.append(el("div", "sub", usageText(it.usage)));
        if (it.interrupts && it.interrupts.length) add(b, el("div", "sub", "pending interrupts:"), full ? pre(json(it.interrupts, true)) : el("div", "body clamp mono", one(it.interrupts, 300)));
        if (it.result !== undefined) txt("result: " + one(it.result, full ? 100000 : 300), "mono");
        break;
      case "subagent":
        if (it.outcome && full) txt(json(it.outcome, true), "mono");
        break;
      case "custom": case "raw":
        if (it.value !== undefined) txt(json(it.value, full), "mono");
        break;
    }
    if (it.stub) b.append(el("div", "sub", "details left out: the page reached its size limit"));
    return b;
  }

  function where(it) {
    var r = it.k === "run" ? runs[it.r] : null;
    if (r && r.j !== undefined) {
      var end = items[itemAt(r.j)];
      return "#" + num(r.i) + "\u2013" + num(r.j) + (end && end.t !== undefined && it.t !== undefined ? " \u00b7 " + dur(end.t - it.t) : "");
    }
    var s = it.i === it.j ? "#" + num(it.i) : "#" + num(it.i) + "\u2013" + num(it.j) + " \u00b7 " + num(it.n) + " events";
    if (it.t !== undefined && it.te !== undefined && it.te > it.t) s += " \u00b7 " + dur(it.te - it.t);
    return s;
  }

  function row(idx, open) {
    var it = items[idx];
    var box = el("div", "item k-" + it.k);
    box.dataset.idx = idx;
    box.tabIndex = 0;
    box.addEventListener("keydown", function (e) { if (e.key === "Enter" && e.target === box) box.click(); });
    var head = el("div", "head");
    if (t0 !== null) add(head, el("span", "time", it.t !== undefined ? "+" + dur(it.t - t0) : ""));
    if (lanes.length > 1 && it.lane) {
      var l = el("span", "lane", lanes[it.lane].name);
      l.style.background = laneColor(it.lane);
      head.append(l);
    }
    add(head, el("span", "kind", KIND[it.k] || it.k), el("span", "title", title(it)));
    if (it.open) head.append(el("span", "open", "not ended"));
    (it.f || []).forEach(function (fi) {
      var f = findings[fi];
      head.append(el("span", "badge " + f.level, (f.rule || f.level) + (f.stop ? " \u00b7 stop" : "")));
    });
    head.append(el("span", "where", where(it)));
    box.append(head);
    if (it.t !== undefined) head.firstChild.title = when(it.t);
    box.append(body(it, false));
    if (open) box.append(details(it));
    box.addEventListener("click", function (e) {
      if (e.target.closest(".details")) return;
      var d = box.querySelector(".details");
      if (d) { d.remove(); box.classList.remove("sel"); box.replaceChild(body(it, false), box.children[1]); }
      else { box.classList.add("sel"); box.replaceChild(body(it, true), box.children[1]); box.append(details(it)); }
    });
    if (open) { box.classList.add("sel"); box.replaceChild(body(it, true), box.children[1]); }
    return box;
  }

  function findingView(f) {
    var d = el("div", "finding " + f.level);
    var label = (f.level === "error" ? "error" : "warning") + (f.stage ? " (" + f.stage + ")" : "") + (f.rule ? " " + f.rule : "") + (f.kind ? " " + f.kind : "");
    add(d, el("b", null, label), " event #" + num(f.i) + ": ", f.msg);
    if (f.ids && f.ids.length) add(d, el("span", "sub", "  ids: " + f.ids.join(", ")));
    if (f.stop) add(d, el("div", "sub", "The reference client stops the run at this event (verification on). The page goes on with the events after it; each breaking a rule is shown and not applied."));
    return d;
  }

  function details(it) {
    var d = el("div", "details");
    (it.f || []).forEach(function (fi) { d.append(findingView(findings[fi])); });
    if (it.pause) d.append(el("div", "sub", "longest pause between its events: " + dur(it.pause)));
    if (it.t !== undefined) d.append(el("div", "sub", "time: " + when(it.t) + (it.te !== undefined && it.te !== it.t ? " \u2192 " + when(it.te) : "")));
    var raw = it.raw || [];
    d.append(el("div", "sub", raw.length === it.n ? "raw event" + (it.n > 1 ? "s" : "") + ":" : "raw events (" + raw.length + " of " + num(it.n) + "; " + num(it.more || 0) + " in between not kept):"));
    raw.forEach(function (r, k) {
      if (k > 0 && raw[k - 1][0] < r[0] - 1 && it.more) d.append(el("div", "sub", "\u2026"));
      add(d, el("div", "sub", "#" + num(r[0])), pre(typeof r[1] === "string" ? r[1] : json(r[1], true)));
    });
    return d;
  }

  // ---- filtering -------------------------------------------------------------------------

  var F = {q: "", type: "", run: "", lane: "", found: false};
  var hay = null;
  function haystack(idx) {
    if (!hay) hay = new Array(items.length);
    var h = hay[idx];
    if (h === undefined) {
      var it = items[idx];
      var parts = [title(it), it.text, it.args, it.content, it.message, it.value, it.diff, it.raw, it.after, it.messages, it.input, it.result, it.interrupts];
      h = hay[idx] = parts.map(function (p) { return p === undefined ? "" : typeof p === "string" ? p : json(p); }).join("\n").toLowerCase();
    }
    return h;
  }
  function match(idx) {
    var it = items[idx];
    if (F.type && it.ty.indexOf(F.type) < 0) return false;
    if (F.run !== "" && String(it.run) !== F.run) return false;
    if (F.lane !== "" && String(it.lane) !== F.lane) return false;
    if (F.found && !it.f) return false;
    if (F.q && haystack(idx).indexOf(F.q) < 0) return false;
    return true;
  }

  var shownList = [], page = 0;
  var list, pager, count, controls = {};

  function apply(keepPage) {
    shownList = [];
    for (var i = 0; i < items.length; i++) if (match(i)) shownList.push(i);
    if (!keepPage) page = 0;
    draw();
  }

  function draw(openIdx) {
    list.textContent = "";
    var from = page * PAGE, to = Math.min(shownList.length, from + PAGE);
    count.textContent = num(shownList.length) + " of " + num(items.length) + " items";
    if (!shownList.length) list.append(el("div", "note", "Nothing matches."));
    var filtered = shownList.length !== items.length;
    for (var k = from; k < to; k++) {
      var idx = shownList[k], it = items[idx];
      if (it.gap && !filtered) list.append(el("div", "gap", "\u22ef " + dur(it.gap) + " later"));
      var before = k > 0 ? items[shownList[k - 1]].i : -1;
      if (typeof D.untracked === "number" && before < D.untracked && it.i >= D.untracked)
        list.append(el("div", "note", "From event #" + num(D.untracked) + " on, the page shows no state or activity differences and no tool-call arguments: comparing states after every event would take too long for this log (the engine applied every event)."));
      if (typeof D.cut === "number" && before < D.cut && it.i >= D.cut)
        list.append(el("div", "note", "From event #" + num(D.cut) + " on, items keep only their title: the page reached its size limit (" + num(D.limits.maxBytes) + " bytes of data)."));
      list.append(row(idx, idx === openIdx));
    }
    pager.textContent = "";
    var pages = Math.ceil(shownList.length / PAGE);
    if (pages > 1) {
      var prev = el("button", null, "\u2039 previous"), next = el("button", null, "next \u203a");
      prev.disabled = page === 0; next.disabled = page >= pages - 1;
      prev.onclick = function () { page--; draw(); list.scrollIntoView(); };
      next.onclick = function () { page++; draw(); list.scrollIntoView(); };
      add(pager, prev, "page " + (page + 1) + " of " + pages, next);
    }
  }

  function reveal(idx) {
    if (idx === null || idx === undefined) return;
    if (!match(idx)) {
      F = {q: "", type: "", run: "", lane: "", found: false};
      Object.keys(controls).forEach(function (k) { var c = controls[k]; if (c.type === "checkbox") c.checked = false; else c.value = ""; });
      apply();
    }
    var pos = shownList.indexOf(idx);
    page = Math.floor(pos / PAGE);
    draw(idx);
    var node = list.querySelector('[data-idx="' + idx + '"]');
    if (node) node.scrollIntoView({block: "center"});
  }

  // ---- the page --------------------------------------------------------------------------

  function select(name, label, options) {
    var s = el("select");
    s.setAttribute("aria-label", label);
    s.append(new Option(label, ""));
    options.forEach(function (o) { s.append(new Option(o[1], o[0])); });
    s.onchange = function () { F[name] = s.value; apply(); };
    controls[name] = s;
    return s;
  }

  function finalView(open) {
    var fin = D.final || {};
    var box = el("details");
    box.open = open;
    box.append(el("summary", null, "Final messages and state (what the engine computed at the end)"));
    (fin.messages || []).forEach(function (m) {
      if (typeof m !== "object" || m === null) { box.append(pre(json(m))); return; }
      var d = el("div", "msg");
      add(d, el("div", "role", (m.role || "?") + "  " + (m.id || "")));
      if (m.content !== undefined) d.append(el("div", "body", shown(m.content)));
      (m.toolCalls || []).forEach(function (c) {
        var f = c && c.function ? c.function : {};
        d.append(el("div", "body mono", "\u2192 " + f.name + "(" + f.arguments + ")"));
      });
      box.append(d);
    });
    add(box, el("h2", null, "state"), pre(json(fin.state, true)));
    if (fin.interrupts && fin.interrupts.length) add(box, el("h2", null, "pending interrupts"), pre(json(fin.interrupts, true)));
    return box;
  }

  function findingsView() {
    var box = el("details", "findings");
    box.open = findings.length <= 10;
    var errors = findings.filter(function (f) { return f.level === "error"; }).length;
    var head = el("summary");
    head.append(el("h2", null, errors + " error" + (errors === 1 ? "" : "s") + ", " + (findings.length - errors) + " warning" + (findings.length - errors === 1 ? "" : "s")));
    box.append(head);
    findings.slice(0, 100).forEach(function (f) {
      var d = findingView(f);
      d.onclick = function () { reveal(f.item); };
      box.append(d);
    });
    if (findings.length > 100) box.append(el("div", "note", "\u2026 " + num(findings.length - 100) + " more: tick \u201cwith findings\u201d to list their items"));
    return box;
  }

  if (D.kind === "replay") {
    var h = el("header");
    add(h, el("h1", null, "Replay"), el("div", "meta", (D.final.messages || []).length + " messages"));
    app.append(h);
    var w = el("div", "final");
    if (findings.length) w.append(findingsView());
    w.append(finalView(true));
    app.append(w);
    return;
  }

  var header = el("header");
  var metaBits = [D.format ? D.format.toUpperCase() : null, num(D.events) + " events", runs.length + " run" + (runs.length === 1 ? "" : "s")];
  if (lanes.length > 1) metaBits.push(lanes.length - 1 + " subagent lane" + (lanes.length > 2 ? "s" : ""));
  if (D.span) metaBits.push(when(D.span[0]) + " \u2192 " + dur(D.span[1] - D.span[0]));
  metaBits.push(D.generator);
  add(header, el("h1", null, D.title), el("div", "meta", metaBits.filter(Boolean).join("  \u00b7  ")));
  var chips = el("div", "chips");
  function chip(n, label, cls) { // label: singular and plural
    var c = el("span", "chip" + (cls ? " " + cls : ""));
    add(c, el("b", null, num(n)), " " + label[n === 1 ? 0 : 1]);
    chips.append(c);
  }
  var byKind = {};
  items.forEach(function (it) { byKind[it.k] = (byKind[it.k] || 0) + 1; });
  chip(byKind.text || 0, ["message", "messages"]);
  if (byKind.reasoning) chip(byKind.reasoning, ["reasoning message", "reasoning messages"]);
  chip(byKind.tool || 0, ["tool call", "tool calls"]);
  chip(byKind.state || 0, ["state change", "state changes"]);
  if (byKind.activity) chip(byKind.activity, ["activity", "activities"]);
  var nErr = findings.filter(function (f) { return f.level === "error"; }).length;
  chip(nErr, ["error", "errors"], nErr ? "bad" : "");
  chip(findings.length - nErr, ["warning", "warnings"], findings.length - nErr ? "warn" : "");
  var total = 0;
  (D.usage || []).forEach(function (u) { total += u.totalTokens !== undefined ? u.totalTokens : (u.inputTokens || 0) + (u.outputTokens || 0); });
  if (total) chip(total, ["token", "tokens"]);
  header.append(chips);
  app.append(header);

  var bar = el("div", "bar");
  var q = el("input");
  q.type = "search"; q.placeholder = "Search text, ids, arguments, state\u2026"; q.setAttribute("aria-label", "search");
  var timer = null;
  q.oninput = function () { clearTimeout(timer); timer = setTimeout(function () { F.q = q.value.toLowerCase(); apply(); }, 150); };
  controls.q = q;
  bar.append(q);
  bar.append(select("type", "all event types", (D.types || []).map(function (t) { return [t[0], t[0] + " (" + num(t[1]) + ")"]; })));
  if (runs.length > 1) bar.append(select("run", "all runs", runs.map(function (r, i) { return [String(i), "run " + r.id]; })));
  if (lanes.length > 1) bar.append(select("lane", "all lanes", lanes.map(function (l, i) { return [String(i), i ? "subagent " + l.name : "main"]; })));
  var lab = el("label"), cb = el("input");
  cb.type = "checkbox"; cb.onchange = function () { F.found = cb.checked; apply(); };
  controls.found = cb;
  add(lab, cb, " with findings");
  bar.append(lab);
  count = el("span", "count");
  bar.append(count);
  app.append(bar);

  var wrap = el("div", "wrap");
  var tl = el("div", "tl");
  if (findings.length) tl.append(findingsView());
  tl.append(el("h2", null, "Timeline"));
  list = el("div", "list");
  pager = el("div", "pager");
  add(tl, list, pager);
  var side = el("div", "side");

  side.append(el("h2", null, "Events by type"));
  var tt = el("table");
  (D.types || []).forEach(function (t) {
    var tr = el("tr", "pick");
    add(tr, el("td", "mono", t[0]), el("td", "n", num(t[1])));
    tr.onclick = function () { F.type = t[0]; controls.type.value = t[0]; apply(); };
    tt.append(tr);
  });
  side.append(tt);

  if (runs.length) {
    side.append(el("h2", null, "Runs"));
    var rt = el("table");
    runs.forEach(function (r, i) {
      var tr = el("tr", "pick");
      add(tr, el("td", "mono", r.id), el("td", null, r.error ? "error" : r.outcome ? r.outcome.type : "not finished"),
        el("td", "n", r.usage ? usageText(r.usage).replace(/ tokens$/, "") : ""));
      tr.onclick = function () { if (controls.run) { F.run = String(i); controls.run.value = String(i); apply(); } else reveal(items.findIndex(function (it) { return it.k === "run" && it.r === i; })); };
      rt.append(tr);
    });
    side.append(rt);
  }
  if (D.usage && D.usage.length) {
    side.append(el("h2", null, "Token usage (all runs)"));
    side.append(el("div", null, usageText(D.usage)));
  }
  if (lanes.length > 1) {
    side.append(el("h2", null, "Subagent lanes"));
    lanes.slice(1).forEach(function (l, k) {
      var d = el("div", "finding");
      d.style.borderLeftColor = laneColor(k + 1);
      add(d, el("b", null, l.name), l.description ? " \u2014 " + l.description : "", l.outcome ? "  (" + l.outcome.type + ")" : "",
        l.parentToolCallId ? el("div", "sub", "from tool call " + l.parentToolCallId) : null);
      side.append(d);
    });
  }
  add(wrap, tl, side);
  app.append(wrap);
  var fin = el("div", "final");
  fin.append(finalView(false));
  app.append(fin);
  apply();
})();
