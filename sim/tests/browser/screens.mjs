// The participant's screens in a real Chromium, at the widths a workshop brings: level 01
// says what chapter 1 teaches in the player's words, a phone gets a header that leaves it
// the screen and Step beside the hand, nothing overflows at 390, 768 or 1280, leaving the
// room asks first and keeps the code, coming back lands on the open level (and Play there
// carries on), 02 says it is finished by defending, and the room's race reaches every page
// at once, folds when decided and tells what it did in the world's words.
// Starts its own server (`.ci/browser-test` gives the binary):
//
//   TWICE_SIM=path/to/twice-sim  [TWICE_SCREENSHOTS=folder]  [CHROMIUM=…]  node screens.mjs
import { chromium } from 'playwright-core';
import { startServer, stopServer, browserArgs, problems, check, shot, finish, phaseOf, stepTo } from './harness.mjs';

const binary = process.env.TWICE_SIM;
if (!binary) {
  console.error('set TWICE_SIM (the twice-sim binary)');
  process.exit(2);
}
const STEP_TIMEOUT_MS = 15_000;
/** The widths a workshop brings: a phone, a tablet standing up, a laptop. */
const VIEWPORTS = [[390, 844], [768, 1024], [1280, 720]];

async function newPage(browser, label, width, height) {
  const context = await browser.newContext({ viewport: { width, height } });
  context.setDefaultTimeout(STEP_TIMEOUT_MS);
  const page = await context.newPage();
  page.on('pageerror', (error) => problems.push(`${label}: script error: ${error.message}`));
  return page;
}

async function join(page, url, name) {
  await page.goto(url);
  await page.fill('#name', name);
  await page.click('#join');
  await page.waitForSelector('[data-level="01-naive-retry"]');
}

/** The page is laid out for its width: nothing wider than the screen. */
async function overflow(page) {
  return page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
}

