// The overseer console: one page, its views routed by the address's hash
// (#/, #/swarm/NS/NAME, #/agent/NS/NAME, #/goal/NS/NAME, #/new). Each view is kept
// live by server-sent events; every text from the cluster is set as text, never as
// markup (an agent's words and an Event's message are third-party text).
"use strict";

const csrf = document.querySelector('meta[name="csrf-token"]').content;
const main = document.getElementById("main");
let closeView = () => {};

function el(tag, attrs, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs || {})) {
    if (name === "text") node.textContent = value;
    else if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
    else if (value !== false && value !== undefined && value !== null) node.setAttribute(name, value === true ? "" : value);
  }
  for (const child of children) if (child) node.append(child);
  return node;
}

function connection(text, lost) {
  const node = document.getElementById("connection");
  node.textContent = text;
  node.classList.toggle("lost", !!lost);
}

function trouble(text) {
  const node = document.getElementById("trouble");
  node.hidden = !text;
  node.textContent = text ? `The API server: ${text}` : "";
}

// A table as the CLI prints it; the name column links to the object's page.
function table(caption, data) {
  const t = el("table", {}, el("caption", { text: caption }));
  const head = el("tr");
  data.header.forEach((h) => head.append(el("th", { scope: "col", text: h })));
  t.append(el("thead", {}, head));
  const body = el("tbody");
  if (!data.rows.length) {
    body.append(el("tr", {}, el("td", { class: "empty", colspan: data.header.length, text: "none" })));
  }
  for (const row of data.rows) {
    const tr = el("tr");
    row.cells.forEach((cell, i) => {
      const td = el("td");
      if (row.href && i === data.link) td.append(el("a", { href: row.href, text: cell }));
      else td.textContent = cell;
      tr.append(td);
    });
    body.append(tr);
  }
  t.append(body);
  return t;
}

// Follows a view of the server's: renders each new version of it with `render`.
function follow(query, render) {
  const source = new EventSource(`/api/live?${new URLSearchParams(query)}`);
  source.addEventListener("view", (event) => {
    connection("live");
    const view = JSON.parse(event.data);
    trouble(view.trouble);
    render(view);
  });
  source.onerror = () => connection("connection to the console lost; reconnecting…", true);
  return () => source.close();
}

async function post(action) {
  let response;
  try {
    response = await fetch("/api/action", {
      method: "POST",
      headers: { "content-type": "application/json", "x-csrf-token": csrf },
      body: JSON.stringify(action),
    });
  } catch (error) {
    return { error: `the console did not answer (${error.message})`, causes: [] };
  }
  return response.json();
}

async function rights(namespace) {
  try {
    const response = await fetch(`/api/rights?${new URLSearchParams({ namespace })}`);
    return await response.json();
  } catch (error) {
    return {};
  }
}

function answer(node, result) {
  node.className = `answer ${result.error ? "error" : "ok"}`;
  node.textContent = result.error || result.message;
}

// A button that does `run` once per press, disabled while it runs.
function actionButton(label, run, allowed, why) {
  const button = el("button", { type: "button", text: label, disabled: !allowed });
  const note = allowed ? null : el("span", { class: "why", text: why });
  button.addEventListener("click", async () => {
    button.disabled = true;
    try { await run(); } finally { button.disabled = false; }
  });
  return note ? [button, note] : [button];
}

function key() {
  return crypto.randomUUID();
}

function shell(view, title) {
  main.replaceChildren(el("h1", { text: title || view.title }));
  if (view.found === false) main.append(el("p", { text: view.message }));
  return view.found !== false;
}

function runsView() {
  document.title = "Runs · overseer";
  return follow({ view: "runs" }, (view) => {
    shell(view);
    main.append(el("h2", { text: "Swarms" }), table("Every swarm you can read", view.swarms));
    main.append(el("h2", { text: "Goals" }), table("Every goal you can read", view.goals));
  });
}

function timeline(view) {
  return [el("h2", { text: "Events" }), table("Newest first", view.events)];
}

