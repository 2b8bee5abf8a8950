// What the browser's marks and counts say is true of the run, in a real Chromium: a lost heist
// is drawn as a loss (a ✖, never the money's green ✔ "paid exactly once") on the quiet banner
// and the debrief's headline, a won one as the crew's ★; a finished run says its steps are
// done (not "step r1/3 of 3, 0 calls made" after three calls), a run under way counts the
// calls of its step. Starts its own server (`.ci/browser-test` gives the binary):
//
//   TWICE_SIM=path/to/twice-sim  [TWICE_SCREENSHOTS=folder]  [CHROMIUM=…]  node words.mjs
import { chromium } from 'playwright-core';
import { startServer, stopServer, browserArgs, problems, check, shot, finish, stepTo } from './harness.mjs';

const binary = process.env.TWICE_SIM;
if (!binary) {
  console.error('set TWICE_SIM (the twice-sim binary)');
  process.exit(2);
}
const STEP_TIMEOUT_MS = 15_000;

/** Joins as `name` straight into a level (01 unless said) with its own guards. */
async function openLevel(browser, url, name, level = '01-naive-retry', viewport = { width: 1280, height: 720 }) {
  const context = await browser.newContext({ viewport });
  context.setDefaultTimeout(STEP_TIMEOUT_MS);
  const page = await context.newPage();
  page.on('pageerror', (error) => problems.push(`${name}: script error: ${error.message}`));
  await page.goto(`${url}?level=${level}`);
  await page.fill('#name', name);
  await page.click('#join');
  await page.waitForSelector('#timeline');
  return page;
}

/** The look drawn in `selector`: its glyph, its words and whether it is in the money's "good" green. */
const lookIn = (page, selector) => page.$eval(`${selector} .look`, (element) => ({
  glyph: element.querySelector('.glyph').textContent,
  text: element.textContent,
  good: element.classList.contains('tone-good'),
  tone: [...element.classList].find((name) => name.startsWith('tone-')),
}));

/** Plays `card` at `phase` (a wire card with one message to hit plays at once), then runs to the end. */
async function playThenRun(page, phase, card) {
  await stepTo(page, phase);
  const steps = await page.textContent('[data-fid="run-step"]');
  check(/step r1\/2 of 3, \d+ calls? made for it/.test(steps), `a run under way counts its step's calls: "${steps}"`);
  await page.click(`[data-card="${card}"]`);
  await page.waitForSelector('.message .flags');
  await page.click('#run');
  await page.waitForSelector('#over');
}

const browser = await chromium.launch({ executablePath: process.env.CHROMIUM || '/usr/bin/chromium', args: browserArgs });
let server;
try {
  server = await startServer(binary, ['--room', ':memory:']);
  const url = server.participants;

  // Lost: the credit's request lost while it travels; the retry pays Ada once, and the heist
  // (paid twice) fails.
  const lost = await openLevel(browser, url, 'Ada');
  // A guard's chip says its promise under the pointer, in words: 01 has the pause off, whose
  // promise once read "on_indeterminate: pause — …".
  const chips = await lost.$$eval('#guards-line .chip', (elements) => elements.map((chip) => ({ guard: chip.dataset.guard, title: chip.title })));
  check(chips.some((chip) => chip.guard === 'pause_on_indeterminate')
      && chips.every((chip) => chip.title.split(' ').length >= 5 && !/[_<>]/.test(chip.title)),
    `every guard's hover says its promise in words: ${JSON.stringify(chips)}`);
  await playThenRun(lost, 11, 'LoseRequest');
  const banner = await lookIn(lost, '#over');
  check(banner.text.includes('paid exactly once') && !banner.good && banner.glyph === '✖',
    `the quiet banner of a lost heist is a ✖, not a green ✔: ${JSON.stringify(banner)}`);
  const done = await lost.textContent('[data-fid="run-step"]');
  check(done.includes('all 3 steps done') && !done.includes('0 calls'), `a finished run says its steps are done: "${done}"`);
  await lost.click('#debrief');
  await lost.waitForSelector('#verdict');
  const headline = await lookIn(lost, '#headline');
  check(!headline.good && headline.glyph === '✖' && headline.tone === 'tone-bad',
    `the debrief's headline of a lost heist is a loss: ${JSON.stringify(headline)}`);
  await shot(lost, 'web-debrief-lost');

  // Won: the answer lost after billing applied the credit; the retry pays again.
  const won = await openLevel(browser, url, 'Grace');
  await playThenRun(won, 12, 'LoseResponse');
  const winBanner = await lookIn(won, '#over');
  check(winBanner.text.includes('paid twice') && winBanner.glyph === '★' && winBanner.tone === 'tone-crew',
    `the quiet banner of a won heist is the crew's ★: ${JSON.stringify(winBanner)}`);
  await won.click('#debrief');
  await won.waitForSelector('#verdict');
  const winHeadline = await lookIn(won, '#headline');
  check(winHeadline.glyph === '★' && winHeadline.tone === 'tone-crew',
    `the debrief's headline of a won heist is the crew's: ${JSON.stringify(winHeadline)}`);

  // The ledger's rows in words (3.2 The Book Remembers, where the ledger panel arrives): a
  // status says what it means under the pointer, and a call's history says its events in
  // words, not as the ledger stores them (`recovered_unknown`), with what happened under the
  // pointer.
  for (const [label, viewport] of [['wide', { width: 1280, height: 720 }], ['phone', { width: 390, height: 844 }]]) {
    // A sandbox play (every guard on): 3.2 is locked to someone who finished nothing.
    const ledger = await openLevel(browser, url, `Lin-${label}`, '06-ledger-holds&guards=all', viewport);
    await stepTo(ledger, 9);
    await ledger.waitForSelector('#ledger tbody tr');
    const status = await ledger.$eval('#ledger tbody tr .look', (element) => ({ text: element.textContent, title: element.title }));
    check(status.title.split(' ').length >= 6 && !/_/.test(status.title),
      `${label}: a ledger status says what it means under the pointer: ${JSON.stringify(status)}`);
    await ledger.click('#ledger tbody tr button');
    await ledger.waitForSelector('.history td[data-event]');
    const events = await ledger.$$eval('.history td[data-event]', (cells) => cells.map((cell) => ({ stored: cell.dataset.event, text: cell.textContent, title: cell.title })));
    check(events.length >= 2 && events.every((event) => !event.text.includes('_') && event.title.endsWith('.')),
      `${label}: the history's events are in words, each with its sentence: ${JSON.stringify(events)}`);
    check(events.some((event) => event.stored === 'attempt' && event.text === 'attempt sent'),
      `${label}: the attempt is said as "attempt sent": ${JSON.stringify(events.map((event) => event.text))}`);
    await ledger.$eval('#ledger-panel', (element) => element.scrollIntoView());
    await shot(ledger, `web-ledger-history-${label}`);
    await ledger.context().close();
  }
} catch (error) {
  problems.push(`words: ${error.stack || error}`);
} finally {
  await browser.close();
  if (server) await stopServer(server);
}
finish('words');
