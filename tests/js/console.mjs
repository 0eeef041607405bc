// Drives /console in headless Chromium, as a user would: enters the admin secret, runs a query,
// switches role, runs a subscription, and reports what the page showed as JSON on stdout.
//
// usage: node console.mjs <base url> <admin secret> <chromium path>
import puppeteer from 'puppeteer-core';

const [base, secret, chromium] = process.argv.slice(2);
const origin = new URL(base).origin;

const browser = await puppeteer.launch({
  executablePath: chromium,
  headless: true,
  args: [
    '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync',
  ],
});
const report = { requests: [], failures: [], errors: [] };
try {
  const page = await browser.newPage();
  page.on('request', (r) => report.requests.push(r.url()));
  page.on('pageerror', (e) => report.errors.push(String(e)));
  page.on('response', (r) => {
    if (r.status() >= 400) report.failures.push(`${r.status()} ${new URL(r.url()).pathname}`);
  });
  // A failed request is reported in `failures`; any other console error is a defect.
  page.on('console', (m) => {
    if (m.type() === 'error' && !m.text().startsWith('Failed to load resource')) report.errors.push(m.text());
  });

  await page.goto(`${base}/console`, { waitUntil: 'networkidle0' });
  await page.waitForSelector('.graphiql-query-editor .CodeMirror');

  // The secret goes in its field; "change" fires when the field loses focus.
  await page.type('#admin-secret', secret);
  await page.keyboard.press('Tab');
  await waitForRoles(page, 'guest');
  report.roles = await page.$$eval('#roles option', (os) => os.map((o) => o.value));

  report.adminResult = await run(page, '{ author(order_by: {id: asc}, limit: 2) { name rating } }');

  // A role: the schema is introspected again, and the role's permissions apply.
  await setRole(page, 'guest');
  report.guestResult = await run(page, '{ author(order_by: {id: asc}, limit: 2) { name rating } }');
  report.guestAllowed = await run(page, '{ articles(order_by: {id: asc}) { title } }');

  // A subscription, over the console's WebSocket, sees a change made elsewhere.
  await setRole(page, '');
  report.firstLive = await run(page, 'subscription { author_by_pk(id: 1) { name } }');
  // A mutation, run from a second console tab (its own session storage, so its own secret).
  const other = await browser.newPage();
  other.on('request', (r) => report.requests.push(r.url()));
  other.on('pageerror', (e) => report.errors.push(String(e)));
  await other.goto(`${base}/console`, { waitUntil: 'networkidle0' });
  await other.type('#admin-secret', secret);
  await other.keyboard.press('Tab');
  await waitForRoles(other, 'guest');
  report.renamed = await run(other,
    'mutation { update_author_by_pk(pk_columns: {id: 1}, _set: {name: "Ann (console)"}) { id name } }');
  await other.close();
  report.nextLive = await resultContaining(page, 'Ann (console)');

  report.sessionStorage = await page.evaluate(() => ({ ...sessionStorage }));
  report.localStorage = await page.evaluate(() => JSON.stringify({ ...localStorage }));
  report.foreign = report.requests.filter((u) => !u.startsWith(origin) && !u.startsWith('data:'));
} finally {
  await browser.close();
}
process.stdout.write(JSON.stringify(report));

/** Replaces the role field's text, as a user would, and leaves the field. */
async function setRole(page, role) {
  await page.click('#role', { clickCount: 3 });
  await page.keyboard.press('Backspace');
  if (role) await page.type('#role', role);
  await page.keyboard.press('Tab');
}

/** Waits until the role suggestions (loaded from the metadata) include `role`. */
async function waitForRoles(page, role) {
  await page.waitForFunction(
    (r) => [...document.querySelectorAll('#roles option')].some((o) => o.value === r),
    { timeout: 15000 },
    role,
  );
}

/** Puts `query` in the editor, presses the run button, and returns the result pane as JSON. */
async function run(page, query) {
  await page.waitForSelector('.graphiql-query-editor .CodeMirror');
  // The schema is introspected again after a change of headers; wait for it.
  await page.waitForFunction(() => !document.querySelector('.graphiql-spinner'), { timeout: 15000 });
  await page.evaluate((q) => {
    document.querySelector('.graphiql-query-editor .CodeMirror').CodeMirror.setValue(q);
    const pane = document.querySelector('.result-window .CodeMirror');
    if (pane) pane.CodeMirror.setValue('');
  }, query);
  await page.click('.graphiql-execute-button');
  return resultContaining(page, '{');
}

/** Waits until the result pane's text contains `needle`, and returns it parsed. */
async function resultContaining(page, needle) {
  const pane = () => {
    const editor = document.querySelector('.result-window .CodeMirror');
    return editor ? editor.CodeMirror.getValue() : '';
  };
  try {
    const handle = await page.waitForFunction(
      (n) => {
        const editor = document.querySelector('.result-window .CodeMirror');
        const text = editor ? editor.CodeMirror.getValue() : '';
        return text.includes(n) ? text : false;
      },
      { timeout: 15000 },
      needle,
    );
    return JSON.parse(await handle.jsonValue());
  } catch (error) {
    throw new Error(`no result containing ${needle}: the pane shows ${await page.evaluate(pane)}; `
      + `so far: ${JSON.stringify(report)}`);
  }
}