function swarmView(namespace, name) {
  document.title = `Swarm ${name} · overseer`;
  return follow({ view: "swarm", namespace, name }, (view) => {
    if (!shell(view)) return;
    main.append(el("p", { class: "crumbs", text: `namespace ${namespace}` }));
    main.append(table("The swarm", view.summary));
    main.append(el("h2", { text: "Members" }), table("Its agents", view.members));
    const open = el("ul");
    for (const e of view.escalations) {
      const item = el("li");
      item.append(el("a", { href: `#/agent/${namespace}/${e.agent}`, text: e.agent }));
      item.append(` #${e.id} ${e.severity} ${e.kind}, ${e.since}: ${e.reason}`);
      open.append(item);
    }
    if (!view.escalations.length) open.append(el("li", { text: "none open" }));
    main.append(el("h2", { text: "Escalations" }), open);
    main.append(el("h2", { text: "Goals" }), table("Its goals", view.goals));
    main.append(...timeline(view));
  });
}

// SGR colours of a terminal: the 16 standard ones.
const PALETTE = ["#1b1f24", "#cf222e", "#1a7f37", "#9a6700", "#0969da", "#8250df", "#1b7c83", "#d0d7de",
  "#57606a", "#ff7b72", "#3fb950", "#d29922", "#58a6ff", "#bc8cff", "#39c5cf", "#ffffff"];

function color256(n) {
  if (n < 16) return PALETTE[n];
  if (n < 232) {
    const c = n - 16, f = (v) => (v ? 55 + v * 40 : 0);
    return `rgb(${f(Math.floor(c / 36))},${f(Math.floor(c / 6) % 6)},${f(c % 6)})`;
  }
  const g = 8 + (n - 232) * 10;
  return `rgb(${g},${g},${g})`;
}

