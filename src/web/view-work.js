// SPDX-License-Identifier: Apache-2.0
// view-work.js: the workload list (running, queued and finished work, with
// filters), the queues (why each workload waits, and its place), one workload
// with its usage, logs, events and allocations, and the submit form.
import { api, listAll, byIds, byId, dropCache } from './api.js';
import { h, table, section, stat, stats, badge, classChip, importedChip, nameOf, time, duration, workloadLink, field, select, errorBox, gpus, money, isSimulated } from './dom.js';

const ENDED = new Set(['succeeded', 'failed', 'cancelled', 'preempted']);
const STATES = ['queued', 'admitted', 'running', 'preempting', 'succeeded', 'failed', 'cancelled', 'preempted'];
const LIST_MAX = 200; // rows shown, newest first

const ms = (t) => (typeof t === 'number' ? t * 1000 : Date.parse(t)); // API times: RFC 3339

// Whether a workload is waiting (never started, or back in the queue).
const waiting = (w) => w.state === 'queued' || w.started_at == null;

// How long queued work has waited since it was submitted, or how long its last run ran (runs).
function elapsedMs(w, now) {
  if (waiting(w)) return now - w.submitted_ms;
  const end = w.finished_at != null && ENDED.has(w.state) ? ms(w.finished_at) : now;
  return Math.max(0, end - ms(w.started_at));
}

// GPU-hours of the held intervals, and the cost of them at the flavor's list price.
function usageOf(allocs, flavor, now) {
  let milliMs = 0;
  for (const a of allocs) milliMs += a.milli * ((a.ended_ms ?? now) - a.started_ms);
  const gpuHours = milliMs / 1000 / 3600000;
  const perReplica = flavor && flavor.gpu_milli ? flavor.gpu_milli / 1000 : 0;
  const cost = flavor && perReplica ? Math.round((gpuHours / perReplica) * flavor.price_per_hour_micros) : null;
  return { gpuHours, cost };
}

/*
 * Every workload the caller may see, newest first: mine, my project's, or all
 * of them, by state, class, project, user and name. The filters live in the
 * address (#/workloads?state=running&project=3), so a view can be shared.
 */