const browser = await chromium.launch({ executablePath: process.env.CHROMIUM || '/usr/bin/chromium', args: browserArgs });
let server;
try {
  server = await startServer(binary, ['--room', ':memory:']);
  const url = server.participants;
  const secret = server.presenter.split('#secret=')[1];
  const asPresenter = (method, path, body) => fetch(new URL(path, url), {
    method, headers: { authorization: `Bearer ${secret}`, 'content-type': 'application/json' },
    body: body === undefined ? undefined : JSON.stringify(body),
  }).then((response) => response.json());

  // ----- level 01, at every width -----
  for (const [width, height] of VIEWPORTS) {
    const page = await newPage(browser, `Ada ${width}`, width, height);
    await join(page, url, `Ada ${width}`);
    const listed = await page.textContent('[data-level="01-naive-retry"]');
    // Numbered by campaign position, as the window numbers them (its file is 01; chapter 1's
    // files go 01, 02, 21, 20, 22).
    const third = await page.textContent('[data-level="21-reads-retried"]');
    check(listed.includes('1.1') && listed.includes('The Second Knock') && third.includes('1.3'),
      `${width}: the level list numbers its levels by campaign position: "${listed.trim()}", "${third.trim()}"`);
    await page.click('#open-level');
    await page.waitForSelector('#timeline');
    check((await page.textContent('.level-head h1')).startsWith('1.1'), `${width}: the level's header carries its position 1.1`);
    if (width === 390) {
      // A phone reads the level top to bottom as it is played: what to do, the prediction,
      // Step and the hand, then what the cards act on and the code.
      const tops = await page.evaluate(() => Object.fromEntries([
        ['briefing', 'details.briefing'], ['goal', 'details.briefing strong'], ['predict', '#predict'], ['step', '#step'],
        ['hand', '.hand .card'], ['wire', 'section[aria-label="the wire"]'], ['code', '#code'],
      ].map(([name, selector]) => [name, Math.round(document.querySelector(selector).getBoundingClientRect().top + window.scrollY)])));
      const order = ['briefing', 'goal', 'predict', 'step', 'hand', 'wire', 'code'];
      check(order.every((name, index) => index === 0 || tops[order[index - 1]] < tops[name]),
        `390×844: briefing, goal, predict, Step, hand, wire, code in that order down the page: ${order.map((name) => `${name} ${tops[name]}`).join(', ')}`);
      await shot(page, 'web-level-phone-start');
    }
    const chips = await page.$$eval('#guards-line > p .chip', (elements) => elements.map((element) => element.textContent.trim()));
    check(chips.length === 4 && chips.every((chip) => !chip.includes('_')) && chips.some((chip) => chip.includes('the write retry rule')),
      `${width}: level 01 names its four guards off in words, not every guard in snake_case: ${chips.join(', ')}`);
    check(!(await page.isVisible('.more-guards p')), `${width}: the other guards are counted, shown on demand`);
    check(await page.$('.console') === null && await page.$('#ledger-panel') === null,
      `${width}: no operator console and no ledger in chapter 1 (they arrive in chapters 3 and 4)`);
    check((await page.textContent('#goal')).includes('make Penny pay twice'), `${width}: the header says the goal in words`);
    await stepTo(page, 12);
    await page.click('[data-card="LoseResponse"]');
    await page.waitForSelector('.message.response .flags');
    const tooWide = await overflow(page);
    check(tooWide <= 0, `${width}×${height}: the level screen fits the width (${tooWide} px over)`);
    if (width === 390) {
      const header = await page.$eval('.topbar', (element) => element.getBoundingClientRect().height);
      check(header < height / 8, `390×844: the header takes ${Math.round(header)} px, not half the screen`);
      await page.evaluate(() => window.scrollTo(0, 0));
      const leave = await page.$eval('#nav-leave', (element) => {
        const box = element.getBoundingClientRect();
        return { left: box.left, right: box.right, top: box.top, bottom: box.bottom, clipped: element.scrollWidth > element.clientWidth };
      });
      check(leave.left >= 0 && leave.right <= width && !leave.clipped, `390×844: "Leave the room" is whole on screen (${Math.round(leave.left)}–${Math.round(leave.right)} px)`);
      const gap = await page.evaluate(() => {
        const step = document.querySelector('#step').getBoundingClientRect();
        const card = document.querySelector('.hand .card').getBoundingClientRect();
        return card.top - step.bottom;
      });
      check(gap >= 0 && gap < 200, `390×844: the hand follows Step ${Math.round(gap)} px below it, not a long scroll away`);
      await shot(page, 'web-level-phone');
      // The level goes quiet: its notice takes a line of its own, never over the hand's
      // "Played:" line (a floating toast covered it at the foot of a phone's screen).
      await page.click('#run');
      await page.waitForSelector('#over');
      await page.waitForFunction(() => document.getElementById('notice').textContent.includes('quiet'));
      const covered = await page.evaluate(() => {
        const notice = document.getElementById('notice').getBoundingClientRect();
        const played = [...document.querySelectorAll('.hand p')].find((line) => line.textContent.startsWith('Played:'));
        if (!played) return 'no "Played:" line';
        const line = played.getBoundingClientRect();
        const overlaps = notice.top < line.bottom && line.top < notice.bottom && notice.left < line.right && line.left < notice.right;
        return overlaps ? `the notice (${Math.round(notice.top)}–${Math.round(notice.bottom)} px) covers it (${Math.round(line.top)}–${Math.round(line.bottom)} px)` : '';
      });
      check(covered === '', `390×844: the "level is quiet" notice leaves the hand's "Played:" line readable ${covered}`);
      // The timeline reads down, not sideways: no lanes side by side, each row says who acted.
      const timeline = await page.$eval('.timeline-scroll', (element) => ({
        over: element.scrollWidth - element.clientWidth,
        who: [...element.querySelectorAll('td.text .who')].filter((who) => who.offsetParent !== null && who.textContent.trim()).length,
        rows: element.querySelectorAll('tbody tr').length,
      }));
      check(timeline.over <= 0 && timeline.rows > 0 && timeline.who === timeline.rows,
        `390×844: the timeline needs no sideways scroll (${timeline.over} px over) and all ${timeline.rows} rows name who acted (${timeline.who})`);
      const sent = await page.$$eval('.timeline td.text .who', (elements) => elements.map((element) => element.textContent));
      check(sent.some((who) => /\bw\d+ → /.test(who)) && sent.some((who) => / → (worker )?w\d+/.test(who)),
        `390×844: a row says where its arrow comes from (a worker's request, an answer to it): ${sent.filter((who) => who.includes('→')).slice(0, 4).join(' | ')}`);
      await shot(page, 'web-quiet-phone');
      await page.click('#debrief');
      await page.waitForSelector('#verdict');
      // Every credit's outcome in view: a card per credit, the outcome on its first line.
      const credits = await page.evaluate((screenWidth) => {
        const scroller = document.querySelector('#verdict .table-scroll') || document.querySelector('.table-scroll');
        const outcomes = [...document.querySelectorAll('table.credits td.outcome')];
        return {
          over: scroller ? scroller.scrollWidth - scroller.clientWidth : null,
          outcomes: outcomes.length,
          shown: outcomes.filter((cell) => {
            const box = cell.getBoundingClientRect();
            return box.width > 0 && box.left >= 0 && box.right <= screenWidth && cell.textContent.trim() !== '';
          }).length,
          labelled: outcomes.every((cell) => getComputedStyle(cell, '::before').content.includes('outcome')),
        };
      }, width);
      check(credits.outcomes > 0 && credits.over <= 0 && credits.shown === credits.outcomes && credits.labelled,
        `390×844: the debrief's credits fit the width (${credits.over} px over) with every outcome shown and labelled (${credits.shown}/${credits.outcomes})`);
      await shot(page, 'web-debrief-phone');
      // "Next level" opens the next level at its top, not scrolled down to where the debrief's
      // buttons were (a playtester landed in the middle of 02).
      await page.$eval('#next-level', (element) => element.scrollIntoView({ block: 'end' }));
      const before = await page.evaluate(() => window.scrollY);
      await page.click('#next-level');
      await page.waitForFunction(() => document.querySelector('.level-head h1') && document.querySelector('.level-head h1').textContent.startsWith('1.2'));
      const after = await page.evaluate(() => window.scrollY);
      check(before > 0 && after === 0, `390×844: Next level opens 1.2 at its top (scrolled ${Math.round(before)} px on the debrief, ${Math.round(after)} px on the level)`);
      await shot(page, 'web-next-level-phone');
    }
    if (width === 1280) {
      // The hand is on the first screen, under the stage, not below the code listing.
      await page.evaluate(() => window.scrollTo(0, 0));
      const handTop = await page.$eval('.hand .card', (element) => element.getBoundingClientRect().top);
      const codeTop = await page.$eval('.code-lines', (element) => element.getBoundingClientRect().top).catch(() => Infinity);
      check(handTop < height && handTop < codeTop, `1280×720: the hand's first card is above the fold (${Math.round(handTop)} px) and above the code listing`);
      await shot(page, 'web-level-wide');
      await page.click('#run');
      await page.waitForSelector('#over');
      await page.click('#debrief');
      await page.waitForSelector('#verdict');
      const credit = await page.textContent('table.credits tbody td');
      check(credit.includes('r1/2') && !/item \d+ of/.test(await page.textContent('#verdict')),
        `the credit is named by its step, r1/2, as the task list and the window name it: "${credit}"`);
    }
    await page.context().close();
  }

  // ----- leaving asks first and keeps the code; coming back carries on -----
  const ada = await newPage(browser, 'Ada', 1280, 720);
  await join(ada, url, 'Ada');
  await ada.click('#open-level');
  await ada.waitForSelector('#timeline');
  await stepTo(ada, 10);
  await ada.goto(url);
  await ada.waitForSelector('#timeline');
  check((await phaseOf(ada)) === 10, 'opening the room\'s address again lands on the open level, at phase 10');
  await ada.click('[data-fid="nav-levels"]');
  await ada.waitForSelector('[data-level="01-naive-retry"].chosen');
  check(true, 'the level list selects the open level');
  const carryOn = await ada.textContent('#open-level');
  check(carryOn.includes('Carry on') && carryOn.includes('phase 10'), `its button carries on: "${carryOn}"`);
  await ada.click('#open-level');
  await ada.waitForSelector('#timeline');
  check((await phaseOf(ada)) === 10, 'and Play there does not restart it');
  const code = (await ada.textContent('[data-fid="my-code"]')).trim();
  await ada.click('#nav-leave');
  await ada.waitForSelector('#leave-code');
  check((await ada.textContent('#leave-code')).includes(code), 'leaving asks first, and shows the code that brings the name back');
  await ada.click('[data-fid="leave-stay"]');
  check((await phaseOf(ada)) === 10 && await ada.isVisible('#nav-leave'), '"Stay" stays');
  await ada.click('#nav-leave');
  await ada.click('#leave-confirm');
  await ada.waitForSelector('#left-note');
  check((await ada.textContent('#left-note')).includes(code) && (await ada.inputValue('#code')) === code,
    `after leaving, the code is still shown (${code}) and filled in`);
  await ada.click('#join');
  await ada.waitForSelector('#timeline');
  check((await phaseOf(ada)) === 10, 'joining again with it comes back to the level at phase 10');

  // ----- 02 is finished by defending, and says so -----
  const teacher = await newPage(browser, 'Barbara', 1280, 720);
  await teacher.goto(`${url}?level=02-one-attempt&guards=all`);
  await teacher.fill('#name', 'Barbara');
  await teacher.click('#join');
  await teacher.waitForSelector('#goal');
  const goal = await teacher.textContent('#goal');
  check(goal.includes('defend it with at most') && !goal.includes('paid twice'), `02's header says its real goal: "${goal.trim()}"`);
  // A campaign play of 02 (every level opened by the presenter): its debrief sends the player
  // to the defence, not to a rewind no play can turn.
  await asPresenter('POST', '/api/presenter/unlock', { all: true });
  const joan = await newPage(browser, 'Joan', 1280, 720);
  await join(joan, url, 'Joan');
  await joan.click('[data-level="02-one-attempt"]');
  await joan.click('#open-level');
  await joan.waitForSelector('#timeline');
  await joan.click('#run');
  await joan.waitForSelector('#over');
  await joan.click('#debrief');
  await joan.waitForSelector('#verdict');
  const notFinished = await joan.textContent('#verdict');
  check(notFinished.includes('a defence that holds does') && !notFinished.includes('rewind or restart'),
    `02's debrief says the defence finishes it, not a rewind: "${notFinished.match(/Not finished[^.]*\./)?.[0]}"`);
  await asPresenter('POST', '/api/presenter/unlock', { all: false });

  // ----- the race: at once, folded when decided, in the world's words -----
  const racers = [];
  for (const name of ['Grace', 'Linus']) {
    const page = await newPage(browser, name, 390, 844);
    await join(page, url, name);
    racers.push(page);
  }
  await asPresenter('POST', '/api/presenter/race', { tape: '04-pause.lost-answer' });
  await racers[0].waitForSelector('#race-completed');
  // The page has just heard of race 1; race 2 opens now and must reach it before a retry would
  // (RACE_RETRY_MS, 3 s: the page learns of it from its wait, not from asking again).
  const opened = Date.now();
  await asPresenter('POST', '/api/presenter/race', { tape: '04-pause.lost-answer' });
  await racers[0].waitForFunction(() => document.querySelector('#race h2')?.textContent.includes('#2'), null, { timeout: 2500 });
  check(true, `race 2 reached the page ${Date.now() - opened} ms after it opened (no old buttons left for a poll)`);
  await racers[1].waitForFunction(() => document.querySelector('#race h2')?.textContent.includes('#2'));
  await racers[1].fill('#race-reason', 'billing shows nothing under the key');
  await racers[1].click('#race-failed');
  await racers[0].waitForSelector('#race.decided');
  check(await racers[0].$('#race-completed') === null, 'a decided race has no buttons left to press');
  const folded = await racers[0].$eval('#race', (element) => element.getBoundingClientRect().height);
  check(folded < 130, `a decided race folds to a line on a phone (${Math.round(folded)} px, not ~350)`);
  await racers[0].click('[data-fid="race-details"]');
  await racers[0].waitForSelector('#race-after');
  const after = await racers[0].textContent('#race-after');
  check(after.includes('paid twice') && !/\bheld\b/.test(after), `failed paid Ada twice: the race says so and lists no guard as held: "${after.slice(0, 90)}…"`);
  await racers[0].click('#race-hide');
  check(!(await racers[0].isVisible('#race')), 'the participant may hide a decided race');
  await shot(racers[1], 'web-race-decided');
} catch (error) {
  problems.push(`the screens test stopped: ${error.message}`);
} finally {
  await browser.close();
  if (server) await stopServer(server, 'SIGTERM');
}

finish('screens');
