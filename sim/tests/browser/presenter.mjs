// The presenter's page running a workshop, in a real Chromium: sixty participants (scripted
// through the page's own API) on one screen of levels — how many are on each, finished it, lost
// it more than N times — with who needs help and everyone on demand; the join page for the
// projector (the address large, its QR code); the workshop plan with a clock and the chapter's
// notes; and the stage, where one level is shown large. Starts its own server:
//
//   TWICE_SIM=path/to/twice-sim  [TWICE_SCREENSHOTS=folder]  [CHROMIUM=…]  node presenter.mjs
import { chromium } from 'playwright-core';
import { startServer, stopServer, browserArgs, problems, check, shot, finish, Scripted } from './harness.mjs';

const binary = process.env.TWICE_SIM;
if (!binary) {
  console.error('set TWICE_SIM (the twice-sim binary)');
  process.exit(2);
}
const STEP_TIMEOUT_MS = 15_000;
const PEOPLE = 60;
const JOIN_URL = 'http://192.168.1.20:7880/';
/** What sixty people may take on the presenter's screen: about two screens, not a page per person. */
const OVERVIEW_HEIGHT_MAX_PX = 1600;

/** A name from a short list of pioneers, numbered past the list's end. */
const PIONEERS = ['Ada', 'Grace', 'Linus', 'Hedy', 'Barbara', 'Joan', 'Radia', 'Katherine', 'Margaret', 'Frances',
  'Edsger', 'Donald', 'Tony', 'Leslie', 'Niklaus', 'Alan', 'John', 'Dennis', 'Ken', 'Bjarne'];
const nameOf = (index) => `${PIONEERS[index % PIONEERS.length]}${index >= PIONEERS.length ? ` ${Math.floor(index / PIONEERS.length) + 1}` : ''}`;