export async function workloads(ctx) {
  const q = ctx.query;
  const n = await byIds('projects', 'flavors', 'organizations');
  const users = await byId('users').catch(() => new Map()); // a member may see only some users
  const meId = ctx.me && ctx.me.user ? ctx.me.user.id : null;
  const server = [];
  if (q.project) server.push('project_id=' + encodeURIComponent(q.project));
  if (q.class) server.push('priority_class=' + encodeURIComponent(q.class));
  if (q.user) server.push('user_id=' + encodeURIComponent(q.user));
  else if (q.scope === 'mine' && meId != null) server.push('user_id=' + meId);
  if (STATES.includes(q.state)) server.push('state=' + q.state);
  let items = await listAll('/v1/workloads' + (server.length ? '?' + server.join('&') : ''));
  const truncated = items.truncated;
  if (q.state === 'unfinished') items = items.filter((w) => !ENDED.has(w.state));
  if (q.state === 'finished') items = items.filter((w) => ENDED.has(w.state));
  if (q.name) items = items.filter((w) => (w.name || '').toLowerCase().includes(q.name.toLowerCase()));
  items.sort((a, b) => b.id - a.id);
  const now = Date.now();

  const set = (key, value) => {
    const next = { ...q, [key]: value };
    if (!value) delete next[key];
    const qs = new URLSearchParams(next).toString();
    ctx.go('#/workloads' + (qs ? '?' + qs : ''));
  };
  const projects = [...n.projects.values()].sort((a, b) => a.name.localeCompare(b.name));
  const controls = {
    scope: select([['', 'all I may see'], ['mine', 'mine']], q.scope, { name: 'scope', onchange: (e) => set('scope', e.target.value) }),
    state: select([['', 'any state'], ['unfinished', 'unfinished'], ['finished', 'finished'], ...STATES.map((s) => [s, s])], q.state, { name: 'state', onchange: (e) => set('state', e.target.value) }),
    class: select([['', 'any class'], ['auto', 'auto'], ['owned', 'P1 owned'], ['opportunistic', 'P2 opportunistic']], q.class, { name: 'class', onchange: (e) => set('class', e.target.value) }),
    project: select([['', 'every project'], ...projects.map((p) => [p.id, nameOf(n.organizations, p.org_id) + ' / ' + p.name])], q.project, { name: 'project', onchange: (e) => set('project', e.target.value) }),
    user: select([['', 'every user'], ...[...users.values()].sort((a, b) => a.name.localeCompare(b.name)).map((u) => [u.id, u.name])], q.user, { name: 'user', onchange: (e) => set('user', e.target.value) }),
    name: h('input', { name: 'name', type: 'search', value: q.name || '', placeholder: 'part of a name', autocomplete: 'off' }),
  };
  const search = h('form', { class: 'filters', role: 'search', onsubmit: (e) => (e.preventDefault(), set('name', controls.name.value.trim())) },
    field('Whose', controls.scope), field('State', controls.state), field('Class', controls.class), field('Project', controls.project), field('User', controls.user), field('Name', controls.name),
    h('button', { type: 'submit', class: 'secondary' }, 'Search'));
  const count = (pred) => String(items.filter(pred).length);
  ctx.add(
    search,
    stats(stat('shown', String(Math.min(items.length, LIST_MAX)), items.length > LIST_MAX ? 'newest ' + LIST_MAX + ' of ' + items.length : 'newest first'), stat('running', count((w) => w.state === 'running')), stat('queued', count((w) => w.state === 'queued')), stat('finished', count((w) => ENDED.has(w.state)))),
    truncated ? h('p', { class: 'note' }, 'More workloads match than are read at once; narrow the filters.') : null,
    table(
      [
        { label: 'workload', value: (w) => [workloadLink(w.id), w.name ? ' · ' + w.name : ''] },
        { label: 'project', value: (w) => nameOf(n.projects, w.project_id) },
        { label: 'user', value: (w) => (w.user_id == null ? '—' : nameOf(users, w.user_id, 'user #')) },
        { label: 'flavor', value: (w) => (w.replicas > 1 ? w.replicas + ' × ' : '') + nameOf(n.flavors, w.flavor_id) },
        { label: 'class', value: (w) => classChip(w.priority_class) },
        { label: 'state', value: (w) => [badge(w.state), w.imported ? [' ', importedChip()] : null] },
        { label: 'submitted', value: (w) => time(w.submitted_ms) },
        { label: 'ran / waited', num: true, value: (w) => duration(elapsedMs(w, now)) },
        { label: 'why (waiting, or how it ended)', value: (w) => h('span', { class: w.state === 'succeeded' ? 'reason ok' : 'reason' }, w.reason || '') },
      ],
      items.slice(0, LIST_MAX),
      { label: 'workloads', class: 'workloads', empty: 'No workload you may see matches these filters.' },
    ),
  );
  ctx.refreshEvery = 5000;
}

