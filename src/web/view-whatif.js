// SPDX-License-Identifier: Apache-2.0
// view-whatif.js: what-if on real history (POST /v1/whatif), simulated. Pick a
// period and changes; the period's recorded work is replayed through the
// scheduler without them and with them, and both runs are shown side by side:
// waits, GPUs allocated over time, preemptions, GPU-hours and cost, overall and
// per project, with charts and the same figures in tables. The choices live in
// the hash (#/whatif?period=...&run=1), so a result can be linked and refreshed;
// nothing is replayed until asked (a replay is work for the server).
import { api, byIds } from './api.js';
import { h, table, section, stat, stats, nameOf, money, month, monthsBack, select, field, errorBox, duration, simChip } from './dom.js';
import { barChart, lineChart, legend, chartWidth } from './charts.js';

const POLICIES = ['default', 'bestfit', 'fgd-fill', 'fgd', 'packing', 'clustering', 'dotprod', 'random'];
const KEYS = ['period', 'qproject', 'qclass', 'qgpus', 'nclass', 'ncount', 'rclass', 'rcount', 'lend', 'policy', 'grace'];

// The request's changes from the form's values (the hash's query).
function changesOf(q) {
  const c = [];
  if (q.qproject && q.qclass && Number(q.qgpus)) c.push({ kind: 'quota', project_id: Number(q.qproject), gpu_class_id: Number(q.qclass), gpus: Number(q.qgpus) });
  if (q.nclass && Number(q.ncount) > 0) c.push({ kind: 'add_nodes', gpu_class_id: Number(q.nclass), count: Number(q.ncount) });
  if (q.rclass && Number(q.rcount) > 0) c.push({ kind: 'remove_nodes', gpu_class_id: Number(q.rclass), count: Number(q.rcount) });
  if (q.lend) c.push({ kind: 'lend_to_all', pool_id: Number(q.lend) });
  if (q.policy && q.policy !== 'default') c.push({ kind: 'policy', policy: q.policy });
  if (q.grace !== undefined && q.grace !== '') c.push({ kind: 'grace', grace_s: Number(q.grace) });
  return c;
}

const opt = (items, none) => [['', none], ...items.map((x) => [x.id, x.name])];
const byName = (m) => [...m.values()].sort((a, b) => a.name.localeCompare(b.name));
const wait = (s) => duration(s * 1000);
const arrow = (a, b) => (a === b ? a : a + ' → ' + b);

function form(ctx, n, q) {
  const periods = monthsBack(12).reverse();
  const period = /^\d{4}-\d{2}$/.test(q.period || '') ? q.period : month();
  if (!periods.includes(period)) periods.push(period);
  const classes = byName(n.gpuClasses);
  const inputs = {
    period: select(periods.map((p) => [p, p]), period, { name: 'period' }),
    qproject: select(opt(byName(n.projects), 'no quota change'), q.qproject, { name: 'qproject' }),
    qclass: select(opt(classes, '—'), q.qclass, { name: 'qclass' }),
    qgpus: h('input', { name: 'qgpus', type: 'number', min: '-100000', max: '100000', step: '1', value: q.qgpus || '', inputmode: 'numeric' }),
    nclass: select(opt(classes, 'no nodes added'), q.nclass, { name: 'nclass' }),
    ncount: h('input', { name: 'ncount', type: 'number', min: '0', max: '1000', step: '1', value: q.ncount || '', inputmode: 'numeric' }),
    rclass: select(opt(classes, 'no nodes removed'), q.rclass, { name: 'rclass' }),
    rcount: h('input', { name: 'rcount', type: 'number', min: '0', max: '1000', step: '1', value: q.rcount || '', inputmode: 'numeric' }),
    lend: select(opt(byName(n.pools), 'no pool lent to all'), q.lend, { name: 'lend' }),
    policy: select(POLICIES.map((p) => [p, p === 'default' ? 'as now' : p]), q.policy || 'default', { name: 'policy' }),
    grace: h('input', { name: 'grace', type: 'number', min: '0', max: '2678400', step: '1', value: q.grace ?? '', inputmode: 'numeric', placeholder: 'as now' }),
  };
  const f = h(
    'form',
    { class: 'panel form whatif-form', novalidate: true },
    field('Period', inputs.period, 'The month whose recorded work is replayed.'),
    h('fieldset', null, h('legend', null, 'Guarantee'), field('Project', inputs.qproject), field('GPU class', inputs.qclass), field('GPUs more (or fewer)', inputs.qgpus, 'e.g. 8 or -4; a set limit moves with it.')),
    h('fieldset', null, h('legend', null, 'Fleet'), field('Add nodes of class', inputs.nclass), field('How many', inputs.ncount, 'Like the class’s first node.'), field('Remove nodes of class', inputs.rclass), field('How many', inputs.rcount)),
    h('fieldset', null, h('legend', null, 'Lending and policy'), field('Lend to every project', inputs.lend), field('Placement policy', inputs.policy), field('Preemption grace (s)', inputs.grace)),
    h('button', { type: 'submit' }, 'Run the what-if'),
    h('p', { class: 'hint' }, 'A simulation: the recorded work is replayed through the scheduler; nothing live changes.'),
  );
  f.addEventListener('submit', (e) => {
    e.preventDefault();
    const p = new URLSearchParams();
    for (const k of KEYS) if (inputs[k].value !== '') p.set(k, inputs[k].value);
    p.set('run', '1');
    ctx.go('#/whatif?' + p.toString());
  });
  return { f, period };
}

