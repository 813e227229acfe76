// mgtui's lesson page: replays a lesson packed by mgtui/tui/export_html_data.py and
// mgtui/tui/export_html.py. Every text it shows was written in Python; this script only
// applies and undoes each step's writes (as mgtui/session/timeline.py does) and puts the text in
// the page with textContent, never as markup. It makes no network request.
"use strict";

(function () {
  const $ = (id) => document.getElementById(id);
  // A value's text that holds a nan or an inf: a number's ("nan", "-inf") or an array's
  // ("(2, 2) [[1.0, nan], …]", "(100, 16) μ 0.1 ‖‖ 2.0 (3 nan/inf)"). An array's shape
  // and numbers are no number to Number(), and no sign of trouble.
  const nonfinite = (text) => /\b(nan|inf)\b/.test(String(text));

  function el(tag, cls, text) {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  }

  async function unpack(b64) {
    const bin = atob(b64);
    const bytes = new Uint8Array(bin.length);
    for (let i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
    const stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("deflate-raw"));
    return JSON.parse(await new Response(stream).text());
  }

  function sums(counts) {  // prefix sums: where each item's run starts
    const out = new Int32Array(counts.length + 1);
    for (let i = 0; i < counts.length; i++) out[i + 1] = out[i] + counts[i];
    return out;
  }

  function undelta(ds) {
    const out = new Int32Array(ds.length);
    let last = 0;
    for (let i = 0; i < ds.length; i++) out[i] = last = last + ds[i];
    return out;
  }

  // -- the lesson's state: a cursor over its events (mgtui/timeline.py) ----------------------
  function Lesson(L) {
    const N = L.nodes, E = L.events;
    this.L = L;
    this.count = N.label.length;
    this.kidStart = sums(N.nkids);
    this.evNode = undelta(E.node);
    this.writeStart = sums(E.nwrites);
    this.lone = new Int32Array(E.kind.length).fill(-1);  // event -> its g/d write's place
    for (let i = 0, k = 0; i < E.kind.length; i++) {
      if (E.kind[i] === "g" || E.kind[i] === "d") this.lone[i] = k++;
    }
    this.data = Int32Array.from(N.data);  // value indices
    this.grad = new Int32Array(this.count);  // value 0 is 0.0
    this.created = 0;
    this.position = 0;
    this.undoLog = [];
    this.passes = L.passes.map((p, index) => ({ kind: p[0], start: p[1], end: p[2], index }));
  }

  Lesson.prototype.label = function (nid) {
    return this.L.nodes.label[nid] || "#" + nid;
  };

  Lesson.prototype.children = function (nid) {
    const out = [];
    for (let k = this.kidStart[nid]; k < this.kidStart[nid + 1]; k++) out.push(nid - this.L.nodes.kids[k]);
    return out;
  };

  Lesson.prototype.apply = function (touched) {  // the next event
    const i = this.position, E = this.L.events, node = this.evNode[i], kind = E.kind[i];
    const log = [];
    const set = (nid, field, value) => {
      const arr = field & 1 ? this.data : this.grad;
      log.push(nid, field & 1, arr[nid]);
      arr[nid] = value;
      touched.add(nid);
    };
    if (kind === "g" || kind === "d") set(node, kind === "d" ? 1 : 0, E.after[this.lone[i]]);
    for (let w = this.writeStart[i]; w < this.writeStart[i + 1]; w++) set(node + E.target[w], E.field[w], E.value[w]);
    if (kind === "c") this.created++;
    touched.add(node);
    this.undoLog[i] = log;
    this.position = i + 1;
  };

  Lesson.prototype.undo = function (touched) {  // the current event
    const i = this.position - 1, log = this.undoLog[i];
    for (let k = log.length - 3; k >= 0; k -= 3) {
      (log[k + 1] ? this.data : this.grad)[log[k]] = log[k + 2];
      touched.add(log[k]);
    }
    if (this.L.events.kind[i] === "c") this.created--;
    touched.add(this.evNode[i]);
    this.position = i;
  };

  Lesson.prototype.passAt = function (index) {  // the pass holding event `index`
    let lo = 0, hi = this.passes.length - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >> 1, p = this.passes[mid];
      if (index < p.start) hi = mid - 1;
      else if (index >= p.end) lo = mid + 1;
      else return p;
    }
    return null;
  };

  Lesson.prototype.marks = function () {  // node -> run / acc / assign / new / set
    const marks = new Map(), i = this.position - 1;
    if (i < 0) return marks;
    const E = this.L.events, node = this.evNode[i], kind = E.kind[i];
    if (kind === "b") {
      for (let w = this.writeStart[i]; w < this.writeStart[i + 1]; w++) {
        marks.set(node + E.target[w], E.field[w] & 2 ? "assign" : "acc");
      }
      marks.set(node, "run");
    } else {
      marks.set(node, kind === "c" ? "new" : "set");
    }
    return marks;
  };

  // -- moving (mgtui/session.py's rules) ----------------------------------------------------------
  function Player(L) {
    this.lesson = new Lesson(L);
    this.L = L;
    this.events = L.events.kind.length;
    this.total = L.total;
    this.step = 0;
    // a handout of some steps (`--steps A:B`, `--pass N`): the page moves among them only
    [this.first, this.last] = L.range || [0, L.total];
  }

  Player.prototype.atError = function (step) {
    return this.L.error && step > this.events;
  };

  Player.prototype.event = function () {
    return this.step >= 1 && !this.atError(this.step) ? this.step - 1 : null;
  };

  Player.prototype.goto = function (step, touched) {
    step = Math.max(this.first, Math.min(step, this.last));
    const target = Math.min(step, this.events), lesson = this.lesson;
    while (lesson.position < target) lesson.apply(touched);
    while (lesson.position > target) lesson.undo(touched);
    this.step = step;
  };

  Player.prototype.currentPass = function () {
    return this.lesson.passAt(Math.max(Math.min(this.step, this.events) - 1, 0));
  };

  Player.prototype.nextPassStart = function () {
    const passes = this.lesson.passes;
    if (this.step === 0) return this.events ? 1 : null;
    const current = this.lesson.passAt(Math.min(this.step, this.events) - 1);
    const next = current ? current.index + 1 : passes.length;
    if (next < passes.length) return passes[next].start + 1;
    return !this.atError(this.step) && this.L.error ? this.total : null;
  };

  Player.prototype.prevPassStart = function () {
    if (this.step === 0) return 0;
    const current = this.lesson.passAt(Math.min(this.step, this.events) - 1);
    if (!current) return 0;
    const first = current.start + 1;
    if (this.step > first) return first;
    return current.index > 0 ? this.lesson.passes[current.index - 1].start + 1 : 0;
  };

  Player.prototype.where = function () {
    const step = this.step, total = this.total, event = this.event();
    if (this.atError(step)) return "✗ " + this.L.error_type + " · step " + step + "/" + total;
    if (event === null) return "start · step 0/" + total;
    const p = this.lesson.passAt(event), n = this.lesson.passes.length;
    return p.kind + " pass " + (p.index + 1) + "/" + n + " · " + (event - p.start + 1) + "/" +
      (p.end - p.start) + " in pass · step " + step + "/" + total;
  };

  // -- the page ---------------------------------------------------------------------------------
  const STYLE_CLASS = { p: "", b: "s-b", d: "s-d", i: "s-i", I: "s-b s-i", R: "s-b s-r" };

  function View(page, index) {  // one graph: its rows and its picture
    const L = page.L, v = L.views[index];
    this.index = index;
    this.used = Array.from(undelta(v.used));
    this.made = Array.from(undelta(v.made));
    this.nodes = this.used.concat(this.made);
    this.uses = new Map();  // per node: its uses in this graph (this training step's)
    this.nodes.forEach((nid, k) => this.uses.set(nid, v.uses[k]));
    this.topo = new Map();
    undelta(v.topo).forEach((nid, k) => this.topo.set(nid, k));
    this.picture = v.picture === undefined ? null : L.pictures[v.picture];
  }

  function Page(L) {
    this.L = L;
    this.player = new Player(L);
    this.lesson = this.player.lesson;
    this.view = null;
    this.rows = new Map();
    this.marks = new Map();
    this.graph = null;
  }

  Page.prototype.decode = function (text, base) {
    return text.replace(/#@(-?\d+)|@@/g, (m, d) => (d === undefined ? "@" : "#" + (base + Number(d))));
  };

  Page.prototype.showDetail = function () {
    const player = this.player, box = $("detail"), event = player.event();
    box.replaceChildren();
    let text = this.L.detail[Math.min(player.step, this.L.detail.length - 1)];
    if (event !== null) text = this.decode(text, this.lesson.evNode[event]);
    text.split("\n").forEach((line, k) => {
      const div = el("div", "line");
      if (k === 0) div.append(el("span", "s-d", "step " + player.step + "/" + player.total + "  "));
      for (const run of line.split("\t").slice(1)) div.append(el("span", STYLE_CLASS[run[0]] || "", run.slice(1)));
      box.append(div);
    });
  };

  Page.prototype.showHeader = function () {
    $("where").textContent = this.player.where();
    const losses = this.L.losses, bars = losses.bars, pass = this.player.currentPass();
    const box = $("losses");
    box.replaceChildren();
    if (!bars) return;
    let at = -1;
    losses.passes.forEach((p, k) => { if (pass && p <= pass.index) at = k; });
    box.append(el("span", "s-d", "loss "));
    Array.from(bars).forEach((ch, k) => box.append(el("span", k === at ? "s-b s-r" : "", ch)));
  };

  Page.prototype.value = function (arr, nid) {
    return this.L.values[arr[nid]];
  };

  Page.prototype.buildTable = function () {
    const body = $("rows"), lesson = this.lesson, N = this.L.nodes;
    body.replaceChildren();
    this.rows = new Map();
    for (const nid of this.view.nodes) {
      const tr = el("tr");
      const kids = lesson.children(nid).map((c) => lesson.label(c)).join(", ");
      const topo = this.view.topo.get(nid);
      const cells = ["", String(nid), lesson.label(nid), N.op[N.opof[nid]], "", "", kids,
        String(this.view.uses.get(nid)), topo === undefined ? "" : String(topo)];
      cells.forEach((text, k) => tr.append(el("td", "c" + k, text)));
      body.append(tr);
      this.rows.set(nid, tr);
    }
  };

  const TABLE_MARKS = { run: "▶ ", acc: "+=", assign: "= ", new: "● ", set: "= " };

  Page.prototype.updateRow = function (nid) {
    const tr = this.rows.get(nid);
    if (!tr) return;
    const lesson = this.lesson, mark = this.marks.get(nid) || "";
    tr.hidden = nid >= lesson.created;
    tr.className = mark ? "m-" + mark : "";
    const cells = tr.children, data = this.value(lesson.data, nid), grad = this.value(lesson.grad, nid);
    cells[0].textContent = TABLE_MARKS[mark] || "";
    cells[4].textContent = data;
    cells[5].textContent = grad;
    cells[4].classList.toggle("nonfinite", nonfinite(data));
    cells[5].classList.toggle("nonfinite", nonfinite(grad));
    cells[5].classList.toggle("changed", mark === "acc" || mark === "assign" || mark === "set");
  };

  Page.prototype.refresh = function (touched) {
    const pass = this.player.currentPass();
    const viewIndex = pass ? this.L.pass_view[pass.index] : 0;
    const oldMarks = this.marks;
    this.marks = this.lesson.marks();
    let whole = false;
    if (!this.view || this.view.index !== viewIndex) {
      this.view = this.L.views.length ? new View(this, viewIndex) : null;
      whole = true;
      if (this.view) this.buildTable();
      this.graph = this.view && this.view.picture ? new Graph(this, this.view) : null;
      $("graph").replaceChildren(this.graph ? this.graph.pre : el("p", "s-d", "No graph to draw here."));
    }
    for (const nid of oldMarks.keys()) touched.add(nid);
    for (const nid of this.marks.keys()) touched.add(nid);
    if (whole || touched.size > 2000) touched = new Set(this.view ? this.view.nodes : []);
    for (const nid of touched) this.updateRow(nid);
    if (this.graph) this.graph.update(touched, whole);
    const event = this.player.event(), row = event === null ? null : this.rows.get(this.lesson.evNode[event]);
    if (row && !row.hidden) row.scrollIntoView({ block: "nearest" });
    this.showHeader();
    this.showDetail();
    document.body.dataset.step = String(this.player.step);
    try {
      history.replaceState(null, "", "#step=" + this.player.step);
    } catch (e) { /* a page opened where the address cannot change */ }
  };

  Page.prototype.go = function (step) {
    const touched = new Set();
    this.player.goto(step, touched);
    this.refresh(touched);
  };

  // -- the graph: the Graph pane's picture (mgtui/graph_paint.py), painted line by line --------
  function Graph(page, view) {
    const pic = view.picture, G = page.L.graph;
    this.page = page;
    this.pic = pic;
    this.heavy = new Map(Array.from(G.light).map((ch, k) => [ch, G.heavy[k]]));
    this.double = new Map(Array.from(G.light).map((ch, k) => [ch, G.double[k] || ch]));
    this.squeezed = page.L.squeezed[String(pic.num_width)] || {};
    this.boxes = new Map();  // nid -> box
    this.byLine = new Map();  // y -> boxes over it
    for (const [pos, x, y, w, short] of pic.boxes) {  // (short: a path's label, shortened)
      const nid = view.nodes[pos], box = { nid, x, y, w, short };
      this.boxes.set(nid, box);
      for (let k = y; k < y + 3; k++) {
        if (!this.byLine.has(k)) this.byLine.set(k, []);
        this.byLine.get(k).push(box);
      }
    }
    this.ops = new Map();  // y -> [nid, x, length]
    for (const [pos, x, y, len] of pic.ops) {
      if (!this.ops.has(y)) this.ops.set(y, []);
      this.ops.get(y).push([view.nodes[pos], x, len]);
    }
    this.edges = new Map();  // "input,result" -> cells
    for (const [a, b, ...paths] of pic.edges) {
      const cells = [];
      for (const path of paths) {
        for (let k = 0; k + 1 < path.length; k += 2) {
          const x = path[k], y = path[k + 1];
          if (k === 0) { cells.push([x, y]); continue; }
          const px = path[k - 2], py = path[k - 1];
          const sx = Math.sign(x - px), sy = Math.sign(y - py);
          for (let cx = px + sx, cy = py + sy; ; cx += sx, cy += sy) {
            cells.push([cx, cy]);
            if (cx === x && cy === y) break;
          }
        }
      }
      this.edges.set(view.nodes[a] + "," + view.nodes[b], cells);
    }
    this.pre = el("pre", "picture");
    this.lines = [];
    for (let y = 0; y < pic.lines.length; y++) {
      const div = el("div", "gl");
      this.lines.push(div);
      this.pre.append(div);
    }
    this.lit = new Map();
    this.selected = null;
  }

  Graph.prototype.litCells = function () {  // graph_paint.lit_edges, by line
    const page = this.page, rows = new Map();
    const add = (a, b) => {
      for (const [x, y] of this.edges.get(a + "," + b) || []) {
        if (!rows.has(y)) rows.set(y, new Set());
        rows.get(y).add(x);
      }
    };
    for (const [nid, mark] of page.marks) {
      if (mark === "run") {
        for (const [c, m] of page.marks) if (m === "acc") add(c, nid);
      } else if (mark === "new") {
        for (const c of page.lesson.children(nid)) add(c, nid);
      }
    }
    return rows;
  };

  Graph.prototype.update = function (touched, whole) {
    const dirty = new Set();
    const event = this.page.player.event();
    const selected = event === null ? null : this.page.lesson.evNode[event];
    for (const nid of touched.add(selected).add(this.selected)) {
      const box = this.boxes.get(nid);
      if (box) for (let y = box.y; y < box.y + 3; y++) dirty.add(y);
    }
    this.selected = selected;
    const lit = this.litCells();
    for (const y of this.lit.keys()) dirty.add(y);
    for (const y of lit.keys()) dirty.add(y);
    this.lit = lit;
    const lines = whole ? this.lines.keys() : dirty;
    for (const y of lines) if (y >= 0 && y < this.lines.length) this.paintLine(y);
    const box = this.boxes.get(selected);
    if (box) this.scrollTo(box);
  };

  Graph.prototype.paintLine = function (y) {
    const chars = [], kinds = [], base = this.pic.lines[y], names = this.pic.kinds;
    for (let j = 0; j < base.length; j += 2) {
      for (const ch of base[j + 1]) { chars.push(ch); kinds.push(names[base[j]]); }
    }
    for (const x of this.lit.get(y) || []) {
      chars[x] = this.heavy.get(chars[x]) || chars[x];
      kinds[x] = "lit";
    }
    const page = this.page, created = page.lesson.created;
    for (const [nid, x, len] of this.ops.get(y) || []) {
      const mark = nid < created ? page.marks.get(nid) : undefined;
      const kind = mark === "run" ? "run" : mark === "new" ? "new" : nid >= created ? "future" : "op";
      for (let k = 0; k < len; k++) kinds[x + k] = kind;
    }
    for (const box of this.byLine.get(y) || []) this.paintBox(box, y, chars, kinds);
    const div = this.lines[y];
    div.replaceChildren();
    let start = 0;
    for (let x = 1; x <= chars.length; x++) {
      if (x === chars.length || kinds[x] !== kinds[start]) {
        div.append(el("span", kinds[start] ? "k-" + kinds[start] : "", chars.slice(start, x).join("")));
        start = x;
      }
    }
  };

  Graph.prototype.number = function (index) {
    const text = this.squeezed[index];
    return text === undefined ? this.page.L.values[index] : text;
  };

  Graph.prototype.paintBox = function (box, y, chars, kinds) {  // graph_paint._paint_box
    const page = this.page, lesson = page.lesson, nid = box.nid, nw = this.pic.num_width;
    const future = nid >= lesson.created, mark = future ? "" : page.marks.get(nid) || "";
    const selected = nid === this.selected;
    const frame = future ? "future" : selected ? "selected" : "frame";
    const framed = (text) => (selected ? Array.from(text, (ch) => this.double.get(ch) || ch).join("") : text);
    if (y !== box.y + 1) {
      for (let x = box.x; x < box.x + box.w; x++) {
        chars[x] = selected ? this.double.get(chars[x]) || chars[x] : chars[x];
        kinds[x] = frame;
      }
      return;
    }
    const lw = box.w - 2 * nw - 11;
    let label = box.short || lesson.label(nid);
    if (label.length > lw) label = label.slice(0, Math.max(lw - 1, 0)) + "…";
    const data = future ? "·" : this.number(lesson.data[nid]);
    const grad = future ? "·" : this.number(lesson.grad[nid]);
    const numberKind = (text, changed) => (future ? "future" : nonfinite(text) ?
      "nonfinite" : changed ? "changed" : null);
    const parts = [
      [framed(chars[box.x]), frame],
      [(page.L.graph.marks[mark] || "  ").padEnd(2), mark || null],
      [label.padEnd(lw), future ? "future" : mark || "label"],
      [framed(" │ "), frame],
      [data.padStart(nw), numberKind(page.L.values[lesson.data[nid]], mark === "set")],
      [framed(" │ "), frame],
      [grad.padStart(nw), numberKind(page.L.values[lesson.grad[nid]], mark === "acc" || mark === "set")],
      [" ", null],
      [framed(chars[box.x + box.w - 1]), frame],
    ];
    let x = box.x;
    for (const [text, kind] of parts) {
      for (const ch of text) {
        chars[x] = ch;
        kinds[x] = future && kind === null ? "future" : kind;
        x++;
      }
    }
  };

  Graph.prototype.scrollTo = function (box) {
    const pane = $("graph"), cell = cellSize(this.pre);
    const left = box.x * cell.w, top = box.y * cell.h;
    const right = (box.x + box.w) * cell.w, bottom = (box.y + 3) * cell.h;
    if (left < pane.scrollLeft || right > pane.scrollLeft + pane.clientWidth) {
      pane.scrollLeft = Math.max(0, (left + right - pane.clientWidth) / 2);
    }
    if (top < pane.scrollTop || bottom > pane.scrollTop + pane.clientHeight) {
      pane.scrollTop = Math.max(0, (top + bottom - pane.clientHeight) / 2);
    }
  };

  let measured = null;
  function cellSize(pre) {
    if (measured) return measured;
    const probe = el("span", "", "0".repeat(100));
    pre.append(probe);
    const r = probe.getBoundingClientRect();
    probe.remove();
    measured = { w: r.width / 100 || 8, h: r.height || 16 };
    return measured;
  }

  // -- keys ---------------------------------------------------------------------------------------
  function bindKeys(page) {
    const player = page.player;
    const moves = {
      n: () => player.step + 1, ArrowRight: () => player.step + 1, " ": () => player.step + 1,
      p: () => player.step - 1, ArrowLeft: () => player.step - 1,
      g: () => 0, Home: () => 0, G: () => player.total, End: () => player.total,
      "]": () => player.nextPassStart(), "[": () => player.prevPassStart(),
    };
    document.addEventListener("keydown", (e) => {
      if (e.ctrlKey || e.metaKey || e.altKey) return;
      const move = moves[e.key];
      if (!move) return;
      e.preventDefault();
      const step = move();
      if (step !== null && step !== player.step) page.go(step);
    });
  }

  async function main() {
    const meta = JSON.parse($("mgtui-lesson").textContent);
    document.title = meta.title + " · mgtui";
    $("title").textContent = meta.title;
    let L;
    try {
      L = await unpack(meta.packed);
    } catch (e) {
      $("detail").textContent = "This browser cannot unpack the lesson (it needs " +
        "DecompressionStream, in every current browser): " + e;
      return;
    }
    const notes = $("notes");
    for (const paragraph of L.notes) notes.append(el("p", "", paragraph));
    if (!L.notes.length) notes.append(el("p", "s-d", "This scenario has no lesson notes."));
    const page = new Page(L);
    window.mgtuiPage = page;
    bindKeys(page);
    const asked = /^#step=(\d+)$/.exec(location.hash);
    page.go(asked ? Number(asked[1]) : page.player.first);
    document.body.dataset.ready = "1";
  }

  main();
})();
