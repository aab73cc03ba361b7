// SPDX-License-Identifier: Apache-2.0
// api.js: every call the dashboard makes goes through here. The token lives in
// sessionStorage (this tab only, gone when it closes) and is sent as a bearer
// token; the server decides what the caller may see, so the views never filter
// by role themselves. Errors become ApiError with the API's code and message.

const TOKEN_KEY = 'gpuaas.token';

export const session = {
  get token() {
    return sessionStorage.getItem(TOKEN_KEY) || '';
  },
  set(token) {
    sessionStorage.setItem(TOKEN_KEY, token);
    cache.clear();
  },
  clear() {
    sessionStorage.removeItem(TOKEN_KEY);
    cache.clear();
  },
};

export class ApiError extends Error {
  constructor(status, code, message, detail) {
    super(message);
    this.status = status;
    this.code = code;
    this.detail = detail || {};
  }
}

// One request. opts: method, body (sent as JSON), text (return the body as text).
export async function api(path, opts = {}) {
  const headers = { Authorization: 'Bearer ' + session.token };
  let body;
  if (opts.body !== undefined) {
    headers['Content-Type'] = 'application/json';
    body = JSON.stringify(opts.body);
  }
  let res;
  try {
    res = await fetch(path, { method: opts.method || 'GET', headers, body, cache: 'no-store' });
  } catch (e) {
    throw new ApiError(0, 'network', 'could not reach gpuaasd (' + e.message + ')');
  }
  const text = await res.text();
  if (!res.ok) {
    let code = 'http_' + res.status;
    let message = res.statusText || 'the request failed';
    let detail;
    try {
      const j = JSON.parse(text);
      if (j && j.error) ({ code, message, detail } = j.error);
    } catch {
      // not JSON: keep the HTTP status as the message
    }
    const err = new ApiError(res.status, code, message, detail);
    // A refused token means the session is over, whichever view asked.
    if (res.status === 401) window.dispatchEvent(new CustomEvent('gpuaas:signed-out', { detail: err }));
    throw err;
  }
  if (opts.text) return text;
  return text ? JSON.parse(text) : null;
}

// Every item of a list route: pages of 1000 in id order, following next_after.
// Stops at max items and marks the array .truncated, so a view can say so.
export async function listAll(path, max = 50000) {
  const items = [];
  const sep = path.includes('?') ? '&' : '?';
  let after = null;
  for (;;) {
    const page = await api(path + sep + 'limit=1000' + (after ? '&after=' + after : ''));
    items.push(...page.items);
    if (page.next_after == null) return items;
    if (items.length >= max) {
      items.truncated = true;
      return items;
    }
    after = page.next_after;
  }
}

// Lookup tables (id -> object) of a resource, shared by the views for a few
// seconds so that moving between views does not refetch the same names.
const cache = new Map();
const CACHE_MS = 10000;

export function byId(resource) {
  const hit = cache.get(resource);
  if (hit && Date.now() - hit.at < CACHE_MS) return hit.promise;
  const promise = listAll('/v1/' + resource).then((items) => new Map(items.map((x) => [x.id, x])));
  promise.catch(() => cache.delete(resource));
  cache.set(resource, { at: Date.now(), promise });
  return promise;
}

// Several lookup tables at once: byIds('projects', 'flavors') -> {projects, flavors}.
export async function byIds(...resources) {
  const maps = await Promise.all(resources.map(byId));
  return Object.fromEntries(resources.map((r, i) => [r.replace(/-(.)/g, (_, c) => c.toUpperCase()), maps[i]]));
}

export function dropCache() {
  cache.clear();
}

// The allocations still held (no end yet), as far as the caller may see.
export async function openAllocations() {
  return (await listAll('/v1/allocations')).filter((a) => a.ended_ms == null);
}
