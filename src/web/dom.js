// SPDX-License-Identifier: Apache-2.0
// dom.js: building the page. Everything from the server goes in as text
// nodes (never innerHTML), so names and messages cannot inject markup.

// h('a', {href: '#/x', class: 'y', onclick: fn}, 'text', child, [more]) -> element.
export function h(tag, attrs, ...kids) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v == null || v === false) continue;
    if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else if (k === 'class') el.className = v;
    else if (k === 'text') el.textContent = v;
    else el.setAttribute(k, v === true ? '' : v);
  }
  append(el, kids);
  return el;
}

export function append(el, kids) {
  for (const k of kids.flat(Infinity)) {
    if (k == null || k === false) continue;
    el.append(k instanceof Node ? k : document.createTextNode(String(k)));
  }
  return el;
}

const SVG_NS = 'http://www.w3.org/2000/svg';

// The same for SVG elements (presentation attributes only: the CSP forbids style="").
export function s(tag, attrs, ...kids) {
  const el = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v == null || v === false) continue;
    if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else if (k === 'text') el.textContent = v;
    else el.setAttribute(k, v);
  }
  return append(el, kids);
}

// A table in a horizontally scrolling box (narrow screens scroll the table, not the page).
// columns: [{label, value: row => node|string, num: bool}]
export function table(columns, rows, opts = {}) {
  if (!rows.length) return h('p', { class: 'empty' }, opts.empty || 'Nothing to show.');
  const head = h('tr', null, columns.map((c) => h('th', { scope: 'col', class: c.num ? 'num' : null }, c.label)));
  const body = rows.map((r) =>
    h('tr', { 'data-id': r.id ?? null }, columns.map((c) => h('td', { class: c.num ? 'num' : null, 'data-label': c.label }, c.value(r)))),
  );
  return h(
    'div',
    { class: 'scroll', tabindex: '0', role: 'region', 'aria-label': opts.label || 'table' },
    h('table', { class: opts.class || null }, opts.caption ? h('caption', null, opts.caption) : null, h('thead', null, head), h('tbody', null, body)),
  );
}

export function section(title, ...kids) {
  return h('section', { class: 'panel' }, h('h2', null, title), kids);
}

// A figure with a label: value over label, for the summary rows of a view.
export function stat(label, value, note) {
  return h('div', { class: 'stat' }, h('span', { class: 'stat-value' }, value), h('span', { class: 'stat-label' }, label), note ? h('span', { class: 'stat-note' }, note) : null);
}

export function stats(...items) {
  return h('div', { class: 'stats' }, items);
}

export function errorBox(err, what) {
  const code = err && err.code ? err.code : 'error';
  return h(
    'div',
    { class: 'error', role: 'alert' },
    h('strong', null, what ? 'Could not load ' + what + ': ' : 'Error: '),
    err && err.message ? err.message : String(err),
    h('span', { class: 'code' }, ' (' + code + (err && err.status ? ', HTTP ' + err.status : '') + ')'),
  );
}

// A state as a labelled chip; colour is never the only cue (the word is there).
export function badge(state) {
  return h('span', { class: 'badge st-' + String(state).replace(/[^a-z-]/g, '') }, state);
}

export function classLabel(pc) {
  return pc === 'owned' ? 'P1 owned' : pc === 'opportunistic' ? 'P2 opportunistic' : pc === 'auto' ? 'auto' : pc || '';
}

export function classChip(pc) {
  const kind = pc === 'owned' ? 'p1' : pc === 'auto' ? 'auto' : 'p2';
  const title = pc === 'auto' ? 'automatic: owned (P1) within the project’s guarantee, opportunistic (P2) beyond it; its allocations say which it got' : undefined;
  return h('span', { class: 'chip ' + kind, title }, classLabel(pc));
}

export function simChip() {
  return h('span', { class: 'chip sim', title: 'simulated cluster: no real GPUs behind it' }, 'SIMULATED');
}

