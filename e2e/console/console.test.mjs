// The console in a real browser: headless Debian Chromium driven by playwright-core against a
// fresh `ramen up` (started by run.py, which passes everything in CONSOLE_* variables). The
// tests run in order as one user's session would, each step waiting on what the page shows
// (playwright's waits, with deadlines; no fixed sleeps), and save a screenshot of each page.

import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createRequire } from 'node:module';
import { promisify } from 'node:util';

const require = createRequire(import.meta.url);
const { chromium } = require(process.env.CONSOLE_PLAYWRIGHT);
const run = promisify(execFile);

const BASE = process.env.CONSOLE_URL;
const ADMIN = process.env.CONSOLE_ADMIN_EMAIL;
const OTP = process.env.CONSOLE_ADMIN_OTP;
const REPO = process.env.CONSOLE_REPO;
const SHOTS = process.env.CONSOLE_SHOTS;
const PATIENCE = Number(process.env.RAMEN_TEST_PATIENCE || 1);
const PASSWORD = 'console-e2e-password-0123';
const MEMBER = 'mo@example.com';
const MEMBER_PASSWORD = 'member-e2e-password-0123';
const SSO_ISSUER = process.env.CONSOLE_SSO_ISSUER;
const SSO_NAME = process.env.CONSOLE_SSO_NAME;
// What tag `reworded` of the repo makes `notes.add` say (e2e/scenario.py `REWORDED`).
const REWORDED = process.env.CONSOLE_REWORDED;
const within = (seconds) => seconds * 1000 * PATIENCE;

let browser;
let page;
let key;
const problems = [];

function watch(p, who) {
  // Only the console's pages: the OpenID provider's (SSO) are not ours to judge.
  const ours = () => p.url().startsWith(BASE);
  p.on('pageerror', (e) => { if (ours()) problems.push(`${who}: page error: ${e.message}`); });
  p.on('console', (m) => {
    if (!ours()) return;
    // The API's refusals the tests provoke on purpose are logged as failed loads; every other
    // console error is a defect (CSP refusals included).
    if (m.type() === 'error' && !m.text().startsWith('Failed to load resource')) problems.push(`${who}: ${m.text()}`);
  });
}

async function newPage(viewport = { width: 1280, height: 900 }, who = 'admin') {
  const context = await browser.newContext({ baseURL: BASE, viewport });
  const p = await context.newPage();
  p.setDefaultTimeout(within(20));
  watch(p, who);
  return p;
}

const shot = (p, name) => p.screenshot({ path: `${SHOTS}/${name}.png`, fullPage: true });

/** `p`'s session for another browser context (a narrow viewport): its access cookie, not its
 * refresh cookie. Two cookie jars holding one refresh token is what a stolen token looks like:
 * whichever jar refreshes second presents a token already used, and the API rightly revokes
 * the whole session, the main page's included (seen in CI: "refresh token reused"). */
async function sessionCookies(p) {
  return (await p.context().cookies()).filter((c) => c.name !== 'ramen_refresh');
}

/** Answers the page's confirmation dialog (typing `typed` first when it asks for it). */
async function confirm(p, typed) {
  const dialog = p.locator('dialog#confirm[open]');
  await dialog.waitFor();
  if (typed) await dialog.locator('input[name="typed"]').fill(typed);
  await dialog.locator('[data-ok]').click();
  await dialog.waitFor({ state: 'hidden' });
}

/** Tool names of an environment through the edge, with the official MCP client. */
async function mcpTools(environment, ...more) {
  const [python, script] = process.env.CONSOLE_MCP_TOOLS.split(' ');
  const { stdout } = await run(python, [script, `${BASE}/mcp/hello/${environment}`, key, ...more], { timeout: within(60) });
  return JSON.parse(stdout);
}

/** Polls an out-of-browser probe until it holds, failing after `seconds`. */
async function eventually(what, seconds, probe) {
  const deadline = Date.now() + within(seconds);
  let last;
  for (;;) {
    try {
      last = await probe();
      if (last === true) return;
    } catch (e) { last = e; }
    if (Date.now() > deadline) assert.fail(`${what} within ${seconds}s; last: ${last}`);
    await new Promise((r) => setTimeout(r, 500));
  }
}

