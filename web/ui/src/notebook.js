// The notebook view: cells, selection, Jupyter-style command and edit
// modes, running (one cell, run and advance, run all), interrupt, editing
// the cell list, save and .ipynb export.
import { h } from "./util.js";
import { Cell } from "./cell.js";

export class Notebook {
  // nb: the protocol's Notebook {path, title, metadata, cells}; app: the App.
  constructor(app, nb, source) {
    this.app = app;
    this.path = nb.path || "";
    this.title = nb.title || nb.path || "notebook";
    this.metadata = nb.metadata || {};
    this.source = source; // {lesson: id} or {path}
    this.el = h("div.notebook");
    this.cells = [];
    this.selected = null;
    this.mode = "command";
    this.queue = Promise.resolve();
    const kept = this.keptGuesses();
    for (let c of nb.cells || []) {
      const g = c.id && kept[c.id];
      if (g && g.skipped) c = { ...c, skipped: true };
      else if (g && !(c.meta && c.meta.guess)) c = { ...c, meta: { ...(c.meta || {}), guess: g } };
      this.cells.push(new Cell(this, c));
    }
    if (this.cells.length === 0) this.cells.push(new Cell(this, { cell_type: "code", kind: "sql", source: "" }));
    // Rendered before the cells before them were in the list: veiled now.
    for (const c of this.cells) if (c.type === "markdown") c.veilExpectation();
    this.render();
    this.isDirty = false;
  }

  render() {
    this.el.replaceChildren(h("h1.nbtitle", this.title), ...this.cells.map((c) => c.el));
  }

  // guessKey is where a lesson's guesses are kept in the browser's
  // storage ("" for a notebook file, whose guesses are saved with it).
  guessKey() {
    return this.source && this.source.lesson ? "cachebook.guesses." + this.source.lesson : "";
  }

  // keptGuesses returns the guesses (and skips) kept for this lesson, by
  // cell id.
  keptGuesses() {
    const key = this.guessKey();
    if (!key) return {};
    try {
      return JSON.parse(localStorage.getItem(key) || "{}") || {};
    } catch {
      return {};
    }
  }

  // keepGuess keeps a lesson cell's guess (or {skipped: true}) in the
  // browser's storage, so that it survives a reload without making the
  // read-only lesson unsaved. It returns false for a notebook file, whose
  // guesses are saved in the file instead.
  keepGuess(cell, guess) {
    const key = this.guessKey();
    if (!key) return false;
    const kept = this.keptGuesses();
    kept[cell.id] = guess;
    try {
      localStorage.setItem(key, JSON.stringify(kept));
    } catch {
      // Storage full or disabled: the guess still holds for this visit.
    }
    return true;
  }

  dirty(v) {
    this.isDirty = v;
    this.app.showDirty(v);
  }

  select(cell, edit) {
    if (this.selected && this.selected !== cell) this.selected.el.classList.remove("selected");
    this.selected = cell;
    cell.el.classList.add("selected");
    this.mode = edit ? "edit" : "command";
    this.el.classList.toggle("editmode", !!edit);
  }

  commandMode(cell) {
    this.select(cell, false);
    if (cell.type === "markdown") cell.renderProse();
    cell.el.focus();
  }

  // run queues cell on the active kernel and resolves when it finished.
  // more: attributes for this run only (again=1: measure anew).
  run(cell, more) {
    if (cell.type === "markdown") {
      cell.renderProse();
      return Promise.resolve();
    }
    // Both kernels queue cells themselves and answer every cell, also one
    // they cannot run (UnknownKind, Unavailable: the reason shows on it).
    const kernel = this.app.kernel;
    cell.start();
    // A prediction and the committed guess travel with the cell (protocol §3.14).
    const m = cell.meta || {};
    const extra = m.predict ? { predict: m.predict, ...(m.guess ? { guess: m.guess } : {}) } : {};
    return kernel.execute(cell.id, cell.source, (e) => cell.onEvent(e), cell.kind, more ? { ...cell.attrs, ...more } : cell.attrs, extra);
  }