/* Work imported as history (POST /v1/history): it never ran here. */
export function importedChip() {
  return h('span', { class: 'chip sim', title: 'imported history: finished work of the past that never ran on this fleet' }, 'IMPORTED · SIMULATED');
}

export function isSimulated(cluster) {
  return !!cluster && (cluster.backend === 'sim' || (cluster.labels && cluster.labels.simulated === 'true'));
}

// milli-GPU -> "4", "0.5", "12.25"
export function gpus(milli) {
  if (milli == null) return '—';
  return String(Math.round(milli) / 1000);
}

export function pct(part, whole) {
  return whole > 0 ? Math.round((100 * part) / whole) + ' %' : '—';
}

const pad = (n) => String(n).padStart(2, '0');

// Times are shown in UTC, like the API, the CLI and the invoices.
export function time(t) {
  if (t == null || t === '') return '—';
  const d = new Date(t);
  if (isNaN(d)) return String(t);
  return `${d.getUTCFullYear()}-${pad(d.getUTCMonth() + 1)}-${pad(d.getUTCDate())} ${pad(d.getUTCHours())}:${pad(d.getUTCMinutes())}:${pad(d.getUTCSeconds())} UTC`;
}

export function duration(ms) {
  if (ms == null || ms < 0) return '—';
  const sec = Math.floor(ms / 1000);
  if (sec < 60) return sec + ' s';
  const min = Math.floor(sec / 60);
  if (min < 60) return min + ' min ' + (sec % 60) + ' s';
  const hr = Math.floor(min / 60);
  if (hr < 48) return hr + ' h ' + (min % 60) + ' min';
  return Math.floor(hr / 24) + ' d ' + (hr % 24) + ' h';
}

// Integer micro-units -> "1,234.50 USD". Rounded half-even to `digits` on the
// integer, as the server's meter_round_money does, never through a float, so
// a figure reads the same here, in the API's strings and in the CLI (the
// server sends amounts already rounded; this only keeps them as they are).
export function money(micros, currency, digits = 2) {
  if (micros == null) return '—';
  const m = typeof micros === 'bigint' ? micros : BigInt(Math.trunc(Number(micros)));
  const step = 10n ** BigInt(6 - digits);
  const mag = m < 0n ? -m : m;
  let q = mag / step;
  const rem = mag % step;
  if (2n * rem > step || (2n * rem === step && q % 2n === 1n)) q++;
  const per = 10n ** BigInt(digits);
  const whole = (q / per).toString().replace(/\B(?=(\d{3})+(?!\d))/g, ',');
  const frac = digits ? '.' + (q % per).toString().padStart(digits, '0') : '';
  return (m < 0n && q > 0n ? '-' : '') + whole + frac + (currency ? ' ' + currency : '');
}

export function nameOf(map, id, fallback) {
  if (id == null) return '—';
  const x = map && map.get(id);
  return x ? x.name : (fallback || '#') + id;
}

export function link(href, text) {
  return h('a', { href }, text);
}

export function workloadLink(id) {
  return link('#/workloads/' + id, 'workload ' + id);
}

// "YYYY-MM" of a date in UTC, and the n months before it.
export function month(d = new Date()) {
  return `${d.getUTCFullYear()}-${pad(d.getUTCMonth() + 1)}`;
}

export function monthsBack(n, from = new Date()) {
  const out = [];
  for (let i = n - 1; i >= 0; i--) out.push(month(new Date(Date.UTC(from.getUTCFullYear(), from.getUTCMonth() - i, 1))));
  return out;
}

// A labelled form control: label above, control below, hint under it.
export function field(label, control, hint) {
  const id = control.id || 'f-' + Math.random().toString(36).slice(2, 9);
  control.id = id;
  const hintEl = hint ? h('span', { class: 'hint', id: id + '-hint' }, hint) : null;
  if (hintEl) control.setAttribute('aria-describedby', hintEl.id);
  return h('div', { class: 'field' }, h('label', { for: id }, label), control, hintEl);
}

export function select(options, value, attrs = {}) {
  return h('select', attrs, options.map(([v, text]) => h('option', { value: v, selected: String(v) === String(value) }, text)));
}
