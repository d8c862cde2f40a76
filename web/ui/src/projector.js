// Projector scaling of charts. ScaledPlot is uPlot whose canvas text (tick
// values, axis titles and the labels charts draw in their hooks) and the
// room kept for it grow with the page's font size, so that the large-font
// switch (body.large, style.css) reaches the charts as it reaches
// everything sized in rem. At the normal size it changes nothing.
//
// charts.js builds its charts with it; a chart drawn before the switch is
// rescaled in place when the switch flips. It adjusts uPlot 1.6's axis
// fields (font, labelFont, size, labelSize: the pinned version in
// package.json) and the canvas's font setter, and then lets uPlot lay the
// chart out again with setSize.
import uPlot from "uplot";

// BASE is the root font size without body.large (style.css: html 15px).
const BASE = 15;

// textScale is the page's font size relative to the normal one.
export function textScale() {
  const px = parseFloat(getComputedStyle(document.documentElement).fontSize) || BASE;
  return px / BASE;
}

const live = new Set();
let watching = false;

function scalePx(font, k) {
  return String(font).replace(/(\d+(?:\.\d+)?)px/, (m, p) => `${Math.round(p * k * 10) / 10}px`);
}

// rescale applies the current text scale to plot u.
function rescale(u) {
  const k = textScale();
  const st = u._projector;
  if (st.k === k) return;
  st.k = k;
  const ratio = uPlot.pxRatio || 1;
  st.axisFonts.clear();
  u.axes.forEach((a, i) => {
    const base = st.axes[i];
    if (!base || !a.show) return;
    for (const [key, b] of [["font", base.font], ["labelFont", base.labelFont]]) {
      const css = b[2] * k;
      const dev = Math.round(css * ratio * 10) / 10;
      a[key] = [b[0].replace(/(\d+(?:\.\d+)?)px/, `${dev}px`), dev, css];
      st.axisFonts.add(a[key][0]);
    }
    a.size = (self, values, axisIdx, cycleNum) => base.size(self, values, axisIdx, cycleNum) * k;
    a.labelSize = base.labelSize * k;
  });
  u.root.dataset.textScale = String(k);
  u.setSize({ width: u.width, height: u.height });
}

// ScaledPlot is called like uPlot (with new) and returns the uPlot.
export default function ScaledPlot(opts, data, target) {
  const u = new uPlot(opts, data, target);
  const st = { k: 1, axisFonts: new Set(), axes: u.axes.map((a) => ({ font: [...a.font], labelFont: [...a.labelFont], size: a.size, labelSize: a.labelSize })) };
  u._projector = st;
  u.root.dataset.textScale = "1";
  // Text drawn by the chart's own hooks (bands, cache sizes) is scaled as
  // it is set; the axes' fonts are already scaled by rescale.
  const ctx = u.ctx;
  const desc = Object.getOwnPropertyDescriptor(Object.getPrototypeOf(ctx), "font");
  if (desc && desc.set) {
    Object.defineProperty(ctx, "font", {
      configurable: true,
      get() {
        return desc.get.call(this);
      },
      set(v) {
        desc.set.call(this, st.k === 1 || st.axisFonts.has(v) ? v : scalePx(v, st.k));
      },
    });
  }
  live.add(u);
  watch();
  if (textScale() !== 1) requestAnimationFrame(() => rescale(u));
  return u;
}

// watchers are the charts drawn by other means than uPlot (SVG) that
// draw themselves again when the text size changes: {el, fn, k, seen}.
const watchers = new Set();

// onTextScale calls fn whenever the large-font switch changes the text
// size, for as long as el is in the page.
export function onTextScale(el, fn) {
  watchers.add({ el, fn, k: textScale(), seen: false });
  watch();
}

function watch() {
  if (watching || typeof MutationObserver === "undefined") return;
  watching = true;
  new MutationObserver(() => {
    for (const p of live) {
      if (!p.root.isConnected) live.delete(p);
      else rescale(p);
    }
    const k = textScale();
    for (const w of watchers) {
      if (!w.el.isConnected) {
        if (w.seen) watchers.delete(w);
        continue;
      }
      w.seen = true;
      if (w.k !== k) {
        w.k = k;
        w.fn();
      }
    }
  }).observe(document.body, { attributes: true, attributeFilter: ["class"] });
}

Object.assign(ScaledPlot, uPlot);