async function submitIn(form) {
  await form.locator('button[type="submit"]').first().click();
}

before(async () => {
  browser = await chromium.launch({
    executablePath: '/usr/bin/chromium',
    // playwright gives every launch a fresh temporary profile (--user-data-dir) and --headless.
    args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update',
      '--disable-sync', '--no-first-run'],
  });
  page = await newPage();
});

after(async () => { await browser?.close(); });

test('sign in with the bootstrap one-time password, forced to choose a password', async () => {
  const answer = await page.goto('/');
  assert.equal(answer.headers()['content-security-policy']?.includes("script-src 'self'"), true);
  await page.waitForURL(/\/sign-in\?next=/);
  await page.fill('input[name="email"]', ADMIN);
  await page.fill('input[name="password"]', 'not-the-password');
  await page.click('button[type="submit"]');
  await page.locator('.form-error:visible').waitFor();
  await shot(page, '01-sign-in');
  await page.fill('input[name="password"]', OTP);
  await page.click('button[type="submit"]');
  await page.waitForURL(/\/password/);
  await page.fill('input[name="current_password"]', OTP);
  await page.fill('input[name="new_password"]', PASSWORD);
  await page.fill('input[name="repeat"]', 'something else entirely');
  await page.click('button[type="submit"]');
  await page.locator('.field-error', { hasText: 'does not match' }).waitFor();
  await shot(page, '02-choose-password');
  await page.fill('input[name="repeat"]', PASSWORD);
  await page.click('button[type="submit"]');
  await page.waitForURL(/\/dashboard/);
  await page.locator('header .email', { hasText: ADMIN }).waitFor();
});

test('add two zones (and see the API refuse a duplicate inline)', async () => {
  await page.goto('/zones');
  await page.locator('.empty', { hasText: 'No zones yet' }).waitFor();
  for (const zone of ['local-a', 'local-b']) {
    const form = page.locator('#add-zone form');
    await form.locator('input[name="name"]').fill(zone);
    await submitIn(form);
    await page.locator(`tr[data-zone="${zone}"]`).waitFor();
  }
  const form = page.locator('#add-zone form');
  await form.locator('input[name="name"]').fill('local-a');
  await submitIn(form);
  await form.locator('.form-error:visible').waitFor();
  await shot(page, '03-zones');
});

test('create a group from examples/hello-repo', async () => {
  await page.goto('/groups');
  const form = page.locator('#create-group form');
  await form.locator('input[name="name"]').fill('hello');
  await form.locator('input[name="repo_url"]').fill(REPO);
  await form.locator('input[name="default_ref"]').fill('main');
  await submitIn(form);
  await page.waitForURL(/\/groups\/hello$/);
  await page.locator('h1', { hasText: 'hello' }).waitFor();
});

test('SSO: the sign-in page offers the provider; alice signs in there and lands where she was going', async () => {
  const sso = await newPage(undefined, 'sso');
  await sso.goto('/groups');
  await sso.waitForURL(/\/sign-in\?next=/);
  const button = sso.locator('a, button', { hasText: `Sign in with ${SSO_NAME}` });
  await button.waitFor();
  await sso.locator('input[name="password"]').waitFor(); // passwords stay on beside it
  await shot(sso, '01b-sign-in-with-sso');
  await button.click();
  // The provider's own pages (another site): its login (any password) and consent.
  await sso.waitForURL((url) => url.origin === new URL(SSO_ISSUER).origin);
  await sso.fill('input[name="login"]', 'alice');
  await sso.fill('input[name="password"]', 'any');
  await sso.click('button[type="submit"]');
  await sso.locator('button[type="submit"]', { hasText: 'Continue' }).click();
  await sso.waitForURL((url) => url.href === `${BASE}/groups`);
  await sso.locator('header .email', { hasText: 'alice@example.com' }).waitFor();
  // Her membership of hello comes from her provider group `payments` (sso.memberships).
  await sso.locator('tr[data-group="hello"]').waitFor();
  await shot(sso, '04b-signed-in-with-sso');
  await sso.context().close();
});

test('add an environment on both zones', async () => {
  const form = page.locator('#add-environment form');
  await form.locator('input[name="name"]').fill('prod');
  await form.locator('input[name="zones"][value="local-a"]').check();
  await form.locator('input[name="zones"][value="local-b"]').check();
  await submitIn(form);
  await page.locator('article.env[data-env="prod"]').waitFor();
});

