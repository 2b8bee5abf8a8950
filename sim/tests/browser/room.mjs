// The durable room and the workshop plan in a real Chromium. Starts its own servers
// (`.ci/browser-test` gives the binary):
//
//   TWICE_SIM=path/to/twice-sim  TWICE_ROOM_DIR=folder  [TWICE_SCREENSHOTS=folder]  node room.mjs
//
// 1. A 30-participant session: 27 scripted participants (the page's own HTTP API) win 01 with
//    its win tape's moves and step into 02, three more play in Chromium pages; the server is
//    SIGKILLed and started again on the same room file with another --sessions-max. Every
//    scripted participant's acknowledged level, phase, moves and win are back, the presenter's
//    scoreboard counts every win, the open pages carry on (the next click works, at the phase
//    they were at), a reload finds the same level, the presenter's old URL still opens the
//    room, and a participant on a new browser takes their name back with the code their page
//    showed.
// 2. The workshop plan (docs/src/workshop/plan.md) with its own `--path`: a participant who finished nothing finds
//    every level each row of the plan names open at that row's minute, and opens it.
import { chromium } from 'playwright-core';
import { readFileSync } from 'node:fs';
import { join as joinPath } from 'node:path';
import { startServer as start, stopServer, browserArgs, problems, check, shot, finish, Scripted as Participant } from './harness.mjs';

const binary = process.env.TWICE_SIM;
const roomDir = process.env.TWICE_ROOM_DIR;
if (!binary || !roomDir) {
  console.error('set TWICE_SIM (the twice-sim binary) and TWICE_ROOM_DIR (a folder for the room file)');
  process.exit(2);
}
const STEP_TIMEOUT_MS = 15_000;
const startServer = (args, address) => start(binary, args, address);

async function newPage(browser, label) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 720 } });
  context.setDefaultTimeout(STEP_TIMEOUT_MS);
  const page = await context.newPage();
  page.on('pageerror', (error) => problems.push(`${label}: script error: ${error.message}`));
  return page;
}

const phaseOf = async (page) => Number((await page.textContent('#phase')).match(/phase (\d+)/)[1]);

async function stepOnce(page) {
  const before = await phaseOf(page);
  await page.click('#step');
  await page.waitForFunction((phase) => document.querySelector('#phase').textContent.includes(`phase ${phase + 1} `), before);
  return before + 1;
}

/** The workshop plan: its path and, per row, the minutes and the level numbers it names. */
const WORKSHOP = 'docs/src/workshop/plan.md';
function workshopPlan() {
  const text = readFileSync(WORKSHOP, 'utf8');
  const paths = [...new Set([...text.matchAll(/--path (\S+)/g)].map((match) => match[1]))];
  if (paths.length !== 1) throw new Error(`${WORKSHOP} names ${paths.length} paths: ${paths.join(' ')}`);
  const plan = text.slice(text.indexOf('## The 45 minutes'));
  const rows = [];
  for (const line of plan.split('\n')) {
    const cells = line.split('|').map((cell) => cell.trim());
    const minutes = cells[1] && cells[1].match(/^(\d+)–(\d+)$/);
    if (!minutes) continue;
    // A level is named as the pages name it, "2.1 Title" (its place in the campaign), or as
    // older plans did, "03 Title" (its file's number): then a space and a capital, maybe in
    // italics.
    const levels = [...cells[2].matchAll(/(?<![\d.])(\d{1,2}\.\d{1,2}|\d\d) \*?[A-Z]/g)].map((match) => match[1]);
    rows.push({ from: Number(minutes[1]), to: Number(minutes[2]), levels });
  }
  return { path: paths[0], rows };
}

