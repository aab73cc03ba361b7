// SPDX-License-Identifier: Apache-2.0
// view-fleet.js: the fleet overview (GPUs by state, class and cluster, how
// much is allocated) and the manager's view (the GPUs under one organization:
// where they are, which pool and owner, what they cost, who may use them, and
// whether they are busy, lent out or idle).
import { api, byIds, byId, openAllocations } from './api.js';
import { h, table, section, stat, stats, badge, gpus, pct, nameOf, simChip, isSimulated, money, classChip, workloadLink, duration, select, field, errorBox } from './dom.js';
import { barChart, legend, chartWidth } from './charts.js';

// The pool a GPU belongs to, by the server's rule (model_pool_of_gpu): a pool
// that lists it explicitly, else the first pool (by id) whose cluster and node
// selector match its node; null when none.
export function poolOfGpu(pools, gpu, node) {
  const sorted = [...pools].sort((a, b) => a.id - b.id);
  const explicit = sorted.find((p) => (p.gpu_ids || []).includes(gpu.id));
  if (explicit) return explicit;
  return (
    sorted.find((p) => {
      const sel = p.node_selector || {};
      const hasSel = Object.keys(sel).length > 0;
      if (!p.cluster_id && !hasSel) return false;
      if (p.cluster_id && (!node || p.cluster_id !== node.cluster_id)) return false;
      return Object.entries(sel).every(([k, v]) => node && node.labels && node.labels[k] === v);
    }) || null
  );
}

// What each GPU holds now: gpu_id -> [allocation].
export function heldByGpu(open) {
  const m = new Map();
  for (const a of open) {
    if (a.gpu_id == null) continue;
    if (!m.has(a.gpu_id)) m.set(a.gpu_id, []);
    m.get(a.gpu_id).push(a);
  }
  return m;
}

function gpuState(g, node, held) {
  if (g.health === 'failed' || g.health === 'down' || (node && node.state === 'down')) return 'down';
  if (held && held.length) return 'allocated';
  if (node && node.state === 'drain') return 'draining';
  return 'free';
}

function gpuWhere(n, g) {
  const node = n.nodes.get(g.node_id);
  return (node ? node.name : 'node ' + g.node_id) + ' / GPU ' + g.index;
}

export async function fleet(ctx) {
  const [cap, n, open] = await Promise.all([api('/v1/capacity'), byIds('gpus', 'nodes', 'clusters', 'gpu-classes'), openAllocations()]);
  const held = heldByGpu(open);
  const byState = { allocated: 0, free: 0, draining: 0, down: 0 };
  const perCluster = new Map();
  const perNode = new Map();
  for (const g of n.gpus.values()) {
    const node = n.nodes.get(g.node_id);
    const st = gpuState(g, node, held.get(g.id));
    byState[st]++;
    const cid = node ? node.cluster_id : 0;
    for (const [map, key] of [
      [perCluster, cid],
      [perNode, g.node_id],
    ]) {
      if (!map.has(key)) map.set(key, { allocated: 0, free: 0, draining: 0, down: 0, total: 0 });
      map.get(key)[st]++;
      map.get(key).total++;
    }
  }
  const capacity = cap.items.reduce((a, c) => a + c.capacity_milli, 0);
  const free = cap.items.reduce((a, c) => a + c.free_milli, 0);

  ctx.add(
    stats(
      stat('GPUs', String(n.gpus.size)),
      stat('allocated', gpus(capacity - free), 'of ' + gpus(capacity) + ' healthy GPUs'),
      stat('utilization', pct(capacity - free, capacity), 'allocated ÷ capacity'),
      stat('free', gpus(free)),
      stat('down or draining', String(byState.down + byState.draining)),
    ),
  );
  if (!ctx.me.admin)
    ctx.add(h('p', { class: 'note' }, 'Totals per GPU class count everyone’s work. Per cluster and node, “allocated” counts only work you may see; GPUs held by other tenants show as free there.'));

  ctx.add(
    section(
      'By GPU class',
      table(
        [
          { label: 'GPU class', value: (c) => c.gpu_class },
          { label: 'capacity (GPUs)', num: true, value: (c) => gpus(c.capacity_milli) },
          { label: 'allocated', num: true, value: (c) => gpus(c.capacity_milli - c.free_milli) },
          { label: 'free', num: true, value: (c) => gpus(c.free_milli) },
          { label: 'utilization', num: true, value: (c) => meter(c.capacity_milli - c.free_milli, c.capacity_milli) },
          { label: 'guaranteed to projects', num: true, value: (c) => gpus(c.guaranteed_milli) },
          { label: 'warning', value: (c) => c.warning || '' },
        ],
        cap.items.map((c) => ({ ...c, id: c.gpu_class_id })),
        { label: 'GPUs by class', empty: 'No GPUs yet: register a cluster, nodes and GPUs.' },
      ),
    ),
  );

  const clusterRows = [...perCluster.entries()].map(([id, c]) => ({ id, ...c, cluster: n.clusters.get(id) }));
  const clusterTable = table(
    [
      { label: 'cluster', value: (c) => [c.cluster ? c.cluster.name : '#' + c.id, ' ', isSimulated(c.cluster) ? simChip() : null] },
      { label: 'backend', value: (c) => (c.cluster ? c.cluster.backend : '') },
      { label: 'GPUs', num: true, value: (c) => c.total },
      { label: 'allocated', num: true, value: (c) => c.allocated },
      { label: 'free', num: true, value: (c) => c.free },
      { label: 'down / draining', num: true, value: (c) => c.down + c.draining },
    ],
    clusterRows,
    { label: 'GPUs by cluster' },
  );
  const chart = barChart({
    width: chartWidth(),
    label: 'GPUs by state per cluster',
    fmt: (v) => v + ' GPUs',
    rows: clusterRows.map((c) => ({
      label: (c.cluster ? c.cluster.name : 'cluster ' + c.id) + (isSimulated(c.cluster) ? ' (simulated)' : ''),
      parts: [
        { value: c.allocated, kind: 'allocated', text: c.allocated + ' allocated' },
        { value: c.free, kind: 'free', text: c.free + ' free' },
        { value: c.down + c.draining, kind: 'down', text: c.down + c.draining + ' down or draining' },
      ],
    })),
  });
  ctx.add(section('By cluster', chart, legend([['allocated', 'allocated'], ['free', 'free'], ['down', 'down or draining']]), clusterTable));

  const nodeRows = [...n.nodes.values()].map((node) => ({ ...node, c: perNode.get(node.id) || { total: 0, allocated: 0, free: 0 } }));
  ctx.add(
    section(
      'Nodes',
      table(
        [
          { label: 'node', value: (x) => x.name },
          { label: 'cluster', value: (x) => nameOf(n.clusters, x.cluster_id) },
          { label: 'state', value: (x) => badge(x.state) },
          { label: 'GPUs', num: true, value: (x) => x.c.total },
          { label: 'allocated', num: true, value: (x) => x.c.allocated },
          { label: 'free', num: true, value: (x) => x.c.free },
          { label: 'labels', value: (x) => Object.entries(x.labels || {}).map(([k, v]) => k + '=' + v).join(', ') },
        ],
        nodeRows,
        { label: 'nodes' },
      ),
    ),
  );
  ctx.refreshEvery = 10000;
}