test('Deploy (canary): the job log reaches success live', async () => {
  await page.locator('article.env[data-env="prod"] form.deploy button[type="submit"]').click();
  await page.waitForURL(/\/groups\/hello\/jobs\//);
  await page.locator('[data-job-live]:visible').waitFor();
  await page.evaluate(() => { window.sameDocument = true; });
  await page.locator('#job-log li.step[data-status="running"]').first().waitFor({ timeout: within(120) });
  await shot(page, '05-job-log-running');
  await page.locator('[data-job-state] [data-status="succeeded"]').waitFor({ timeout: within(300) });
  assert.equal(await page.evaluate(() => window.sameDocument), true, 'the log followed the job without a reload');
  for (const zone of ['local-a', 'local-b']) {
    const steps = page.locator(`#job-log section.zone-run[data-zone="${zone}"] li.step[data-status="succeeded"]`);
    assert.equal(await steps.count(), 6, `six succeeded steps in ${zone}`);
  }
  assert.ok((await page.locator('#job-log pre.log').count()) > 0, 'log lines shown');
  await shot(page, '06-job-log-succeeded');
});

test('a reworded tool waits for review; approve it from the side-by-side diff', async () => {
  await page.goto('/groups/hello#environments');
  const env = page.locator('article.env[data-env="prod"]');
  await env.locator('[data-surface-changes="review"]').waitFor();
  const form = env.locator('form.deploy');
  await form.locator('input[name="git_ref"]').fill('reworded');
  await submitIn(form);
  await page.waitForURL(/\/groups\/hello\/jobs\//);
  // The page shows the review once it opens (the live log reloads into it).
  const review = page.locator('section.review[data-review="pending"]');
  await review.waitFor({ timeout: within(300) });
  const change = review.locator('.surface-change[data-kind="tool"][data-name="notes.add"][data-change="changed"]').first();
  await change.waitFor();
  const row = change.locator('tr[data-path="description"]');
  assert.equal((await row.locator('td.before').textContent()).trim(), 'Add two integers.');
  assert.equal((await row.locator('td.after').textContent()).trim(), REWORDED);
  await shot(page, '06b-surface-review');
  const narrow = await newPage({ width: 390, height: 844 }, 'narrow');
  await narrow.context().addCookies(await sessionCookies(page));
  await narrow.goto(page.url());
  await narrow.locator('section.review .surface-change').first().waitFor();
  const overflow = await narrow.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  assert.ok(overflow <= 1, `the review fits 390 px (overflow ${overflow}px)`);
  await shot(narrow, '06c-surface-review-narrow');
  await narrow.context().close();
  const approve = review.locator('form[data-api$="/approve"]');
  await approve.locator('input[name="reason"]').fill('checked with the notes owners');
  await submitIn(approve);
  await confirm(page);
  await page.locator('section.review[data-review="approved"]').waitFor({ timeout: within(60) });
  assert.match(await page.locator('[data-review-decided]').textContent(), /checked with the notes owners/);
  await page.locator('[data-job-state] [data-status="succeeded"]').waitFor({ timeout: within(300) });
  await shot(page, '06d-surface-review-approved');
  await page.goto('/audit?action=deploy.review');
  await page.locator('#audit tr', { hasText: 'deploy.review.approve' }).first().waitFor();
});

test('packages per zone, with tools and their schemas', async () => {
  await page.goto('/groups/hello#packages');
  for (const zone of ['local-a', 'local-b']) {
    const tool = page.locator(`section.zone-packages[data-zone="${zone}"] article[data-package="notes"] tr[data-tool="notes.add"]`);
    await tool.waitFor();
  }
  const row = page.locator('section.zone-packages[data-zone="local-a"] tr[data-tool="notes.add"]');
  await row.locator('summary', { hasText: 'input' }).click();
  await row.locator('pre.schema', { hasText: '"a"' }).waitFor();
  await shot(page, '07-group-page');
});

test('an MCP key: its plaintext is shown once', async () => {
  await page.goto('/groups/hello#keys');
  await page.locator('#create-key > summary').click();
  const form = page.locator('#create-key form');
  await form.locator('input[name="name"]').fill('browser');
  await submitIn(form);
  const plaintext = form.locator('[data-field="plaintext"]');
  await plaintext.waitFor();
  key = (await plaintext.textContent()).trim();
  assert.match(key, /^rk_/);
  await shot(page, '08-key-created');
  await form.locator('[data-reload]').click();
  await page.locator('tr[data-key="browser"]').waitFor();
  assert.equal((await page.content()).includes(key), false, 'the plaintext is not shown again');
  assert.ok((await page.locator('tr[data-key="browser"]').textContent()).includes(key.slice(0, 11)));
  await eventually('notes.add listed through the edge', 90, async () => (await mcpTools('prod')).includes('notes.add'));
});

test('block a tool: it vanishes for the official MCP client', async () => {
  await page.goto('/groups/hello#packages');
  const row = page.locator('section.zone-packages[data-zone="local-a"] tr[data-tool="notes.add"]');
  await row.locator('button', { hasText: 'Block in prod' }).click();
  await confirm(page);
  await page.locator('section.zone-packages[data-zone="local-a"] tr[data-tool="notes.add"] .badge', { hasText: 'blocked in prod' }).waitFor();
  await eventually('notes.add gone from tools/list', 60, async () => {
    const tools = await mcpTools('prod');
    return !tools.includes('notes.add') && tools.includes('notes.divide') ? true : JSON.stringify(tools);
  });
});

test('MCP sign-in: an environment takes OAuth tokens too, with a rule; a bad issuer is refused inline', async () => {
  await page.goto('/groups/hello#environments');
  const env = page.locator('article.env[data-env="prod"]');
  await env.locator('details.edit > summary', { hasText: 'MCP sign-in' }).click();
  const form = env.locator('form[data-method="PUT"]');
  await form.locator('select[name="mode"]').selectOption('both');
  await form.locator('textarea[name="issuers"]').fill('http://idp.example.com');
  await form.locator('textarea[name="scopes"]').fill('mcp:tools');
  await submitIn(form);
  const refused = form.locator('.form-error:visible');
  await refused.waitFor();
  assert.match(await refused.textContent(), /https:\/\//, 'the refusal says what an issuer must be');
  await form.locator('textarea[name="issuers"]').fill('https://idp.example.com');
  await form.locator('textarea[name="rules"]').fill('[{"keys": ["browser"], "allow": ["*"]}]');
  await submitIn(form);
  const mode = page.locator('article.env[data-env="prod"] .auth-mode[data-mode="both"]');
  await mode.waitFor();
  const facts = await page.locator('article.env[data-env="prod"] dl.facts').textContent();
  assert.match(facts, /MCP keys or OAuth 2\.1 tokens/);
  assert.match(facts, /oauth-protected-resource\/mcp\/hello\/prod/, 'where clients read the metadata');
  assert.match(facts, /1 rule/);
  await shot(page, '08b-mcp-sign-in');
  // The key's rule allows everything: the console's key keeps working through the edge.
  await eventually('the key still lists tools', 60, async () => (await mcpTools('prod')).includes('notes.divide'));
});

test('Zone actions: IP rules (an invalid one refused inline), worker count, rebalance', async () => {
  await page.goto('/groups/hello#zones');
  const card = page.locator('article.zone-card[data-zone="local-a"]');
  const rules = card.locator('form', { has: page.locator('textarea[name="ip_rules"]') });
  await rules.locator('textarea').fill('10.0.0.1/8');
  await submitIn(rules);
  await confirm(page);
  await rules.locator('.form-error:visible').waitFor();
  await rules.locator('textarea').fill('127.0.0.0/8');
  await submitIn(rules);
  await confirm(page);
  await page.locator('article.zone-card[data-zone="local-a"] dd code', { hasText: '127.0.0.0/8' }).waitFor();
  const count = page.locator('article.zone-card[data-zone="local-a"] form', { has: page.locator('input[name="count"]') });
  await count.locator('input[name="count"]').fill('2');
  await submitIn(count);
  await page.locator('article.zone-card[data-zone="local-a"] dd', { hasText: '2 to 4' }).waitFor();
  const rebalance = page.locator('article.zone-card[data-zone="local-b"] form', { hasText: 'Rebalance' });
  await submitIn(rebalance);
  const result = rebalance.locator('[data-result]');
  await result.waitFor();
  assert.match(await result.textContent(), /applied: (true|false)/);
  await shot(page, '09-zone-actions');
  await eventually('tools still listed from 127.0.0.1', 90, async () => (await mcpTools('prod')).includes('notes.divide'));
});

test('the dashboard shows a load cell per zone and group, updating live', async () => {
  await page.goto('/dashboard');
  for (const zone of ['local-a', 'local-b']) {
    const cell = page.locator(`td.cell[data-group="hello"][data-zone="${zone}"]`);
    await cell.waitFor();
    assert.match(await cell.getAttribute('data-state'), /^(low|even|high|down)$/);
    assert.match(await cell.textContent(), /in flight/);
  }
  await page.locator('#cells[data-updated]').waitFor({ timeout: within(15) });
  await page.locator('td.cell[data-group="hello"][data-zone="local-b"][data-state]').waitFor();
  await shot(page, '10-dashboard');
});

test('Config: flip the auto-rebalance scheduler on; its runs are audited as scheduler', async () => {
  await page.goto('/config');
  const form = page.locator('#scheduler form');
  await form.locator('input[name="auto_rebalance_enabled"]').check();
  await form.locator('input[name="auto_rebalance_interval_seconds"]').fill('10');
  await submitIn(form);
  await page.locator('#scheduler .badge', { hasText: 'on' }).waitFor();
  await shot(page, '11-config');
  await eventually('a scheduler entry in the audit log', 90, async () => {
    await page.goto('/audit?actor=scheduler&action=rebalancer.scheduled_run');
    return (await page.locator('tr[data-actor="scheduler"]').count()) > 0;
  });
  await shot(page, '12-audit-scheduler');
  await page.goto('/config');
  await page.locator('#scheduler input[name="auto_rebalance_enabled"]').uncheck();
  await submitIn(page.locator('#scheduler form'));
  await page.locator('#scheduler .badge', { hasText: 'off' }).waitFor();
});

test('Config: a super admin allows project-wide GCP bindings, then takes it back', async () => {
  await page.goto('/config');
  const form = page.locator('#bounds form');
  assert.match(await form.locator('textarea[name="gcp.denied"]').inputValue(), /roles\/owner/);
  await form.locator('input[name="gcp.unscoped"]').check();
  await submitIn(form);
  await page.locator('#bounds p', { hasText: 'Version 1' }).waitFor();
  assert.equal(await page.locator('#bounds input[name="gcp.unscoped"]').isChecked(), true);
  await shot(page, '11b-config-bounds');
  await page.locator('#bounds input[name="gcp.unscoped"]').uncheck();
  await submitIn(page.locator('#bounds form'));
  await page.locator('#bounds p', { hasText: 'Version 2' }).waitFor();
  assert.equal(await page.locator('#bounds input[name="gcp.unscoped"]').isChecked(), false);
});

test('a failed deploy shows its error in the Environments row', async () => {
  await page.goto('/groups/hello#environments');
  await page.locator('#add-environment > summary').click();
  const form = page.locator('#add-environment form');
  await form.locator('input[name="name"]').fill('staging');
  await form.locator('input[name="git_ref"]').fill('broken');
  await form.locator('input[name="zones"][value="local-b"]').check();
  await submitIn(form);
  await page.locator('article.env[data-env="staging"] form.deploy button[type="submit"]').click();
  await page.waitForURL(/\/jobs\//);
  await page.locator('[data-job-state] [data-status="failed"]').waitFor({ timeout: within(300) });
  await page.locator('[data-job-error]:visible').waitFor();
  await shot(page, '13-job-failed');
  await page.goto('/environments');
  const row = page.locator('tr[data-env="hello/staging"]');
  await row.locator('td[data-outcome="failed"]').waitFor();
  assert.ok((await row.locator('.error-text').textContent()).length > 0, 'the error is in the row');
  await page.locator('tr[data-env="hello/prod"] td[data-outcome="succeeded"]').waitFor();
  await shot(page, '14-environments');
});

test('a member of another group sees nothing of hello', async () => {
  await page.goto('/users');
  const add = page.locator('#add-user form');
  await add.locator('input[name="email"]').fill(MEMBER);
  await submitIn(add);
  await add.locator('[data-result]').waitFor();
  const otp = (await add.locator('[data-field="one_time_password"]').textContent()).trim();
  assert.ok(otp.length >= 12);
  await shot(page, '15-users');
  await page.goto('/groups');
  const create = page.locator('#create-group form');
  await create.locator('input[name="name"]').fill('other');
  await create.locator('input[name="repo_url"]').fill(REPO);
  await submitIn(create);
  await page.waitForURL(/\/groups\/other$/);
  const member = page.locator('#add-member');
  await member.locator('input[name="email"]').fill(MEMBER);
  await submitIn(member);
  await page.locator(`tr[data-member="${MEMBER}"]`).waitFor();

  const mo = await newPage(undefined, 'member');
  await mo.goto('/sign-in');
  await mo.fill('input[name="email"]', MEMBER);
  await mo.fill('input[name="password"]', otp);
  await mo.click('button[type="submit"]');
  await mo.waitForURL(/\/password/);
  await mo.fill('input[name="current_password"]', otp);
  await mo.fill('input[name="new_password"]', MEMBER_PASSWORD);
  await mo.fill('input[name="repeat"]', MEMBER_PASSWORD);
  await mo.click('button[type="submit"]');
  await mo.waitForURL(/\/dashboard/);
  assert.equal(await mo.locator('header nav a', { hasText: 'Config' }).count(), 0, 'no Config for a member');
  assert.equal(await mo.locator('td.cell[data-group="hello"]').count(), 0, 'no hello cells');
  await mo.goto('/groups');
  await mo.locator('tr[data-group="other"]').waitFor();
  assert.equal(await mo.locator('tr[data-group="hello"]').count(), 0, 'hello not listed');
  assert.equal(await mo.locator('#create-group').count(), 0, 'no Create group for a member');
  const hello = await mo.goto('/groups/hello');
  assert.equal(hello.status(), 404);
  await mo.locator('h1', { hasText: 'Not found' }).waitFor();
  assert.equal((await mo.content()).includes('notes.add'), false);
  const job = await mo.goto('/groups/hello/jobs/anything');
  assert.equal(job.status(), 404);
  await mo.goto('/environments');
  assert.equal(await mo.locator('tr[data-env^="hello/"]').count(), 0, 'no hello environments');
  await mo.goto('/zones');
  await mo.locator('tr[data-zone="local-a"]').waitFor();
  assert.equal(await mo.locator('li[data-group="hello"]').count(), 0, 'no hello worker counts');
  assert.equal(await mo.locator('#add-zone').count(), 0, 'no Add zone for a member');
  await mo.goto('/audit');
  assert.equal(await mo.locator('select[name="group"] option[value="hello"]').count(), 0);
  const audit = await mo.goto('/audit?group=hello');
  assert.equal(audit.status(), 200);
  assert.equal(await mo.locator('#audit tr[data-actor]').count(), 0, 'no hello audit entries');
  const config = await mo.goto('/config');
  assert.equal(config.status(), 403);
  await mo.goto('/groups/other');
  assert.equal(await mo.locator('#add-environment').count(), 0, 'a member adds no environments');
  assert.equal(await mo.locator('#create-key').count(), 0, 'a member creates no keys');
  await shot(mo, '16-member-of-other');
  const api = await mo.request.get('/api/groups/hello/keys');
  assert.equal(api.status(), 404);
  await mo.context().close();
});

test('narrow screen: pages fit the width', async () => {
  const narrow = await newPage({ width: 390, height: 844 }, 'narrow');
  await narrow.context().addCookies(await sessionCookies(page));
  for (const [path, name] of [['/dashboard', '17-narrow-dashboard'], ['/groups/hello', '18-narrow-group']]) {
    await narrow.goto(path);
    await narrow.locator('main h1').waitFor();
    const overflow = await narrow.evaluate(() => {
      const wide = Array.from(document.querySelectorAll('main *'))
        .filter((e) => e.getBoundingClientRect().right > window.innerWidth + 1 && !e.closest('.table-wrap, pre'))
        .slice(0, 5).map((e) => `${e.tagName.toLowerCase()}.${e.className}`);
      return { by: document.documentElement.scrollWidth - window.innerWidth, wide };
    });
    assert.ok(overflow.by <= 1, `${path} fits 390px (overflows by ${overflow.by}px: ${overflow.wide.join(', ')})`);
    await shot(narrow, name);
  }
  await narrow.context().close();
});

test('Calls and Usage: the group\'s calls and its charts, at 1280 and 390 px', async () => {
  const sections = async (p, path) => {
    await p.goto(path);
    await p.locator('main h1').waitFor();
    assert.equal(await p.locator('nav.tabs a[aria-current="page"]').count(), 1, `${path} marks its tab`);
    if (path.includes('/calls')) {
      await p.locator('section#calls').waitFor();
      assert.ok(await p.locator('#calls-table tbody tr').count() >= 1, `${path}: the calls' rows`);
    } else {
      await p.locator('section#usage-summary').waitFor();
      assert.equal(await p.locator('figure.chart svg').count(), 3, `${path}: three charts`);
    }
  };
  // Calls of each kind through the edge; the node records each and auth stores them.
  const outcomes = await mcpTools('prod', '--calls');
  assert.deepEqual(outcomes.slice(0, 4), ['ok', 'ok', 'ok', 'tool_error']);
  await eventually('the calls on the Calls page', 60, async () => {
    await page.goto('/groups/hello/calls');
    const rows = await page.locator('#calls-table tbody tr').count();
    return rows >= 4 || `${rows} rows`;
  });
  await page.goto('/groups/hello');
  await page.locator('nav.tabs a', { hasText: 'Calls' }).click();
  await page.waitForURL(/\/groups\/hello\/calls$/);
  await sections(page, '/groups/hello/calls');
  await shot(page, '21-calls');
  await page.locator('form.filters select[name="outcome"]').selectOption('ok');
  await page.locator('form.filters button[type="submit"]').click();
  await page.waitForURL(/outcome=ok/);
  assert.equal(await page.locator('#calls-table .badge:not([data-status="ok"])').count(), 0, 'only ok calls');
  assert.equal(await page.locator('select[name="outcome"]').inputValue(), 'ok', 'the filter stays selected');
  // The group's usage, not prod's: prod shares local-b with staging, and a shared placement's
  // nodes name the environment deployed there last (docs/architecture.md, call records).
  await sections(page, '/groups/hello/usage?window=day');
  assert.equal(await page.locator('select[name="window"]').inputValue(), 'day');
  await shot(page, '22-usage');
  const narrow = await newPage({ width: 390, height: 844 }, 'narrow');
  await narrow.context().addCookies(await sessionCookies(page));
  for (const [path, name] of [['/groups/hello/calls', '23-narrow-calls'], ['/groups/hello/usage', '24-narrow-usage']]) {
    await sections(narrow, path);
    const overflow = await narrow.evaluate(() => {
      const wide = Array.from(document.querySelectorAll('main *'))
        .filter((e) => e.getBoundingClientRect().right > window.innerWidth + 1 && !e.closest('.table-wrap, pre'))
        .slice(0, 5).map((e) => `${e.tagName.toLowerCase()}.${e.className}`);
      return { by: document.documentElement.scrollWidth - window.innerWidth, wide };
    });
    assert.ok(overflow.by <= 1, `${path} fits 390px (overflows by ${overflow.by}px: ${overflow.wide.join(', ')})`);
    await shot(narrow, name);
  }
  await narrow.context().close();
});

test('delete the group and watch the teardown finish', async () => {
  await page.goto('/groups/hello#settings');
  await page.locator('.danger-zone button', { hasText: 'Delete group' }).click();
  await confirm(page, 'hello');
  await page.waitForURL(/\/groups\/hello\/deletion$/);
  await page.locator('#teardown li.step').first().waitFor();
  await shot(page, '19-teardown-running');
  await page.locator('[data-deletion="done"]').waitFor({ timeout: within(180) });
  await shot(page, '20-teardown-done');
  await page.goto('/groups');
  await page.locator('tr[data-group="other"]').waitFor();
  assert.equal(await page.locator('tr[data-group="hello"]').count(), 0);
});

test('no script errors or CSP refusals on any page', () => {
  assert.deepEqual(problems, []);
});
