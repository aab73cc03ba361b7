// SPDX-License-Identifier: Apache-2.0
// view-usage.js: usage and cost over time (the metered, rated usage of the
// last months, one month by project, and showback of what the pools cost),
// and the quota view (per project and GPU class: guaranteed, used, borrowed
// from others, lent to others).
import { api, byIds, openAllocations } from './api.js';
import { h, table, section, stat, stats, nameOf, gpus, money, month, monthsBack, select, field, errorBox, classChip } from './dom.js';
import { barChart, columnChart, legend, chartWidth } from './charts.js';
import { poolOfGpu } from './view-fleet.js';

// "2026-11" -> "Nov", and "Jan 2027" in January so the year shows where it changes.
function monthName(period) {
  const [y, m] = period.split('-').map(Number);
  const name = new Date(Date.UTC(y, m - 1, 1)).toLocaleString('en', { month: 'short', timeZone: 'UTC' });
  return m === 1 ? name + ' ' + y : name;
}

// The currency most of the money is in (charts add up one currency only).
function mainCurrency(totals) {
  const sums = new Map();
  for (const t of totals) sums.set(t.currency, (sums.get(t.currency) || 0) + t.amount_micros);
  return [...sums.entries()].sort((a, b) => b[1] - a[1])[0]?.[0] || '';
}

export async function usage(ctx) {
  const period = /^\d{4}-\d{2}$/.test(ctx.query.period || '') ? ctx.query.period : month();
  const by = ['project', 'pool', 'org', 'manager'].includes(ctx.query.by) ? ctx.query.by : 'project';
  const [y, m] = period.split('-').map(Number);
  const months = monthsBack(6, new Date(Date.UTC(y, m - 1, 1)));
  const go = (p, b) => ctx.go('#/usage?period=' + p + '&by=' + b);
  const periods = monthsBack(12).reverse();
  if (!periods.includes(period)) periods.push(period);

  const [series, cost] = await Promise.all([Promise.all(months.map((p) => api('/v1/usage?period=' + p).catch((err) => ({ err, period: p })))), api('/v1/cost?by=' + by + '&period=' + period).catch((err) => ({ err }))]);
  const current = series[series.length - 1];
  const currency = mainCurrency(series.flatMap((u) => u.totals || []));
  const width = chartWidth();

  ctx.add(
    h(
      'div',
      { class: 'toolbar' },
      field('Month', select(periods.map((p) => [p, p]), period, { id: 'usage-period', onchange: (e) => go(e.target.value, by) })),
      field('Showback by', select([['project', 'project'], ['pool', 'pool'], ['org', 'organization'], ['manager', 'manager']], by, { id: 'usage-by', onchange: (e) => go(period, e.target.value) })),
    ),
  );

  // 1. Six months of rated usage: money and GPU-hours per month.
  const failed = series.filter((u) => u.err);
  const perMonth = series.map((u) => ({
    label: u.period || '',
    money: (u.totals || []).filter((t) => t.currency === currency).reduce((a, t) => a + t.amount_micros, 0),
    gpuHours: (u.items || []).reduce((a, l) => a + Number(l.gpu_hours || 0), 0),
  }));
  ctx.add(
    section(
      'Cost and GPU-hours per month',
      failed.length ? errorBox(failed[0].err, 'usage of ' + failed[0].period) : null,
      h('div', { class: 'two' }, h('figure', null, columnChart({ cols: perMonth.map((p) => ({ label: monthName(p.label), value: p.money / 1e6, title: p.label + ': ' + money(p.money, currency) })), fmt: (v) => v.toFixed(2), width: Math.min(width, 520), label: 'cost per month in ' + currency, kind: 'p1' }), h('figcaption', null, 'Cost per month (' + (currency || 'no usage yet') + ')')), h('figure', null, columnChart({ cols: perMonth.map((p) => ({ label: monthName(p.label), value: p.gpuHours, title: p.label + ': ' + p.gpuHours.toFixed(3) + ' GPU-hours' })), fmt: (v) => v.toFixed(1), width: Math.min(width, 520), label: 'GPU-hours per month', kind: 'used' }), h('figcaption', null, 'GPU-hours per month'))),
      h('p', { class: 'hint' }, 'The current month is provisional: running work counts up to now.'),
    ),
  );

  // 2. The chosen month by project, owned and opportunistic apart.
  if (!current.err) {
    const perProject = new Map();
    for (const l of current.items) {
      const p = perProject.get(l.project) || { owned: 0, opportunistic: 0, currency: l.currency };
      if (l.currency === currency) p[l.class] += l.amount_micros;
      perProject.set(l.project, p);
    }
    ctx.add(
      section(
        period + ' by project',
        current.items.length
          ? [
              barChart({
                width,
                label: 'cost per project in ' + period,
                fmt: (v) => money(v, currency),
                rows: [...perProject.entries()].map(([name, p]) => ({
                  label: name,
                  parts: [
                    { value: p.owned, kind: 'p1', text: 'owned ' + money(p.owned, currency) },
                    { value: p.opportunistic, kind: 'p2', text: 'opportunistic ' + money(p.opportunistic, currency) },
                  ],
                })),
              }),
              legend([
                ['p1', 'P1 owned'],
                ['p2', 'P2 opportunistic'],
              ]),
            ]
          : null,
        table(
          [
            { label: 'project', value: (l) => l.project },
            { label: 'flavor', value: (l) => l.flavor },
            { label: 'class', value: (l) => classChip(l.class) },
            { label: 'hours', num: true, value: (l) => l.hours },
            { label: 'GPU-hours', num: true, value: (l) => l.gpu_hours },
            { label: 'amount', num: true, value: (l) => l.amount + ' ' + l.currency },
          ],
          current.items,
          { label: 'usage lines', empty: 'No metered usage in ' + period + ' that you can see.' },
        ),
      ),
    );
  }

  // 3. Showback: each pool's cost at its owner's price, split into used and idle.
  ctx.add(
    section(
      'What the pools cost in ' + period + ', by ' + (by === 'org' ? 'organization' : by),
      cost.err
        ? errorBox(cost.err, 'the showback')
        : [
            cost.items.length
              ? barChart({
                  width,
                  label: 'pool cost used and idle by ' + by,
                  fmt: (v) => money(v, cost.items[0].currency),
                  rows: cost.items.map((c) => ({
                    label: c.name || '#' + c.id,
                    parts: [
                      { value: c.used_micros, kind: 'used', text: 'used ' + c.used },
                      { value: c.idle_micros, kind: 'idle', text: 'idle ' + c.idle },
                    ],
                  })),
                })
              : null,
            cost.items.length
              ? legend([
                  ['used', 'used (allocated to work)'],
                  ['idle', 'idle (paid for, not used)'],
                ])
              : null,
            table(
              [
                { label: by, value: (c) => c.name || '#' + c.id },
                { label: 'capacity GPU-hours', num: true, value: (c) => c.capacity_gpu_hours },
                { label: 'allocated GPU-hours', num: true, value: (c) => c.allocated_gpu_hours },
                { label: 'used', num: true, value: (c) => c.used + ' ' + c.currency },
                { label: 'idle', num: true, value: (c) => c.idle + ' ' + c.currency },
                { label: 'total', num: true, value: (c) => c.total + ' ' + c.currency },
                { label: 'efficiency', num: true, value: (c) => (c.efficiency_ppm == null ? 'not measured' : (c.efficiency_ppm / 1e4).toFixed(1) + ' %') },
              ],
              cost.items,
              { label: 'showback', empty: 'No pool cost you can see.' },
            ),
          ],
    ),
  );
}

