// SPDX-License-Identifier: Apache-2.0
// view-timeline.js: who held which GPU when. One lane per GPU (grouped by
// node, pool or owner), one bar per allocation in its project's colour (a
// legend names them), opportunistic (P2) work hatched over it, allocations
// that ended by preemption with a red end mark, and the preemption ledger's
// decisions as dashed lines with their grace period.
// Zoom with the buttons, the presets or the mouse wheel; zooming redraws
// from the data already loaded, only Refresh asks the server again.
import { api, listAll, byIds } from './api.js';
import { h, s, table, section, nameOf, time, duration, workloadLink, classLabel, select, field } from './dom.js';
import { legend, chartWidth, hatch, hatchOver } from './charts.js';

const MIN = 60e3;
const HOUR = 60 * MIN;
const PRESETS = [
  ['15m', 15 * MIN, '15 min'],
  ['1h', HOUR, '1 hour'],
  ['6h', 6 * HOUR, '6 hours'],
  ['24h', 24 * HOUR, '24 hours'],
  ['7d', 7 * 24 * HOUR, '7 days'],
];
const STEPS = [1e3, 5e3, 15e3, 30e3, MIN, 5 * MIN, 15 * MIN, 30 * MIN, HOUR, 3 * HOUR, 6 * HOUR, 12 * HOUR, 24 * HOUR, 48 * HOUR, 7 * 24 * HOUR];

// Kept across refreshes and visits in this tab: from/to null means "the last span, up to now";
// span null until the first visit picks the smallest preset that shows the recent work.
const range = { span: null, from: null, to: null, node: '', group: 'node' };
const PALETTE = 10; // project colours: .proj-0 ... .proj-9 in app.css

// A colour per project, the same in every redraw: by the project's rank among those shown.
function projectColours(allocs) {
  const ids = [...new Set(allocs.map((a) => a.project_id))].sort((a, b) => a - b);
  return new Map(ids.map((id, i) => [id, i % PALETTE]));
}

// Text cut to what fits in px pixels at the bar's font (about 6.5 px a character), or ''.
function fitText(text, px) {
  const n = Math.floor((px - 8) / 6.5);
  if (n < 3) return '';
  return text.length <= n ? text : text.slice(0, n - 1) + '…';
}

function fittingSpan(allocs) {
  const now = Date.now();
  const recent = allocs.filter((a) => (a.ended_ms ?? now) > now - 7 * 24 * HOUR);
  if (!recent.length) return HOUR;
  const needed = (now - Math.min(...recent.map((a) => a.started_ms))) * 1.05;
  return (PRESETS.find(([, span]) => span >= needed) || PRESETS[PRESETS.length - 1])[1];
}

function currentRange() {
  if (range.from == null) {
    const now = Date.now();
    return [now - range.span, now];
  }
  return [range.from, range.to];
}

function setRange(from, to) {
  const span = Math.min(Math.max(to - from, 10e3), 90 * 24 * HOUR);
  const mid = (from + to) / 2;
  range.from = Math.round(mid - span / 2);
  range.to = Math.round(mid + span / 2);
}

const pad = (n) => String(n).padStart(2, '0');
function tickLabel(t, step) {
  const d = new Date(t);
  const hm = pad(d.getUTCHours()) + ':' + pad(d.getUTCMinutes());
  if (step < MIN) return hm + ':' + pad(d.getUTCSeconds());
  if (step >= 24 * HOUR) return d.getUTCFullYear() + '-' + pad(d.getUTCMonth() + 1) + '-' + pad(d.getUTCDate());
  return hm;
}

