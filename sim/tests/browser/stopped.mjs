// A worker held by `PauseWorker` (SIGSTOP in a drill) is drawn stopped in the browser, as the
// window draws it: "⏹ stopped until N ms" beside w1 while it is held, and never "waiting for
// billing" or another state it is not running. The regression level paused-worker-lease,
// served from its own folder; the move is the one its tape plays (w1 stopped for 500 ms while
// it waits for billing's answer). Starts its own server (`.ci/browser-test` gives the binary):
//
//   TWICE_SIM=path/to/twice-sim  [TWICE_SCREENSHOTS=folder]  [CHROMIUM=…]  node stopped.mjs
import { chromium } from 'playwright-core';
import { startServer, stopServer, browserArgs, problems, check, shot, finish, stepTo } from './harness.mjs';

const binary = process.env.TWICE_SIM;
if (!binary) {
  console.error('set TWICE_SIM (the twice-sim binary)');
  process.exit(2);
}
const STEP_TIMEOUT_MS = 15_000;
/** The tape's move: w1 stopped for 500 ms once it is about to wait for billing's answer. */
const PAUSE = { PauseWorker: { worker: 1, ms: 500, in_phase: 'wait for answer' } };

/** The words drawn beside worker `id` on the stage. */
const workerWords = (page, id) => page.$$eval('.workers .worker', (rows, wanted) => {
  const row = rows.find((element) => element.querySelector('strong')?.textContent === wanted);
  return row ? row.textContent : '';
}, id);

const browser = await chromium.launch({ executablePath: process.env.CHROMIUM || '/usr/bin/chromium', args: browserArgs });
let server;
try {
  server = await startServer(binary, ['--levels', 'levels/regressions', '--room', ':memory:']);
  const context = await browser.newContext({ viewport: { width: 1280, height: 720 } });
  context.setDefaultTimeout(STEP_TIMEOUT_MS);
  const page = await context.newPage();
  page.on('pageerror', (error) => problems.push(`script error: ${error.message}`));
  await page.goto(`${server.participants}?level=paused-worker-lease`);
  await page.fill('#name', 'Ada');
  await page.click('#join');
  await page.waitForSelector('#timeline');
  await stepTo(page, 4);
  // Played through the page's own API (the card's chooser asks for a worker, a length and a
  // moment; the move is what matters here), then the page redrawn from the server.
  const answer = await page.evaluate(async (play) => {
    const response = await fetch('/api/game/play', {
      method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ play }),
    });
    return { status: response.status, body: await response.json() };
  }, PAUSE);
  check(answer.status === 200, `the pause is played: ${answer.status} ${JSON.stringify(answer.body).slice(0, 200)}`);
  await page.reload();
  await page.waitForSelector('#timeline');
  await stepTo(page, 6);
  const held = await workerWords(page, 'w1');
  check(/⏹\s*stopped until \d+ ms/.test(held), `w1 is drawn stopped while it is held: "${held}"`);
  check(!/waiting for billing|asking Penny|reserving/.test(held), `w1 is drawn in no state it is not running: "${held}"`);
  await shot(page, 'web-stopped-worker');
  // Once its time is up w1 runs again and is drawn so (the run ends).
  await page.click('#run');
  await page.waitForSelector('#over');
  const after = await workerWords(page, 'w1');
  check(!after.includes('stopped until'), `w1 is no longer drawn stopped once the run is over: "${after}"`);
} catch (error) {
  problems.push(error.stack || String(error));
} finally {
  if (server) await stopServer(server, 'SIGTERM');
  await browser.close();
}
finish('stopped');
