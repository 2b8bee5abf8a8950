// The debrief's "Take it home" in a real Chromium: after level 01's heist the button downloads
// the run as 01-naive-retry.tar.gz, and the archive (unpacked here as tar would) holds the cargo
// project against twice-runtime, the level and the run's tape; on a phone, level 35 (a scripted
// operator, which the exported program does not have) shows the button disabled with the
// export's reason, in words on the page and on hover. Starts its own server (`.ci/browser-test`
// gives the binary):
//
//   TWICE_SIM=path/to/twice-sim  [TWICE_SCREENSHOTS=folder]  [CHROMIUM=…]  node takehome.mjs
import { readFileSync } from 'node:fs';
import { gunzipSync } from 'node:zlib';
import { chromium } from 'playwright-core';
import { startServer, stopServer, browserArgs, problems, check, shot, finish, stepTo } from './harness.mjs';

const binary = process.env.TWICE_SIM;
if (!binary) {
  console.error('set TWICE_SIM (the twice-sim binary)');
  process.exit(2);
}
const STEP_TIMEOUT_MS = 15_000;
/** A tar archive's blocks are 512 bytes; a file's header names it and gives its size in octal. */
const TAR_BLOCK = 512;

/** The file names and texts in a .tar.gz, read as tar lays them out (ustar: prefix + name). */
function untar(gzipped) {
  const bytes = gunzipSync(gzipped);
  const files = [];
  let offset = 0;
  const text = (start, length) => bytes.subarray(start, start + length).toString('utf8').replace(/\0.*$/s, '');
  while (offset + TAR_BLOCK <= bytes.length && bytes[offset] !== 0) {
    const name = text(offset, 100);
    const size = parseInt(text(offset + 124, 12).trim() || '0', 8);
    const prefix = text(offset + 345, 155);
    const body = bytes.subarray(offset + TAR_BLOCK, offset + TAR_BLOCK + size).toString('utf8');
    files.push({ name: prefix ? `${prefix}/${name}` : name, body });
    offset += TAR_BLOCK + Math.ceil(size / TAR_BLOCK) * TAR_BLOCK;
  }
  return files;
}

/** Joins as `name` straight into `level` at `viewport`. */
async function openLevel(browser, url, name, level, viewport) {
  const context = await browser.newContext({ viewport, acceptDownloads: true });
  context.setDefaultTimeout(STEP_TIMEOUT_MS);
  const page = await context.newPage();
  page.on('pageerror', (error) => problems.push(`${name}: script error: ${error.message}`));
  await page.goto(`${url}?level=${level}`);
  await page.fill('#name', name);
  await page.click('#join');
  await page.waitForSelector('#timeline');
  return page;
}

/** Runs the open level to its end and opens the debrief. */
async function toTheDebrief(page) {
  await page.click('#run');
  await page.waitForSelector('#over');
  await page.click('#debrief');
  await page.waitForSelector('#verdict');
}

const overflow = (page) => page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);

const browser = await chromium.launch({ executablePath: process.env.CHROMIUM || '/usr/bin/chromium', args: browserArgs });
let server;
try {
  server = await startServer(binary, ['--room', ':memory:', '--unlock-all']);
  const url = server.participants;

  // 01: the answer to the refund is lost (the level's heist), then the debrief.
  const page = await openLevel(browser, url, 'Ada', '01-naive-retry', { width: 1280, height: 720 });
  await stepTo(page, 12);
  await page.click('[data-card="LoseResponse"]');
  await page.waitForSelector('.message.response .flags');
  await toTheDebrief(page);
  check((await page.textContent('#verdict')).includes('paid twice'), 'the debrief shows the heist\'s verdict');
  const button = await page.$('#take-home');
  check(button && !(await button.isDisabled()), 'the debrief offers Take it home');
  const note = await page.textContent('#take-home-note');
  check(note.includes('01-naive-retry.tar.gz') && note.includes('cargo run'), `the page says what it gives: "${note}"`);
  await page.$eval('#take-home', (element) => element.scrollIntoView({ block: 'center' }));
  await shot(page, 'web-take-home');
  const [download] = await Promise.all([page.waitForEvent('download'), page.click('#take-home')]);
  check(download.suggestedFilename() === '01-naive-retry.tar.gz', `the archive is named after the level: ${download.suggestedFilename()}`);
  const files = untar(readFileSync(await download.path()));
  const names = files.map((file) => file.name);
  for (const expected of ['01-naive-retry/Cargo.toml', '01-naive-retry/src/main.rs', '01-naive-retry/src/schedule.rs',
    '01-naive-retry/src/play.rs', '01-naive-retry/01-naive-retry.level.ron', '01-naive-retry/01-naive-retry.played.tape.ron']) {
    check(names.includes(expected), `the archive holds ${expected}`);
  }
  const cargo = files.find((file) => file.name === '01-naive-retry/Cargo.toml').body;
  check(cargo.includes('twice-runtime = {'), 'its Cargo.toml depends on twice-runtime');
  const tape = files.find((file) => file.name.endsWith('.played.tape.ron')).body;
  check(tape.includes('level: "01-naive-retry.level.ron"') && tape.includes('LoseResponse'),
    'the run\'s tape names the level beside it and holds the card played');

  // 35 on a phone: the button is there, disabled, and the page says why.
  const phone = await openLevel(browser, url, 'Grace', '35-first-decision', { width: 390, height: 844 });
  await toTheDebrief(phone);
  const off = await phone.$('#take-home');
  check(off && (await off.isDisabled()), 'for level 35 the button is disabled');
  const why = await off.getAttribute('title');
  check(why.includes('cannot be exported') && why.includes('scripted operator'), `its hover says why: "${why}"`);
  const said = await phone.textContent('#take-home-note');
  check(said.includes('scripted operator'), `and so does the page, for a phone without hover: "${said}"`);
  check(await overflow(phone) <= 0, 'at 390x844 the debrief\'s buttons stay inside the screen');
  await phone.$eval('#take-home', (element) => element.scrollIntoView({ block: 'center' }));
  await shot(phone, 'web-take-home-phone');
  finish('takehome');
} finally {
  await browser.close();
  if (server) await stopServer(server);
}
