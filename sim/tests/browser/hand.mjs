// The hand in a real Chromium, against a running `twice-sim web` (`.ci/browser-test` starts
// it): a wire card with nothing to hit is not a live button — it is disabled and says why in
// this run's terms, a number key on it says so too and leaves nothing half-chosen — and once
// its message travels the same button plays at once and hits it. At 1280×720 and 390×844.
//
//   TWICE_URL=http://127.0.0.1:PORT/  [TWICE_SCREENSHOTS=folder]  [CHROMIUM=/usr/bin/chromium]  node hand.mjs
import { chromium } from 'playwright-core';
import { browserArgs, problems, check, shot, finish, phaseOf, stepTo } from './harness.mjs';

const url = process.env.TWICE_URL;
if (!url) {
  console.error('set TWICE_URL (as `twice-sim web` prints it)');
  process.exit(2);
}
/** How long one step of the test may take before it fails. */
const STEP_TIMEOUT_MS = 15_000;
/** The phase level 01's credit's answer travels at (its win tape's). */
const CREDIT_ANSWER_PHASE = 12;
/** The phase level 01's first request, the balance lookup, is on the wire. */
const LOOKUP_PHASE = 4;

const browser = await chromium.launch({ executablePath: process.env.CHROMIUM || '/usr/bin/chromium', args: browserArgs });

/** One participant at one screen size, through level 01's hand. */
async function walk(name, viewport) {
  const size = `${viewport.width}×${viewport.height}`;
  const context = await browser.newContext({ viewport });
  context.setDefaultTimeout(STEP_TIMEOUT_MS);
  const page = await context.newPage();
  page.on('pageerror', (error) => problems.push(`${name}: script error: ${error.message}`));
  await page.goto(url);
  await page.fill('#name', name);
  await page.click('#join');
  await page.click('[data-level="01-naive-retry"]');
  await page.click('#open-level');
  await page.waitForSelector('#timeline');
  check((await phaseOf(page)) === 0, `${size}: level 01 opens at phase 0`);

  // Nothing on the wire: the wire cards are not live buttons, and say why in this run's terms.
  const loseAnswer = '[data-card="LoseResponse"]';
  check(await page.isDisabled(loseAnswer), `${size}: Lose the response is disabled with nothing on the wire`);
  check(await page.isDisabled('[data-card="LoseRequest"]'), `${size}: so is Lose the request`);
  const reason = await page.textContent('[data-fid="card-refusal-LoseResponse"]');
  check(/nothing is on the wire now: w1 is /.test(reason), `${size}: it says why, from this run: "${reason.trim()}"`);
  await page.locator('[data-fid="card-refusal-LoseResponse"]').scrollIntoViewIfNeeded();
  check(await page.isVisible('[data-fid="card-refusal-LoseResponse"]'), `${size}: the reason is on screen`);
  const described = await page.getAttribute(loseAnswer, 'aria-describedby');
  check(described === 'card-reason-LoseResponse', `${size}: the button is described by its reason`);
  await shot(page, `web-hand-refused-${viewport.width}`);

  // Its number key says the same, and arms nothing: no target list, no "Target" button.
  await page.locator('body').press('2');
  await page.waitForFunction(() => document.querySelector('#notice').textContent.includes('Lose the response:'));
  check((await page.textContent('#notice')).includes('nothing is on the wire now'), `${size}: key 2 says why it cannot be played`);
  check((await page.locator('.targets').count()) === 0, `${size}: nothing is left half-chosen`);
  check(!(await page.textContent('.hand')).includes('Target ↓'), `${size}: no card waits for a target`);

  // The balance lookup travels: Lose the request can hit it; Lose the response still cannot,
  // and says the request is on its way.
  await stepTo(page, LOOKUP_PHASE);
  check(!(await page.isDisabled('[data-card="LoseRequest"]')), `${size}: at phase ${LOOKUP_PHASE} Lose the request has the lookup to hit`);
  check(await page.isDisabled(loseAnswer), `${size}: Lose the response still has no answer to hit`);
  // The lookup is drawn as a lookup: it moves no money, so no "$0.00 to acct_ada".
  const wire = await page.textContent('.wire');
  check(wire.includes("look up acct_ada's balance") && !wire.includes('$0.00'), `${size}: the lookup on the wire is drawn as one: "${wire.trim()}"`);
  const waiting = await page.textContent('[data-fid="card-refusal-LoseResponse"]');
  check(waiting.includes('on its way to billing'), `${size}: and says the request is on its way: "${waiting.trim()}"`);

  // The credit's answer travels: the same button is live, plays at once, and hits it.
  await stepTo(page, CREDIT_ANSWER_PHASE);
  check(!(await page.isDisabled(loseAnswer)), `${size}: at phase ${CREDIT_ANSWER_PHASE} Lose the response is live`);
  check((await page.textContent('[data-fid="card-refusal-LoseResponse"]').catch(() => '')) === '',
    `${size}: and no reason is shown`);
  await shot(page, `web-hand-live-${viewport.width}`);
  await page.click(loseAnswer);
  await page.waitForSelector('.message.response .flags');
  check((await page.textContent('.wire')).includes('will be lost'), `${size}: one click hit the answer on the wire`);
  check((await page.textContent('.hand')).includes('Lose the response before phase 12'), `${size}: the move is played at phase 12`);
  await context.close();
}

try {
  await walk('Hand', { width: 1280, height: 720 });
  await walk('Thumb', { width: 390, height: 844 });
} catch (error) {
  problems.push(error.message);
} finally {
  await browser.close();
}
finish('the hand');
