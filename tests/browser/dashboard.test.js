// SPDX-License-Identifier: Apache-2.0
// The dashboard driven through Debian's Chromium by playwright-core, against
// the daemon and data that run.sh prepared (its env.json is the argument).
// Each step waits for what the server's data makes appear (no fixed sleeps),
// saves a screenshot, and on failure saves failure-<step>.png and exits 1.
// Any Content-Security-Policy violation, script error, console error or failed
// API call (HTTP 4xx/5xx) fails the step it happened in, unless that step
// declared it (expectFailure: the refused token, another team's workload).
'use strict';
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const { chromium } = require('playwright-core');

const env = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
const T = 20000; // the longest any one condition may take
const problems = []; // console errors, CSP reports, page errors, failed API calls
let allowed = []; // [{status, path: RegExp}] the current step expects to fail
let browser;
let page;
let alicesWorkload;

// The failures the current step provokes on purpose (cleared before every step).
function expectFailure(status, path) {
  allowed.push({ status, path });
}

const isAllowed = (status, url) => allowed.some((a) => a.status === status && a.path.test(new URL(url).pathname));

function watch(p) {
  p.on('console', (m) => {
    if (m.type() !== 'error' && !/Content Security Policy/i.test(m.text())) return;
    // The browser logs each failed load too; the response handler judges those.
    const failedLoad = /Failed to load resource: the server responded with a status of (\d+)/.exec(m.text());
    if (failedLoad && m.location().url && isAllowed(Number(failedLoad[1]), m.location().url)) return;
    problems.push(`console ${m.type()}: ${m.text()} (${m.location().url || 'no url'})`);
  });
  p.on('pageerror', (e) => problems.push('page error: ' + (e.stack || e.message)));
  p.on('response', (res) => {
    const url = res.url();
    if (res.status() < 400 || !new URL(url).pathname.startsWith('/v1/')) return;
    if (!isAllowed(res.status(), url)) problems.push(`API call failed: ${res.request().method()} ${new URL(url).pathname}${new URL(url).search} -> ${res.status()}`);
  });
}

// The API as a role sees it, outside the page (for figures a view must match).
async function apiAs(who, route) {
  const res = await fetch(env.url + route, { headers: { Authorization: 'Bearer ' + env.tokens[who] } });
  assert.equal(res.status, 200, route + ' as ' + who);
  return res.json();
}

async function shot(name, p = page) {
  await p.screenshot({ path: path.join(env.artifacts, name + '.png'), fullPage: true });
}

// A new tab (its own, empty sessionStorage), so that nothing the previous
// user's page still had in flight runs with a cleared token.
async function newTab() {
  if (page) await page.context().close();
  const ctx = await browser.newContext({ viewport: { width: 1280, height: 900 } });
  page = await ctx.newPage();
  watch(page);
}

async function signIn(who) {
  await newTab();
  await page.goto(env.url + '/ui/');
  await page.fill('#token', env.tokens[who]);
  await page.click('form.login button[type=submit]');
  await page.locator('.who-name').waitFor({ timeout: T });
  assert.equal(await page.locator('.who-name').getAttribute('data-user'), who);
}

// Goes to a view and waits until it has drawn (the shell swaps in .view when done).
async function open(hash, view) {
  await page.goto(env.url + '/ui/' + hash);
  await page.locator(`.view[data-view="${view}"]`).waitFor({ timeout: T });
}

const text = (sel) => page.locator(sel).innerText();