export async function queues(ctx) {
  const [items, n] = await Promise.all([listAll('/v1/workloads?state=queued'), byIds('projects', 'flavors', 'organizations')]);
  const now = Date.now();
  const perProject = new Map();
  for (const w of items) {
    if (!perProject.has(w.project_id)) perProject.set(w.project_id, []);
    perProject.get(w.project_id).push(w);
  }
  const longest = items.reduce((a, w) => Math.max(a, now - w.submitted_ms), 0);
  ctx.add(stats(stat('queued workloads', String(items.length)), stat('projects waiting', String(perProject.size)), stat('longest wait', items.length ? duration(longest) : '—')));
  if (!items.length) ctx.add(h('p', { class: 'empty' }, 'Nothing is waiting: every workload you can see has been placed.'));
  const sorted = [...perProject.entries()].sort((a, b) => nameOf(n.projects, a[0]).localeCompare(nameOf(n.projects, b[0])));
  for (const [pid, list] of sorted) {
    list.sort((a, b) => (a.queue_position ?? 1e9) - (b.queue_position ?? 1e9));
    const p = n.projects.get(pid);
    ctx.add(
      section(
        'Project ' + nameOf(n.projects, pid) + (p ? ' (' + nameOf(n.organizations, p.org_id) + ')' : ''),
        table(
          [
            { label: 'place', num: true, value: (w) => w.queue_position ?? '—' },
            { label: 'workload', value: (w) => [workloadLink(w.id), w.name ? ' · ' + w.name : ''] },
            { label: 'flavor', value: (w) => (w.replicas > 1 ? w.replicas + ' × ' : '') + nameOf(n.flavors, w.flavor_id) },
            { label: 'class', value: (w) => classChip(w.priority_class) },
            { label: 'waiting for', value: (w) => duration(now - w.submitted_ms) },
            { label: 'preempted before', num: true, value: (w) => w.preemptions || '' },
            { label: 'why it waits', value: (w) => h('span', { class: 'reason' }, w.reason || '') },
          ],
          list,
          { label: 'queue of ' + nameOf(n.projects, pid) },
        ),
      ),
    );
  }
  ctx.refreshEvery = 5000;
}

function details(pairs) {
  return h('dl', { class: 'details' }, pairs.filter(([, v]) => v !== null && v !== undefined && v !== '').map(([k, v]) => [h('dt', null, k), h('dd', null, v)]));
}

// The end of a workload's output, or why there is none (simulated work, nothing yet, removed).
async function logsPane(w, n) {
  const cluster = w.cluster_id != null ? n.clusters.get(w.cluster_id) : null;
  if (isSimulated(cluster)) return h('p', { class: 'empty' }, 'Simulated work has no output: nothing runs on a simulated cluster.');
  if (w.state === 'queued' && w.started_at == null) return h('p', { class: 'empty' }, 'No output yet: it has not started.');
  try {
    const logs = await api('/v1/workloads/' + w.id + '/logs?tail=16384');
    if (!logs.log) return h('p', { class: 'empty' }, ENDED.has(w.state) ? 'It printed nothing.' : 'Nothing printed yet; this follows its output while it runs.');
    return [
      logs.offset > 0 ? h('p', { class: 'note' }, 'The last ' + Math.round((logs.size - logs.offset) / 1024) + ' KiB of ' + Math.round(logs.size / 1024) + ' KiB.') : null,
      h('pre', { class: 'logs', tabindex: '0', 'aria-label': 'output of workload ' + w.id }, logs.log),
    ];
  } catch (err) {
    return errorBox(err, 'its output');
  }
}