  runAndAdvance(cell) {
    this.run(cell);
    const i = this.cells.indexOf(cell);
    let next = this.cells[i + 1];
    if (!next) {
      next = new Cell(this, { cell_type: "code", kind: "sql", source: "" });
      this.cells.push(next);
      this.el.append(next.el);
      this.dirty(true);
    }
    this.select(next, next.type === "code");
    if (next.type === "code") next.focus();
    else next.el.focus();
    next.el.scrollIntoView({ block: "nearest", behavior: "smooth" });
  }

  async runAll() {
    for (const c of this.cells) {
      if (c.type === "markdown") continue;
      await this.run(c);
      if (this.stopAll) break;
    }
    this.stopAll = false;
  }

  interrupt() {
    this.stopAll = true;
    this.interruptAt = performance.now();
    return this.app.kernel.interrupt();
  }

  // add inserts a new cell below ref (above it when above is set).
  add(ref, type, above = false) {
    const cell = new Cell(this, { cell_type: type, kind: "sql", source: "" });
    const i = ref ? this.cells.indexOf(ref) + (above ? 0 : 1) : this.cells.length;
    this.cells.splice(i, 0, cell);
    if (ref && above) ref.el.before(cell.el);
    else if (ref) ref.el.after(cell.el);
    else this.el.append(cell.el);
    this.dirty(true);
    this.select(cell, true);
    cell.focus();
    return cell;
  }

  remove(cell) {
    const i = this.cells.indexOf(cell);
    if (i < 0) return;
    this.cells.splice(i, 1);
    cell.el.remove();
    this.dirty(true);
    const next = this.cells[Math.min(i, this.cells.length - 1)];
    if (next) this.select(next, false);
  }

  move(cell, delta) {
    const i = this.cells.indexOf(cell);
    const j = i + delta;
    if (j < 0 || j >= this.cells.length) return;
    this.cells.splice(i, 1);
    this.cells.splice(j, 0, cell);
    if (delta < 0) this.cells[j + 1].el.before(cell.el);
    else this.cells[j - 1].el.after(cell.el);
    this.dirty(true);
  }

  toJSON() {
    return { path: this.path, title: this.title, metadata: this.metadata, cells: this.cells.map((c) => c.toJSON()) };
  }

  // onKey handles command-mode keys (the editor handles its own): Enter
  // edit, Shift+Enter run and advance, Ctrl+Enter run, I,I interrupt,
  // A/B add above/below, D,D delete, J/K or arrows move the selection.
  onKey(ev) {
    const cell = this.selected;
    if (!cell || this.mode !== "command") return false;
    const k = ev.key;
    const now = Date.now();
    const twice = (key) => {
      const hit = this.lastKey === key && now - this.lastKeyAt < 800;
      this.lastKey = hit ? null : key;
      this.lastKeyAt = now;
      return hit;
    };
    if (k === "Enter" && ev.shiftKey) this.runAndAdvance(cell);
    else if (k === "Enter" && (ev.ctrlKey || ev.metaKey)) this.run(cell);
    else if (k === "Enter") {
      this.select(cell, true);
      cell.focus();
    } else if (k === "i" || k === "I") {
      if (twice("i")) this.interrupt();
    } else if (k === "d" || k === "D") {
      if (twice("d")) this.remove(cell);
    } else if (k === "b" || k === "B") this.add(cell, "code");
    else if (k === "a" || k === "A") this.add(cell, "code", true);
    else if (k === "j" || k === "ArrowDown" || k === "k" || k === "ArrowUp") {
      const d = k === "j" || k === "ArrowDown" ? 1 : -1;
      const next = this.cells[this.cells.indexOf(cell) + d];
      if (next) {
        this.select(next, false);
        next.el.focus();
        next.el.scrollIntoView({ block: "nearest" });
      }
    } else return false;
    ev.preventDefault();
    return true;
  }
}