export async function timeline(ctx) {
  const [allocs, ledger, n, inv] = await Promise.all([
    listAll('/v1/allocations'),
    listAll('/v1/preemptions'),
    byIds('gpus', 'nodes', 'projects', 'clusters'),
    api('/v1/inventory').catch(() => null), // pools and owners of GPUs, where the caller may read them
  ]);
  const where = new Map(((inv && inv.items) || []).map((r) => [r.gpu_id, r]));
  if (range.span == null) range.span = fittingSpan(allocs);
  const chart = h('div', { class: 'timeline-box' });
  const rangeText = h('p', { class: 'range', 'aria-live': 'polite' });
  const ledgerBox = h('div');
  const presetButtons = PRESETS.map(([key, span, label]) =>
    h('button', { type: 'button', class: 'secondary', 'data-preset': key, onclick: () => ((range.span = span), (range.from = range.to = null), redraw()) }, label),
  );
  const zoom = (factor, pivot) => {
    const [from, to] = currentRange();
    const p = pivot ?? (from + to) / 2;
    setRange(p - (p - from) * factor, p + (to - p) * factor);
    redraw();
  };
  const pan = (frac) => {
    const [from, to] = currentRange();
    const d = (to - from) * frac;
    setRange(from + d, to + d);
    redraw();
  };
  // Fit: from the first start of the work held in the last week to now, with a margin.
  const fit = () => {
    const now = Date.now();
    const recent = allocs.filter((a) => (a.ended_ms ?? now) > now - 7 * 24 * HOUR);
    if (!recent.length) return;
    const first = Math.min(...recent.map((a) => a.started_ms));
    const margin = Math.max(5e3, (now - first) * 0.05);
    setRange(first - margin, now + margin);
    redraw();
  };
  const nodes = [...n.nodes.values()].sort((a, b) => a.name.localeCompare(b.name, 'en', { numeric: true }));
  const nodePick = select([['', 'all nodes'], ...nodes.map((x) => [x.id, x.name])], range.node, {
    id: 'tl-node',
    onchange: (e) => ((range.node = e.target.value), redraw()),
  });
  const groupPick = select(
    [
      ['node', 'node'],
      ['pool', 'pool'],
      ['owner', 'owner'],
    ],
    range.group,
    { id: 'tl-group', onchange: (e) => ((range.group = e.target.value), redraw()) },
  );
  const colours = projectColours(allocs);
  const legendBox = h('div');

  function redraw() {
    const [from, to] = currentRange();
    for (const b of presetButtons) b.setAttribute('aria-pressed', String(range.from == null && PRESETS.find((p) => p[0] === b.dataset.preset)[1] === range.span));
    rangeText.textContent = 'Showing ' + time(from) + ' to ' + time(to) + ' (' + duration(to - from) + ').';
    const shown = allocs.filter((a) => a.started_ms < to && (a.ended_ms ?? Date.now()) > from);
    const projects = [...new Set(shown.map((a) => a.project_id))].sort((a, b) => nameOf(n.projects, a).localeCompare(nameOf(n.projects, b)));
    legendBox.replaceChildren(
      legend([
        ...projects.map((id) => ['proj-' + colours.get(id), 'project ' + nameOf(n.projects, id)]),
        ['p2-over', 'hatched: P2 opportunistic (solid: P1 owned)'],
        ['preempted', 'ended by preemption'],
        ['mark', 'preemption decision and grace period'],
      ]),
    );
    chart.replaceChildren(draw({ allocs, ledger, n, from, to, node: Number(range.node) || 0, zoom, colours, where, group: range.group }));
    ledgerBox.replaceChildren(ledgerTable(ledger, n, from, to));
  }

  ctx.add(
    h(
      'div',
      { class: 'toolbar', role: 'group', 'aria-label': 'time range' },
      h('div', { class: 'btn-group' }, presetButtons),
      h(
        'div',
        { class: 'btn-group' },
        h('button', { type: 'button', class: 'secondary', onclick: () => pan(-0.5), 'aria-label': 'earlier' }, '◀ Earlier'),
        h('button', { type: 'button', class: 'secondary', onclick: () => zoom(0.5), 'data-zoom': 'in' }, 'Zoom in'),
        h('button', { type: 'button', class: 'secondary', onclick: () => zoom(2), 'data-zoom': 'out' }, 'Zoom out'),
        h('button', { type: 'button', class: 'secondary', onclick: () => pan(0.5), 'aria-label': 'later' }, 'Later ▶'),
        h('button', { type: 'button', class: 'secondary', onclick: () => ((range.from = range.to = null), redraw()) }, 'Now'),
        h('button', { type: 'button', class: 'secondary', onclick: fit, 'data-fit': '' }, 'Fit'),
      ),
      field('Node', nodePick),
      field('Lanes by', groupPick),
    ),
    rangeText,
    legendBox,
    chart,
    h('p', { class: 'hint' }, 'Mouse wheel over the chart zooms around the pointer. Select a bar to open its workload.'),
    allocs.truncated ? h('p', { class: 'note' }, 'Only the oldest ' + allocs.length + ' allocations were loaded; newer ones are missing.') : null,
    section('Preemptions in this range', ledgerBox),
  );
  redraw();
}