export async function workload(ctx) {
  const id = Number(ctx.params.id);
  const [w, events, allocs, n] = await Promise.all([
    api('/v1/workloads/' + id),
    listAll('/v1/events?workload_id=' + id),
    listAll('/v1/allocations?workload_id=' + id),
    byIds('projects', 'flavors', 'nodes', 'gpus', 'clusters'),
  ]);
  const now = Date.now();
  const flavor = n.flavors.get(w.flavor_id);
  const used = usageOf(allocs, flavor, now);
  ctx.setTitle('Workload ' + id + (w.name ? ' · ' + w.name : ''));
  const ended = ENDED.has(w.state);
  const msg = h('div', { 'aria-live': 'polite' });
  const cancel = ended
    ? null
    : h(
        'button',
        {
          type: 'button',
          class: 'danger',
          onclick: async () => {
            if (!confirm('Cancel workload ' + id + '? Running work is stopped.')) return;
            try {
              await api('/v1/workloads/' + id + '/cancel', { method: 'POST' });
              ctx.refresh();
            } catch (err) {
              msg.replaceChildren(errorBox(err));
            }
          },
        },
        'Cancel workload',
      );
  // Queued work can be held (it keeps its place) and released.
  const holdButton =
    w.state !== 'queued'
      ? null
      : h(
          'button',
          {
            type: 'button',
            class: 'secondary',
            onclick: async () => {
              try {
                await api('/v1/workloads/' + id + '/' + (w.held ? 'release' : 'hold'), { method: 'POST' });
                ctx.refresh();
              } catch (err) {
                msg.replaceChildren(errorBox(err));
              }
            },
          },
          w.held ? 'Release' : 'Hold',
        );
  ctx.add(
    h(
      'div',
      { class: 'wl-head' },
      h('p', { class: 'wl-state', 'data-state': w.state }, 'State: ', badge(w.state), w.state === 'queued' && w.queue_position ? h('span', null, ' · place ' + w.queue_position + ' in its project’s queue') : null),
      w.reason && w.reason !== w.state ? h('p', { class: w.state === 'succeeded' ? 'reason ok' : 'reason' }, w.reason) : null,
      cancel,
      holdButton,
      msg,
    ),
    stats(
      stat(waiting(w) ? 'waiting' : ENDED.has(w.state) ? 'ran' : 'running for', duration(elapsedMs(w, now)), waiting(w) ? 'since it was submitted' : 'its last run'),
      stat('GPU-hours', used.gpuHours.toFixed(2), 'every run so far'),
      stat('cost so far', used.cost == null ? '—' : money(used.cost, flavor.currency), 'at the flavor’s list price; invoices apply the class’s rate'),
    ),
    section(
      'Details',
      details([
        ['project', nameOf(n.projects, w.project_id)],
        ['flavor', (w.replicas > 1 ? w.replicas + ' × ' : '') + nameOf(n.flavors, w.flavor_id)],
        ['class', classChip(w.priority_class)],
        ['after', w.after_id != null ? [workloadLink(w.after_id), w.after_ok ? ' has succeeded' : ' has ended'] : null],
        ['held', w.held ? 'yes: not scheduled until released' : null],
        ['history', w.imported ? importedChip() : null],
        ['cluster', w.cluster_id ? nameOf(n.clusters, w.cluster_id) : null],
        ['command', w.command ? h('code', null, w.command) : null],
        ['image', w.image],
        ['simulated duration', w.duration_s != null ? duration(w.duration_s * 1000) : null],
        ['submitted', time(w.submitted_ms)],
        ['last started', w.started_at ? time(w.started_at) : null],
        ['finished', w.finished_at ? time(w.finished_at) : null],
        ['exit code', w.exit_code],
        ['times preempted', String(w.preemptions || 0)],
      ]),
    ),
    section('Output', await logsPane(w, n)),
    section(
      'Events',
      table(
        [
          { label: 'time', value: (e) => time(e.at_ms) },
          { label: 'event', value: (e) => badge(e.type) },
          { label: 'what happened', value: (e) => e.message },
        ],
        events,
        { label: 'events', class: 'events' },
      ),
    ),
    section(
      'Allocations',
      table(
        [
          { label: 'GPU', value: (a) => (n.nodes.get(a.node_id) || { name: 'node ' + a.node_id }).name + (a.gpu_id != null && n.gpus.get(a.gpu_id) ? ' / GPU ' + n.gpus.get(a.gpu_id).index : '') },
          { label: 'share', num: true, value: (a) => gpus(a.milli) },
          { label: 'class', value: (a) => classChip(a.priority_class) },
          { label: 'borrowed', value: (a) => (a.borrowed ? 'yes' : 'no') },
          { label: 'from', value: (a) => time(a.started_ms) },
          { label: 'to', value: (a) => (a.ended_ms == null ? 'still held' : time(a.ended_ms)) },
          { label: 'held for', value: (a) => duration((a.ended_ms ?? Date.now()) - a.started_ms) },
          { label: 'ended because', value: (a) => (a.end_reason ? badge(a.end_reason) : '') },
        ],
        allocs,
        { label: 'allocations', empty: 'No GPUs held yet.' },
      ),
    ),
  );
  if (!ended) ctx.refreshEvery = 2000;
}

