// The Jiu board page: draws what the server sends and sends the person's clicks back.
// The server keeps the game and decides every rule question (legal moves, next hops, victims);
// this script never decides legality. API: frontends/server.py.
"use strict";

const N = 14, GAP = 42, MARGIN = 47, COLS = "abcdefghijklmn";
const SVG_NS = "http://www.w3.org/2000/svg";
const $ = (id) => document.getElementById(id);

let game = null;      // the game's view from the server
let review = null;    // the review's view (uploaded record)
let sel = null;       // the person's input so far: {path, jump, info, victims, need, choices}
let busy = false;

const idx = (name) => (parseInt(name.slice(1), 10) - 1) * N + COLS.indexOf(name[0]);
const pname = (i) => COLS[i % N] + (Math.floor(i / N) + 1);
const xy = (name) => { const i = idx(name); return [MARGIN + (i % N) * GAP, MARGIN + (N - 1 - Math.floor(i / N)) * GAP]; };

function el(tag, attrs, parent, text) {
  const e = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  if (text !== undefined) e.textContent = text;
  if (parent) parent.appendChild(e);
  return e;
}

async function api(method, url, body) {
  const opts = { method, headers: {} };
  if (body !== undefined) { opts.headers["Content-Type"] = "application/json"; opts.body = JSON.stringify(body); }
  const res = await fetch(url, opts);
  let data;
  try { data = await res.json(); } catch (e) { data = { error: res.statusText }; }
  if (!res.ok) throw new Error(data.error || res.statusText);
  return data;
}

function setBusy(flag) { busy = flag; document.body.dataset.busy = flag ? "1" : "0"; }
function say(text) { $("message").textContent = text || ""; }

// ------------------------------------------------------------------ the board
const layers = {};
function drawGrid() {
  const svg = $("board");
  const g = el("g", {}, svg);
  const lo = MARGIN, hi = MARGIN + (N - 1) * GAP;
  for (let k = 0; k < N; k++) {
    const p = MARGIN + k * GAP;
    el("line", { x1: lo, y1: p, x2: hi, y2: p, class: "line" }, g);
    el("line", { x1: p, y1: lo, x2: p, y2: hi, class: "line" }, g);
    el("text", { x: p, y: hi + 26, class: "coord" }, g, COLS[k]);
    el("text", { x: lo - 28, y: MARGIN + (N - 1 - k) * GAP, class: "coord" }, g, String(k + 1));
  }
  const [x1, y1] = xy("g7"), [x2, y2] = xy("h8");
  el("line", { x1, y1, x2, y2, class: "jiu" }, g);
  for (const name of ["last", "stones", "marks", "cands", "hits"]) layers[name] = el("g", { id: "layer-" + name }, svg);
  for (let i = 0; i < N * N; i++) {
    const [x, y] = xy(pname(i));
    const hit = el("circle", { cx: x, cy: y, r: GAP / 2, class: "hit", "data-point": pname(i) }, layers.hits);
    hit.addEventListener("click", () => onPoint(pname(i)));
  }
}

function clear(layer) { while (layer.firstChild) layer.removeChild(layer.firstChild); }

function render() {
  const view = review || game;
  for (const name of ["last", "stones", "marks", "cands"]) clear(layers[name]);
  if (!view) return;
  view.board.forEach((v, i) => {
    if (!v) return;
    const [x, y] = xy(pname(i));
    el("circle", { cx: x, cy: y, r: GAP * 0.43, class: v === 1 ? "stone-w" : "stone-b", "data-stone": pname(i) }, layers.stones);
  });
  if (view.last) {
    const pts = view.last.path.map(xy);
    if (pts.length > 1) el("polyline", { points: pts.map((p) => p.join(",")).join(" "), class: "last" }, layers.last);
    const [x, y] = pts[pts.length - 1];
    el("circle", { cx: x, cy: y, r: GAP * 0.5, class: "last" }, layers.last);
    for (const c of view.last.captured) {
      const [cx, cy] = xy(c), d = GAP * 0.25;
      el("path", { d: `M${cx - d},${cy - d}L${cx + d},${cy + d}M${cx + d},${cy - d}L${cx - d},${cy + d}`, class: "captured" }, layers.last);
    }
  }
  if (!review && game) drawSelection();
  // The candidates of the agent's last search (the position before its move; 1 = the move it played,
  // usually). In a review they are listed in the table only.
  if (!review && game.search && game.turn === "human") drawCandidates(game.search.candidates);
}