// One line of a session, its SGR escapes rendered as styled spans, others dropped.
function ansiLine(line, state) {
  const out = document.createDocumentFragment();
  const parts = line.split(/\x1b\[([0-9;]*)m/);
  parts.forEach((part, i) => {
    if (i % 2 === 1) {
      const codes = part === "" ? [0] : part.split(";").map(Number);
      for (let k = 0; k < codes.length; k++) {
        const c = codes[k];
        if (c === 0) Object.assign(state, { fg: null, bg: null, b: false, d: false, i: false, u: false });
        else if (c === 1) state.b = true; else if (c === 2) state.d = true;
        else if (c === 3) state.i = true; else if (c === 4) state.u = true;
        else if (c === 22) state.b = state.d = false; else if (c === 23) state.i = false;
        else if (c === 24) state.u = false;
        else if (c >= 30 && c <= 37) state.fg = PALETTE[c - 30];
        else if (c >= 90 && c <= 97) state.fg = PALETTE[c - 82];
        else if (c >= 40 && c <= 47) state.bg = PALETTE[c - 40];
        else if (c >= 100 && c <= 107) state.bg = PALETTE[c - 92];
        else if (c === 39) state.fg = null; else if (c === 49) state.bg = null;
        else if ((c === 38 || c === 48) && codes[k + 1] === 5) {
          state[c === 38 ? "fg" : "bg"] = color256(codes[k + 2] || 0); k += 2;
        } else if ((c === 38 || c === 48) && codes[k + 1] === 2) {
          state[c === 38 ? "fg" : "bg"] = `rgb(${codes[k + 2] || 0},${codes[k + 3] || 0},${codes[k + 4] || 0})`; k += 4;
        }
      }
      return;
    }
    // Other escapes (cursor moves, titles) say nothing in a log.
    const text = part.replace(/\x1b\][^\x07]*(\x07|\x1b\\)/g, "").replace(/\x1b\[[0-9;?]*[A-Za-z]/g, "").replace(/\x1b./g, "");
    if (!text) return;
    const span = el("span", { text });
    for (const flag of ["b", "d", "i", "u"]) if (state[flag]) span.classList.add(flag);
    if (state.fg) span.style.color = state.fg;
    if (state.bg) span.style.backgroundColor = state.bg;
    out.append(span);
  });
  return out;
}

function sessionPane(namespace, name) {
  const pre = el("pre", { class: "session", tabindex: "0", "aria-label": `The session of ${name}`, "aria-live": "off" });
  const end = el("p", { class: "why" });
  const source = new EventSource(`/api/session?${new URLSearchParams({ namespace, name })}`);
  const state = {};
  source.addEventListener("line", (event) => {
    const stick = pre.scrollTop + pre.clientHeight >= pre.scrollHeight - 4;
    pre.append(ansiLine(event.data, state), "\n");
    while (pre.childNodes.length > 6000) pre.firstChild.remove();
    if (stick) pre.scrollTop = pre.scrollHeight;
  });
  source.addEventListener("end", (event) => {
    end.textContent = event.data;
    source.close();
  });
  return { nodes: [pre, end], close: () => source.close() };
}

function agentView(namespace, name) {
  document.title = `Agent ${name} · overseer`;
  const allowed = rights(namespace);
  // Made once, kept across updates: what the person types is never redrawn away.
  const box = el("textarea", { id: "message", rows: 3, maxlength: 16384 });
  const send = el("button", { type: "submit", text: "Send" });
  const sent = el("p", { class: "answer", role: "status", "aria-live": "polite" });
  let pending = null; // { text, key }: the same text sent again keeps its key
  const form = el("form", { class: "panel", "aria-label": "Send a message" },
    el("label", { for: "message", text: `Message to ${name} (delivered once, between its turns)` }),
    box, send, sent);
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const text = box.value;
    if (!text.trim()) { answer(sent, { error: "the message is empty" }); return; }
    if (!pending || pending.text !== text) pending = { text, key: key() };
    send.disabled = true;
    const result = await post({ key: pending.key, action: "send", namespace, name, text });
    answer(sent, result);
    if (!result.error) { box.value = ""; pending = null; }
    send.disabled = false;
  });
  const actions = el("div", { class: "panel", role: "group", "aria-label": "Its loop" });
  const acted = el("p", { class: "answer", role: "status", "aria-live": "polite" });
  const reason = el("input", { type: "text", id: "reason", value: "released from the console" });
  allowed.then((can) => {
    if (!can.send) {
      send.disabled = true;
      sent.className = "answer error";
      sent.textContent = `You may not send to agents in ${namespace}: the API server does not allow you to patch agents/status.`;
    }
    const release = actionButton("Release its loop", async () => {
      if (!confirm(`Release ${name}? Its loop ends; its overseer stops driving it.`)) return;
      answer(acted, await post({ key: key(), action: "release", namespace, name, reason: reason.value }));
    }, can.send, "(needs patch on agents/status)");
    const on = actionButton("Loop on", async () => {
      if (!confirm(`Turn ${name}'s loop on?`)) return;
      answer(acted, await post({ key: key(), action: "loop", namespace, name, enabled: true }));
    }, can.loop, "(needs patch on agents)");
    const off = actionButton("Loop off", async () => {
      if (!confirm(`Turn ${name}'s loop off?`)) return;
      answer(acted, await post({ key: key(), action: "loop", namespace, name, enabled: false }));
    }, can.loop, "");
    const attach = can.exec
      ? el("a", { href: `/attach#${encodeURIComponent(namespace)}/${encodeURIComponent(name)}`, text: "Attach: a terminal in its session" })
      : el("span", { class: "why", text: "Attaching needs create on pods/exec." });
    actions.append(el("label", { for: "reason", text: "Reason for a release" }), reason, ...release, ...on, ...off,
      el("p", {}, attach), acted);
  });
  const session = sessionPane(namespace, name);
  // The agent as it is now above the boxes, its messages and Events below them.
  const top = el("div");
  const bottom = el("div");
  const stop = follow({ view: "agent", namespace, name }, (view) => {
    if (!view.found) { top.replaceChildren(el("p", { text: view.message })); bottom.replaceChildren(); return; }
    const messages = el("table", {}, el("caption", { text: "Messages to it, newest first" }));
    const head = el("tr");
    ["#", "FROM", "STATE", "WHEN", "TEXT OR REASON"].forEach((h) => head.append(el("th", { scope: "col", text: h })));
    messages.append(el("thead", {}, head));
    const body = el("tbody");
    for (const m of view.messages) {
      body.append(el("tr", {}, el("td", { text: String(m.seq) }), el("td", { text: m.from }),
        el("td", { class: `state-${m.state}`, text: m.state }), el("td", { text: m.time }),
        el("td", { text: m.text || m.reason || "" })));
    }
    if (!view.messages.length) body.append(el("tr", {}, el("td", { class: "empty", colspan: 5, text: "none" })));
    messages.append(body);
    const crumbs = el("p", { class: "crumbs" }, `namespace ${namespace}`);
    if (view.swarm) crumbs.append(" · swarm ", el("a", { href: `#/swarm/${namespace}/${view.swarm}`, text: view.swarm }));
    top.replaceChildren(crumbs, table("The agent", view.summary),
      el("p", { text: `Progress: ${view.progress || "none reported"}` }),
      el("p", { text: view.loopEnded ? `Its loop has ended (${view.loopEnded}).` : "Its loop runs." }));
    bottom.replaceChildren(el("h2", { text: "Messages" }), messages, ...timeline(view));
  });
  main.replaceChildren(el("h1", { text: `Agent ${name}` }), top, form, actions, bottom,
    el("h2", { text: "Session" }), ...session.nodes);
  return () => { stop(); session.close(); };
}

