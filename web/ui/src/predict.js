// Predict-then-run: the guess input on a cell that has a prediction
// (cell.meta.predict, see notebook/predict), and the comparison of guess,
// measured value and article figure that the kernel sends after the run
// (application/vnd.cachebook.prediction+json, docs/protocol.md §3.14).
import { marked } from "marked";
import { h } from "./util.js";
import { setHTML } from "./sanitize.js";

export const PREDICTION_MIME = "application/vnd.cachebook.prediction+json";

// fmtValue shows a guessed or measured number with about three
// significant digits.
export function fmtValue(v) {
  if (v === null || v === undefined || !Number.isFinite(v)) return "—";
  const a = Math.abs(v);
  if (a >= 100) return Math.round(v).toLocaleString("en");
  if (a >= 10) return v.toFixed(1);
  if (a >= 1) return v.toFixed(2);
  if (a === 0) return "0";
  return v.toPrecision(3);
}

function withUnit(v, unit) {
  const s = fmtValue(v);
  if (s === "—" || !unit) return s;
  return unit === "×" || unit === "%" || unit === "x" ? s + unit : `${s} ${unit}`;
}

// markdown renders a prediction's Markdown (its check text) through the
// sanitiser; raw HTML in it is left out, as in prose.
function markdown(el, text) {
  setHTML(el, marked.parse(String(text || "")));
  return el;
}

// PredictionPanel is the question and the guess input of one cell. The
// guess is kept in cell.meta.guess ({value} or {choice}, and "at", when it
// was committed) and saved with the notebook; once committed it is locked
// until "Change guess".
export class PredictionPanel {
  constructor(cell) {
    this.cell = cell;
    this.el = h("div.predict");
    this.render();
  }

  get spec() {
    return (this.cell.meta && this.cell.meta.predict) || null;
  }

  get guess() {
    return (this.cell.meta && this.cell.meta.guess) || null;
  }

  render() {
    const spec = this.spec;
    if (!spec) {
      this.el.replaceChildren();
      this.el.classList.add("hidden");
      return;
    }
    this.el.classList.remove("hidden");
    const g = this.guess;
    const choices = Array.isArray(spec.choices) && spec.choices.length ? spec.choices : null;
    const head = h("div.pq", h("span.plabel", "Predict"), h("span.question", spec.question || ""));
    let body;
    if (g && !this.editing) {
      const shown = choices ? g.choice : withUnit(g.value, spec.unit);
      const when = g.at ? new Date(g.at) : null;
      body = h(
        "div.prow",
        h("span.locked", { title: when ? `committed ${when.toLocaleString()}` : "committed" }, "your guess (committed): ", h("b.guessval", shown ?? "—")),
        h("button.change", { onclick: () => this.edit() }, "Change guess"),
      );
    } else {
      let input;
      if (choices) {
        input = h(
          "select.guessin",
          { title: "your answer", "aria-label": "your answer" },
          h("option", { value: "" }, "choose…"),
          choices.map((c) => h("option", { value: c, selected: g && g.choice === c ? "" : null }, c)),
        );
      } else {
        input = h("input.guessin", { type: "number", step: "any", placeholder: "your guess", title: "your guess, in " + (spec.unit || "the question's unit"), "aria-label": "your guess, in " + (spec.unit || "the question's unit") });
        if (g && Number.isFinite(g.value)) input.value = String(g.value);
        input.addEventListener("keydown", (ev) => {
          if (ev.key === "Enter") {
            ev.preventDefault();
            this.commit(input);
          }
          ev.stopPropagation(); // typing here is not a notebook shortcut
        });
      }
      this.input = input;
      body = h(
        "div.prow",
        input,
        choices ? null : h("span.unit", spec.unit || ""),
        h("button.commit", { onclick: () => this.commit(input) }, "Commit guess"),
        this.editing ? h("button.cancel", { onclick: () => this.cancel() }, "Cancel") : null,
        h("span.phint", "commit before you run: the result then shows your guess beside the measurement"),
      );
      this.msg = h("span.perr");
      body.append(this.msg);
    }
    this.el.replaceChildren(head, body);
  }

  edit() {
    this.editing = true;
    this.render();
    if (this.input) this.input.focus();
  }

  cancel() {
    this.editing = false;
    this.render();
  }

