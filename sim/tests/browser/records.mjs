// The world beyond money on the browser's stage, in a real Chromium: level 42's owner history
// (each change with who made it, Penny's retried write that undid support's change marked),
// level 40's outbox (the second email marked as the same email again) and level 41's deleted
// record (the second delete's "not found" marked), each at 1280x720 without overflowing, and at
// 390x844 still inside the screen's width. Starts its own server (`.ci/browser-test` gives
// the binary):
//
//   TWICE_SIM=path/to/twice-sim  [TWICE_SCREENSHOTS=folder]  [CHROMIUM=…]  node records.mjs
import { chromium } from 'playwright-core';
import { startServer, stopServer, browserArgs, problems, check, shot, finish, stepTo } from './harness.mjs';

const binary = process.env.TWICE_SIM;
if (!binary) {
  console.error('set TWICE_SIM (the twice-sim binary)');
  process.exit(2);
}
const STEP_TIMEOUT_MS = 15_000;
/** The guards chapter 12's levels leave on: all but the write retry rule, the hook and the key. */
const LEVEL_GUARDS = ['tool_contract', 'pause_on_indeterminate', 'ambiguity_policy', 'ledger', 'atomic_reservation',
  'checkpoint_version', 'key_per_call', 'no_lease_expiry', 'no_reflex_compensation', 'refusal_is_failed',
  'key_retention', 'lookup_settle', 'dead_letter'].join(',');

/** Joins as `name` straight into `level`, a sandbox with the level's own guards. */
async function openLevel(browser, url, name, level, viewport) {
  const context = await browser.newContext({ viewport });
  context.setDefaultTimeout(STEP_TIMEOUT_MS);
  const page = await context.newPage();
  page.on('pageerror', (error) => problems.push(`${name}: script error: ${error.message}`));
  await page.goto(`${url}?level=${level}&guards=${LEVEL_GUARDS}`);
  await page.fill('#name', name);
  await page.click('#join');
  await page.waitForSelector('#timeline');
  return page;
}

/** Plays the wire card `card` at `phase` (the level's own hint), then steps to `until`: the
 * level still open, so the stage (not the debrief) is on the screen. */
async function heist(page, phase, card, until) {
  await stepTo(page, phase);
  await page.click(`[data-card="${card}"]`);
  await page.waitForSelector('.message .flags');
  await stepTo(page, until);
}

const rows = (page, id) => page.$$eval(`#records-${id} tr`, (trs) => trs.map((tr) => ({
  text: tr.textContent, bad: tr.classList.contains('tone-bad') })));
const overflow = (page) => page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);

const browser = await chromium.launch({ executablePath: process.env.CHROMIUM || '/usr/bin/chromium', args: browserArgs });
let server;
try {
  server = await startServer(binary, ['--room', ':memory:']);
  const url = server.participants;

  const owners = await openLevel(browser, url, 'Grace', '42-lost-update', { width: 1280, height: 720 });
  await heist(owners, 12, 'LoseResponse', 19);
  const history = await rows(owners, 'owners');
  check(history.length === 3, `the owner history has Penny's write, support's change and the retry (${history.length} rows)`);
  check(history[1].text.includes('support') && !history[1].bad, 'support\'s change is listed by who made it');
  check(history[2].bad && history[2].text.includes('undoes support\'s change to Hopper Ltd'),
    `the retry that put Grace back is marked as undoing support's change: ${history[2].text}`);
  check(await overflow(owners) <= 0, 'the stage at 1280x720 does not overflow');
  await owners.$eval('#records-owners', (element) => element.scrollIntoView({ block: 'center' }));
  await shot(owners, 'web-records-owners');

  const outbox = await openLevel(browser, url, 'Ada', '40-second-email', { width: 1280, height: 720 });
  await heist(outbox, 12, 'LoseResponse', 18);
  const emails = await rows(outbox, 'outbox');
  check(emails.length === 2 && !emails[0].bad && emails[1].bad && emails[1].text.includes('the same email again'),
    `the outbox lists both emails, the second marked: ${emails.map((row) => row.text).join(' | ')}`);
  await outbox.$eval('#records-outbox', (element) => element.scrollIntoView({ block: 'center' }));
  await shot(outbox, 'web-records-outbox');

  const deletes = await openLevel(browser, url, 'Linus', '41-already-gone', { width: 1280, height: 720 });
  await heist(deletes, 12, 'LoseResponse', 25);
  const gone = await rows(deletes, 'deletions');
  check(gone.length === 3 && !gone[0].bad && gone[0].text.includes('deleted') && gone[1].text.includes('retry of r1:c2')
    && gone[2].bad && gone[2].text.includes('Penny acted again: new call r1:c3'), `the deletes list the one that deleted and Penny's new call that met "not found": ${gone.map((row) => row.text).join(' | ')}`);
  await deletes.$eval('#records-deletions', (element) => element.scrollIntoView({ block: 'center' }));
  await shot(deletes, 'web-records-deletions');

  const phone = await openLevel(browser, url, 'Kristen', '42-lost-update', { width: 390, height: 844 });
  await heist(phone, 12, 'LoseResponse', 19);
  check(await overflow(phone) <= 0, 'at 390x844 the owner history stays inside the screen');
  finish('records');
} finally {
  await browser.close();
  if (server) await stopServer(server);
}
