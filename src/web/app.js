// SPDX-License-Identifier: Apache-2.0
// app.js: the dashboard's shell: sign-in with an API token, the menu, and a
// hash router (#/fleet, #/workloads/12, ...) that runs one view at a time.
// A view is an async function(ctx) that fills ctx.root; the shell shows it
// when it is done (no half-drawn pages), shows its errors, and re-runs it
// on Refresh or on its own timer (ctx.refreshEvery).
import { api, session, dropCache } from './api.js';
import { h, append, errorBox, nameOf } from './dom.js';
import { byIds } from './api.js';
import { fleet, manager } from './view-fleet.js';
import { workloads, queues, workload, submit } from './view-work.js';
import { timeline } from './view-timeline.js';
import { usage, quotas } from './view-usage.js';
import { invoices } from './view-invoices.js';
import { whatif } from './view-whatif.js';

const ROUTES = [
  { path: 'fleet', label: 'Fleet', title: 'Fleet overview', view: fleet },
  { path: 'manager', label: 'Manager', title: 'GPUs under me', view: manager },
  { path: 'workloads', label: 'Workloads', title: 'Workloads', view: workloads },
  { path: 'queues', label: 'Queues', title: 'Queues', view: queues },
  { path: 'submit', label: 'Submit', title: 'Submit a workload', view: submit },
  { path: 'timeline', label: 'Timeline', title: 'GPU timeline', view: timeline },
  { path: 'usage', label: 'Usage & cost', title: 'Usage and cost', view: usage },
  { path: 'quotas', label: 'Quotas', title: 'Quotas', view: quotas },
  { path: 'invoices', label: 'Invoices', title: 'Invoices', view: invoices },
  { path: 'whatif', label: 'What-if', title: 'What-if (simulated)', view: whatif },
  { path: 'workloads/:id', title: 'Workload', view: workload },
];

const main = document.getElementById('main');
const nav = document.getElementById('nav');
const who = document.getElementById('who');
const toggle = document.getElementById('nav-toggle');
let me = null; // /v1/whoami of the signed-in user
let generation = 0; // bumped on every navigation: stale renders are dropped
let timer = null;