function drawSelection() {
  if (!sel) return;
  for (const p of sel.path) { const [x, y] = xy(p); el("circle", { cx: x, cy: y, r: GAP * 0.48, class: "selected" }, layers.marks); }
  if (sel.path.length > 1) el("polyline", { points: sel.path.map((p) => xy(p).join(",")).join(" "), class: "selected" }, layers.marks);
  if (sel.need) {
    for (const c of sel.choices) { const [x, y] = xy(c); el("circle", { cx: x, cy: y, r: GAP * 0.46, class: sel.victims.includes(c) ? "victim-chosen" : "victim-choice" }, layers.marks); }
    return;
  }
  const info = sel.info || {};
  for (const p of info.steps || []) { const [x, y] = xy(p); el("circle", { cx: x, cy: y, r: 6, class: "step-dot", "data-step": p }, layers.marks); }
  for (const p of info.hops || []) { const [x, y] = xy(p); el("circle", { cx: x, cy: y, r: 7, class: "hop-dot", "data-hop": p }, layers.marks); }
}

function drawCandidates(cands) {
  (cands || []).forEach((c, k) => {
    const cls = "cand-" + (k + 1);
    const pts = c.path.map(xy);
    if (pts.length > 1) {
      el("polyline", { points: pts.map((p) => p.join(",")).join(" "), class: "cand " + cls, "data-candidate": k + 1 }, layers.cands);
      const [a, b] = [pts[pts.length - 2], pts[pts.length - 1]];
      const ang = Math.atan2(b[1] - a[1], b[0] - a[0]), h = 14;
      const tip = `${b[0]},${b[1]} ${b[0] - h * Math.cos(ang - 0.45)},${b[1] - h * Math.sin(ang - 0.45)} ${b[0] - h * Math.cos(ang + 0.45)},${b[1] - h * Math.sin(ang + 0.45)}`;
      el("polygon", { points: tip, class: cls }, layers.cands);
    }
    const [x, y] = pts[0];
    el("circle", { cx: x + 12, cy: y - 12, r: 9, class: cls, "data-candidate-marker": k + 1 }, layers.cands);
    el("text", { x: x + 12, y: y - 12, class: "cand-label" }, layers.cands, String(k + 1));
  });
}

// ------------------------------------------------------------------ side panel
function fmt(v, d) { return v === null || v === undefined ? "-" : Number(v).toFixed(d); }

function renderPanel() {
  const view = review || game;
  const status = $("status");
  document.body.dataset.mode = review ? "review" : game ? "game" : "none";
  document.body.dataset.turn = game && !review ? game.turn : "none";
  if (!view) return;
  document.body.dataset.jfen = view.jfen;
  $("jfen").textContent = view.jfen;
  const cnt = `White ${view.counts[0]}, Black ${view.counts[1]}`;
  const fly = ["White", "Black"].filter((_, k) => view.flying[k]);
  let text = `${view.phase}, ply ${view.ply} | ${cnt}` + (fly.length ? ` | flying: ${fly.join(", ")}` : "");
  if (review) {
    text = `review: ${review.white} vs ${review.black}, after ${review.at} of ${review.moves.length} moves | ` + text;
    $("rv-at").textContent = `${review.at} / ${review.moves.length}`;
  } else if (game.over) {
    const who = game.result === "draw" ? "draw" : (game.result === "w" ? "White" : "Black") + " wins";
    text += ` | game over: ${who} (${game.reason})`;
  } else if (game.turn === "human") {
    text += ` | your move (${game.side === "w" ? "White" : "Black"})`;
    if (sel && sel.need) text += ` | choose ${sel.need - sel.victims.length} more victim(s)`;
  } else {
    text += ` | ${game.agent} is thinking...`;
  }
  status.textContent = text;
  const s = !review && game ? game.search : null;
  $("win").textContent = s ? `${game.agent} (ply ${s.ply}, ${s.simulations} simulations, ${fmt(s.seconds, 2)} s): P(White wins) = ${fmt(s.white_win, 3)}` : "-";
  const rows = review ? (review.evalRow ? review.evalRow.candidates : []) : (s ? s.candidates : []);
  const tbody = $("candidates").querySelector("tbody");
  tbody.replaceChildren(...rows.map((c, k) => {
    const tr = document.createElement("tr");
    for (const v of [k + 1, c.move, c.visits, fmt(c.q, 3), fmt(c.prior, 3)]) { const td = document.createElement("td"); td.textContent = v; tr.appendChild(td); }
    return tr;
  }));
  const ol = $("moves");
  ol.replaceChildren(...view.moves.map((m) => { const li = document.createElement("li"); li.textContent = m; return li; }));
  ol.scrollTop = ol.scrollHeight;
  drawGraph(review ? [] : game.evals);
  const live = game && !review;
  $("undo").disabled = !live || busy || game.over || !game.moves.length;
  $("resign").disabled = !live || busy || game.over;
  $("stop-chain").disabled = !(sel && sel.jump && sel.info && sel.info.complete && !sel.need);
  $("clear-sel").disabled = !sel;
  for (const [id, ext] of [["dl-json", "json"], ["dl-jiu", "jiu"]]) {
    const a = $(id);
    if (live) { a.href = `/api/games/${game.id}/record.${ext}`; a.classList.remove("disabled"); }
    else { a.removeAttribute("href"); a.classList.add("disabled"); }
  }
}

