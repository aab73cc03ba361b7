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

// The inventory's state of a GPU (one rule with /metrics) as the overview counts it.
function countedState(r) {
  if (r.state === 'busy' || r.state === 'idle-allocated' || r.state === 'allocated') return 'allocated';
  if (r.state === 'free' || r.state === 'draining') return r.state;
  return r.state === 'mig' ? null : 'down'; // a MIG parent is counted through its instances
}

// A GPU's cell in the grid: what it is doing, and whose.
function cellOf(r, n) {
  const u = r.used_by;
  const kind = u && u.borrowed ? 'lent' : r.state;
  const who = u ? (u.workload_id != null ? u.project + ' · workload ' + u.workload_id : 'another team') + ' · ' + (u.priority_class === 'owned' ? 'P1' : 'P2') + (u.borrowed ? ' · borrowed from its owner' : '') : 'nobody';
  const act = r.telemetry && r.telemetry.activity != null ? ' · activity ' + Math.round(r.telemetry.activity * 100) + ' %' : '';
  const title = `${r.node} / GPU ${r.index ?? ''} · ${r.state}${act} · owner ${r.owner ? r.owner.name : 'none'}${r.pool ? ' (pool ' + r.pool + ')' : ''} · held by ${who}`;
  return h('span', { class: 'cell st-' + kind, role: 'img', 'aria-label': title, title, 'data-gpu': r.gpu_id, 'data-state': kind });
}

// Per node, a cell per GPU (the inventory's rows, which say what the caller may see).
function gpuGrid(rows, n) {
  const byNode = new Map();
  for (const r of rows) {
    if (r.state === 'mig') continue;
    if (!byNode.has(r.node)) byNode.set(r.node, []);
    byNode.get(r.node).push(r);
  }
  const names = [...byNode.keys()].sort((a, b) => a.localeCompare(b, 'en', { numeric: true }));
  return [
    legend([
      ['st-busy', 'busy (telemetry)'],
      ['st-idle-allocated', 'allocated, idle (telemetry)'],
      ['st-allocated', 'allocated'],
      ['st-lent', 'lent: held by another team'],
      ['st-free', 'free'],
      ['st-draining', 'draining'],
      ['st-down', 'down'],
    ]),
    h(
      'div',
      { class: 'gpu-grid' },
      names.map((name) =>
        h('div', { class: 'grid-row' }, h('span', { class: 'grid-node' }, name), h('span', { class: 'grid-cells' }, byNode.get(name).sort((a, b) => (a.index ?? 0) - (b.index ?? 0)).map((r) => cellOf(r, n)))),
      ),
    ),
  ];
}

