// SPDX-License-Identifier: Apache-2.0
// charts.js: small SVG bar charts, drawn here rather than by a library to keep
// the dashboard light and offline. Colours come from classes in app.css (the
// CSP allows no style attributes); each chart has a text alternative and the
// views show the same figures in a table next to it.
import { h, s } from './dom.js';

// The chart's width in pixels: that of the page's content box less a panel's
// padding, so text stays its real size on a narrow screen instead of shrinking.
export function chartWidth() {
  const main = document.getElementById('main');
  const w = main && main.clientWidth ? main.clientWidth - 40 : 640;
  return Math.max(260, w);
}

// Horizontal stacked bars, one row per item, the label above its bar.
// rows: [{label, parts: [{value, kind, text}], text}]; fmt(total) -> string, unless the row has text.
// max: the value of a full bar (default: the largest row).
export function barChart({ rows, fmt, width, label, max: full }) {
  const rowH = 40;
  const valueW = 120;
  const barW = width - valueW - 8;
  const max = full || Math.max(1e-9, ...rows.map((r) => r.parts.reduce((a, p) => a + p.value, 0)));
  const svg = s('svg', { class: 'chart', width, height: rows.length * rowH + 4, viewBox: `0 0 ${width} ${rows.length * rowH + 4}`, role: 'img', 'aria-label': label });
  svg.append(s('title', { text: label }), hatch());
  rows.forEach((r, i) => {
    const y = i * rowH;
    let x = 0;
    svg.append(s('text', { x: 0, y: y + 13, class: 'chart-label', text: r.label }));
    for (const p of r.parts) {
      const w = (p.value / max) * barW;
      if (w > 0) svg.append(s('rect', { x, y: y + 18, width: Math.max(w, 1), height: 16, class: 'bar ' + p.kind }, s('title', { text: `${r.label}: ${p.text}` })));
      x += w;
    }
    const total = r.parts.reduce((a, p) => a + p.value, 0);
    svg.append(s('text', { x: Math.min(x, barW) + 6, y: y + 31, class: 'chart-value', text: r.text ?? fmt(total) }));
  });
  return svg;
}

// Columns over time (months), value labels on top, axis labels below.
// cols: [{label, value, title}]
export function columnChart({ cols, fmt, width, height = 180, label, kind = 'used' }) {
  const top = 20;
  const bottom = 24;
  const max = Math.max(1e-9, ...cols.map((c) => c.value));
  const slot = width / Math.max(1, cols.length);
  const colW = Math.min(56, slot * 0.6);
  const plotH = height - top - bottom;
  const svg = s('svg', { class: 'chart', width, height, viewBox: `0 0 ${width} ${height}`, role: 'img', 'aria-label': label });
  svg.append(s('title', { text: label }));
  svg.append(s('line', { x1: 0, x2: width, y1: top + plotH + 0.5, y2: top + plotH + 0.5, class: 'axis' }));
  cols.forEach((c, i) => {
    const hgt = (c.value / max) * plotH;
    const x = i * slot + (slot - colW) / 2;
    if (c.value > 0) svg.append(s('rect', { x, y: top + plotH - hgt, width: colW, height: Math.max(hgt, 1), class: 'bar ' + kind }, s('title', { text: c.title || `${c.label}: ${fmt(c.value)}` })));
    svg.append(s('text', { x: x + colW / 2, y: top + plotH - hgt - 5, class: 'chart-value', 'text-anchor': 'middle', text: fmt(c.value) }));
    svg.append(s('text', { x: x + colW / 2, y: height - 6, class: 'chart-label', 'text-anchor': 'middle', text: c.label }));
  });
  return svg;
}

// The diagonal hatch that marks opportunistic (P2) work in every chart, so that
// P1 and P2 differ by more than colour.
export function hatch() {
  return s('defs', null, s('pattern', { id: 'hatch', width: 6, height: 6, patternUnits: 'userSpaceOnUse', patternTransform: 'rotate(45)' }, s('rect', { width: 6, height: 6, class: 'hatch-bg' }), s('line', { x1: 0, y1: 0, x2: 0, y2: 6, class: 'hatch-line' })));
}

// The hatch laid over a bar of any colour (the timeline's bars are in their project's colour).
export function hatchOver() {
  return s('defs', null, s('pattern', { id: 'hatch-over', width: 6, height: 6, patternUnits: 'userSpaceOnUse', patternTransform: 'rotate(45)' }, s('line', { x1: 0, y1: 0, x2: 0, y2: 6, class: 'hatch-over-line' })));
}

// A legend: [[kind, text]] -> swatches with words.
export function legend(items) {
  return h('ul', { class: 'legend' }, items.map(([kind, text]) => h('li', null, h('span', { class: 'swatch ' + kind, 'aria-hidden': 'true' }), text)));
}

// Lines over time sharing their x steps, y from 0 to the largest value (or max).
// series: [{kind, label, values}]; xLabels: [first, last] under the axis; fmt(v) -> string.
export function lineChart({ series, width, height = 200, label, fmt, xLabels = [], max: full }) {
  const top = 16;
  const bottom = 22;
  const left = 48;
  const n = Math.max(2, ...series.map((x) => x.values.length));
  const max = full || Math.max(1e-9, ...series.flatMap((x) => x.values));
  const plotW = width - left - 8;
  const plotH = height - top - bottom;
  const svg = s('svg', { class: 'chart', width, height, viewBox: `0 0 ${width} ${height}`, role: 'img', 'aria-label': label });
  svg.append(s('title', { text: label }));
  svg.append(s('line', { x1: left, x2: width, y1: top + plotH + 0.5, y2: top + plotH + 0.5, class: 'axis' }));
  svg.append(s('text', { x: left - 6, y: top + 4, class: 'chart-value', 'text-anchor': 'end', text: fmt(max) }));
  svg.append(s('text', { x: left - 6, y: top + plotH, class: 'chart-value', 'text-anchor': 'end', text: fmt(0) }));
  if (xLabels[0]) svg.append(s('text', { x: left, y: height - 6, class: 'chart-label', text: xLabels[0] }));
  if (xLabels[1]) svg.append(s('text', { x: width - 4, y: height - 6, class: 'chart-label', 'text-anchor': 'end', text: xLabels[1] }));
  for (const line of series) {
    const points = line.values.map((v, i) => `${(left + (i * plotW) / (n - 1)).toFixed(1)},${(top + plotH - (Math.min(v, max) / max) * plotH).toFixed(1)}`).join(' ');
    svg.append(s('polyline', { points, class: 'line ' + line.kind }, s('title', { text: line.label })));
  }
  return svg;
}