// The group a GPU's lane is in: its node, its pool, or its pool's owner.
function groupOf(g, n, where, group) {
  const r = where.get(g.id);
  if (group === 'pool') return r && r.pool ? 'pool ' + r.pool : 'in no pool';
  if (group === 'owner') return r && r.owner ? (r.owner.kind === 'org' ? 'organization ' : 'project ') + r.owner.name : 'no owner';
  return (n.nodes.get(g.node_id) || { name: 'node ' + g.node_id }).name;
}

function draw({ allocs, ledger, n, from, to, node, zoom, colours, where, group }) {
  const width = chartWidth();
  const gutter = width < 500 ? 92 : 132;
  const top = 40; // the axis' labels above, the decisions' labels below them
  const laneH = 22;
  const plotW = width - gutter - 8;
  const x = (t) => gutter + ((t - from) / (to - from)) * plotW;
  const now = Date.now();
  const visible = allocs.filter((a) => a.started_ms < to && (a.ended_ms ?? now) > from && (!node || a.node_id === node));
  const used = new Set(visible.map((a) => a.gpu_id));
  let gpuList = [...n.gpus.values()].filter((g) => !node || g.node_id === node);
  // A big fleet shows only the GPUs that held something in the range.
  if (gpuList.length > 64) gpuList = gpuList.filter((g) => used.has(g.id));
  const label = (g) => (n.nodes.get(g.node_id) || { name: 'node ' + g.node_id }).name + ' / ' + g.index;
  const groupKey = (g) => groupOf(g, n, where, group);
  gpuList.sort((a, b) => groupKey(a).localeCompare(groupKey(b), 'en', { numeric: true }) || label(a).localeCompare(label(b), 'en', { numeric: true }));
  // Lanes, with a heading row where a group starts (not for nodes: the label names the node).
  const rows = [];
  for (const g of gpuList) {
    if (group !== 'node' && (!rows.length || rows[rows.length - 1].key !== groupKey(g))) rows.push({ heading: groupKey(g), key: groupKey(g) });
    rows.push({ gpu: g, key: groupKey(g) });
  }
  const lane = new Map();
  rows.forEach((r, i) => r.gpu && lane.set(r.gpu.id, i));
  const height = top + Math.max(1, rows.length) * laneH + 8;

  const svg = s('svg', { class: 'timeline', width, height, viewBox: `0 0 ${width} ${height}`, role: 'img', 'aria-label': `GPU timeline, ${gpuList.length} GPUs, ${visible.length} allocations` });
  svg.append(hatch(), hatchOver());
  // Axis: ticks at a round step that leaves ~90 px between labels.
  const step = STEPS.find((st) => ((to - from) / st) * 90 <= plotW) || STEPS[STEPS.length - 1];
  for (let t = Math.ceil(from / step) * step; t <= to; t += step) {
    svg.append(s('line', { x1: x(t), x2: x(t), y1: top - 4, y2: height - 8, class: 'grid' }));
    if (x(t) + 34 <= width) svg.append(s('text', { x: x(t), y: 14, class: 'tick', 'text-anchor': 'middle', text: tickLabel(t, step) }));
  }
  rows.forEach((r, i) => {
    const y = top + i * laneH;
    if (r.heading) {
      svg.append(s('text', { x: 4, y: y + 13, class: 'lane-group', text: r.heading }));
      return;
    }
    svg.append(s('rect', { x: gutter, y, width: plotW, height: laneH - 4, class: i % 2 ? 'lane odd' : 'lane' }), s('text', { x: gutter - 6, y: y + 13, class: 'lane-label', 'text-anchor': 'end', text: fitText(label(r.gpu), gutter - 2) || String(r.gpu.index) }));
  });
  for (const a of visible) {
    if (!lane.has(a.gpu_id)) continue;
    const y = top + lane.get(a.gpu_id) * laneH;
    const end = a.ended_ms ?? now;
    const x1 = x(Math.max(a.started_ms, from));
    const x2 = x(Math.min(end, to));
    const pc = a.priority_class === 'owned' ? 'p1' : 'p2';
    const preempted = a.end_reason === 'preempted';
    const title = `workload ${a.workload_id} · ${nameOf(n.projects, a.project_id)} · ${classLabel(a.priority_class)}${a.borrowed ? ' (borrowed)' : ''} · ${time(a.started_ms)} to ${a.ended_ms == null ? 'now' : time(a.ended_ms)}${a.end_reason ? ' · ended: ' + a.end_reason : ''}`;
    const link = s('a', { href: '#/workloads/' + a.workload_id, class: 'tl-link', 'aria-label': title }, s('title', { text: title }));
    const w = Math.max(2, x2 - x1);
    link.append(s('rect', { x: x1, y: y + 1, width: w, height: laneH - 6, class: `tl-bar proj-${colours.get(a.project_id)}${preempted ? ' preempted' : ''}`, 'data-workload': a.workload_id, 'data-class': pc, 'data-project': a.project_id }));
    if (pc === 'p2') link.append(s('rect', { x: x1, y: y + 1, width: w, height: laneH - 6, class: 'tl-p2' }));
    const text = fitText(a.workload_id + ' ' + nameOf(n.projects, a.project_id), w);
    if (text) link.append(s('text', { x: x1 + 4, y: y + 13, class: 'bar-text', text }));
    if (preempted && a.ended_ms <= to) link.append(s('path', { d: `M${x2 - 6} ${y - 1} L${x2 + 1} ${y - 1} L${x2 + 1} ${y + laneH - 3} Z`, class: 'tl-preempt-end' }));
    svg.append(link);
  }
  let lastLabel = -Infinity; // decision labels closer than this are left out (the line stays)
  for (const p of [...ledger].sort((a, b) => a.decided_ms - b.decided_ms)) {
    if (p.decided_ms > to || (p.released_ms ?? p.decided_ms) < from) continue;
    const xd = x(Math.max(p.decided_ms, from));
    const xr = x(Math.min(p.released_ms ?? now, to));
    const title = `preemption ${p.id} (${p.rule}): for workload ${p.preemptor_id} of ${nameOf(n.projects, p.project_id)}, ${p.victims.length} victim(s), decided ${time(p.decided_ms)}${p.reclaim_ms != null ? ', GPUs back after ' + duration(p.reclaim_ms) : ''}`;
    svg.append(
      s(
        'g',
        { class: 'tl-mark', 'data-preemption': p.id },
        s('title', { text: title }),
        s('rect', { x: xd, y: top - 4, width: Math.max(1, xr - xd), height: height - top - 4, class: 'tl-grace' }),
        s('line', { x1: xd, x2: xd, y1: top - 6, y2: height - 8, class: 'tl-decision' }),
        xd - lastLabel >= 64 ? s('text', { x: xd + 3, y: top - 6, class: 'tl-mark-label', text: '⚡' + p.rule }) : null,
      ),
    );
    if (xd - lastLabel >= 64) lastLabel = xd;
  }
  if (now >= from && now <= to) svg.append(s('line', { x1: x(now), x2: x(now), y1: top - 6, y2: height - 8, class: 'tl-now' }));
  if (!gpuList.length) svg.append(s('text', { x: gutter, y: top + 14, class: 'tick', text: 'No GPUs to show.' }));

  // Wheel: zoom around the time under the pointer (passive: false, to keep the page from scrolling).
  svg.addEventListener(
    'wheel',
    (e) => {
      const box = svg.getBoundingClientRect();
      const px = ((e.clientX - box.left) / box.width) * width;
      if (px < gutter) return;
      e.preventDefault();
      zoom(e.deltaY > 0 ? 1.25 : 0.8, from + ((px - gutter) / plotW) * (to - from));
    },
    { passive: false },
  );
  return h('div', { class: 'scroll' }, svg);
}

function ledgerTable(ledger, n, from, to) {
  const rows = ledger.filter((p) => p.decided_ms <= to && (p.released_ms ?? Date.now()) >= from).sort((a, b) => b.decided_ms - a.decided_ms);
  return table(
    [
      { label: 'decided', value: (p) => time(p.decided_ms) },
      { label: 'rule', value: (p) => p.rule },
      { label: 'for', value: (p) => [workloadLink(p.preemptor_id), ' of ', nameOf(n.projects, p.project_id)] },
      { label: 'victims', value: (p) => p.victims.map((v, i) => [i ? ', ' : '', workloadLink(v.workload_id), ' (' + nameOf(n.projects, v.project_id) + ')']) },
      { label: 'GPUs back after', num: true, value: (p) => (p.reclaim_ms != null ? duration(p.reclaim_ms) : 'pending') },
      { label: 'GPU time lost', num: true, value: (p) => duration(p.gpu_ms_lost) },
    ],
    rows,
    { label: 'preemptions', empty: 'No preemption in this range.', class: 'ledger' },
  );
}