const steps = [
  ['a wrong token is refused, visibly', async () => {
    await page.goto(env.url + '/');
    assert.match(page.url(), /\/ui\/$/);
    expectFailure(401, /^\/v1\/whoami$/);
    await page.fill('#token', 'gpa_not-a-real-token');
    await page.click('form.login button[type=submit]');
    await page.locator('.login .error').waitFor({ timeout: T });
    assert.match(await text('.login .error'), /not accepted/);
    assert.match(await text('.login .error'), /unauthenticated/);
    await shot('01-sign-in-refused');
  }],

  ['alice signs in and sees her role; the menu works from the keyboard', async () => {
    await signIn('alice');
    assert.match(await text('.who-role'), /member of team-a/);
    await page.locator('.view[data-view="fleet"]').waitFor({ timeout: T });
    assert.equal(await page.locator('#nav a[aria-current="page"]').innerText(), 'Fleet');
    // The skip link shows when focused and moves focus to the content.
    await page.locator('.skip').focus();
    assert.ok((await page.locator('.skip').boundingBox()).x >= 0);
    await page.keyboard.press('Enter');
    assert.equal(await page.evaluate(() => document.activeElement.id), 'main');
    // Tab order: skip link, brand, then the menu; Enter opens a view.
    await page.locator('.brand').focus();
    await page.keyboard.press('Tab');
    assert.equal(await page.evaluate(() => document.activeElement.textContent), 'Fleet');
    await page.keyboard.press('Tab');
    await page.keyboard.press('Tab');
    assert.equal(await page.evaluate(() => document.activeElement.textContent), 'Workloads');
    await page.keyboard.press('Tab');
    assert.equal(await page.evaluate(() => document.activeElement.textContent), 'Queues');
    await page.keyboard.press('Enter');
    await page.locator('.view[data-view="queues"]').waitFor({ timeout: T });
  }],

  ['alice submits owned work: queued while it reclaims, then running', async () => {
    await open('#/submit', 'submit');
    await page.selectOption('select[name=project_id]', String(env.projectA));
    await page.selectOption('select[name=flavor_id]', String(env.flavor4x));
    await page.check('input[name=priority_class][value=owned]');
    await page.fill('input[name=name]', 'train-ui');
    await page.fill('input[name=duration_s]', '1800');
    await page.fill('input[name=command]', 'python train.py --epochs 3');
    await page.click('form.form button[type=submit]');
    await page.waitForURL(/#\/workloads\/\d+$/, { timeout: T });
    alicesWorkload = Number(page.url().match(/workloads\/(\d+)$/)[1]);
    // The fleet is full of bob's borrowed work: this waits for the grace period.
    await page.locator('.wl-state[data-state="queued"]').waitFor({ timeout: T });
    assert.match(await text('.view h2 + dl'), /python train\.py --epochs 3/);
    await shot('02-workload-queued');
    await page.locator('.wl-state[data-state="running"]').waitFor({ timeout: T + env.grace * 1000 });
    const events = await text('table.events');
    assert.match(events, /submitted/);
    assert.match(events, /admitted/);
    assert.match(events, /running/);
    assert.equal(await page.locator('text=Cancel workload').count(), 1);
    // Elapsed time, GPU-hours and cost so far; the output pane says why there is none.
    await page.locator('.view .stat-label', { hasText: 'GPU-hours' }).waitFor({ timeout: T });
    assert.match(await text('.view .stats'), /running for/);
    assert.match(await text('.view .stats'), /cost so far/);
    assert.match(await text('.view'), /Simulated work has no output/);
    assert.doesNotMatch(await text('.view .stats'), /NaN|undefined/);
    await shot('03-workload-running');
  }],

  ['bob sees his requeued work, why it waits, and nothing of team-a', async () => {
    await signIn('bob');
    await open('#/queues', 'queues');
    const body = await text('.view');
    assert.match(body, /Project team-b/);
    assert.doesNotMatch(body, /Project team-a/);
    const first = page.locator('.view table tbody tr').first();
    assert.equal(await first.locator('td').first().innerText(), '1');
    assert.match(await first.locator('.reason').innerText(), /h100/);
    await shot('04-queues');
    // Another team's workload answers 404, shown as an error.
    expectFailure(404, new RegExp('^/v1/workloads/' + alicesWorkload + '(/|$)'));
    await page.goto(env.url + '/ui/#/workloads/' + alicesWorkload);
    await page.locator('.view .error').waitFor({ timeout: T });
    assert.match(await text('.view .error'), /not_found/);
  }],

  ['bob’s workload list: his team’s work only, filters kept in the address, mine', async () => {
    // (still bob)
    await open('#/workloads', 'workloads');
    const truth = (await apiAs('bob', '/v1/workloads?limit=1000')).items;
    const rows = await page.locator('table.workloads tbody tr').allInnerTexts();
    assert.equal(rows.length, truth.length, 'every workload bob may see');
    for (const r of rows) {
      assert.match(r, /team-b/);
      assert.doesNotMatch(r, /team-a|team-c/);
      assert.match(r, /\d+ (s|min|h|d)\b/, 'how long it ran or waited');
      assert.doesNotMatch(r, /NaN|undefined/);
    }
    // A filter goes into the address and narrows the list to what the API says.
    const queued = truth.filter((w) => w.state === 'queued').length;
    assert.ok(queued > 0, 'bob has requeued work');
    await page.selectOption('.view select[name=state]', 'queued');
    await page.waitForFunction(() => document.querySelector('.view select[name=state]')?.value === 'queued' && location.hash === '#/workloads?state=queued', null, { timeout: T });
    const queuedRows = await page.locator('table.workloads tbody tr').allInnerTexts();
    assert.equal(queuedRows.length, queued);
    for (const r of queuedRows) assert.match(r, /\bqueued\b/);
    // Search by name; the row links to the workload page.
    await page.fill('.view input[name=name]', 'sweep-1');
    await page.press('.view input[name=name]', 'Enter');
    await page.waitForFunction(() => /name=sweep-1/.test(location.hash) && document.querySelector('.view input[name=name]')?.value === 'sweep-1', null, { timeout: T });
    for (const r of await page.locator('table.workloads tbody tr').allInnerTexts()) assert.match(r, /sweep-1/);
    await shot('04b-workloads-filtered');
    // Mine: what bob submitted himself.
    await open('#/workloads?scope=mine', 'workloads');
    const mine = truth.filter((w) => w.user_id != null && w.name && w.name.startsWith('sweep-')).length;
    assert.equal(await page.locator('table.workloads tbody tr').count(), mine);
    await page.locator('table.workloads tbody tr a').first().click();
    await page.locator('.view[data-view="workloads"] .wl-state').waitFor({ timeout: T });
    // Hold a queued workload from its page, then release it.
    const waiting = truth.find((w) => w.state === 'queued');
    await open('#/workloads/' + waiting.id, 'workloads');
    await page.click('.wl-head button:has-text("Hold")');
    await page.locator('.wl-head button:has-text("Release")').waitFor({ timeout: T });
    assert.match(await text('.wl-head .reason'), /^held: not scheduled until released/);
    assert.equal((await apiAs('bob', '/v1/workloads/' + waiting.id)).held, true);
    await page.click('.wl-head button:has-text("Release")');
    await page.locator('.wl-head button:has-text("Hold")').waitFor({ timeout: T });
    assert.equal((await apiAs('bob', '/v1/workloads/' + waiting.id)).held, false);
  }],

  ['the timeline shows P1 and P2 apart and marks the preemption; it zooms', async () => {
    await signIn('admin');
    await open('#/timeline', 'timeline');
    await page.click('button[data-preset="15m"]');
    const svg = page.locator('svg.timeline');
    await svg.waitFor({ timeout: T });
    assert.ok((await svg.locator('.tl-bar[data-class="p1"]').count()) >= 4, 'alice’s 4 owned GPUs');
    assert.ok((await svg.locator('.tl-bar[data-class="p2"]').count()) >= 16, 'bob’s opportunistic work');
    assert.equal(await svg.locator(`.tl-bar[data-class="p1"][data-workload="${alicesWorkload}"]`).count(), 4);
    assert.equal(await svg.locator('.tl-bar.preempted').count(), 4, 'one preempted allocation per reclaimed GPU');
    assert.equal(await svg.locator('.tl-mark').count(), 1, 'the ledger entry');
    // A colour per project, named in the legend; P2 hatched over it.
    const colourOf = async (sel) => svg.locator(sel).first().evaluate((el) => getComputedStyle(el).fill);
    const aliceColour = await colourOf(`.tl-bar[data-workload="${alicesWorkload}"]`);
    const bobColour = await colourOf('.tl-bar[data-class="p2"]');
    assert.notEqual(aliceColour, bobColour, 'team-a and team-b in different colours');
    assert.equal(await svg.locator('.tl-p2').count(), await svg.locator('.tl-bar[data-class="p2"]').count(), 'every P2 bar hatched');
    const legendText = await text('.view .legend');
    assert.match(legendText, /project team-a/);
    assert.match(legendText, /project team-b/);
    assert.match(legendText, /hatched: P2 opportunistic/);
    // Labels never overlap: the axis' labels and the decision's label are on rows apart,
    // and no bar's text runs past its bar.
    const overlaps = await page.evaluate(() => {
      const boxes = [...document.querySelectorAll('svg.timeline text.tick, svg.timeline text.tl-mark-label')].map((t) => t.getBBox());
      let n = 0;
      for (let i = 0; i < boxes.length; i++)
        for (let j = i + 1; j < boxes.length; j++) {
          const a = boxes[i], b = boxes[j];
          if (a.x < b.x + b.width && b.x < a.x + a.width && a.y < b.y + b.height && b.y < a.y + a.height) n++;
        }
      for (const t of document.querySelectorAll('svg.timeline a.tl-link')) {
        const bar = t.querySelector('.tl-bar').getBBox(), label = t.querySelector('.bar-text');
        if (label && label.getBBox().x + label.getBBox().width > bar.x + bar.width + 1) n++;
      }
      return n;
    });
    assert.equal(overlaps, 0, 'overlapping labels');
    // Lanes grouped by pool: a heading per pool.
    await page.selectOption('#tl-group', 'pool');
    await page.locator('svg.timeline text.lane-group').first().waitFor({ timeout: T });
    const groups = await page.locator('svg.timeline text.lane-group').evaluateAll((els) => els.map((e) => e.textContent));
    assert.deepEqual(groups, ['pool pool-a', 'pool pool-b']);
    await page.selectOption('#tl-group', 'node');
    const ledger = await text('table.ledger');
    assert.match(ledger, /reclaim/);
    assert.match(ledger, new RegExp('workload ' + alicesWorkload));
    await page.click('button[data-fit]');
    assert.equal(await svg.locator('.tl-bar.preempted').count(), 4);
    await shot('05-timeline');
    await page.click('button[data-preset="15m"]');
    const before = await text('.range');
    await page.click('button[data-zoom="in"]');
    assert.match(await text('.range'), /\(7 min 30 s\)/);
    const zoomed = await text('.range');
    await svg.hover({ position: { x: 600, y: 60 } });
    await page.mouse.wheel(0, 300); // down: zoom out around the pointer
    await page.waitForFunction((t) => document.querySelector('.range').textContent !== t, zoomed, { timeout: T });
    assert.match(await text('.range'), /\(9 min 22 s\)/);
    assert.notEqual(await text('.range'), before);
    await page.click('button[data-preset="15m"]');
  }],

  ['the fleet overview counts the GPUs and labels the simulated cluster', async () => {
    await open('#/fleet', 'fleet');
    const stats = await text('.stats');
    assert.match(stats, /16\s*GPUs/);
    assert.match(stats, /100 %\s*utilization/);
    assert.match(await text('.view'), /SIMULATED/);
    // A square per GPU, in the inventory's state; lent ones as the inventory counts them.
    const inv = (await apiAs('admin', '/v1/inventory')).items;
    assert.equal(await page.locator('.gpu-grid .cell').count(), inv.length);
    assert.equal(await page.locator('.gpu-grid .cell[data-state="lent"]').count(), inv.filter((g) => g.used_by && g.used_by.borrowed).length);
    assert.match(await page.locator('.gpu-grid .cell').first().getAttribute('title'), /owner .* held by /);
    await shot('06-fleet');
    // A member's figures count only the GPUs they may see, said once, and agree with each other.
    await signIn('carol');
    await open('#/fleet', 'fleet');
    const hers = (await apiAs('carol', '/v1/inventory')).items;
    assert.ok(hers.length > 0 && hers.length < 16, 'carol sees some of the fleet');
    assert.match(await text('.stats'), new RegExp(hers.length + '\\s*GPUs'));
    assert.equal(await page.locator('.gpu-grid .cell').count(), hers.length);
    assert.equal((await text('.view')).match(/counts the \d+ GPUs you may see/g).length, 1, 'said once');
    await signIn('admin');
  }],

  ['maria’s manager view: her GPUs, pools, costs, access and holders; lent GPUs as the admin counts them', async () => {
    await signIn('maria');
    await open('#/manager', 'manager');
    assert.equal(await text('.page-head h1'), 'GPUs under acme');
    assert.match(await page.locator('#mgr-org option:checked').innerText(), /you manage it/);
    const body = await text('.view');
    assert.match(body, /16\s*GPUs owned/);
    assert.match(body, /16\s*in use/);
    assert.match(body, /0\s*idle/);
    assert.match(body, /pool-a/);
    assert.match(body, /2\.00 USD/);
    assert.match(body, /Manager: maria/);
    assert.match(body, /project team-b/); // pool-a may be borrowed by team-b (and team-c)
    assert.match(body, /P1 owned/);
    assert.match(body, /P2 opportunistic/);
    // names, never ids: no "user 4", "project #2", "#7"
    assert.doesNotMatch(body, /\b(user|project|organization) #?\d+\b|#\d+/);
    // What the admin sees of the same GPUs: who holds each, and which are lent.
    const truth = (await apiAs('admin', '/v1/inventory?org=' + env.org)).items;
    const lentByPool = (pool) => truth.filter((g) => g.pool === pool && g.used_by && g.used_by.borrowed).length;
    const lentTotal = truth.filter((g) => g.used_by && g.used_by.borrowed).length;
    assert.equal(lentTotal, 4, 'the admin sees 4 of pool-a’s GPUs lent (bob’s and carol’s)');
    assert.match(body, new RegExp(lentTotal + '\\s*lent out'));
    for (const pool of ['pool-a', 'pool-b']) {
      const cells = (await page.locator('table.pools tbody tr', { hasText: pool }).innerText()).split('\t').map((x) => x.trim());
      // columns: pool, owner, where, cost, GPUs, in use, lent out, may borrow it, cost this month
      assert.equal(cells[6], String(lentByPool(pool)), pool + ' lent out, as the admin counts it');
      if (pool === 'pool-b') assert.match(cells[7], /at most 8 GPUs lent at once/, 'pool-b’s lending limit');
      else assert.doesNotMatch(cells[7], /at most/, pool + ' has no lending limit');
    }
    // carol's GPUs (globex, which maria cannot see): lent, to "another team", unnamed.
    const carols = truth.filter((g) => g.used_by && g.used_by.project === 'team-c');
    assert.equal(carols.length, 2, 'carol’s 2 GPUs on pool-a');
    for (const g of carols) {
      const row = await page.locator(`table.gpus tbody tr[data-id="${g.gpu_id}"]`).innerText();
      assert.match(row, /\blent\b/);
      assert.match(row, /lent to another team/);
      assert.doesNotMatch(row, /team-c|globex|carol/);
    }
    const heldBy = (await page.locator('.view .held').allInnerTexts()).join('\n');
    assert.doesNotMatch(heldBy, /team-c|globex|carol/);
    await shot('07-manager');
  }],

  ['quotas: guaranteed, used, borrowed and lent per project', async () => {
    await open('#/quotas', 'quotas');
    const row = async (name) => (await page.locator('.view table tbody tr', { hasText: name }).innerText()).split('\t').map((s) => s.trim());
    // columns: project, class, guaranteed, limit, used, borrowed, lent, pools
    const a = await row('team-a');
    const b = await row('team-b');
    // team-a lends 4: bob's 2 and carol's 2 (globex: maria cannot see it, but it counts)
    assert.deepEqual([a[2], a[3], a[4], a[5], a[6]], ['8 (from pools)', '16', '4', '0', '4']);
    assert.deepEqual([b[2], b[4], b[5], b[6]], ['8 (from pools)', '10', '2', '0']);
    // how each owned pool is lent, its lending limit included
    assert.match(a[7], /pool-a \(lent to its access list\)/);
    assert.match(b[7], /pool-b \(lent to its access list, at most 8 GPUs at once\)/);
    await shot('08-quotas');
  }],

  ['usage and cost: this month’s lines, last month’s bar, showback', async () => {
    await open('#/usage', 'usage');
    const body = await text('.view');
    assert.match(body, /team-b/);
    assert.match(body, /h100\.1x/);
    assert.ok((await page.locator('svg.chart').count()) >= 3);
    // Last month's ledger record is the second-to-last column of the money chart.
    const titles = await page.locator('svg.chart').first().locator('rect title').allTextContents();
    assert.ok(titles.some((t) => t.startsWith(env.lastPeriod + ': 7.50 USD')), titles.join(' | '));
    await page.selectOption('#usage-by', 'pool');
    await page.locator('.view section h2', { hasText: 'by pool' }).waitFor({ timeout: T });
    assert.match(await text('.view'), /pool-b/);
    // One figure everywhere: each showback row's used + idle is its total, and its bar says the same.
    const cents = (x) => Math.round(Number(x.replace(/[^0-9.-]/g, '')) * 100);
    const sb = page.locator('.view section', { hasText: 'by pool' });
    for (const tr of await sb.locator('table tbody tr').all()) {
      const c = (await tr.innerText()).split('\t').map((x) => x.trim());
      // columns: pool, capacity, allocated, used, idle, total, efficiency
      assert.equal(cents(c[3]) + cents(c[4]), cents(c[5]), 'used + idle = total: ' + c.join(' | '));
      const bars = await sb.locator('svg.chart text.chart-value').allTextContents();
      assert.ok(bars.includes(c[5]), `a bar shows ${c[0]}'s total ${c[5]}: ${bars.join(' | ')}`);
    }
    await shot('09-usage');
  }],

  ['invoices: the draft, and the issued invoice’s printable page', async () => {
    await open('#/invoices', 'invoices');
    const draft = await text('.invoice-draft');
    assert.match(draft, /team-a/);
    assert.match(draft, /team-b/);
    assert.match(draft, /Acme Research/);
    await shot('10-invoice-draft');
    const row = page.locator('table.issued tbody tr', { hasText: env.invoice });
    assert.match(await row.innerText(), /7\.50 USD/);
    await row.locator('button', { hasText: 'View' }).click();
    const frame = page.frameLocator('iframe.invoice-frame');
    await frame.locator('h1', { hasText: env.invoice }).waitFor({ timeout: T });
    assert.match(await frame.locator('body').innerText(), /Acme Research/);
    // The export's own stylesheet applied: the CSP allows exactly its hash.
    const collapse = await frame.locator('table').evaluate((t) => getComputedStyle(t).borderCollapse);
    assert.equal(collapse, 'collapse');
    assert.equal(await page.locator('iframe.invoice-frame').getAttribute('sandbox'), '');
    await page.locator('#invoice-preview').scrollIntoViewIfNeeded();
    await shot('11-invoice-issued');
  }],

  ['last month’s imported work is labelled simulated', async () => {
    await page.goto(env.url + '/ui/#/workloads/' + env.history);
    await page.locator('.wl-state[data-state="succeeded"]').waitFor({ timeout: T });
    assert.match(await text('.view h2 + dl'), /IMPORTED · SIMULATED/);
    assert.match(await text('.view .reason'), /imported history \(simulated\)/);
  }],

  ['what-if: maria replays this month with two more nodes, both runs side by side, labelled simulated', async () => {
    await signIn('maria');
    await open('#/whatif', 'whatif');
    assert.match(await page.locator('.view .sim-banner').first().innerText(), /SIMULATED/);
    await page.selectOption('select[name=nclass]', { label: 'h100' });
    await page.fill('input[name=ncount]', '2');
    await page.click('form.whatif-form button[type=submit]');
    await page.waitForURL(/#\/whatif\?.*run=1/, { timeout: T });
    await page.locator('.view[data-view="whatif"] table.whatif-projects').waitFor({ timeout: T });
    assert.match(await page.locator('.view .sim-banner').nth(1).innerText(), /SIMULATED.*simulated: a replay/s);
    assert.match(await text('.view'), /2 more h100 nodes/);
    const runs = await text('table.whatif-runs');
    assert.match(runs, /baseline\s+16\b/);
    assert.match(runs, /changed\s+32\b/);
    // maria's organization's projects only: globex's team-c is not hers
    const projects = await text('table.whatif-projects');
    assert.match(projects, /team-a/);
    assert.match(projects, /team-b/);
    assert.doesNotMatch(projects, /team-c/);
    assert.equal(await page.locator('.view svg polyline.line').count(), 2, 'a line per run');
    // the waits' chart: a row per run and percentile (a zero wait draws no bar, only its value)
    assert.equal(await page.locator('.view svg[aria-label^="waits"] text.chart-label').count(), 4, 'wait rows');
    await shot('17-whatif');
    // a member may not run one: the view says why
    await signIn('alice');
    expectFailure(403, /^\/v1\/whatif$/);
    await open('#/whatif?period=' + new Date().toISOString().slice(0, 7) + '&run=1', 'whatif');
    assert.match(await text('.view .error'), /organization admins/);
  }],

  ['every view as admin, org-admin, project-admin, member and viewer: no failed call, no error shown', async () => {
    const views = ['fleet', 'manager', 'workloads', 'queues', 'submit', 'timeline', 'usage', 'quotas', 'invoices', 'whatif'];
    for (const who of ['admin', 'maria', 'pat', 'alice', 'vic']) {
      await signIn(who);
      for (const view of views) {
        await open('#/' + view, view);
        const errors = await page.locator('.view .error').allInnerTexts();
        assert.deepEqual(errors, [], `${who} on ${view}`);
        assert.deepEqual(problems, [], `${who} on ${view}`);
      }
      await shot('16-roles-' + who);
    }
  }],
];

// The same dashboard on a phone-sized screen: one column, a menu button, no sideways scrolling.
async function narrow(browser) {
  const ctx = await browser.newContext({ viewport: { width: 390, height: 844 }, deviceScaleFactor: 2 });
  const p = await ctx.newPage();
  watch(p);
  await p.goto(env.url + '/ui/');
  await p.fill('#token', env.tokens.maria);
  await p.click('form.login button[type=submit]');
  await p.locator('.view[data-view="fleet"]').waitFor({ timeout: T });
  const overflow = () => p.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  assert.equal(await overflow(), 0, 'fleet wider than the screen');
  assert.ok((await p.locator('header, .top').first().boundingBox()).height <= 64, 'the header is at most 64 px high');
  assert.equal(await p.locator('#nav').isVisible(), false);
  await shot('12-narrow-fleet', p);
  await p.click('#nav-toggle');
  await p.locator('#nav a', { hasText: 'Timeline' }).waitFor({ state: 'visible', timeout: T });
  await shot('13-narrow-menu', p);
  await p.locator('#nav a', { hasText: 'Timeline' }).click();
  await p.locator('.view[data-view="timeline"] svg.timeline').waitFor({ timeout: T });
  assert.equal(await p.locator('#nav').isVisible(), false, 'the menu closes after a choice');
  assert.equal(await overflow(), 0, 'timeline wider than the screen');
  await shot('14-narrow-timeline', p);
  for (const [hash, view] of [
    ['#/manager', 'manager'],
    ['#/invoices', 'invoices'],
    ['#/submit', 'submit'],
    ['#/workloads', 'workloads'],
    ['#/queues', 'queues'],
    ['#/whatif?run=1', 'whatif'],
  ]) {
    await p.goto(env.url + '/ui/' + hash);
    await p.locator(`.view[data-view="${view}"]`).waitFor({ timeout: T });
    assert.equal(await overflow(), 0, view + ' wider than the screen');
  }
  // Tables are cards: every cell labelled, a row's state and reason in view, no sideways scroll.
  await p.goto(env.url + '/ui/#/workloads?state=queued');
  await p.locator('.view[data-view="workloads"] table.workloads').waitFor({ timeout: T });
  const card = p.locator('table.workloads tbody tr').first();
  assert.equal(await card.evaluate((el) => getComputedStyle(el).display), 'block', 'a row is a card');
  const cells = await card.locator('td').evaluateAll((tds) => tds.map((td) => [td.dataset.label, td.getBoundingClientRect().right <= window.innerWidth]));
  assert.ok(cells.some(([l]) => l === 'state') && cells.some(([l]) => /why/.test(l)), 'state and reason on the card');
  assert.ok(cells.every(([, inside]) => inside), 'every cell within the screen');
  assert.equal(await p.locator('.scroll').first().evaluate((el) => el.scrollWidth - el.clientWidth), 0, 'nothing to scroll sideways');
  await shot('15b-narrow-workloads', p);
  await shot('15-narrow-submit', p);
  await ctx.close();
}

(async () => {
  const t0 = Date.now();
  browser = await chromium.launch({
    executablePath: env.chromium,
    // Chromium's sandbox does not run as root (CI runs as root).
    args: process.getuid && process.getuid() === 0 ? ['--no-sandbox'] : [],
  });
  await newTab();
  let failed = false;
  for (const [name, fn] of [...steps, ['narrow screen', () => narrow(browser)]]) {
    const t = Date.now();
    allowed = [];
    try {
      await fn();
      // what went wrong in the page during this step fails it
      if (problems.length) throw new Error('problems in the page:\n  ' + problems.join('\n  '));
      console.log(`ok   ${name} (${Date.now() - t} ms)`);
    } catch (err) {
      failed = true;
      console.log(`FAIL ${name}: ${err.stack || err}`);
      await shot('failure-' + name.replace(/[^a-z0-9]+/gi, '-').slice(0, 40)).catch(() => {});
      break;
    }
  }
  await browser.close();
  console.log(`${failed ? 'FAILED' : 'passed'}: browser test in ${((Date.now() - t0) / 1000).toFixed(1)} s; screenshots in ${env.artifacts}`);
  process.exit(failed ? 1 : 0);
})();