  // commit locks the guess in the cell's metadata.
  commit(input) {
    const spec = this.spec;
    const choices = Array.isArray(spec.choices) && spec.choices.length;
    const guess = { at: new Date().toISOString() };
    if (choices) {
      if (!input.value) {
        this.msg.textContent = "pick one of the answers first";
        return;
      }
      guess.choice = input.value;
    } else {
      const v = Number(input.value);
      if (input.value.trim() === "" || !Number.isFinite(v)) {
        this.msg.textContent = "type a number first";
        return;
      }
      guess.value = v;
    }
    this.cell.meta = { ...(this.cell.meta || {}), guess };
    this.editing = false;
    // A lesson is read-only: its guesses are kept in the browser instead
    // of marking it unsaved (Notebook.keepGuess).
    if (!this.cell.nb.keepGuess(this.cell, guess)) this.cell.nb.dirty(true);
    this.render();
    this.cell.reveal();
  }
}

// scale maps the values onto [0, 100] percent of a number line: a log
// scale when they are all positive and span more than a factor of 20.
function scale(values) {
  const vs = values.filter((v) => Number.isFinite(v));
  let lo = Math.min(...vs);
  let hi = Math.max(...vs);
  const log = lo > 0 && hi / lo > 20;
  const f = log ? Math.log10 : (x) => x;
  lo = f(lo);
  hi = f(hi);
  if (hi === lo) {
    lo -= 1;
    hi += 1;
  }
  const pad = (hi - lo) * 0.12;
  lo -= pad;
  hi += pad;
  if (!log && lo < 0 && Math.min(...vs) >= 0) lo = 0;
  return { log, at: (v) => (100 * (f(v) - lo)) / (hi - lo) };
}

// renderPrediction shows a prediction outcome: guess, measured value and
// the article's figure on one number line (or the choices, marked), and
// the check text.
export function renderPrediction(o) {
  const box = h("div.prediction", { "data-cell": o.cell || null });
  box.append(h("div.pq", h("span.plabel", "Prediction"), h("span.question", o.question || "")));
  const choices = Array.isArray(o.choices) && o.choices.length ? o.choices : null;
  if (choices) {
    box.append(
      h(
        "ul.pchoices",
        choices.map((c) =>
          h(
            "li" + (c === o.measured_choice ? ".measured" : "") + (c === o.guess_choice ? ".guessed" : ""),
            h("span.choice", c),
            c === o.guess_choice ? h("span.tag.guess", "your guess") : null,
            c === o.measured_choice ? h("span.tag.meas", `measured${o.measured !== null && !/\bfailed\(/.test(o.measure || "") ? " " + fmtValue(o.measured) : ""}`) : null,
          ),
        ),
      ),
    );
    if (o.guess_choice === null || o.guess_choice === undefined) box.append(h("div.pnote", "no guess was committed before this run"));
  } else {
    const all = [
      ["guess", "your guess", o.guess],
      ["meas", "measured here", o.measured],
      ["article", o.article_source ? `article (${o.article_source})` : "article", o.article],
    ].filter(([cls, , v]) => cls !== "article" || (v !== null && v !== undefined));
    const rows = all.filter(([, , v]) => Number.isFinite(v));
    box.append(h("table.pvalues", h("tbody", all.map(([cls, label, v]) => h("tr." + cls, h("th", label), h("td.num", withUnit(v, o.unit)))))));
    if (rows.length >= 1) {
      const s = scale(rows.map(([, , v]) => v));
      const line = h("div.pline", { title: s.log ? "logarithmic scale" : "linear scale" }, h("div.ptrack"));
      for (const [cls, label, v] of rows) {
        const m = h("div.pmark." + cls, h("span.pdot"), h("span.ptext", `${label.split(" (")[0]}: ${withUnit(v, o.unit)}`));
        m.style.left = `${s.at(v).toFixed(2)}%`;
        line.append(m);
      }
      box.append(line);
    }
    if (o.verdict) box.append(h("div.pspread" + (o.noisy ? ".bad" : ""), (o.noisy ? "" : "measured: ") + o.verdict));
    if (o.noisy) box.append(h("div.pnote", "The measurement is too noisy to grade your guess."));
    else if (o.guess !== null && o.measured !== null && o.guess !== undefined && o.measured) {
      const r = o.guess / o.measured;
      const off = r >= 1 ? r : 1 / r;
      box.append(h("div.pverdict", off < 1.25 ? "Within 25% of the measurement." : `Your guess was ${fmtValue(off)} times ${r >= 1 ? "too high" : "too low"}.`));
    }
    if (o.guess === null || o.guess === undefined) box.append(h("div.pnote", "no guess was committed before this run"));
  }
  if (o.measured === null || o.measured === undefined) box.append(h("div.pnote.bad", o.note || "no measured value"));
  if (o.check) box.append(markdown(h("div.pcheck"), o.check));
  return box;
}