// A percentage with a small bar drawn by CSS (width set through the CSSOM, which the CSP allows).
function meter(part, whole) {
  const bar = h('span', { class: 'meter-fill' });
  bar.style.width = whole > 0 ? Math.min(100, (100 * part) / whole) + '%' : '0';
  return h('span', { class: 'meter-wrap' }, h('span', { class: 'meter', 'aria-hidden': 'true' }, bar), ' ' + pct(part, whole));
}

// The organizations below org (itself included).
export function subtree(orgs, rootId) {
  const ids = new Set([rootId]);
  let grew = true;
  while (grew) {
    grew = false;
    for (const o of orgs.values()) {
      if (o.parent_id != null && ids.has(o.parent_id) && !ids.has(o.id)) {
        ids.add(o.id);
        grew = true;
      }
    }
  }
  return ids;
}

export async function manager(ctx) {
  const n = await byIds('organizations', 'projects', 'pools', 'gpus', 'nodes', 'clusters', 'gpu-classes');
  const [open, cost, users] = await Promise.all([
    openAllocations(),
    api('/v1/cost?by=pool').catch((err) => ({ err })),
    byId('users').catch(() => new Map()),
  ]);
  if (!n.organizations.size) {
    ctx.add(h('p', { class: 'empty' }, 'You can see no organization, so there are no GPUs under you.'));
    return;
  }
  const mine = [...n.organizations.values()].find((o) => o.manager_id === ctx.me.user.id);
  const orgId = Number(ctx.query.org) || (mine || [...n.organizations.values()][0]).id;
  const org = n.organizations.get(orgId);
  const orgs = subtree(n.organizations, orgId);
  const projects = new Set([...n.projects.values()].filter((p) => orgs.has(p.org_id)).map((p) => p.id));
  const ownerOf = (p) => (p.owner_project_id != null ? 'project ' + nameOf(n.projects, p.owner_project_id) : 'organization ' + nameOf(n.organizations, p.owner_org_id));
  const pools = [...n.pools.values()];
  const poolsUnder = pools.filter((p) => orgs.has(p.owner_org_id) || projects.has(p.owner_project_id));
  const held = heldByGpu(open);
  const rows = [];
  for (const g of n.gpus.values()) {
    const node = n.nodes.get(g.node_id);
    const pool = poolOfGpu(pools, g, node);
    if (pool && poolsUnder.includes(pool)) rows.push({ id: g.id, g, node, pool, held: held.get(g.id) || [] });
  }
  rows.sort((a, b) => gpuWhere(n, a.g).localeCompare(gpuWhere(n, b.g), 'en', { numeric: true }));
  const lent = rows.filter((r) => r.held.some((a) => a.borrowed)).length;
  const busy = rows.filter((r) => r.held.length).length;
  const perHour = rows.reduce((a, r) => a + (r.pool.cost_per_gpu_hour_micros || 0), 0);
  const currency = rows.length ? rows[0].pool.currency : '';

  const choose = select(
    [...n.organizations.values()].map((o) => [o.id, o.name + (o.manager_id === ctx.me.user.id ? ' (you manage it)' : '')]),
    orgId,
    { id: 'mgr-org', onchange: (e) => ctx.go('#/manager?org=' + e.target.value) },
  );
  ctx.setTitle('GPUs under ' + org.name);
  ctx.add(
    h('div', { class: 'toolbar' }, field('Organization', choose)),
    h('p', { class: 'note' }, 'Manager: ', org.manager_id != null ? nameOf(users, org.manager_id, 'user ') : 'none set', org.cost_center ? ' · cost center ' + org.cost_center : '', ' · ', orgs.size - 1 ? orgs.size - 1 + ' organizations below it' : 'no organizations below it', ', ', projects.size + ' projects.'),
    stats(
      stat('GPUs owned', String(rows.length), poolsUnder.length + ' pools'),
      stat('in use', String(busy), pct(busy, rows.length)),
      stat('idle', String(rows.length - busy), 'nothing running on them'),
      stat('lent out', String(lent), 'borrowed by other teams: reclaimable'),
      stat('cost per hour', money(perHour, currency), 'all owned GPUs, busy or not'),
    ),
  );

  const costByPool = new Map((cost.items || []).map((c) => [c.id, c]));
  ctx.add(
    section(
      'Pools',
      cost.err ? errorBox(cost.err, 'this month’s pool cost') : null,
      table(
        [
          { label: 'pool', value: (p) => p.name },
          { label: 'owner', value: ownerOf },
          { label: 'where', value: (p) => [p.cluster_id ? nameOf(n.clusters, p.cluster_id) : 'any cluster', Object.keys(p.node_selector || {}).length ? ' · ' + Object.entries(p.node_selector).map(([k, v]) => k + '=' + v).join(',') : ''] },
          { label: 'cost per GPU-hour', num: true, value: (p) => money(p.cost_per_gpu_hour_micros, p.currency) },
          { label: 'GPUs', num: true, value: (p) => rows.filter((r) => r.pool === p).length },
          { label: 'in use', num: true, value: (p) => rows.filter((r) => r.pool === p && r.held.length).length },
          { label: 'may borrow it', value: (p) => accessList(n, p) },
          { label: 'this month: used / idle cost', num: true, value: (p) => (costByPool.has(p.id) ? costByPool.get(p.id).used + ' / ' + costByPool.get(p.id).idle + ' ' + costByPool.get(p.id).currency : '—') },
        ],
        poolsUnder,
        { label: 'pools', empty: 'No pool is owned by this organization or its projects.' },
      ),
    ),
    section(
      'GPUs',
      table(
        [
          { label: 'GPU', value: (r) => gpuWhere(n, r.g) },
          { label: 'class', value: (r) => nameOf(n.gpuClasses, r.g.gpu_class_id) },
          { label: 'cluster', value: (r) => [nameOf(n.clusters, r.node && r.node.cluster_id), ' ', isSimulated(n.clusters.get(r.node && r.node.cluster_id)) ? simChip() : null] },
          { label: 'pool', value: (r) => r.pool.name },
          { label: 'owner', value: (r) => ownerOf(r.pool) },
          { label: 'cost / h', num: true, value: (r) => money(r.pool.cost_per_gpu_hour_micros, r.pool.currency) },
          { label: 'state', value: (r) => badge(gpuState(r.g, r.node, r.held)) },
          { label: 'held by', value: (r) => (r.held.length ? r.held.map((a) => h('div', null, nameOf(n.projects, a.project_id), ' · ', workloadLink(a.workload_id), ' · ', classChip(a.priority_class), a.borrowed ? ' borrowed' : '', ' · for ', duration(Date.now() - a.started_ms))) : 'idle') },
        ],
        rows,
        { label: 'GPUs under this organization', empty: 'No GPUs are in pools of this organization.' },
      ),
    ),
  );
  if (!ctx.me.admin) ctx.add(h('p', { class: 'note' }, 'Work of other tenants on these GPUs is not shown to you; such GPUs appear idle here.'));
}

function accessList(n, p) {
  const who = [...(p.access_project_ids || []).map((id) => 'project ' + nameOf(n.projects, id)), ...(p.access_org_ids || []).map((id) => 'organization ' + nameOf(n.organizations, id))];
  return who.length ? who.join(', ') : 'only the owner';
}
