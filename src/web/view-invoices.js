// SPDX-License-Identifier: Apache-2.0
// view-invoices.js: an organization's draft for a month (computed now, never
// stored) and its issued invoices and credit notes. The printable export
// needs the token, so it is fetched here and shown in a sandboxed frame (no
// scripts, no access to this page), or saved as a file.
import { api, listAll, byIds } from './api.js';
import { h, table, section, badge, money, month, monthsBack, select, field, errorBox, time, classChip } from './dom.js';

async function download(inv, format) {
  const text = await api('/v1/invoices/' + inv.id + '/export?format=' + format, { text: true });
  const type = { html: 'text/html', csv: 'text/csv', json: 'application/json' }[format];
  const url = URL.createObjectURL(new Blob([text], { type }));
  const a = h('a', { href: url, download: inv.number + '.' + format });
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10000);
}

function linesTable(inv) {
  return table(
    [
      { label: 'project', value: (l) => l.project },
      { label: 'flavor', value: (l) => l.flavor },
      { label: 'class', value: (l) => classChip(l.class) },
      { label: 'hours', num: true, value: (l) => l.hours },
      { label: 'GPU-hours', num: true, value: (l) => l.gpu_hours },
      { label: 'unit price / h', num: true, value: (l) => l.unit_price },
      { label: 'multiplier', num: true, value: (l) => (l.mult_ppm / 1e6).toFixed(2) },
      { label: 'amount', num: true, value: (l) => l.amount + ' ' + inv.currency },
    ],
    inv.lines || [],
    { label: 'invoice lines', empty: 'No usage in this period.' },
  );
}

// The organizations whose billing the caller may read: a role bound on the
// organization or one above it (a project role shows the organization's name,
// not its invoices; the server answers 404 there, so the view does not ask).
function billingOrgs(me, orgs) {
  if (me.admin) return [...orgs.values()];
  const bound = new Set(me.bindings.filter((b) => b.org_id != null).map((b) => b.org_id));
  const under = (o) => {
    for (let x = o, depth = 0; x && depth < 64; x = orgs.get(x.parent_id), depth++) if (bound.has(x.id)) return true;
    return false;
  };
  return [...orgs.values()].filter(under);
}

export async function invoices(ctx) {
  const n = await byIds('organizations');
  const orgs = billingOrgs(ctx.me, n.organizations).sort((a, b) => a.name.localeCompare(b.name));
  if (!orgs.length) {
    ctx.add(h('p', { class: 'empty' }, n.organizations.size ? 'Invoices are shown to those with a role on the organization (viewer or above); yours are on projects only.' : 'You can see no organization, so there are no invoices to show.'));
    return;
  }
  const orgId = n.organizations.has(Number(ctx.query.org)) ? Number(ctx.query.org) : orgs[0].id;
  const period = /^\d{4}-\d{2}$/.test(ctx.query.period || '') ? ctx.query.period : month();
  const go = (o, p) => ctx.go('#/invoices?org=' + o + '&period=' + p);
  const periods = monthsBack(12).reverse();
  if (!periods.includes(period)) periods.push(period);
  const [draft, issued] = await Promise.all([api(`/v1/invoices/draft?org_id=${orgId}&period=${period}`).catch((err) => ({ err })), listAll('/v1/invoices?org_id=' + orgId).catch((err) => ({ err }))]);

  const preview = h('iframe', { class: 'invoice-frame', sandbox: '', title: 'invoice preview', referrerpolicy: 'no-referrer' });
  const previewHead = h('h2', { tabindex: '-1' }, 'Printable invoice');
  const previewBox = h('section', { class: 'panel', hidden: true, id: 'invoice-preview' }, previewHead, preview);
  const msg = h('div', { 'aria-live': 'assertive' });
  const show = async (inv) => {
    msg.replaceChildren();
    try {
      preview.srcdoc = await api('/v1/invoices/' + inv.id + '/export?format=html', { text: true });
      preview.title = 'invoice ' + inv.number;
      previewHead.textContent = 'Printable ' + (inv.kind === 'credit-note' ? 'credit note ' : 'invoice ') + inv.number;
      previewBox.hidden = false;
      previewHead.focus();
    } catch (err) {
      msg.replaceChildren(errorBox(err, 'invoice ' + inv.number));
    }
  };
  const act = (label, fn) => h('button', { type: 'button', class: 'secondary small', onclick: () => fn().catch((err) => msg.replaceChildren(errorBox(err))) }, label);

  ctx.add(
    h(
      'div',
      { class: 'toolbar' },
      field('Organization', select(orgs.map((o) => [o.id, o.name]), orgId, { id: 'inv-org', onchange: (e) => go(e.target.value, period) })),
      field('Month', select(periods.map((p) => [p, p]), period, { id: 'inv-period', onchange: (e) => go(orgId, e.target.value) })),
    ),
    section(
      'Draft for ' + period,
      draft.err
        ? errorBox(draft.err, 'the draft')
        : draft.items.length
          ? draft.items.map((inv) =>
              h(
                'div',
                { class: 'invoice-draft', 'data-currency': inv.currency },
                h('p', null, badge('draft'), ' ', inv.customer, inv.cost_center ? ' · cost center ' + inv.cost_center : '', ' · total ', h('strong', { class: 'total' }, money(inv.total_micros, inv.currency, inv.minor_digits))),
                linesTable(inv),
              ),
            )
          : h('p', { class: 'empty' }, 'No usage in ' + period + ' yet.'),
      h('p', { class: 'hint' }, 'A draft is computed when you open it and never stored; work still running counts up to now. An admin issues the month once it has ended.'),
    ),
    section(
      'Issued invoices and credit notes',
      msg,
      issued.err
        ? errorBox(issued.err, 'the invoices')
        : table(
            [
              { label: 'number', value: (i) => i.number },
              { label: 'kind', value: (i) => i.kind },
              { label: 'period', value: (i) => i.period },
              { label: 'state', value: (i) => badge(i.state) },
              { label: 'total', num: true, value: (i) => money(i.total_micros, i.currency, i.minor_digits) },
              { label: 'issued', value: (i) => time(i.issued_at) },
              { label: 'files', value: (i) => h('span', { class: 'actions' }, act('View', () => show(i)), act('HTML', () => download(i, 'html')), act('CSV', () => download(i, 'csv'))) },
            ],
            issued.slice().reverse(),
            { label: 'issued invoices', empty: 'Nothing issued for this organization yet.', class: 'issued' },
          ),
    ),
    previewBox,
  );
}