function drawGraph(evals) {
  const g = $("graph");
  while (g.firstChild) g.removeChild(g.firstChild);
  const W = 320, H = 130, L = 26, B = 14, T = 6;
  el("line", { x1: L, y1: T, x2: L, y2: H - B, class: "axis" }, g);
  el("line", { x1: L, y1: H - B, x2: W - 4, y2: H - B, class: "axis" }, g);
  el("line", { x1: L, y1: (T + H - B) / 2, x2: W - 4, y2: (T + H - B) / 2, class: "axis" }, g);
  el("text", { x: 2, y: T + 6 }, g, "1.0");
  el("text", { x: 2, y: H - B }, g, "0.0");
  if (!evals || !evals.length) return;
  const maxPly = Math.max(...evals.map((e) => e.ply), 10);
  const px = (p) => L + (W - 4 - L) * p / maxPly, py = (v) => T + (H - B - T) * (1 - v);
  el("polyline", { points: evals.map((e) => `${px(e.ply)},${py(e.white_win)}`).join(" "), class: "curve" }, g);
  el("text", { x: W - 40, y: H - 2 }, g, `ply ${maxPly}`);
}

function update(view) { game = view; render(); renderPanel(); }

// ------------------------------------------------------------------ input
async function onPoint(name) {
  if (review || !game || busy || game.turn !== "human") return;
  say("");
  if (game.phase === "layout") return submit({ path: [name] });
  if (sel && sel.need) {
    const k = sel.victims.indexOf(name);
    if (k >= 0) sel.victims.splice(k, 1); else sel.victims.push(name);
    if (sel.victims.length === sel.need) return submit({ path: sel.path, jump: sel.jump, victims: sel.victims });
    render(); renderPanel();
    return;
  }
  if (!sel || (sel.path.length === 1 && game.board[idx(name)] === (game.side === "w" ? 1 : 2) && name !== sel.path[0])) {
    const info = await options([name], false);
    if (info) sel = { path: [name], jump: false, info, victims: [], need: 0, choices: [] };
    render(); renderPanel();
    return;
  }
  if (sel.path.length === 1 && name === sel.path[0]) { sel = null; render(); renderPanel(); return; }
  if (sel.path.length > 1 && name === sel.path[sel.path.length - 1]) return finish();
  const jump = sel.path.length === 1 ? (sel.info.hops || []).includes(name) : sel.jump;
  const path = sel.path.concat([name]);
  const info = await options(path, jump);
  if (!info) return;
  sel = { path, jump, info, victims: [], need: 0, choices: [] };
  if (!jump || !info.hops.length) return finish();
  say(info.complete ? "Click another landing to jump on, or click the stone again (or 'Stop the chain here') to stop." : "Jump on: this chain cannot stop here.");
  render(); renderPanel();
}

// Ask the server what may follow the clicks; null (and the reason shown) when nothing legal does.
async function options(path, jump) {
  setBusy(true);
  try { return await api("POST", `/api/games/${game.id}/options`, { path, jump }); }
  catch (e) { say(e.message); return null; }
  finally { setBusy(false); }
}

function finish() {
  if (!sel.info.complete) { say("This path is not a whole move: go on jumping."); return; }
  if (sel.info.victims > 0) {
    sel.need = sel.info.victims; sel.choices = sel.info.choices; sel.victims = [];
    say(`The move forms a square: click ${sel.need} opponent stone(s) to take.`);
    render(); renderPanel();
    return;
  }
  return submit({ path: sel.path, jump: sel.jump, victims: [] });
}

async function submit(body) {
  setBusy(true);
  try {
    const view = await api("POST", `/api/games/${game.id}/move`, body);
    sel = null; say("");
    update(view);
  } catch (e) {
    say(e.message);
    if (sel && sel.need) sel.victims = [];
    setBusy(false); render(); renderPanel();
    return;
  }
  setBusy(false);
  await agentTurn();
}

async function agentTurn() {
  if (!game || game.turn !== "agent") { renderPanel(); return; }
  setBusy(true); renderPanel();
  try { update(await api("POST", `/api/games/${game.id}/agent`)); }
  catch (e) { say(e.message); try { update(await api("GET", `/api/games/${game.id}`)); } catch (e2) { /* keep */ } }
  finally { setBusy(false); renderPanel(); }
  if (game.turn === "agent") setTimeout(agentTurn, 0);
}