const browser = await chromium.launch({ executablePath: process.env.CHROMIUM || '/usr/bin/chromium', args: browserArgs });
let server;
try {
  // The room's address on its network, as the presenter would give it (the server itself listens
  // on loopback here): what the join page shows and its QR code holds.
  server = await startServer(binary, ['--room', ':memory:', '--path', '01,02,22,03,04,05,06,07,08,10,11,12,16,09',
    '--join-url', JOIN_URL]);
  const base = new URL(server.participants).origin;
  // Sixty people: a third win 01 and move to 03, five lose 01 four times, the rest are on 01, 03 or 05.
  const people = Array.from({ length: PEOPLE }, (_, index) => new Scripted(base, nameOf(index)));
  await Promise.all(people.map(async (person, index) => {
    await person.send('POST', '/api/join', { name: person.name });
    let game = await person.send('POST', '/api/game', { level: '01-naive-retry' });
    if (index % 3 === 0) {
      game = await person.send('POST', '/api/game/step', { phases: 12 });
      const card = game.hand.find((candidate) => candidate.card === 'LoseResponse');
      await person.send('POST', '/api/game/play', { play: card.targets[0].play });
      await person.send('POST', '/api/game/run');
      await person.send('POST', '/api/game', { level: '03-model-calls-again' });
      await person.send('POST', '/api/game/step', { phases: 1 + (index % 9) });
    } else if (index % 12 === 1) {
      for (let round = 0; round < 4; round += 1) {
        await person.send('POST', '/api/game/run');
        await person.send('POST', '/api/game/restart');
      }
    } else if (index % 3 === 2) {
      await person.send('POST', '/api/game', { level: '05-crash-replay' });
      await person.send('POST', '/api/game/step', { phases: 1 + (index % 7) });
    } else {
      await person.send('POST', '/api/game/step', { phases: 1 + (index % 11) });
    }
  }));
  check(true, `${PEOPLE} scripted participants joined and played`);

  const context = await browser.newContext({ viewport: { width: 1280, height: 720 } });
  context.setDefaultTimeout(STEP_TIMEOUT_MS);
  const presenter = await context.newPage();
  presenter.on('pageerror', (error) => problems.push(`presenter: script error: ${error.message}`));
  await presenter.goto(server.presenter);
  await presenter.waitForSelector('#levels-table');
  await presenter.waitForFunction((count) => document.querySelector('#room-count')?.textContent.includes(`${count} people`), PEOPLE);
  const height = await presenter.evaluate(() => document.documentElement.scrollHeight);
  const width = await presenter.evaluate(() => document.documentElement.scrollWidth);
  // Nothing clipped either: the levels' table ends inside its panel.
  const clipped = await presenter.$eval('#levels-panel', (panel) => panel.scrollWidth - panel.clientWidth);
  check(width <= 1280 && clipped <= 0, `the presenter's page fits the 1280 px screen's width (${width} px; the levels' table ${clipped} px past its panel)`);
  check(height < OVERVIEW_HEIGHT_MAX_PX, `${PEOPLE} people take ${height} px of the presenter's page (one row per level, not per person)`);
  const rows = await presenter.$$eval('#levels-table tbody tr[data-level]', (elements) => elements.map((row) => row.textContent));
  // Levels are numbered by campaign position (01-naive-retry is 1.1), as the players' pages number them.
  const first = rows.find((row) => row.startsWith('1.1'));
  check(rows.length <= 16 && first && first.includes('The Second Knock'), `one row per level: ${rows.length} rows, 1.1 among them`);
  // The room's path (given here in file numbers, as an older plan writes it) is numbered as the
  // pages number its levels: 03 is shown as 2.1.
  const path = await presenter.$$eval('#room-path .chip', (chips) => chips.map((chip) => chip.textContent));
  check(path.length === 14 && path[0] === '1.1' && path[3] === '2.1' && path.every((number) => /^\d+\.\d+$/.test(number)),
    `the room's path is numbered as the pages number levels: ${path.join(' ')}`);
  const help = await presenter.textContent('#help-list');
  check(help.includes('lost 1.1 The Second Knock 4 times'), `who needs help names those who lost 1.1 four times: "${help.slice(0, 80)}…"`);
  check(await presenter.$('#sessions') === null, 'everyone is one click away, not on the page');
  await shot(presenter, 'web-presenter', true);
  await presenter.click('[data-fid="level-people-01-naive-retry"]');
  await presenter.waitForSelector('.people-row');
  check((await presenter.textContent('.people-row')).length > 0, 'a level\'s people open on demand');
  await presenter.click('#show-people');
  await presenter.waitForSelector('#sessions');
  check((await presenter.$$('#sessions tbody tr')).length === PEOPLE, `"show" lists all ${PEOPLE}`);

  // The plan: the workshop plan's rows, a clock started at minute 10, the notes of its chapter.
  await presenter.click('#view-plan');
  await presenter.waitForSelector('#plan tbody tr');
  const planRows = (await presenter.$$('#plan tbody tr')).length;
  check(planRows > 5, `the plan shows the workshop plan's ${planRows} rows`);
  await presenter.fill('#clock-minute', '10');
  await presenter.click('#clock-start');
  await presenter.waitForSelector('#plan tr.now');
  const now = await presenter.textContent('#plan tr.now');
  const clock = await presenter.textContent('#clock');
  check(/^1[01]:\d\d$/.test(clock.trim()) && now.startsWith('9–14'), `the clock reads ${clock.trim()} and lights the row under way: "${now.slice(0, 40)}…"`);
  // The plan names levels as the pages do (2.1, its place in the campaign), so the row needs no
  // note mapping file numbers ("03 is 2.1" is for a plan that names them so).
  check(now.includes('2.1 Try Again, Penny') && now.includes('2.2 Awaiting Reconciliation') && !now.includes('on the pages'),
    `the plan's row names its levels as the room sees them: "${now.slice(0, 120)}"`);
  check((await presenter.textContent('#notes h3')).startsWith('Chapter 2'), 'the notes are the chapter under way');
  await shot(presenter, 'web-plan');

  // The join page, for the projector.
  const wall = await context.newPage();
  await wall.goto(`${base}/join`);
  await wall.waitForFunction(() => document.querySelector('#join-url').textContent.startsWith('http'));
  const qr = await wall.$eval('#join-qr', (image) => ({ width: image.naturalWidth, complete: image.complete }));
  check((await wall.textContent('#join-url')) === JOIN_URL && qr.complete && qr.width > 0, `the join page shows ${JOIN_URL} and its QR code (${qr.width} px wide)`);
  check(!(await wall.isVisible('#join-advice')), 'given the room\'s address, it gives no advice about loopback');
  await shot(wall, 'web-join');

  // The stage: one level large, every level open, a tab of its own.
  await presenter.click('#view-room');
  const [stage] = await Promise.all([context.waitForEvent('page'), presenter.click('#open-stage')]);
  stage.on('pageerror', (error) => problems.push(`stage: script error: ${error.message}`));
  await stage.waitForSelector('[data-level="19-vault"]');
  await stage.click('[data-level="19-vault"]');
  check(await stage.isEnabled('#open-level'), 'every level is open on the stage');
  await stage.click('[data-level="06-ledger-holds"]');
  await stage.click('#open-level');
  await stage.waitForSelector('#timeline');
  check(stage.url().endsWith('#stage') && await stage.$eval('body', (body) => body.classList.contains('stage-view')), 'the stage shows the level large');
  check(!(await stage.isVisible('#predict')) && await stage.isVisible('.stage'), 'the stage keeps the stage, the hand and the timeline, not the player\'s own panels');
  // The room watches the code beside the stage, large, its cursor moving as the presenter steps.
  check(await stage.isVisible('.stage-with-code #code.large'), 'the stage shows the code beside Penny, large');
  const litLine = () => stage.$eval('#code', (code) => [...code.querySelectorAll('.code-line.lit')]
    .map((line) => line.dataset.fid).join(' '));
  // One step at a time, each seen on the page before the next.
  const stepTo = async (phase) => {
    for (;;) {
      const now = Number((await stage.textContent('#phase')).match(/phase (\d+)/)[1]);
      if (now >= phase) return;
      await stage.click('#step');
      await stage.waitForFunction((next) => document.querySelector('#phase').textContent.startsWith(`phase ${next} `), now + 1);
    }
  };
  await stepTo(3);
  const litEarly = await litLine();
  check(litEarly !== '' && await stage.isVisible('#code .code-line.lit .cursor'), `a worker's cursor sits on its line on the stage (${litEarly})`);
  await stepTo(9);
  check(await litLine() !== litEarly, 'stepping on the stage moves the cursor to another line');
  await shot(stage, 'web-stage');
  await presenter.waitForTimeout(2500);
  check(!(await presenter.textContent('#levels-table')).includes('stage'), 'the stage is no one in the room\'s overview');
} catch (error) {
  problems.push(`the presenter test stopped: ${error.message}`);
} finally {
  await browser.close();
  if (server) await stopServer(server, 'SIGTERM');
}

finish('presenter');