function parseHash() {
  const raw = location.hash.replace(/^#\/?/, '');
  const [path, qs] = raw.split('?');
  const query = Object.fromEntries(new URLSearchParams(qs || ''));
  const parts = path.split('/').filter(Boolean);
  for (const r of ROUTES) {
    const want = r.path.split('/');
    if (want.length !== parts.length) continue;
    const params = {};
    if (want.every((w, i) => (w.startsWith(':') ? ((params[w.slice(1)] = decodeURIComponent(parts[i])), true) : w === parts[i]))) return { route: r, params, query };
  }
  return null;
}

function buildNav(current) {
  nav.replaceChildren(
    h('ul', null, ROUTES.filter((r) => r.label).map((r) => h('li', null, h('a', { href: '#/' + r.path, 'aria-current': r === current ? 'page' : null }, r.label)))),
  );
}

// Runs the current route's view; on a refresh (same generation) the old
// content stays until the new one is ready, and focus is left alone.
async function render(isRefresh) {
  clearTimeout(timer);
  const found = parseHash();
  if (!found) {
    location.replace('#/fleet');
    return;
  }
  const { route, params, query } = found;
  const gen = isRefresh ? generation : ++generation;
  buildNav(route);
  closeNav();
  const root = h('div', { class: 'view', 'data-view': route.path.split('/')[0] });
  const ctx = {
    me,
    params,
    query,
    root,
    add: (...kids) => append(root, kids), // skips null and false, unlike Element.append
    refreshEvery: 0,
    title: route.title,
    setTitle(t) {
      ctx.title = t;
    },
    alive: () => gen === generation,
    refresh: () => render(true),
    go: (hash) => {
      location.hash = hash;
    },
  };
  if (!isRefresh) {
    main.replaceChildren(pageHead(route.title), h('p', { class: 'loading', role: 'status' }, 'Loading…'));
    document.title = route.title + ' · gpuaas';
  }
  try {
    await route.view(ctx);
  } catch (err) {
    root.append(errorBox(err));
  }
  if (gen !== generation) return;
  main.replaceChildren(pageHead(ctx.title), root);
  document.title = ctx.title + ' · gpuaas';
  if (!isRefresh) main.querySelector('h1').focus();
  if (ctx.refreshEvery > 0) timer = setTimeout(() => gen === generation && render(true), ctx.refreshEvery);
}

function pageHead(title) {
  return h(
    'div',
    { class: 'page-head' },
    h('h1', { tabindex: '-1' }, title),
    h('button', { type: 'button', class: 'secondary', onclick: () => (dropCache(), render(true)) }, 'Refresh'),
  );
}

function closeNav() {
  toggle.setAttribute('aria-expanded', 'false');
  nav.classList.remove('open');
}

toggle.addEventListener('click', () => {
  const open = toggle.getAttribute('aria-expanded') !== 'true';
  toggle.setAttribute('aria-expanded', String(open));
  nav.classList.toggle('open', open);
});

// "admin", or "member of team-a, viewer of acme": the bindings in words.
async function roleSummary(whoami) {
  if (whoami.admin) return 'admin';
  let names = {};
  try {
    names = await byIds('projects', 'organizations');
  } catch {
    // names are a nicety; ids will do
  }
  const parts = whoami.bindings.map((b) =>
    b.project_id != null ? `${b.role} of ${nameOf(names.projects, b.project_id, 'project ')}` : `${b.role} of ${nameOf(names.organizations, b.org_id, 'organization ')}`,
  );
  return parts.join(', ') || 'no role yet';
}

async function showShell() {
  const signedIn = me;
  const roles = await roleSummary(signedIn);
  if (me !== signedIn) return; // signed out (or in again) meanwhile
  who.replaceChildren(
    h('span', { class: 'who-name', 'data-user': me.user.name }, me.user.display_name || me.user.name),
    h('span', { class: 'who-role' }, roles),
    h('button', { type: 'button', class: 'secondary', onclick: signOut }, 'Sign out'),
  );
  document.body.classList.add('signed-in');
  nav.hidden = false;
  toggle.hidden = false;
  await render(false);
}

function signOut() {
  session.clear();
  me = null;
  showLogin();
}

function showLogin(message) {
  ++generation;
  clearTimeout(timer);
  document.body.classList.remove('signed-in');
  nav.hidden = true;
  toggle.hidden = true;
  who.replaceChildren();
  const input = h('input', { id: 'token', name: 'token', type: 'password', autocomplete: 'off', required: true, spellcheck: 'false', 'aria-describedby': 'token-hint' });
  const msg = h('div', { class: 'form-msg', 'aria-live': 'assertive' });
  if (message) msg.append(errorBox(message));
  const form = h(
    'form',
    { class: 'login panel', onsubmit: (e) => (e.preventDefault(), signIn(input.value.trim(), msg)) },
    h('h1', { tabindex: '-1' }, 'Sign in to gpuaas'),
    h('label', { for: 'token' }, 'API token'),
    input,
    h('p', { id: 'token-hint', class: 'hint' }, 'A token from “gpuaas token create” (it starts with gpa_). It is kept in this browser tab only and forgotten when the tab closes.'),
    h('button', { type: 'submit' }, 'Sign in'),
    msg,
  );
  main.replaceChildren(form);
  document.title = 'Sign in · gpuaas';
  input.focus();
}

async function signIn(token, msg) {
  msg.replaceChildren();
  if (!token) return;
  session.set(token);
  try {
    me = await api('/v1/whoami');
  } catch (err) {
    session.clear();
    msg.replaceChildren(errorBox(err.code === 'unauthenticated' ? { code: err.code, status: 401, message: 'this token was not accepted (unknown, expired or revoked)' } : err));
    return;
  }
  if (!location.hash || location.hash === '#/') location.replace('#/fleet');
  await showShell();
}

window.addEventListener('gpuaas:signed-out', (e) => {
  if (!me) return;
  me = null;
  session.clear();
  showLogin(e.detail);
});

// The skip link must not change the hash: that is the router's.
document.querySelector('.skip').addEventListener('click', (e) => {
  e.preventDefault();
  main.focus();
});

window.addEventListener('hashchange', () => {
  if (me) render(false);
});

(async function start() {
  if (!session.token) return showLogin();
  try {
    me = await api('/v1/whoami');
  } catch (err) {
    session.clear();
    return showLogin(err);
  }
  await showShell();
})();
