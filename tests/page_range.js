// The lesson page's script (mgtui/tui/lesson_page.js) run by Node against a stub DOM,
// for tests/cli/test_print_handouts.py: prints where the page opens and where its moves take
// it, as JSON. node page_range.js SCRIPT META.json [#step=N]
const fs = require("fs");
const [script, metaFile, hash] = process.argv.slice(2);
function stub(name) {
  const target = function () {};
  target._props = {};
  return new Proxy(target, {
    get(t, p) {
      if (p in t._props) return t._props[p];
      if (p === Symbol.toPrimitive) return () => "";
      if (p === "textContent") return name === "mgtui-lesson" ? fs.readFileSync(metaFile, "utf8") : "";
      if (p === "length") return 0;
      if (p === "then") return undefined;
      if (p === "getBoundingClientRect") return () => ({ width: 800, height: 16 });
      if (p === "dataset" || p === "style") { t._props[p] = {}; return t._props[p]; }
      if (["scrollLeft", "scrollTop", "clientWidth", "clientHeight"].includes(p)) return 0;
      return stub(name + "." + String(p));
    },
    set(t, p, v) { t._props[p] = v; return true; },
    apply() { return stub(name + "()"); },
  });
}
global.window = global;
global.document = {
  getElementById: (id) => (global.__els[id] ||= stub(id)),
  createElement: (tag) => stub(tag),
  addEventListener: (type, fn) => { global.__keys = fn; },
  body: { dataset: {} },
  title: "",
};
global.__els = {};
global.history = { replaceState() {} };
global.location = { hash: hash || "" };
eval(fs.readFileSync(script, "utf8"));
(async () => {
  for (let i = 0; i < 100 && !document.body.dataset.ready; i++) await new Promise((r) => setTimeout(r, 20));
  const page = window.mgtuiPage, out = { ready: document.body.dataset.ready, first: page.player.first,
    last: page.player.last, opened: page.player.step };
  page.go(0); out.afterStart = page.player.step;
  page.go(page.player.total); out.afterEnd = page.player.step;
  const press = (key) => global.__keys({ key, preventDefault() {}, ctrlKey: false, metaKey: false, altKey: false });
  press("g"); out.g = page.player.step; press("n"); out.n = page.player.step;
  press("G"); out.G = page.player.step; press("n"); out.nAtEnd = page.player.step;
  console.log(JSON.stringify(out));
})();