export async function fleet(ctx) {
  const [cap, n, open, inv] = await Promise.all([
    api('/v1/capacity'),
    byIds('gpus', 'nodes', 'clusters', 'gpu-classes'),
    openAllocations(),
    api('/v1/inventory').catch((err) => ({ err })),
  ]);
  const held = heldByGpu(open);
  const byState = { allocated: 0, free: 0, draining: 0, down: 0 };
  const perCluster = new Map();
  const perNode = new Map();
  const perClass = new Map();
  // What the caller may see: the inventory's rows (every GPU for an admin); else the fleet's GPUs.
  const rows = inv.err ? null : inv.items;
  const seen = rows ? rows.filter((r) => countedState(r) && n.gpus.has(r.gpu_id)) : [...n.gpus.values()].map((g) => ({ gpu_id: g.id }));
  let busy = 0;
  let measured = 0;
  for (const r of seen) {
    const g = n.gpus.get(r.gpu_id);
    const node = n.nodes.get(g.node_id);
    const st = rows ? countedState(r) : gpuState(g, node, held.get(g.id));
    byState[st]++;
    if (r.telemetry && r.telemetry.activity != null) {
      measured++;
      busy += r.state === 'busy';
    }
    const cls = nameOf(n.gpuClasses, g.gpu_class_id);
    if (!perClass.has(cls)) perClass.set(cls, { id: cls, gpu_class: cls, allocated: 0, free: 0, draining: 0, down: 0, total: 0 });
    perClass.get(cls)[st]++;
    perClass.get(cls).total++;
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
  const healthy = byState.allocated + byState.free + byState.draining;

  ctx.add(
    stats(
      stat('GPUs', String(seen.length)),
      stat('allocated', String(byState.allocated), 'of ' + healthy + ' healthy GPUs'),
      stat('utilization', pct(byState.allocated, healthy), 'allocated ÷ healthy GPUs'),
      measured ? stat('busy', pct(busy, measured), 'of the ' + measured + ' GPUs with telemetry: activity, beside allocation') : null,
      stat('free', String(byState.free)),
      stat('down or draining', String(byState.down + byState.draining)),
    ),
  );
  if (!ctx.me.admin && rows)
    ctx.add(h('p', { class: 'note' }, `Every figure here counts the ${seen.length} GPUs you may see (pools your projects own or may borrow, organizations you manage) of the ${n.gpus.size} in the fleet.`));
  if (inv.err) ctx.add(errorBox(inv.err, 'the GPUs’ states'));

  ctx.add(
    section(
      'By GPU class',
      !ctx.me.admin
        ? table(
            [
              { label: 'GPU class', value: (c) => c.gpu_class },
              { label: 'GPUs', num: true, value: (c) => c.total },
              { label: 'allocated', num: true, value: (c) => c.allocated },
              { label: 'free', num: true, value: (c) => c.free },
              { label: 'utilization', num: true, value: (c) => meter(c.allocated, c.allocated + c.free + c.draining) },
            ],
            [...perClass.values()],
            { label: 'GPUs by class', empty: 'You may see no GPUs yet.' },
          )
        : table(
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
  if (rows) ctx.add(section('GPUs', gpuGrid(rows, n), h('p', { class: 'hint' }, 'Each square is a GPU; point at it for its owner, holder and activity.')));

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

// The GPUs under an organization come from /v1/inventory: the server decides
// each GPU's state (one rule with /metrics) and names who holds it only to
// those who may see that project ("another tenant" otherwise), so a pool's
// GPUs lent to a team the caller cannot see still count as lent, unnamed.
export async function manager(ctx) {
  const n = await byIds('organizations', 'projects', 'pools', 'clusters');
  if (!n.organizations.size) {
    ctx.add(h('p', { class: 'empty' }, 'You can see no organization, so there are no GPUs under you.'));
    return;
  }
  const mine = [...n.organizations.values()].find((o) => o.manager_id === ctx.me.user.id);
  const orgId = n.organizations.has(Number(ctx.query.org)) ? Number(ctx.query.org) : (mine || [...n.organizations.values()][0]).id;
  const org = n.organizations.get(orgId);
  const [inv, cost, users] = await Promise.all([api('/v1/inventory?org=' + orgId), api('/v1/cost?by=pool').catch((err) => ({ err })), byId('users')]);
  const orgs = subtree(n.organizations, orgId);
  const projects = new Set([...n.projects.values()].filter((p) => orgs.has(p.org_id)).map((p) => p.id));
  const ownerOf = (p) => (p.owner_project_id != null ? 'project ' + nameOf(n.projects, p.owner_project_id) : 'organization ' + nameOf(n.organizations, p.owner_org_id));
  const poolsUnder = [...n.pools.values()].filter((p) => orgs.has(p.owner_org_id) || projects.has(p.owner_project_id));
  const rows = inv.items
    .filter((g) => g.gpu_id != null && g.pool != null)
    .map((g) => ({ ...g, id: g.gpu_id, lent: !!(g.used_by && g.used_by.borrowed) }))
    .sort((a, b) => where(a).localeCompare(where(b), 'en', { numeric: true }));
  const lent = rows.filter((r) => r.lent).length;
  const busy = rows.filter((r) => r.used_by).length;
  const perHour = rows.reduce((a, r) => a + (r.cost_per_gpu_hour_micros || 0), 0);
  const currency = rows.length ? rows[0].currency : '';
  const ofPool = (p) => rows.filter((r) => r.pool === p.name);

  const choose = select(
    [...n.organizations.values()].map((o) => [o.id, o.name + (o.manager_id === ctx.me.user.id ? ' (you manage it)' : '')]),
    orgId,
    { id: 'mgr-org', onchange: (e) => ctx.go('#/manager?org=' + e.target.value) },
  );
  ctx.setTitle('GPUs under ' + org.name);
  ctx.add(
    h('div', { class: 'toolbar' }, field('Organization', choose)),
    h('p', { class: 'note' }, 'Manager: ', managerName(org, rows, users, ctx.me), org.cost_center ? ' · cost center ' + org.cost_center : '', ' · ', orgs.size - 1 ? orgs.size - 1 + ' organizations below it' : 'no organizations below it', ', ', projects.size + ' projects.'),
    stats(
      stat('GPUs owned', String(rows.length), poolsUnder.length + ' pools'),
      stat('in use', String(busy), pct(busy, rows.length)),
      stat('idle', String(rows.length - busy), 'nothing running on them'),
      stat('lent out', String(lent), 'held by other teams’ work: reclaimable'),
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
          { label: 'GPUs', num: true, value: (p) => ofPool(p).length },
          { label: 'in use', num: true, value: (p) => ofPool(p).filter((r) => r.used_by).length },
          { label: 'lent out', num: true, value: (p) => ofPool(p).filter((r) => r.lent).length },
          { label: 'may borrow it', value: (p) => accessList(n, p, ofPool(p)) },
          { label: 'this month: used / idle cost', num: true, value: (p) => (costByPool.has(p.id) ? costByPool.get(p.id).used + ' / ' + costByPool.get(p.id).idle + ' ' + costByPool.get(p.id).currency : '—') },
        ],
        poolsUnder,
        { label: 'pools', class: 'pools', empty: 'No pool is owned by this organization or its projects.' },
      ),
    ),
    section(
      'GPUs',
      table(
        [
          { label: 'GPU', value: where },
          { label: 'class', value: (r) => r.gpu_class },
          { label: 'cluster', value: (r) => [r.cluster, ' ', isSimulated(clusterNamed(n, r.cluster)) ? simChip() : null] },
          { label: 'pool', value: (r) => r.pool },
          { label: 'owner', value: (r) => (r.owner ? (r.owner.kind === 'org' ? 'organization ' : 'project ') + r.owner.name : '—') },
          { label: 'cost / h', num: true, value: (r) => money(r.cost_per_gpu_hour_micros, r.currency) },
          { label: 'state', value: (r) => badge(r.lent ? 'lent' : r.state) },
          { label: 'held by', value: heldBy },
        ],
        rows,
        { label: 'GPUs under this organization', class: 'gpus', empty: 'No GPUs are in pools of this organization.' },
      ),
    ),
  );
  if (!ctx.me.admin) ctx.add(h('p', { class: 'note' }, 'GPUs held by work of teams you cannot see count as in use and lent out; the team is not named to you.'));
}

function where(r) {
  return (r.node || 'node ?') + ' / GPU ' + r.index;
}

function clusterNamed(n, name) {
  return [...n.clusters.values()].find((c) => c.name === name);
}

// "maria", from the inventory (which names the nearest manager of each GPU's
// owner) when the caller may not list that user.
function managerName(org, rows, users, me) {
  if (org.manager_id == null) return 'none set';
  if (users.has(org.manager_id)) return users.get(org.manager_id).name;
  if (org.manager_id === me.user.id) return me.user.name;
  const named = rows.find((r) => r.org === org.name && r.manager);
  return named ? named.manager : 'set (a user you cannot see)';
}

// Who holds a GPU: the project and workload where the caller may see them, else "another team".
function heldBy(r) {
  const u = r.used_by;
  if (!u) return 'idle';
  const who = u.workload_id != null ? [u.project, ' · ', workloadLink(u.workload_id)] : [r.lent ? 'lent to another team' : 'another team'];
  return h('div', { class: 'held', 'data-named': u.workload_id != null ? 'true' : 'false' }, who, ' · ', classChip(u.priority_class), u.workload_id != null && r.lent ? ' borrowed' : '', ' · for ', duration(Date.now() - u.since_ms));
}

// Who may borrow a pool, by name: the inventory names a pool's access list to
// whoever sees the pool; a pool without GPUs falls back to the names the
// caller can list, and counts the rest.
function accessList(n, p, rowsOfPool) {
  const nm = (map, id) => (map.get(id) || {}).name;
  const named = rowsOfPool.length ? rowsOfPool[0].access : null;
  const projects = named ? named.projects : (p.access_project_ids || []).map((id) => nm(n.projects, id));
  const orgs = named ? named.orgs : (p.access_org_ids || []).map((id) => nm(n.organizations, id));
  const who = [...projects.filter(Boolean).map((x) => 'project ' + x), ...orgs.filter(Boolean).map((x) => 'organization ' + x)];
  const hidden = projects.length + orgs.length - who.length;
  if (hidden) who.push(hidden + (hidden === 1 ? ' team' : ' teams') + ' you cannot see');
  const limit = p.lending_limit_milli != null ? ' · at most ' + gpus(p.lending_limit_milli) + ' GPUs lent at once' : '';
  if (p.lend_to_all) return 'every project' + limit;
  return who.length ? who.join(', ') + limit : 'only the owner';
}
