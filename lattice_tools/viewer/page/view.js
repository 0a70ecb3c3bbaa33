"use strict";
// lattice-tools view: plain JavaScript over the JSON in #view-data; no library, no request.
(function () {
  const DATA = JSON.parse(document.getElementById("view-data").textContent);
  const UTTS = DATA.utterances;
  for (const u of UTTS) {  // the lattice's compact columns: frames -> seconds, 1e-4 units -> posteriors
    const L = u.lat;
    if (!L) continue;
    const n = L.f0.length, col = (c) => (Array.isArray(c) ? c : new Array(n).fill(c));  // one number: every arc's
    L.t0 = L.f0.map((f) => Math.round(f * L.fs * 1000) / 1000);
    L.t1 = L.f0.map((f, i) => Math.round((f + L.d[i]) * L.fs * 1000) / 1000);
    L.p = L.q.map((q) => q / 10000);
    L.ac = col(L.ac); L.lm = col(L.lm);
    if (L.ac0 !== undefined) { L.ac0 = col(L.ac0); L.lm0 = col(L.lm0); }
  }
  const ROW = 30;                         // list row height (px): the list draws only the rows in view
  const SVGNS = "http://www.w3.org/2000/svg";
  const $ = (id) => document.getElementById(id);
  const esc = (s) => String(s).replace(/[&<>"]/g, (c) => ({"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;"}[c]));
  const pct = (x) => (x === null || x === undefined) ? "–" : (100 * x).toFixed(2) + "%";
  const num = (x, d) => (x === null || x === undefined) ? "–" : Number(x).toFixed(d);

  let order = UTTS.map((_, i) => i);    // filtered and sorted utterance indices
  let current = -1;                      // position in `order` of the shown utterance
  let topK = DATA.settings.top_k;

  // ---------------------------------------------------------------- theme and print
  const root = document.documentElement;
  function setTheme(dark) {
    root.dataset.theme = dark ? "dark" : "light";
    $("theme").setAttribute("aria-pressed", String(dark));
    $("theme").textContent = dark ? "Light theme" : "Dark theme";
  }
  setTheme(window.matchMedia && window.matchMedia("(prefers-color-scheme: dark)").matches);
  $("theme").addEventListener("click", () => setTheme(root.dataset.theme !== "dark"));
  $("print").addEventListener("click", () => window.print());

  // ---------------------------------------------------------------- totals
  function countsCells(c) {
    return `<td data-c="${c.C}">${c.C}</td><td data-s="${c.S}">${c.S}</td><td data-d="${c.D}">${c.D}</td>` +
      `<td data-i="${c.I}">${c.I}</td><td data-n="${c.N}">${c.N}</td><td data-e="${c.E}">${c.E}</td>` +
      `<td data-wer="${c.wer === null ? "" : c.wer}">${pct(c.wer)}</td>`;
  }
  (function totals() {
    const names = Object.keys(DATA.totals);
    if (!names.length) { $("totals").innerHTML = "<caption class='empty'>No reference: no counts.</caption>"; return; }
    let h = "<thead><tr><th scope='col'>over all utterances</th><th scope='col'>Corr</th><th scope='col'>Sub</th>" +
      "<th scope='col'>Del</th><th scope='col'>Ins</th><th scope='col'>#Ref</th><th scope='col'>Err</th>" +
      "<th scope='col'>WER</th></tr></thead><tbody>";
    for (const n of names) {
      h += `<tr class="total" data-rep="${esc(n)}"><th scope="row">${n === "1best" ? "1-best" : "oracle " + esc(n)}</th>` +
        countsCells(DATA.totals[n]) + "</tr>";
    }
    $("totals").innerHTML = h + "</tbody>";
    const s = DATA.settings, bits = [];
    if (s.reference) bits.push("reference " + s.reference);
    if (s.glm) bits.push("GLM " + s.glm);
    if (s.kwslist) bits.push("keyword hits " + s.kwslist);
    bits.push(`depth N = ${s.n === null ? "all" : s.n}`, `${s.mode} costs` + (s.optional_deletable ? ", -D" : ""));
    $("notes").textContent = bits.join(" · ") + ((DATA.notes || []).length ? " · " + DATA.notes.join(" · ") : "");
  })();

  // ---------------------------------------------------------------- list: filter, sort, virtualised rows
  const keywords = new Map();
  UTTS.forEach((u) => (u.hits || []).forEach((h) => keywords.set(h.kwid, h.text)));
  for (const [k, t] of [...keywords].sort()) {
    const o = document.createElement("option"); o.value = k; o.textContent = t ? `${k} (${t})` : k; $("keyword").appendChild(o);
  }
  const haystack = UTTS.map((u) => [u.key, u.ref || "", (u.onebest.words || []).join(" "),
    ...(u.hits || []).map((h) => h.kwid + " " + h.text)].join("\n").toLowerCase());
  const sorters = {
    key: (a, b) => (UTTS[a].key < UTTS[b].key ? -1 : UTTS[a].key > UTTS[b].key ? 1 : 0),
    wer: (a, b) => (UTTS[b].wer ?? -1) - (UTTS[a].wer ?? -1),
    gain: (a, b) => (UTTS[b].gain ?? -1) - (UTTS[a].gain ?? -1),
    dur: (a, b) => UTTS[b].dur - UTTS[a].dur,
    hits: (a, b) => (UTTS[b].hits || []).length - (UTTS[a].hits || []).length,
  };
  function refilter() {
    const q = $("filter").value.trim().toLowerCase(), kw = $("keyword").value;
    const key = current >= 0 ? order[current] : -1;
    order = UTTS.map((_, i) => i).filter((i) => (!q || haystack[i].includes(q)) &&
      (!kw || (UTTS[i].hits || []).some((h) => h.kwid === kw)));
    const by = sorters[$("sort").value];
    order.sort((a, b) => by(a, b) || sorters.key(a, b));
    $("count").textContent = `${order.length} of ${UTTS.length} utterances`;
    $("spacer").style.height = order.length * ROW + "px";
    const again = order.indexOf(key);
    select(again >= 0 ? again : (order.length ? 0 : -1), false);
  }
  function drawRows() {
    const list = $("list"), first = Math.max(0, Math.floor(list.scrollTop / ROW) - 5);
    const last = Math.min(order.length, first + Math.ceil(list.clientHeight / ROW) + 10);
    list.querySelectorAll(".row").forEach((r) => r.remove());
    const frag = document.createDocumentFragment();
    for (let p = first; p < last; p++) {
      const u = UTTS[order[p]], r = document.createElement("div");
      r.className = "row"; r.setAttribute("role", "option"); r.id = "row-" + p;
      r.setAttribute("aria-selected", String(p === current));
      r.style.top = p * ROW + "px"; r.dataset.pos = p; r.dataset.key = u.key;
      r.dataset.wer = u.wer ?? ""; r.dataset.gain = u.gain ?? ""; r.dataset.dur = u.dur;
      r.innerHTML = `<span title="${esc(u.key)}">${esc(u.key)}</span><span title="1-best WER">${pct(u.wer)}</span>` +
        `<span title="oracle gain (errors)">${u.gain === null ? "–" : u.gain > 0 ? "−" + u.gain : "0"}</span>` +
        `<span title="duration">${num(u.dur, 1)}s</span>`;
      frag.appendChild(r);
    }
    list.appendChild(frag);
    if (current >= 0) list.setAttribute("aria-activedescendant", "row-" + current);
  }
  let shown = null;                      // the utterance in the detail pane (redrawn only when it changes)
  function select(pos, focusList) {
    current = pos;
    const list = $("list");
    if (pos >= 0) {
      const top = pos * ROW;
      if (top < list.scrollTop) list.scrollTop = top;
      else if (top + ROW > list.scrollTop + list.clientHeight) list.scrollTop = top + ROW - list.clientHeight;
    }
    drawRows();
    const u = pos >= 0 ? UTTS[order[pos]] : null;
    if (u !== shown || u === null) { shown = u; showDetail(u); }
    if (focusList) list.focus();
  }
  $("list").addEventListener("scroll", drawRows, {passive: true});
  $("list").addEventListener("click", (e) => { const r = e.target.closest(".row"); if (r) select(Number(r.dataset.pos), true); });
  $("list").addEventListener("keydown", (e) => {
    if (!order.length) return;
    const page = Math.max(1, Math.floor($("list").clientHeight / ROW) - 1);
    const moves = {ArrowDown: 1, ArrowUp: -1, PageDown: page, PageUp: -page};
    let to = null;
    if (e.key in moves) to = Math.min(order.length - 1, Math.max(0, current + moves[e.key]));
    else if (e.key === "Home") to = 0;
    else if (e.key === "End") to = order.length - 1;
    else if (e.key === "Enter") { $("detail").focus(); e.preventDefault(); return; }
    if (to !== null) { e.preventDefault(); select(to, true); }
  });
  $("filter").addEventListener("input", refilter);
  $("keyword").addEventListener("change", refilter);
  $("sort").addEventListener("change", refilter);
  document.addEventListener("keydown", (e) => {
    if (e.key === "/" && document.activeElement.tagName !== "INPUT") { e.preventDefault(); $("filter").focus(); }
  });

  // ---------------------------------------------------------------- detail: alignment
  function refHtml(text) {
    // GLM alternations "{ a / b }" shown as one box with the choices
    return esc(text).replace(/\{([^{}]*)\}/g, (_, inner) =>
      `<span class="alt" title="alternation (GLM): any one of these">${inner.split("/").map((s) => s.trim() || "@").join(" | ")}</span>`);
  }
  function alignmentHtml(u) {
    const ob = u.onebest;
    if (!ob.align) {
      return `<p>${ob.words.length ? esc(ob.words.join(" ")) : "<span class='empty'>(empty)</span>"}</p>` +
        "<p class='empty'>No reference: no alignment.</p>";
    }
    const c = ob.counts;
    let h = `<p class="summary" data-rep="1best" data-c="${c.C}" data-s="${c.S}" data-d="${c.D}" data-i="${c.I}" ` +
      `data-n="${c.N}" data-e="${c.E}" data-wer="${c.wer === null ? "" : c.wer}" title="1-best: ${esc(ob.source)}">1-best (${esc(ob.source)}): WER ${pct(c.wer)} ` +
      `(${c.E} errors / ${c.N} words: ${c.S} sub, ${c.D} del, ${c.I} ins; ${c.C} correct)</p>`;
    h += "<p class='legend' aria-hidden='true'><span style='color:var(--sub)'>S substitution (wavy underline)</span>" +
      "<span style='color:var(--del)'>D deletion (struck out)</span><span style='color:var(--ins)'>I insertion (dotted underline)</span></p>";
    h += '<div class="align" role="list" aria-label="alignment, reference above hypothesis">';
    for (const [op, r, hy] of ob.align) {
      const label = {C: "", S: "S", D: "D", I: "I"}[op];
      h += `<span class="pair ${op}" role="listitem" data-op="${op}" aria-label="${esc({C: "correct", S: "substitution", D: "deletion", I: "insertion"}[op])}: ` +
        `${esc(r ?? "nothing")} / ${esc(hy ?? "nothing")}"><span class="r">${r === null ? "***" : esc(r)}</span>` +
        `<span class="h">${hy === null ? "***" : esc(hy)}</span><span class="op">${label}</span></span>`;
    }
    h += "</div>";
    if (u.ref && u.ref.includes("{")) h += `<p class="alt-ref">Reference with its GLM alternations: ${refHtml(u.ref)}</p>`;
    return h;
  }

  // ---------------------------------------------------------------- detail: alternatives
  function repSummary(name, r) {
    if (!r.counts) return `<p class="summary"><span class="rep-title">${esc(name)}</span>: ${r.n_slots ?? 0} slots</p>`;
    const c = r.counts;
    return `<p class="summary" data-rep="${esc(name)}" data-c="${c.C}" data-s="${c.S}" data-d="${c.D}" data-i="${c.I}" ` +
      `data-n="${c.N}" data-e="${c.E}" data-wer="${c.wer === null ? "" : c.wer}"><span class="rep-title">oracle ${esc(name)}</span>: ` +
      `WER ${pct(c.wer)} (${c.E} errors: ${c.S} sub, ${c.D} del, ${c.I} ins)` +
      (r.n_slots !== undefined ? `, ${r.n_slots} slot${r.n_slots === 1 ? "" : "s"}` : "") +
      `, ${(r.recovered || []).length} word(s) recovered</p>`;
  }
  function wordsHtml(words, marks) {
    const set = new Set(marks || []);
    return words.map((w, i) => set.has(i) ? `<mark class="rec" title="recovered by the oracle">✓${esc(w)}</mark>` : esc(w)).join(" ");
  }
  function slotsHtml(name, r) {
    let h = `<div class="slots" role="list" aria-label="${esc(name)} slots">`;
    r.slots.forEach((s, si) => {
      h += `<div class="slot" role="listitem" data-slot="${si}"><div class="time">${num(s.t0, 2)}–${num(s.t1, 2)} s` +
        (s.depth > s.alts.length ? ` · ${s.alts.length} of ${s.depth}` : "") + "</div>";
      s.alts.forEach((a, ai) => {
        const orc = ai === s.chosen;
        h += `<div class="alt-row${orc ? " oracle" : ""}" data-p="${a.p ?? ""}" data-words="${esc(a.w)}"` +
          (orc ? ' data-oracle="1" title="the oracle\'s choice"' : "") + (a.rank !== undefined ? ` data-rank="${a.rank}"` : "") +
          `><span class="w">${wordsHtml(a.w.split(" "), a.rec)}</span><span class="p">${num(a.p, 3)}</span>` +
          `<span class="bar" aria-hidden="true"><i style="width:${Math.max(0, Math.min(1, a.p || 0)) * 100}%"></i></span></div>`;
      });
      h += "</div>";
    });
    return h + "</div>";
  }
  function alternativesHtml(u) {
    const names = Object.keys(u.reps).filter((n) => n !== "lattice");
    let h = "";
    if (u.reps.lattice) {
      const r = u.reps.lattice;
      h += `<section class="rep" data-kind="lattice">${repSummary("lattice", r)}<p>${wordsHtml(r.words, r.recovered) || "<span class='empty'>(empty)</span>"}</p></section>`;
    }
    for (const n of names) {
      const r = u.reps[n];
      h += `<section class="rep" data-kind="${esc(n)}">${repSummary(n, r)}${slotsHtml(n, r)}</section>`;
    }
    if (!h) return "<p class='empty'>No alternatives.</p>";
    return "<p class='legend'><span>◆ dashed frame: the oracle's choice</span><span style='color:var(--rec)'>✓ double underline: a word the oracle recovers (wrong in the 1-best)</span><span>bar: posterior</span></p>" + h;
  }

  // ---------------------------------------------------------------- detail: lattice on a time axis
  let drawn = [];      // arcs drawn: {i, x, y, w} for the keyboard cursor
  let cursor = -1;
  function latticeSection(u) {
    const L = u.lat;
    if (!L) return "<p class='empty'>" + (u.lat === null ? "This lattice has no word times." : "No lattice for this utterance.") + "</p>";
    const max = L.w.length;
    return `<div class="latctl"><label>Top K arcs by posterior <input id="k" type="range" min="1" max="${max}" value="${Math.min(topK, max)}" ` +
      `aria-describedby="kinfo"></label><input id="knum" type="number" min="1" max="${max}" value="${Math.min(topK, max)}" aria-label="K">` +
      `<span id="kinfo" class="legend">of ${max} kept (${L.n_word_arcs ?? max} word arcs, ${L.n_arcs} arcs in the lattice). ` +
      "Hover or focus the drawing and use ←/→ to read arcs.</span></div>" +
      "<p class='legend'><span style='color:var(--best)'>solid frame: best path</span><span style='color:var(--oracle)'>dashed frame: oracle path</span>" +
      "<span>shade: posterior</span><span style='color:var(--hit)'>▲ keyword hit (YES), △ (NO)</span></p>" +
      `<div class="latwrap" id="latwrap" tabindex="0" role="img" aria-label="lattice of ${esc(u.key)} on a time axis"></div>`;
  }
  let latWidth = 0;    // the drawing's width, measured while the layout is clean (not after new content)
  function drawLattice(u, avail) {
    const L = u.lat, wrap = $("latwrap");
    if (!L || !wrap) return;
    if (avail) latWidth = avail; else latWidth = wrap.clientWidth - 2;
    const K = Math.min(topK, L.w.length);
    const dur = Math.max(u.dur, 0.01);
    const width = Math.max(latWidth, Math.min(24000, dur * 90));
    const x0 = 70, sx = (width - x0 - 10) / dur, lane = 18;
    const X = (t) => x0 + t * sx;
    const orc = u.reps.lattice;
    const orcKey = new Set();
    if (orc) orc.words.forEach((w, i) => orcKey.add(w + "|" + num(orc.starts[i], 2) + "|" + num(orc.starts[i] + orc.durs[i], 2)));
    // top K (stored most probable first) plus the best path, packed into lanes by start time
    const pick = [];
    for (let i = 0; i < K; i++) pick.push(i);
    const bestSet = new Set(L.best);
    for (const b of L.best) if (b >= K) pick.push(b);
    pick.sort((a, b) => L.t0[a] - L.t0[b] || L.p[b] - L.p[a]);
    const ends = [], laneOf = new Map();
    for (const i of pick) {
      let l = ends.findIndex((e) => e <= X(L.t0[i]) - 1);
      if (l < 0) { l = ends.length; ends.push(0); }
      ends[l] = Math.max(X(L.t1[i]), X(L.t0[i]) + 3);
      laneOf.set(i, l);
    }
    // keyword hits in as many rows as their labels need (packed like the arcs)
    const hitEnds = [], hitRow = [];
    (u.hits || []).forEach((h) => {
      const x = X(h.tbeg + h.dur / 2) - 6, end = x + 24 + 7 * ((h.text || h.kwid).length + 6);
      let r = hitEnds.findIndex((e) => e <= x);
      if (r < 0) { r = hitEnds.length; hitEnds.push(0); }
      hitEnds[r] = end; hitRow.push(r);
    });
    const rows = ["1-best", orc ? "oracle" : null, hitEnds.length ? "hits" : null].filter(Boolean);
    const top = 22 + rows.length * (lane + 6) + Math.max(0, hitEnds.length - 1) * lane + 8;
    const height = top + ends.length * lane + 10;
    const parts = [];
    parts.push(`<svg xmlns="${SVGNS}" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" data-k="${K}" data-lanes="${ends.length}">`);
    // axis
    const step = [0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60].find((s) => s * sx >= 60) || 120;
    parts.push('<g class="axis">');
    for (let t = 0; t <= dur + 1e-9; t += step) {
      parts.push(`<line x1="${X(t)}" x2="${X(t)}" y1="14" y2="${height}" stroke-opacity="0.25"/><text x="${X(t) + 2}" y="11">${+t.toFixed(2)}s</text>`);
    }
    parts.push("</g>");
    let y = 22;
    const rowY = {};
    for (const r of rows) {
      rowY[r] = y; parts.push(`<text class="lbl" x="4" y="${y + 13}">${r}</text>`);
      y += lane + 6 + (r === "hits" ? Math.max(0, hitEnds.length - 1) * lane : 0);
    }
    // the best path's words (from the stored best-path arcs) and the oracle's words
    for (const b of L.best) {
      parts.push(`<rect class="pathw best" x="${X(L.t0[b])}" y="${rowY["1-best"]}" width="${Math.max(2, (L.t1[b] - L.t0[b]) * sx)}" height="${lane}" ` +
        `data-arc="${b}"/>` + label(L.vocab[L.w[b]], X(L.t0[b]), rowY["1-best"], (L.t1[b] - L.t0[b]) * sx));
    }
    if (orc) {
      const rec = new Set(orc.recovered || []);
      orc.words.forEach((w, i) => {
        const s = orc.starts[i], d = orc.durs[i];
        if (s === null || d === null) return;
        parts.push(`<rect class="pathw orc${rec.has(i) ? " rec" : ""}" x="${X(s)}" y="${rowY.oracle}" width="${Math.max(2, d * sx)}" height="${lane}" ` +
          `data-word="${esc(w)}" data-t0="${s}" data-t1="${+(s + d).toFixed(3)}"${rec.has(i) ? ' data-recovered="1"' : ""}/>` +
          label((rec.has(i) ? "✓" : "") + w, X(s), rowY.oracle, d * sx));
      });
    }
    (u.hits || []).forEach((h, hi) => {
      const cx = X(h.tbeg + h.dur / 2), yy = rowY.hits + hitRow[hi] * lane;
      parts.push(`<path class="hit${h.yes ? "" : " no"}" d="M${cx - 6},${yy + lane - 2} L${cx},${yy + 2} L${cx + 6},${yy + lane - 2} Z" ` +
        `data-hit="${hi}" data-kwid="${esc(h.kwid)}" data-score="${h.score}" data-tbeg="${h.tbeg}" data-dur="${h.dur}"/>` +
        `<text x="${cx + 8}" y="${yy + 13}">${esc(h.text || h.kwid)} ${num(h.score, 3)}</text>`);
    });
    // the arcs
    drawn = [];
    for (const i of pick) {
      const ax = X(L.t0[i]), aw = Math.max(2, (L.t1[i] - L.t0[i]) * sx), ay = top + laneOf.get(i) * lane;
      const word = L.vocab[L.w[i]];
      const isOrc = orcKey.has(word + "|" + num(L.t0[i], 2) + "|" + num(L.t1[i], 2));
      const op = (0.15 + 0.85 * L.p[i]).toFixed(3);
      parts.push(`<rect class="arc${bestSet.has(i) ? " best" : ""}${isOrc ? " orc" : ""}" x="${ax}" y="${ay}" width="${aw}" height="${lane - 2}" ` +
        `fill-opacity="${op}" data-arc="${i}" data-word="${esc(word)}" data-t0="${L.t0[i]}" data-t1="${L.t1[i]}" data-p="${L.p[i]}" ` +
        `data-ac="${L.ac[i]}" data-lm="${L.lm[i]}"${L.ac0 ? ` data-ac0="${L.ac0[i]}" data-lm0="${L.lm0[i]}"` : ""}/>` + label(word, ax, ay - 1, aw));
      drawn.push({i, x: ax, y: ay, w: aw});
    }
    drawn.sort((a, b) => a.x - b.x || a.y - b.y);
    parts.push('<rect class="cursor" id="cursor" x="0" y="0" width="0" height="0" visibility="hidden"/></svg>');
    wrap.innerHTML = parts.join("");
    cursor = -1;
  }
  function label(text, x, y, w) {
    if (w < 7 * Math.min(text.length, 3) + 4) return "";
    const room = Math.floor((w - 4) / 7);
    return `<text x="${x + 2}" y="${y + 13}">${esc(text.length > room ? text.slice(0, Math.max(1, room - 1)) + "…" : text)}</text>`;
  }
  function arcTip(u, i) {
    const L = u.lat;
    return `${L.vocab[L.w[i]]}\n${num(L.t0[i], 2)}–${num(L.t1[i], 2)} s\nposterior ${num(L.p[i], 4)}\n` +
      `acoustic cost ${num(L.ac[i], 2)}\ngraph (LM) cost ${num(L.lm[i], 2)}` +
      (L.ac0 ? `\nthe file's own costs: acoustic ${num(L.ac0[i], 1)}, graph ${num(L.lm0[i], 1)}` : "") +
      (L.best.includes(i) ? "\non the best path" : "");
  }
  function showTip(text, x, y) {
    const tip = $("tip");
    tip.textContent = text; tip.hidden = false;
    tip.style.left = Math.min(window.innerWidth - tip.offsetWidth - 8, x + 12) + "px";
    tip.style.top = Math.min(window.innerHeight - tip.offsetHeight - 8, y + 12) + "px";
  }
  function hideTip() { $("tip").hidden = true; }
  function tipFor(u, el) {
    if (el.dataset.arc !== undefined && el.classList.contains("arc")) return arcTip(u, Number(el.dataset.arc));
    if (el.dataset.arc !== undefined) return "1-best\n" + arcTip(u, Number(el.dataset.arc));
    if (el.dataset.hit !== undefined) {
      const h = u.hits[Number(el.dataset.hit)];
      return `keyword ${h.kwid}${h.text ? " (" + h.text + ")" : ""}\n${num(h.tbeg, 2)}–${num(h.tbeg + h.dur, 2)} s\nscore ${h.score}\ndecision ${h.yes ? "YES" : "NO"}`;
    }
    if (el.dataset.word !== undefined) return `oracle word ${el.dataset.word}\n${num(+el.dataset.t0, 2)}–${num(+el.dataset.t1, 2)} s` + (el.dataset.recovered ? "\nrecovered (wrong in the 1-best)" : "");
    return null;
  }

  // ---------------------------------------------------------------- detail: keyword hits
  function hitsHtml(u) {
    const hits = u.hits || [];
    if (!DATA.settings.kwslist) return "<p class='empty'>No keyword-search output given.</p>";
    if (!hits.length) return "<p class='empty'>No keyword hits in this utterance.</p>";
    let h = "<table class='hits'><thead><tr><th scope='col'>keyword</th><th scope='col'>text</th><th scope='col'>start (s)</th>" +
      "<th scope='col'>duration (s)</th><th scope='col'>score</th><th scope='col'>decision</th></tr></thead><tbody>";
    for (const x of hits) {
      h += `<tr class="hitrow" data-kwid="${esc(x.kwid)}" data-tbeg="${x.tbeg}" data-dur="${x.dur}" data-score="${x.score}" data-yes="${x.yes ? 1 : 0}">` +
        `<td>${esc(x.kwid)}</td><td>${esc(x.text)}</td><td>${num(x.tbeg, 2)}</td><td>${num(x.dur, 2)}</td><td>${x.score}</td><td>${x.yes ? "▲ YES" : "△ NO"}</td></tr>`;
    }
    return h + "</tbody></table>";
  }

  // ---------------------------------------------------------------- the detail pane
  function showDetail(u) {
    const d = $("detail");
    hideTip();
    if (!u) { d.innerHTML = "<p class='empty'>No utterance matches.</p>"; return; }
    d.dataset.key = u.key;
    const avail = d.clientWidth - 36;  // the detail's padding and the drawing's border
    d.innerHTML = `<h2 data-key="${esc(u.key)}">${esc(u.key)}</h2><p class="summary">${num(u.dur, 2)} s` +
      (u.gain !== null ? ` · oracle gain ${u.gain} error(s)` : "") + ` · ${(u.hits || []).length} keyword hit(s)</p>` +
      (u.ref !== undefined ? `<p><strong>Reference</strong>: ${refHtml(u.ref)}</p>` : "") +
      `<section aria-labelledby="h-align"><h3 id="h-align">1-best aligned with the reference</h3>${alignmentHtml(u)}</section>` +
      `<section aria-labelledby="h-alts"><h3 id="h-alts">Alternatives and oracles</h3>${alternativesHtml(u)}</section>` +
      `<section aria-labelledby="h-lat"><h3 id="h-lat">Lattice on a time axis</h3>${latticeSection(u)}</section>` +
      `<section aria-labelledby="h-hits"><h3 id="h-hits">Keyword hits</h3>${hitsHtml(u)}</section>`;
    drawLattice(u, avail);
    const k = $("k"), kn = $("knum"), wrap = $("latwrap");
    if (k) {
      const set = (v) => { topK = Math.max(1, Math.min(Number(k.max), Math.round(Number(v) || 1))); k.value = kn.value = topK; drawLattice(u); };
      k.addEventListener("input", () => set(k.value));
      kn.addEventListener("change", () => set(kn.value));
    }
    if (wrap) {
      wrap.addEventListener("mousemove", (e) => {
        const t = tipFor(u, e.target);
        if (t) showTip(t, e.clientX, e.clientY); else hideTip();
      });
      wrap.addEventListener("mouseleave", hideTip);
      wrap.addEventListener("blur", hideTip);
      wrap.addEventListener("keydown", (e) => {
        if (!drawn.length || (e.key !== "ArrowRight" && e.key !== "ArrowLeft")) return;
        e.preventDefault();
        cursor = Math.max(0, Math.min(drawn.length - 1, cursor + (e.key === "ArrowRight" ? 1 : -1)));
        const a = drawn[cursor], c = $("cursor");
        c.setAttribute("x", a.x - 2); c.setAttribute("y", a.y - 2); c.setAttribute("width", a.w + 4); c.setAttribute("height", 20);
        c.setAttribute("visibility", "visible");
        if (a.x < wrap.scrollLeft || a.x > wrap.scrollLeft + wrap.clientWidth - 40) wrap.scrollLeft = a.x - 80;
        const box = wrap.getBoundingClientRect();
        showTip(arcTip(u, a.i), box.left + a.x - wrap.scrollLeft, box.top + a.y);
      });
    }
  }

  window.addEventListener("resize", () => { if (current >= 0) drawLattice(UTTS[order[current]]); });
  refilter();
  document.body.dataset.ready = "1";
})();
