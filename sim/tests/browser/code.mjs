// The code panel in a real Chromium, against a running `twice-sim web` (`.ci/browser-test`
// starts it): level 01's loop with one cursor that moves to the next line as the level steps,
// level 11's two workers with two cursors told apart by name (not colour alone), level 09's
// run paused for a person (its cursor on the pause line), a crash aimed
// at a line that lands there and shows in the tape, the debrief's line that decided and its fix.
//
//   TWICE_URL=http://127.0.0.1:PORT/  [TWICE_SCREENSHOTS=folder]  [CHROMIUM=/usr/bin/chromium]  node code.mjs
import { chromium } from 'playwright-core';
import { mkdirSync, readFileSync } from 'node:fs';
import { join as joinPath } from 'node:path';

const url = process.env.TWICE_URL;
const screenshots = process.env.TWICE_SCREENSHOTS || '';
if (!url) {
  console.error('set TWICE_URL (as `twice-sim web` prints it)');
  process.exit(2);
}
/** How long one step of the test may take before it fails. */
const STEP_TIMEOUT_MS = 15_000;

const problems = [];
function check(condition, message) {
  if (!condition) throw new Error(`check failed: ${message}`);
  console.log(`ok   ${message}`);
}

async function shot(page, name) {
  if (!screenshots) return;
  mkdirSync(screenshots, { recursive: true });
  await page.evaluate(() => { const toast = document.getElementById('notice'); if (toast) toast.textContent = ''; });
  const panel = await page.$('#code');
  await (panel || page).screenshot({ path: joinPath(screenshots, `${name}.png`) });
  console.log(`shot ${name}.png`);
}

async function newPage(browser, label, viewport) {
  const context = await browser.newContext({ viewport, acceptDownloads: true });
  context.setDefaultTimeout(STEP_TIMEOUT_MS);
  const page = await context.newPage();
  page.on('pageerror', (error) => problems.push(`${label}: script error: ${error.message}`));
  page.on('console', (message) => {
    if (message.type() === 'error' && !/status of (401|403|404|409|422)/.test(message.text())) {
      problems.push(`${label}: console: ${message.text()}`);
    }
  });
  return page;
}

/** Joins as `name` straight into `level` (a sandbox play with `guards`). */
async function openLevel(page, name, level, guards) {
  await page.goto(`${url}?level=${level}&guards=${guards}`);
  await page.fill('#name', name);
  await page.click('#join');
  await page.waitForSelector('#code .code-line');
}

const phaseOf = async (page) => Number((await page.textContent('#phase')).match(/phase (\d+)/)[1]);

/** The line number each worker's cursor is on: {w1: 7, ...}. */
const cursorLines = (page) => page.evaluate(() => Object.fromEntries(
  [...document.querySelectorAll('#code .code-line .cursor')].map((cursor) => [
    `w${cursor.dataset.worker}`,
    Number(cursor.closest('.code-line').dataset.fid.replace('code-line-', '')),
  ])));

async function step(page) {
  const before = await phaseOf(page);
  await page.click('#step');
  await page.waitForFunction((phase) => document.querySelector('#phase').textContent.includes(`phase ${phase + 1} `), before);
}

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM || '/usr/bin/chromium',
  args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
    '--disable-background-networking', '--disable-component-update', '--disable-sync'],
});