function goalView(namespace, name) {
  document.title = `Goal ${name} · overseer`;
  const controls = el("div", { class: "panel", role: "group", "aria-label": "Pause or resume" });
  const acted = el("p", { class: "answer", role: "status", "aria-live": "polite" });
  rights(namespace).then((can) => {
    const pause = actionButton("Pause", async () => {
      answer(acted, await post({ key: key(), action: "pause", namespace, name }));
    }, can.goal, "(needs patch on goals)");
    const resume = actionButton("Resume", async () => {
      answer(acted, await post({ key: key(), action: "resume", namespace, name }));
    }, can.goal, "");
    controls.append(...pause, ...resume, acted);
  });
  const top = el("div");
  const bottom = el("div");
  const stop = follow({ view: "goal", namespace, name }, (view) => {
    if (!view.found) { top.replaceChildren(el("p", { text: view.message })); bottom.replaceChildren(); return; }
    const crumbs = el("p", { class: "crumbs" }, `namespace ${namespace}`);
    if (view.swarm) crumbs.append(" · swarm ", el("a", { href: `#/swarm/${namespace}/${view.swarm}`, text: view.swarm }));
    top.replaceChildren(crumbs, table("The goal", view.summary),
      el("p", { text: view.paused ? "Paused by a person: no new step starts." : (view.message || "") }));
    bottom.replaceChildren(el("h2", { text: "Steps" }), table("Each step and its checkpoint", view.steps),
      ...timeline(view));
  });
  main.replaceChildren(el("h1", { text: `Goal ${name}` }), top, controls, bottom);
  return stop;
}

const EXAMPLE = `apiVersion: overseer.dev/v1alpha1
kind: Goal
metadata:
  name: my-goal
spec:
  steps:
    - name: build
      action: Build the project and report what failed.
`;

function newView() {
  document.title = "New run · overseer";
  connection("");
  const yaml = el("textarea", { id: "yaml", class: "yaml", spellcheck: "false", "aria-describedby": "yaml-causes" });
  yaml.value = EXAMPLE;
  const causes = el("ul", { id: "yaml-causes", class: "causes", "aria-live": "polite" });
  const said = el("p", { class: "answer", role: "status", "aria-live": "polite" });
  let pending = null;
  async function apply(dryRun) {
    if (!dryRun && (!pending || pending.text !== yaml.value)) pending = { text: yaml.value, key: key() };
    const result = await post({ key: dryRun ? key() : pending.key, action: "apply", yaml: yaml.value, dryRun });
    answer(said, result);
    causes.replaceChildren(...(result.causes || []).map((c) => el("li", { text: `${c.field}: ${c.message}` })));
    if (result.href) location.hash = result.href;
  }
  const check = actionButton("Check (dry run)", () => apply(true), true, "");
  const create = actionButton("Create", () => apply(false), true, "");
  main.replaceChildren(el("h1", { text: "New run" }),
    el("p", { text: "A Swarm, Goal or Agent in YAML; the API server checks it (a dry run) before it is created, in the namespace it names or the console's." }),
    el("form", { class: "panel", "aria-label": "New run" },
      el("label", { for: "yaml", text: "The object (YAML)" }), yaml, causes, ...check, ...create, said));
  return () => {};
}

function route() {
  closeView();
  const parts = location.hash.replace(/^#\/?/, "").split("/").map(decodeURIComponent);
  const [view, namespace, name] = parts;
  if (view === "swarm" && name) closeView = swarmView(namespace, name);
  else if (view === "agent" && name) closeView = agentView(namespace, name);
  else if (view === "goal" && name) closeView = goalView(namespace, name);
  else if (view === "new") closeView = newView();
  else closeView = runsView();
  main.focus();
}

window.addEventListener("hashchange", route);
route();
