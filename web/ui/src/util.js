// Small DOM and formatting helpers shared by the UI modules.
import { setHTML } from "./sanitize.js";

// h builds an element: h("div.cls#id", {attr: v, onclick: f}, children...).
export function h(spec, attrs, ...children) {
  const m = spec.match(/^([a-z0-9]+)?((?:[.#][\w-]+)*)$/i);
  const el = document.createElement((m && m[1]) || "div");
  if (m && m[2]) {
    for (const part of m[2].match(/[.#][\w-]+/g)) {
      if (part[0] === ".") el.classList.add(part.slice(1));
      else el.id = part.slice(1);
    }
  }
  if (attrs && (typeof attrs !== "object" || attrs instanceof Node || Array.isArray(attrs))) {
    children.unshift(attrs);
    attrs = null;
  }
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else if (k === "text") el.textContent = v;
    else if (k === "html") setHTML(el, v); // sanitised: see sanitize.js
    else el.setAttribute(k, v === true ? "" : v);
  }
  append(el, children);
  return el;
}

function append(el, children) {
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    if (Array.isArray(c)) append(el, c);
    else el.append(c instanceof Node ? c : String(c));
  }
}

// fmtNs renders a duration in nanoseconds with a unit that keeps 3 digits.
export function fmtNs(ns) {
  if (ns === undefined || ns === null || !isFinite(ns)) return "–";
  const a = Math.abs(ns);
  if (a < 1e3) return `${ns.toFixed(ns < 10 ? 2 : 0)} ns`;
  if (a < 1e6) return `${(ns / 1e3).toFixed(a < 1e4 ? 2 : 1)} µs`;
  if (a < 1e9) return `${(ns / 1e6).toFixed(a < 1e7 ? 2 : 1)} ms`;
  return `${(ns / 1e9).toFixed(2)} s`;
}

// fmtBytes renders a byte count in binary units (KiB, MiB, GiB).
export function fmtBytes(b) {
  if (b === undefined || b === null || !isFinite(b)) return "–";
  const u = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  while (Math.abs(b) >= 1024 && i < u.length - 1) {
    b /= 1024;
    i++;
  }
  return `${b % 1 === 0 ? b : b.toFixed(b < 10 ? 2 : 1)} ${u[i]}`;
}

// fmtCount renders a count with thousands separators.
export function fmtCount(n) {
  if (n === undefined || n === null) return "–";
  return Number(n).toLocaleString("en-US");
}

// NUMERIC lists the SQL types whose values are right-aligned.
export const NUMERIC = new Set(["SMALLINT", "INTEGER", "BIGINT", "UBIGINT", "DOUBLE", "INTERVAL"]);

// fmtWait renders a wait (nanoseconds) as people say it: "under a
// second", "12 s", "3 min 20 s", "1 h 5 min".
export function fmtWait(ns) {
  if (ns === undefined || ns === null || !isFinite(ns)) return "–";
  const s = Math.round(Math.max(0, ns) / 1e9);
  if (s < 1) return "under a second";
  if (s < 60) return `${s} s`;
  const m = Math.floor(s / 60);
  if (m < 60) return s % 60 ? `${m} min ${s % 60} s` : `${m} min`;
  return `${Math.floor(m / 60)} h ${m % 60} min`;
}