try {
  // ----- level 01: the retry loop, one worker, its cursor moves with each step -----
  const page = await newPage(browser, 'Edsger', { width: 1280, height: 720 });
  // The level's own guards, as a sandbox play (so it opens whatever the progress).
  await openLevel(page, 'Edsger', '01-naive-retry', 'tool_contract,ledger,atomic_reservation,checkpoint_version,key_per_call,no_lease_expiry,no_reflex_compensation,refusal_is_failed,key_retention,lookup_settle,dead_letter');
  const code = await page.textContent('#code');
  check(code.includes('for attempt in range(3):'), 'level 01 shows the naive retry loop: for attempt in range(3)');
  check(code.includes('written for reading') && code.includes('sim/runtime/src/worker/'), 'the panel says what the code is and where the real Rust is');
  check(code.includes('@billing.tool(external(), reconcile=find_credit)'), "Penny's tool shows in the seed's decorator form");
  check(code.includes('billing ignores idempotency keys'), "billing's behaviour shows as a comment");
  const retryMark = await page.textContent('[data-fid="code-line-10"] .mark');
  check(retryMark === '✖', `the retry line is marked as the naive line (✖, not a colour alone): "${retryMark}"`);
  let previous = (await cursorLines(page)).w1;
  check(previous > 0, `w1's cursor is on a line before the first step: line ${previous}`);
  const visited = [previous];
  for (let count = 0; count < 6; count += 1) {
    await step(page);
    const now = (await cursorLines(page)).w1;
    if (now !== visited[visited.length - 1]) visited.push(now);
  }
  check(visited.length >= 4, `stepping moves w1's cursor from line to line: ${visited.join(' → ')}`);
  const lit = await page.$$('#code .code-line.lit');
  check(lit.length === 1, 'one live worker, one lit line');
  await shot(page, 'web-code-01');

  // ----- level 05: a crash aimed at a line lands there, and the tape records it -----
  const crash = await newPage(browser, 'Frances', { width: 1280, height: 720 });
  await openLevel(crash, 'Frances', '05-crash-replay', 'tool_contract,pause_on_indeterminate,atomic_reservation,checkpoint_version,key_per_call,no_lease_expiry,no_reflex_compensation,refusal_is_failed,key_retention,lookup_settle,dead_letter');
  const saveLine = await crash.evaluate(() => [...document.querySelectorAll('#code .code-line')]
    .find((line) => line.textContent.includes('save_checkpoint')).dataset.fid.replace('code-line-', ''));
  await crash.click(`[data-fid="code-line-${saveLine}"]`);
  await crash.click(`[data-fid="aim-w1-${saveLine}"]`);
  await crash.waitForSelector(`[data-fid="code-line-${saveLine}"] .aimed`);
  check((await crash.textContent(`[data-fid="code-line-${saveLine}"] .aimed`)).includes('w1'), `the aim shows on line ${saveLine}: ☠ w1`);
  await crash.click('#run');
  await crash.waitForSelector('#over');
  check((await crash.textContent('#over')).includes('paid twice'), 'killed at the save, the recovery replays the call: paid twice');
  const [download] = await Promise.all([crash.waitForEvent('download'), crash.click('#save-tape')]);
  const tape = readFileSync(await download.path(), 'utf8');
  check(tape.includes('CrashWorker(worker: Some(1), in_phase: Some("save checkpoint"))'),
    'the tape records the aimed crash as the move it is: CrashWorker(worker: Some(1), in_phase: Some("save checkpoint"))');
  await crash.click('#debrief');
  await crash.waitForSelector('#decided-code');
  const decided = await crash.textContent('#decided-code');
  check(decided.includes('ledger') && decided.includes('How the loop changes with the ledger on: lines marked - are this run\'s, lines marked + take their place.'),
    'the debrief shows the line that decided and the other run\'s fix, under a caption that is a whole sentence');
  check((await crash.$$('#decided-code .diff .code-line.removed')).length > 0 && (await crash.$$('#decided-code .diff .code-line.added')).length > 0,
    'the fix is a diff: this run\'s lines struck, the other run\'s added');
  if (screenshots) {
    mkdirSync(screenshots, { recursive: true });
    await (await crash.$('#decided-code')).screenshot({ path: joinPath(screenshots, 'web-code-debrief.png') });
  }

  // ----- level 11: two workers, two cursors, told apart by name -----
  const twins = await newPage(browser, 'Alan', { width: 1280, height: 720 });
  await openLevel(twins, 'Alan', '11-one-stands-down', 'all');
  const twinCard = await twins.$('[data-card="DuplicateWorker"]');
  // One run to duplicate: the card plays at once, no list of one target to confirm.
  await twinCard.click();
  check(await twins.$('[data-fid="target-DuplicateWorker-0"]') === null, 'a card with one target plays at once, without a target list');
  await twins.waitForSelector('#code .cursor[data-worker="2"]');
  // Step until the two workers part: the twin finds w1's call started and waits instead.
  for (let count = 0; count < 20; count += 1) {
    const lines = await cursorLines(twins);
    if (lines.w1 && lines.w2 && lines.w1 !== lines.w2) break;
    await step(twins);
  }
  const parted = await cursorLines(twins);
  check(parted.w1 && parted.w2 && parted.w1 !== parted.w2, `two workers, two cursors on two lines: w1 on ${parted.w1}, w2 on ${parted.w2}`);
  const cursors = await twins.$$eval('#code .cursor', (tags) => tags.map((tag) => tag.textContent));
  check(cursors.some((tag) => tag.includes('w1')) && cursors.some((tag) => tag.includes('w2')),
    `each cursor carries its worker's name and a glyph, not a colour alone: ${cursors.join(', ')}`);
  await shot(twins, 'web-code-11');

  // ----- level 09: the answer lost, the hook cannot tell, the run pauses for a person -----
  const pause = await newPage(browser, 'Sophie', { width: 1280, height: 720 });
  // Level 09 runs with every guard on: the sandbox with all of them is the level itself.
  await openLevel(pause, 'Sophie', '09-settle-it-yourself', 'all');
  const parkLine = await pause.evaluate(() => [...document.querySelectorAll('#code .code-line')]
    .find((line) => line.textContent.includes('pause_until_settled')).dataset.fid.replace('code-line-', ''));
  // The credit's answer travels at phase 5 (the level's own hint): lose it there.
  while ((await phaseOf(pause)) < 5) await step(pause);
  await pause.click('[data-card="LoseResponse"]');
  await pause.waitForSelector('.message.response .flags');
  for (let count = 0; count < 30 && (await cursorLines(pause)).w1 !== Number(parkLine); count += 1) {
    await step(pause);
  }
  check((await cursorLines(pause)).w1 === Number(parkLine),
    `the answer lost and not found by the hook, w1 waits on the pause line (${parkLine}) for a person`);
  await shot(pause, 'web-code-09');

  // ----- a phone: the panel stacks and keeps its lines -----
  const phone = await newPage(browser, 'Kristen', { width: 390, height: 844 });
  await openLevel(phone, 'Kristen', '01-naive-retry', 'all');
  const width = await phone.evaluate(() => document.querySelector('#code').getBoundingClientRect().width);
  check(width <= 390, `on a phone the code panel fits the screen's width (${Math.round(width)} px)`);

  check(problems.length === 0, `no script errors: ${problems.join('; ') || 'none'}`);
} finally {
  await browser.close();
}