// How a pool is lent: to whom, and at most how much at once.
function lending(p) {
  const to = p.lend_to_all ? 'lent to every project' : (p.access_project_ids || []).length + (p.access_org_ids || []).length ? 'lent to its access list' : 'not lent';
  return to + (p.lending_limit_milli != null && to !== 'not lent' ? ', at most ' + gpus(p.lending_limit_milli) + ' GPUs at once' : '');
}

export async function quotas(ctx) {
  // Lent comes from /v1/inventory: it counts work of teams the caller cannot see, unnamed.
  const [n, open, inv] = await Promise.all([byIds('quotas', 'projects', 'gpu-classes', 'pools', 'gpus', 'nodes', 'organizations'), openAllocations(), api('/v1/inventory')]);
  const pools = [...n.pools.values()];
  // GPU -> owning project (through its pool), computed once.
  const ownerProject = new Map();
  for (const g of n.gpus.values()) {
    const pool = poolOfGpu(pools, g, n.nodes.get(g.node_id));
    if (pool && pool.owner_project_id != null) ownerProject.set(g.id, pool.owner_project_id);
  }
  const classMilli = (cid) => (n.gpuClasses.get(cid) || { milli: 1000 }).milli || 1000;
  const rows = [...n.quotas.values()].map((q) => {
    const mine = open.filter((a) => a.project_id === q.project_id && a.gpu_class_id === q.gpu_class_id);
    const owned = [...n.gpus.values()].filter((g) => ownerProject.get(g.id) === q.project_id && g.gpu_class_id === q.gpu_class_id);
    const ownedIds = new Set(owned.map((g) => g.id));
    const derived = owned.reduce((a, g) => a + classMilli(g.gpu_class_id), 0);
    return {
      id: q.id,
      q,
      // the server's figure (what the scheduler applies), else the same rule worked out here
      guaranteed: q.effective_guaranteed_milli ?? q.guaranteed_milli ?? derived,
      explicit: q.guaranteed_milli != null,
      used: mine.reduce((a, x) => a + x.milli, 0),
      borrowed: mine.filter((x) => x.borrowed).reduce((a, x) => a + x.milli, 0),
      lent: inv.items.filter((g) => g.used_by && g.used_by.borrowed && ownedIds.has(g.gpu_id)).reduce((a, g) => a + g.used_by.milli, 0),
      pools: pools.filter((p) => p.owner_project_id === q.project_id),
    };
  });
  rows.sort((a, b) => nameOf(n.projects, a.q.project_id).localeCompare(nameOf(n.projects, b.q.project_id)));
  const label = (r) => nameOf(n.projects, r.q.project_id) + ' · ' + nameOf(n.gpuClasses, r.q.gpu_class_id);
  ctx.add(
    stats(
      stat('quotas', String(rows.length)),
      stat('GPUs used', gpus(rows.reduce((a, r) => a + r.used, 0))),
      stat('borrowed', gpus(rows.reduce((a, r) => a + r.borrowed, 0)), 'running on other teams’ GPUs'),
      stat('lent', gpus(rows.reduce((a, r) => a + r.lent, 0)), 'others’ work on owned GPUs'),
    ),
    h('p', { class: 'note' }, 'Guaranteed: owned capacity (from the pools a project owns, unless set explicitly); owned (P1) work runs within it. Limit: the most a project may hold, borrowed capacity included. Borrowed: held on GPUs of other teams’ pools, preemptible. Lent: other teams’ work on this project’s GPUs, which owned work can reclaim.'),
  );
  if (!rows.length) {
    ctx.add(h('p', { class: 'empty' }, 'No quota you can see.'));
    return;
  }
  // What is left up to the limit beyond the used and unused-guarantee parts.
  const room = (r) => (r.q.limit_milli == null ? 0 : Math.max(0, r.q.limit_milli - r.used - Math.max(0, r.guaranteed - (r.used - r.borrowed))));
  const max = Math.max(...rows.map((r) => Math.max(r.q.limit_milli || 0, r.guaranteed, r.used)), 1);
  ctx.add(
    section(
      'Used against guaranteed and limit',
      barChart({
        width: chartWidth(),
        max,
        label: 'quota use per project and class',
        fmt: gpus,
        rows: rows.map((r) => {
          const inOwn = r.used - r.borrowed;
          return {
            label: `${label(r)}: ${gpus(r.used)} used of ${gpus(r.guaranteed)} guaranteed, limit ${r.q.limit_milli == null ? 'none' : gpus(r.q.limit_milli)}`,
            text: gpus(r.used) + ' GPUs',
            parts: [
              { value: inOwn, kind: 'p1', text: gpus(inOwn) + ' on own or shared GPUs' },
              { value: r.borrowed, kind: 'p2', text: gpus(r.borrowed) + ' borrowed' },
              { value: Math.max(0, r.guaranteed - inOwn), kind: 'free', text: gpus(Math.max(0, r.guaranteed - inOwn)) + ' of the guarantee unused' },
              { value: room(r), kind: 'room', text: gpus(room(r)) + ' more up to the limit' },
            ],
          };
        }),
      }),
      legend([
        ['p1', 'used, not borrowed'],
        ['p2', 'borrowed'],
        ['free', 'guarantee not in use'],
        ['room', 'room up to the limit'],
      ]),
      table(
        [
          { label: 'project', value: (r) => [nameOf(n.projects, r.q.project_id), h('span', { class: 'muted' }, ' ' + nameOf(n.organizations, (n.projects.get(r.q.project_id) || {}).org_id))] },
          { label: 'GPU class', value: (r) => nameOf(n.gpuClasses, r.q.gpu_class_id) },
          { label: 'guaranteed', num: true, value: (r) => gpus(r.guaranteed) + (r.explicit ? ' (set)' : ' (from pools)') },
          { label: 'limit', num: true, value: (r) => (r.q.limit_milli == null ? 'none' : gpus(r.q.limit_milli)) },
          { label: 'used', num: true, value: (r) => gpus(r.used) },
          { label: 'borrowed', num: true, value: (r) => gpus(r.borrowed) },
          { label: 'lent', num: true, value: (r) => gpus(r.lent) },
          { label: 'pools owned, and how they are lent', value: (r) => r.pools.map((p) => p.name + ' (' + lending(p) + ')').join(', ') || 'none' },
        ],
        rows,
        { label: 'quotas' },
      ),
    ),
  );
  if (!ctx.me.admin) ctx.add(h('p', { class: 'note' }, '“Lent” counts all other teams’ work on these GPUs, also of teams you cannot see.'));
  ctx.refreshEvery = 10000;
}