function describe(c, n) {
  switch (c.kind) {
    case 'quota':
      return `${nameOf(n.projects, c.project_id, 'project ')}: ${c.gpus > 0 ? '+' : ''}${c.gpus} guaranteed ${nameOf(n.gpuClasses, c.gpu_class_id)}`;
    case 'add_nodes':
      return `${c.count} more ${nameOf(n.gpuClasses, c.gpu_class_id)} node${c.count === 1 ? '' : 's'}`;
    case 'remove_nodes':
      return `${c.count} ${nameOf(n.gpuClasses, c.gpu_class_id)} node${c.count === 1 ? '' : 's'} fewer`;
    case 'lend_to_all':
      return `${nameOf(n.pools, c.pool_id, 'pool ')} lent to every project`;
    case 'policy':
      return `placement ${c.policy}`;
    default:
      return `grace ${c.grace_s} s`;
  }
}

function results(ctx, r, n, changes) {
  const b = r.baseline;
  const c = r.changed;
  const cur = b.currency && b.currency !== '*' ? b.currency : '';
  const width = chartWidth();
  const util = (x) => (x.utilisation_ppm == null ? '—' : (x.utilisation_ppm / 1e4).toFixed(1) + ' %');
  ctx.add(
    h('p', { class: 'sim-banner' }, simChip(), h('span', null, r.label)),
    h('p', { class: 'hint' }, `${r.period.from} to ${r.period.to}: ${r.workloads} workloads from the ${r.source}; changes: ${changes.length ? changes.map((x) => describe(x, n)).join('; ') : 'none (both runs are the record replayed)'}.`),
    stats(
      stat('wait p50', arrow(wait(b.overall.wait_p50_s), wait(c.overall.wait_p50_s)), 'baseline → changed'),
      stat('wait p95', arrow(wait(b.overall.wait_p95_s), wait(c.overall.wait_p95_s)), 'baseline → changed'),
      stat('utilisation', arrow(util(b), util(c)), 'of the GPUs in the period'),
      stat('preemptions', arrow(String(b.overall.preemptions), String(c.overall.preemptions)), arrow(b.overall.gpu_hours_lost.toFixed(1), c.overall.gpu_hours_lost.toFixed(1)) + ' GPU-hours lost'),
      stat('cost', arrow(money(b.overall.cost_micros, cur), money(c.overall.cost_micros, cur)), arrow(b.overall.gpu_hours.toFixed(1), c.overall.gpu_hours.toFixed(1)) + ' GPU-hours'),
    ),
    b.starts_reproduced.compared ? h('p', { class: 'hint whatif-fidelity' }, `The replay without changes reproduces ${b.starts_reproduced.same} of ${b.starts_reproduced.compared} recorded starts to the second.`) : null,
    b.recorded_changes ? h('p', { class: 'hint' }, `Quotas, caps, pools, nodes and weights changed ${b.recorded_changes} times in the period; both runs apply each change when it was made.`) : null,
  );
  const pairRows = (label, get, fmt) => [
    { label: label + ' · baseline', parts: [{ value: get(b.overall), kind: 'base', text: fmt(get(b.overall)) }] },
    { label: label + ' · changed', parts: [{ value: get(c.overall), kind: 'changed', text: fmt(get(c.overall)) }] },
  ];
  ctx.add(
    section(
      'Waits, side by side (simulated)',
      barChart({ width, label: 'waits p50 and p95, baseline and changed', fmt: (v) => wait(v), rows: [...pairRows('wait p50', (o) => o.wait_p50_s, wait), ...pairRows('wait p95', (o) => o.wait_p95_s, wait)] }),
      legend([
        ['base', 'baseline: the record replayed'],
        ['changed', 'with the changes'],
      ]),
    ),
    section(
      'GPUs allocated over time (simulated)',
      h('figure', null, lineChart({ width, label: 'GPUs allocated over the period, baseline and changed', fmt: (v) => v.toFixed(0), xLabels: [r.period.from.slice(0, 10), r.period.to.slice(0, 10)], max: Math.max(b.capacity_gpus, c.capacity_gpus, 1), series: [{ kind: 'base', label: 'baseline', values: b.series.allocated_gpus }, { kind: 'changed', label: 'changed', values: c.series.allocated_gpus }] }), h('figcaption', null, `Average GPUs held per ${duration(b.series.step_s * 1000)}; the top of the chart is the larger fleet (${Math.max(b.capacity_gpus, c.capacity_gpus)} GPUs).`)),
      legend([
        ['base', 'baseline'],
        ['changed', 'with the changes'],
      ]),
      table(
        [
          { label: 'run', value: (x) => x.name },
          { label: 'capacity GPUs', num: true, value: (x) => String(x.r.capacity_gpus) },
          { label: 'allocated GPU-hours', num: true, value: (x) => x.r.allocated_gpu_hours.toFixed(1) },
          { label: 'idle GPU-hours', num: true, value: (x) => (x.r.idle_gpu_hours == null ? '—' : x.r.idle_gpu_hours.toFixed(1)) },
          { label: 'utilisation', num: true, value: (x) => util(x.r) },
        ],
        [
          { name: 'baseline', r: b },
          { name: 'changed', r: c },
        ],
        { label: 'capacity and use', class: 'whatif-runs' },
      ),
    ),
    section(
      'Per project (simulated)',
      table(
        [
          { label: 'project', value: (p) => p.project },
          { label: 'workloads', num: true, value: (p) => String(p.workloads) },
          { label: 'wait p50', num: true, value: (p) => arrow(wait(p.wait_p50_s), wait(p.q.wait_p50_s)) },
          { label: 'wait p95', num: true, value: (p) => arrow(wait(p.wait_p95_s), wait(p.q.wait_p95_s)) },
          { label: 'preemptions', num: true, value: (p) => arrow(String(p.preemptions), String(p.q.preemptions)) },
          { label: 'GPU-hours', num: true, value: (p) => arrow(p.gpu_hours.toFixed(1), p.q.gpu_hours.toFixed(1)) },
          { label: 'cost', num: true, value: (p) => arrow(money(p.cost_micros, cur), money(p.q.cost_micros, cur)) },
        ],
        b.projects.map((p) => ({ ...p, id: p.project_id, q: c.projects.find((x) => x.project_id === p.project_id) || p })),
        { label: 'per project', class: 'whatif-projects', empty: 'No recorded work of your projects in this period.' },
      ),
    ),
  );
}

export async function whatif(ctx) {
  const n = await byIds('projects', 'gpu-classes', 'pools');
  const q = ctx.query;
  const { f, period } = form(ctx, n, q);
  ctx.add(h('p', { class: 'sim-banner' }, simChip(), h('span', null, 'What-if: replay a month of recorded work with changes, beside the same replay without them.')), f);
  if (!q.run) return;
  const changes = changesOf(q);
  let r;
  try {
    r = await api('/v1/whatif', { method: 'POST', body: { period, changes } });
  } catch (err) {
    ctx.add(errorBox(err, 'the what-if'));
    return;
  }
  results(ctx, r, n, changes);
}