export async function submit(ctx) {
  const n = await byIds('projects', 'flavors', 'organizations', 'gpu-classes');
  const projects = [...n.projects.values()].sort((a, b) => a.name.localeCompare(b.name));
  const flavors = [...n.flavors.values()].filter((f) => f.active).sort((a, b) => a.name.localeCompare(b.name));
  if (!projects.length) {
    ctx.add(h('p', { class: 'empty' }, 'You are in no project yet, so you cannot submit work. Ask an organization admin for a role binding.'));
    return;
  }
  const flavorText = (f) => f.name + ' — ' + (f.gpu_milli ? gpus(f.gpu_milli) + ' × ' + nameOf(n.gpuClasses, f.gpu_class_id) : 'no GPU') + ', ' + money(f.price_per_hour_micros, f.currency) + '/h';
  const inputs = {
    project_id: select(projects.map((p) => [p.id, nameOf(n.organizations, p.org_id) + ' / ' + p.name]), ctx.query.project, { name: 'project_id', required: true }),
    flavor_id: select(flavors.map((f) => [f.id, flavorText(f)]), ctx.query.flavor, { name: 'flavor_id', required: true }),
    name: h('input', { name: 'name', type: 'text', maxlength: '200', autocomplete: 'off' }),
    replicas: h('input', { name: 'replicas', type: 'number', min: '1', max: '256', value: '1', required: true }),
    duration_s: h('input', { name: 'duration_s', type: 'number', min: '0', step: '1', inputmode: 'numeric' }),
    command: h('input', { name: 'command', type: 'text', maxlength: '8192', autocomplete: 'off', placeholder: 'python train.py --epochs 3' }),
  };
  const radio = (value, label, hint) =>
    h('label', { class: 'radio' }, h('input', { type: 'radio', name: 'priority_class', value, checked: value === 'auto' }), h('span', null, h('strong', null, label), h('span', { class: 'hint' }, hint)));
  const msg = h('div', { class: 'form-msg', 'aria-live': 'assertive' });
  const form = h(
    'form',
    { class: 'panel form', novalidate: true },
    field('Project', inputs.project_id),
    field('Flavor', inputs.flavor_id, 'What each replica gets, and its price per hour.'),
    h(
      'fieldset',
      null,
      h('legend', null, 'Priority class'),
      radio('auto', 'Automatic (recommended)', 'Owned while your project’s owned work fits its guarantee, opportunistic beyond it: decided when it starts, shown in its events.'),
      radio('owned', 'Owned (P1)', 'Runs within your project’s guaranteed GPUs and is never preempted; may reclaim GPUs lent to others.'),
      radio('opportunistic', 'Opportunistic (P2)', 'Uses idle GPUs up to your limit, at a lower price; may be preempted and requeued.'),
    ),
    field('Name', inputs.name, 'Optional label.'),
    field('Replicas', inputs.replicas, 'All replicas start together or not at all.'),
    field('Duration in seconds', inputs.duration_s, 'Simulated clusters only: how long the work “runs”. Leave empty to run until stopped.'),
    field('Command', inputs.command),
    h('button', { type: 'submit' }, 'Submit workload'),
    msg,
  );
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    msg.replaceChildren();
    for (const el of Object.values(inputs)) el.removeAttribute('aria-invalid');
    const body = {
      project_id: Number(inputs.project_id.value),
      flavor_id: Number(inputs.flavor_id.value),
      priority_class: form.querySelector('input[name=priority_class]:checked').value,
      replicas: Number(inputs.replicas.value || 1),
    };
    if (inputs.name.value.trim()) body.name = inputs.name.value.trim();
    if (inputs.command.value.trim()) body.command = inputs.command.value.trim();
    if (inputs.duration_s.value !== '') body.duration_s = Number(inputs.duration_s.value);
    try {
      const w = await api('/v1/workloads', { method: 'POST', body });
      dropCache();
      ctx.go('#/workloads/' + w.id);
    } catch (err) {
      const bad = inputs[err.detail && err.detail.field];
      if (bad) bad.setAttribute('aria-invalid', 'true');
      msg.replaceChildren(errorBox(err));
      (bad || msg).focus?.();
    }
  });
  ctx.add(form);
}