/** The win tape's moves, read from the tape file: `(at_phase: N, play: Card(key: Some("k")))`. */
function tapeMoves(file) {
  const text = readFileSync(file, 'utf8');
  const moves = [...text.matchAll(/\(at_phase: (\d+), play: (\w+)\(key: Some\("([^"]+)"\)\)\)/g)]
    .map((match) => ({ atPhase: Number(match[1]), play: { [match[2]]: { key: match[3] } } }));
  if (moves.length === 0) throw new Error(`${file}: no wire moves found to script`);
  return moves;
}

/** A scripted participant who plays 01 by its win tape and steps into 02. */
class Scripted extends Participant {
  /** Wins 01 with the tape's moves, then opens 02 and steps into it; keeps the last answer. */
  async play(moves) {
    await this.send('POST', '/api/join', { name: this.name });
    let game = await this.send('POST', '/api/game', { level: '01-naive-retry' });
    for (const move of moves) {
      while (game.phase < move.atPhase) {
        game = await this.send('POST', '/api/game/step', { phases: Math.min(3, move.atPhase - game.phase) });
      }
      game = await this.send('POST', '/api/game/play', { play: move.play });
    }
    game = await this.send('POST', '/api/game/run');
    this.won = game.end && game.end.finished === true && game.end.counted === true;
    await this.send('POST', '/api/game', { level: '02-one-attempt' });
    for (let step = 0; step < 4; step += 1) game = await this.send('POST', '/api/game/step', { phases: 1 });
    this.acked = game;
  }
}

const browser = await chromium.launch({ executablePath: process.env.CHROMIUM || '/usr/bin/chromium', args: browserArgs });
const servers = [];

try {
  // ----- 1. SIGKILL under thirty participants, then the same room again -----
  const roomFile = joinPath(roomDir, 'killed.sqlite');
  let server = await startServer(['--room', roomFile]);
  servers.push(server);
  const base = new URL(server.participants).origin;
  const moves = tapeMoves('levels/01-naive-retry.win.tape.ron');
  const scripted = Array.from({ length: 27 }, (_, index) => new Scripted(base, `Player ${index + 1}`));
  await Promise.all(scripted.map((participant) => participant.play(moves)));
  check(scripted.every((participant) => participant.won), '27 scripted participants won 01 with its win tape\'s moves and stepped into 02');
  const people = [];
  for (const name of ['Ada', 'Grace', 'Linus']) {
    const page = await newPage(browser, name);
    await page.goto(server.participants);
    await page.fill('#name', name);
    await page.click('#join');
    await page.waitForSelector('[data-level="01-naive-retry"]');
    await page.click('[data-level="01-naive-retry"]');
    await page.click('#open-level');
    await page.waitForSelector('#timeline');
    for (let step = 0; step < 3 + people.length; step += 1) await stepOnce(page);
    const code = (await page.textContent('[data-fid="my-code"]')).trim();
    check(/^[A-Z2-9]{6}$/.test(code), `${name}'s page shows the code that takes the name back: ${code}`);
    people.push({ name, page, phase: await phaseOf(page), code });
  }
  await shot(people[0].page, 'web-code');
  const presenter = await newPage(browser, 'presenter');
  await presenter.goto(server.presenter);
  await presenter.click('#show-people');
  await presenter.waitForFunction(() => (document.querySelector('#sessions') || {}).textContent?.includes('Linus'));
  const oldPresenterUrl = server.presenter;
  await stopServer(server, 'SIGKILL');
  check(true, 'the server was killed (SIGKILL) with three pages open and 30 participants in the room');

  // The same address again: the pages stay as they were, open on the dead server.
  server = await startServer(['--room', roomFile, '--sessions-max', '40'], new URL(server.participants).host);
  servers.push(server);
  check(server.printed.some((line) => line.includes('30 participants kept')), 'the restarted server found the thirty participants in the room file');
  check(server.presenter === oldPresenterUrl, 'the presenter\'s URL is the same after the restart');
  for (const participant of scripted) {
    const me = await participant.send('GET', '/api/me');
    const levels = await participant.send('GET', '/api/levels');
    const first = levels.find((level) => level.stem === '01-naive-retry');
    const game = await participant.send('GET', '/api/game');
    const same = me.name === participant.name && first.state.word === 'finished' && first.best
      && ['level', 'phase', 'played', 'timeline', 'ledger', 'billing', 'hand']
        .every((field) => JSON.stringify(game[field]) === JSON.stringify(participant.acked[field]));
    if (!same) throw new Error(`check failed: ${participant.name} after the restart: ${JSON.stringify({ me, first, phase: game.phase, acked: participant.acked.phase })}`);
  }
  check(true, 'every scripted participant is back: their name, 01 finished with its best, 02 at the phase and moves acknowledged before the kill');
  const secret = oldPresenterUrl.split('#secret=')[1];
  const room = await (await fetch(`${base}/api/presenter/room`, { headers: { authorization: `Bearer ${secret}` } })).json();
  const board = room.scoreboard.find((entry) => entry.level === '01-naive-retry');
  check(board && board.scores.length === scripted.length, `the presenter's scoreboard for 01 counts every win from before the kill: ${board ? board.scores.length : 0} of ${scripted.length}`);
  for (const person of people) {
    // No reload: the open tab's next click is answered by the new server.
    const next = await stepOnce(person.page);
    check(next === person.phase + 1, `${person.name}'s open page carries on: the next step runs phase ${next}`);
    await person.page.reload();
    await person.page.waitForSelector('#timeline');
    check((await phaseOf(person.page)) === next, `${person.name}'s reloaded page finds the level at phase ${next}`);
  }
  const presenterAgain = await newPage(browser, 'presenter again');
  await presenterAgain.goto(oldPresenterUrl);
  // Everyone the room file keeps shows at once, before their pages ask for anything.
  await presenterAgain.waitForFunction(() => /The room: 30 people/.test(document.querySelector('#room-count')?.textContent || ''));
  await presenterAgain.click('#show-people');
  await presenterAgain.waitForFunction(() => (document.querySelector('#sessions') || {}).textContent?.includes('Ada'));
  check((await presenterAgain.textContent('#sessions')).includes('Grace'), 'the presenter\'s old URL opens the restarted room');
  // Ada on a new browser: her name and her code.
  const ada = people[0];
  const elsewhere = await newPage(browser, 'Ada elsewhere');
  await elsewhere.goto(server.participants);
  await elsewhere.fill('#name', 'Ada');
  await elsewhere.click('#join');
  await elsewhere.waitForSelector('#code:visible');
  check((await elsewhere.textContent('.error')).includes('name_taken'), 'the name alone is refused, and the code field appears');
  await elsewhere.fill('#code', ada.code.toLowerCase());
  await elsewhere.click('#join');
  // Her name taken back, the page lands on her open level (not on the list).
  await elsewhere.waitForSelector('#timeline');
  check((await phaseOf(elsewhere)) === ada.phase + 1, 'Ada carries on in the new browser where she was');
  await stopServer(server, 'SIGTERM');

  // ----- 2. The workshop plan, minute by minute, with its own path -----
  const plan = workshopPlan();
  check(plan.rows.length > 5 && plan.rows[plan.rows.length - 1].to === 45, `the workshop plan runs to minute 45 in ${plan.rows.length} rows`);
  server = await startServer(['--room', ':memory:', '--path', plan.path]);
  servers.push(server);
  const late = await newPage(browser, 'Late');
  await late.goto(server.participants);
  await late.fill('#name', 'Late');
  await late.click('#join');
  await late.waitForSelector('[data-level="01-naive-retry"]');
  // The room's own list says which level each name is: a place (`number`, as the pages show
  // it) or a file's number (the prefix of its stem).
  const listed = await late.evaluate(() => fetch('/api/levels').then((answer) => answer.json()));
  const stemOf = (name) => (listed.find((level) => level.number === name || level.stem.startsWith(`${name}-`)) || {}).stem;
  const named = plan.rows.flatMap((row) => row.levels);
  check(named.length >= 10 && named.every(stemOf), `the plan names ${named.length} levels, each one of the room's: ${named.join(' ')}`);
  for (const row of plan.rows) {
    for (const number of row.levels) {
      await late.click('[data-fid="nav-levels"]');
      const button = `[data-level="${stemOf(number)}"]`;
      await late.waitForSelector(button);
      await late.click(button);
      check(await late.isEnabled('#open-level'), `minute ${row.from}: level ${number} is open to someone who finished nothing`);
      await late.click('#open-level');
      await late.waitForSelector('#timeline');
    }
  }
  await late.click('[data-fid="nav-levels"]');
  await late.waitForSelector('[data-level="03-model-calls-again"]');
  await shot(late, 'web-path');
} catch (error) {
  problems.push(`the room test stopped: ${error.message}`);
} finally {
  await browser.close();
  for (const server of servers) await stopServer(server, 'SIGTERM');
}

finish('room and workshop plan');