function parseRules(text) {
  const rules = {};
  for (const item of text.split(/[,\s]+/).filter(Boolean)) {
    const [k, v] = item.split("=");
    if (!k || v === undefined) throw new Error(`rules: ${item} is not KEY=VALUE`);
    rules[k.trim()] = /^-?\d+$/.test(v.trim()) ? parseInt(v, 10) : v.trim();
  }
  return rules;
}

async function newGame(ev) {
  ev.preventDefault();
  say("");
  let body;
  try {
    body = { agent: $("ng-agent").value.trim(), human: $("ng-human").value, rules: parseRules($("ng-rules").value),
             seed: parseInt($("ng-seed").value || "0", 10) };
  } catch (e) { say(e.message); return; }
  if ($("ng-sims").value) body.sims = parseInt($("ng-sims").value, 10);
  if ($("ng-seconds").value) body.seconds = parseFloat($("ng-seconds").value);
  setBusy(true);
  try {
    review = null; sel = null;
    update(await api("POST", "/api/games", body));
  } catch (e) { say(e.message); setBusy(false); return; }
  setBusy(false);
  await agentTurn();
}

async function simple(action) {
  if (!game || busy) return;
  setBusy(true);
  try { sel = null; say(""); update(await api("POST", `/api/games/${game.id}/${action}`)); }
  catch (e) { say(e.message); }
  finally { setBusy(false); renderPanel(); }
  if (action === "undo") await agentTurn();
}

// ------------------------------------------------------------------ review
async function upload(ev) {
  ev.preventDefault();
  const file = $("rv-file").files[0];
  if (!file) { say("choose a record file first"); return; }
  if (file.size > 1000000) { say("the record is over 1 MB"); return; }
  const body = { text: await file.text(), agent: $("rv-agent").value.trim() || undefined };
  if ($("rv-sims").value) body.sims = parseInt($("rv-sims").value, 10);
  setBusy(true);
  try { review = await api("POST", "/api/reviews", body); say(""); render(); renderPanel(); }
  catch (e) { say(e.message); }
  finally { setBusy(false); }
}

async function step(target) {
  if (!review || busy) return;
  const ply = Math.max(0, Math.min(review.moves.length, target));
  setBusy(true);
  try {
    const view = await api("GET", `/api/reviews/${review.id}/${ply}`);
    review = view; render(); renderPanel();
    $("review-eval").textContent = ply ? "evaluating..." : "the start position";
    if (ply) {
      const row = await api("POST", `/api/reviews/${review.id}/${ply}/eval`);
      if (review.at !== ply) return;
      review.evalRow = row;
      const box = $("review-eval");
      box.replaceChildren();
      const line = document.createElement("div");
      line.textContent = `move ${row.ply} (${row.side === "w" ? "White" : "Black"}) ${row.move}: value ${fmt(row.value_before, 2)} -> ${fmt(row.value_after, 2)}, engine preferred ${row.best}, loss ${fmt(row.loss, 2)} `;
      if (row.label) { const b = document.createElement("span"); b.className = row.label; b.textContent = row.label; line.appendChild(b); }
      box.appendChild(line);
      render(); renderPanel();
    }
  } catch (e) { say(e.message); }
  finally { setBusy(false); }
}

// ------------------------------------------------------------------ start
async function init() {
  drawGrid();
  $("new-game").addEventListener("submit", newGame);
  $("typed").addEventListener("submit", (ev) => {
    ev.preventDefault();
    const text = $("move-text").value.trim();
    if (!text || !game || busy || game.turn !== "human") return;
    $("move-text").value = ""; sel = null;
    submit({ move: text });
  });
  $("stop-chain").addEventListener("click", () => { if (sel) finish(); });
  $("clear-sel").addEventListener("click", () => { sel = null; say(""); render(); renderPanel(); });
  $("undo").addEventListener("click", () => simple("undo"));
  $("resign").addEventListener("click", () => simple("resign"));
  $("review-form").addEventListener("submit", upload);
  $("rv-first").addEventListener("click", () => step(0));
  $("rv-prev").addEventListener("click", () => step(review ? review.at - 1 : 0));
  $("rv-next").addEventListener("click", () => step(review ? review.at + 1 : 0));
  $("rv-last").addEventListener("click", () => step(review ? review.moves.length : 0));
  try {
    const cfg = await api("GET", "/api/config");
    $("agents").replaceChildren(...cfg.agents.map((a) => { const o = document.createElement("option"); o.value = a; return o; }));
    $("ng-agent").value = cfg.default_agent;
  } catch (e) { say(e.message); }
  document.body.dataset.ready = "1";
}

init();
