// Drives a real Chromium through the browser edition of Twice, against a running
// `twice-sim web` (it starts no server itself: `.ci/browser-test` does).
//
//   TWICE_URL=http://127.0.0.1:PORT/  TWICE_PRESENTER_URL=http://127.0.0.1:PORT/presenter#secret=…
//   [TWICE_SCREENSHOTS=folder]  [CHROMIUM=/usr/bin/chromium]  node flow.mjs
//
// 1. title → level select → level 01 → predict → play a card → step → run to the verdict → debrief (the score) →
//    save the tape → the replay link opens the same run in another browser; 2. Packet
//    Attack's URL parameters open a level with chosen guards, and a bad one leaves a notice
//    that stays until dismissed;
// 3. defender mode on level 02; 4. the room's race: the presenter opens a paused call, three participants in their own
//    browser contexts resolve it at once, exactly one wins and the others see 409 and who won.
import { chromium } from 'playwright-core';
import { readFileSync } from 'node:fs';
import { browserArgs, problems, check, shot, finish } from './harness.mjs';

const url = process.env.TWICE_URL;
const presenterUrl = process.env.TWICE_PRESENTER_URL;
if (!url || !presenterUrl) {
  console.error('set TWICE_URL and TWICE_PRESENTER_URL (as `twice-sim web` prints them)');
  process.exit(2);
}
/** How long one step of the flow may take before the test fails. */
const STEP_TIMEOUT_MS = 15_000;
const PARTICIPANTS = ['Grace', 'Linus', 'Hedy'];

/** A page that fails the test on any script error or failed asset. */
async function newPage(browser, label) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 720 }, acceptDownloads: true });
  context.setDefaultTimeout(STEP_TIMEOUT_MS);
  const page = await context.newPage();
  page.on('pageerror', (error) => problems.push(`${label}: script error: ${error.message}`));
  page.on('console', (message) => {
    // A 4xx answer the page handles (a lost race's 409) is logged by Chromium as a failed
    // resource; script errors are what matter.
    if (message.type() === 'error' && !/status of (401|403|404|409|422)/.test(message.text())) {
      problems.push(`${label}: console: ${message.text()}`);
    }
  });
  return page;
}

/**
 * Holds back the race's news from the pages it is installed on: while held, an answer to
 * `GET /api/race` (the page's long wait for the race to change) is fetched from the server but
 * reaches the page only on release. Everyone pressing at once then means what it means in a
 * room: each participant decided on the race their page showed, before hearing that someone
 * else's decision landed. Without it, on a loaded machine the first resolve's news redraws the
 * other pages (a decided race has no buttons) before their clicks land.
 */
function raceNews() {
  let open = Promise.resolve();
  let release = () => {};
  return {
    async install(page) {
      await page.route((address) => address.pathname === '/api/race', async (route) => {
        try {
          const response = await route.fetch({ timeout: 60_000 });
          await open;
          await route.fulfill({ response });
        } catch {
          // The page closed while its wait was held: nothing is left to answer.
        }
      });
    },
    hold() { open = new Promise((resolve) => { release = resolve; }); },
    release() { release(); },
  };
}

async function join(page, name, address) {
  await page.goto(address || url);
  await page.fill('#name', name);
  await page.click('#join');
}

const phaseOf = async (page) => Number((await page.textContent('#phase')).match(/phase (\d+)/)[1]);

const browser = await chromium.launch({ executablePath: process.env.CHROMIUM || '/usr/bin/chromium', args: browserArgs });

try {
  // ----- 1. one participant, level 01, from the title to the debrief -----
  const page = await newPage(browser, 'Ada');
  await page.goto(url);
  await page.waitForSelector('#join');
  check((await page.textContent('h1')).includes('Twice'), 'the title screen shows');
  await shot(page, 'web-title');
  await page.fill('#name', 'Ada');
  await page.click('#join');
  await page.waitForSelector('[data-level="01-naive-retry"]');
  check((await page.textContent('[data-level="02-one-attempt"]')).includes('locked'), 'level 02 is locked before 01 is finished');
  await page.click('[data-level="01-naive-retry"]');
  await shot(page, 'web-levels');
  await page.click('#open-level');
  await page.waitForSelector('#timeline');
  check((await phaseOf(page)) === 0, 'level 01 opens at phase 0');
  // Predict, then watch: the verdict and the deciding guard, before the run plays out. The
  // guard half offers what can decide in 01, in words: the write retry rule (off) among them.
  const guardChoices = await page.$$eval('#predict-guard option', (options) => options.map((option) => option.textContent));
  check(guardChoices.length <= 7 && guardChoices.every((text) => !text.includes('_')),
    `the prediction offers a few choices in words, not every guard in snake_case: ${guardChoices.join(' | ')}`);
  check(guardChoices.some((text) => text.includes('the write retry rule (off)')), 'the guard that decides 01 (off) can be named');
  await page.selectOption('#predict-verdict', 'heist_works');
  await page.selectOption('#predict-guard', 'write_retry_rule');
  await page.click('#predict-button');
  await page.waitForSelector('#prediction-made');
  check((await page.textContent('#prediction-made')).includes('the heist works, decided by the write retry rule'),
    'the prediction is made before the run plays out');
  check(!(await page.isVisible('#predict-button')), 'one prediction per run: the button is gone');
  // A wire card acts on a message on the wire: step past the balance lookup until billing's
  // answer to the refund travels (phase 12).
  for (let step = 0; step < 12; step += 1) {
    const before = await phaseOf(page);
    await page.click('#step');
    await page.waitForFunction((phase) => document.querySelector('#phase').textContent.includes(`phase ${phase + 1} `), before);
  }
  check((await phaseOf(page)) === 12, 'twelve steps run twelve phases');
  // With one answer on the wire, the card plays at once: the moment the heist turns.
  await page.click('[data-card="LoseResponse"]');
  await page.waitForSelector('.message.response .flags');
  check((await page.textContent('.wire')).includes('will be lost'), 'the answer is on the wire, marked to be lost');
  await shot(page, 'web-level', true);
  await page.click('#run');
  await page.waitForSelector('#over');
  check((await page.textContent('#over')).includes('paid twice'), 'the verdict: Ada was paid twice');
  const endPhase = await phaseOf(page);
  const overHint = await page.textContent('#over-hint');
  check(overHint.includes('you still hold 1 card: rewind to play it') && !overHint.includes('wake'), `the quiet banner counts the card left in words: "${overHint}"`);
  const words = await page.evaluate(() => [0, 1, 2].map((count) => counted(count, 'card', 'cards')));
  check(words.join('|') === '0 cards|1 card|2 cards', `the page counts in words, singular for one: ${words.join(', ')}`);
  await page.click('#debrief');
  await page.waitForSelector('#verdict');
  const verdict = await page.textContent('#verdict');
  check(verdict.includes('paid twice') && verdict.includes('The heist worked'), 'the debrief shows the verdict');
  check((await page.textContent('.lesson')).includes('Retry reads, not writes'), 'the debrief shows the lesson');
  // Said in words a first-time player reads, never as identifiers (write_retry_rule, failed_but_paid).
  const debriefText = await page.evaluate(() => ['#verdict', '#decided', '.lesson'].map((selector) => document.querySelector(selector).textContent).join(' '));
  check((await page.textContent('.lesson')).includes('About: the write retry rule') && !/\b[a-z]+_[a-z_]+\b/.test(debriefText),
    `the debrief names guards in words: ${(debriefText.match(/\b[a-z]+_[a-z_]+\b/g) || []).slice(0, 5).join(', ')}`);
  const scored = await page.textContent('#prediction-score');
  check(scored.includes('You called the verdict') && scored.includes('the write retry rule'),
    `the debrief scores the prediction against this run's counterfactual: "${scored.replace(/\s+/g, ' ').slice(0, 120)}"`);
  check((await page.textContent('#prediction-tally')).includes('1 of 1 verdicts right'), 'the tally counts it');
  await shot(page, 'web-debrief', true);
  const replayLink = await page.inputValue('#replay-link');
  check(replayLink.includes('#replay=1.01-naive-retry.1.-.'), `the debrief offers the run as a link: ${replayLink.slice(0, 60)}…`);
  const [download] = await Promise.all([page.waitForEvent('download'), page.click('#debrief-tape')]);
  check(download.suggestedFilename() === '01-naive-retry.web-ada.tape.ron', 'the tape downloads under the level\'s name');
  const tape = readFileSync(await download.path(), 'utf8');
  check(tape.includes('level: "01-naive-retry.level.ron"') && tape.includes('LoseResponse') && tape.includes('paid_twice'),
    'the tape names its level file, the card and the verdict');
  // Back to the level: rewinding re-simulates to an earlier phase.
  await page.click('#back-to-level');
  await page.waitForSelector('#rewind-phase');
  await page.fill('#rewind-phase', '3');
  await page.click('#rewind');
  await page.waitForFunction(() => document.querySelector('#phase').textContent.startsWith('phase 3 '));
  check(true, 'a rewind goes back to phase 3');
  // Play runs phases on its own until paused (Space is its key).
  await page.click('#play');
  await page.waitForFunction(() => Number(document.querySelector('#phase').textContent.match(/phase (\d+)/)[1]) >= 6);
  await page.keyboard.press('Space');
  await page.waitForFunction(() => document.querySelector('#play').textContent.includes('Play'));
  await page.waitForTimeout(600); // a step already on its way when Space was pressed lands
  const paused = await phaseOf(page);
  await page.waitForTimeout(1200);
  check((await phaseOf(page)) === paused && paused >= 6, `play ran to phase ${paused} and pause held it there`);
  // The window's keys, where both editions have the action: . steps, , rewinds one phase,
  // S saves the tape, ? lists them, Esc leaves for the levels (the run stays open).
  await page.locator('body').press('.');
  await page.waitForFunction((before) => Number(document.querySelector('#phase').textContent.match(/phase (\d+)/)[1]) === before + 1, paused).catch(() => {});
  check((await phaseOf(page)) === paused + 1, `. steps one phase, as in the window (${paused} → ${await phaseOf(page)})`);
  await page.locator('body').press(',');
  await page.waitForFunction((before) => Number(document.querySelector('#phase').textContent.match(/phase (\d+)/)[1]) === before, paused).catch(() => {});
  check((await phaseOf(page)) === paused, `, rewinds one phase, as in the window (back to ${await phaseOf(page)})`);
  const [keyed] = await Promise.all([page.waitForEvent('download'), page.locator('body').press('s')]);
  check(keyed.suggestedFilename().endsWith('.tape.ron'), `S saves the tape, as in the window: ${keyed.suggestedFilename()}`);
  await page.locator('body').press('?');
  await page.waitForSelector('#help[open]');
  const listed = await page.$$eval('#help dt', (elements) => elements.map((element) => element.textContent));
  check(listed.includes('. or →') && listed.includes('S') && listed.includes('Esc') && !listed.includes('B') && !listed.includes('T'),
    `the ? list names the window's keys: ${listed.join(' ')}`);
  await page.click('[data-fid="help-close"]');
  await page.locator('body').press('Escape');
  await page.waitForSelector('[data-level="02-one-attempt"]');
  check(!(await page.textContent('[data-level="02-one-attempt"]')).includes('locked'), 'finishing 01 opened 02');

  // Defender mode on 02, judged by the same check as the game: none falls, the minimum holds.
  await page.click('[data-level="02-one-attempt"]');
  await page.click('#open-level');
  await page.waitForSelector('#defend');
  // What counts as a heist is said before the first check: an unpaid customer is one too.
  check((await page.textContent('#defend-heist-means')).includes('leaves one owed money nobody will pay'),
    'the defender says leaving a customer unpaid counts as a heist');
  await page.click('#defend-check');
  await page.waitForSelector('#defence-result');
  check((await page.textContent('#defence-result')).includes('falls'), 'defending 02 with no guard: the defence falls');
  await page.check('[data-fid="defend-write_retry_rule"]');
  await page.click('#defend-check');
  await page.waitForFunction(() => (document.querySelector('#defence-result') || {}).textContent?.includes('holds'), null, { timeout: 60_000 });
  const held = await page.textContent('#defence-result');
  check(held.includes('holds with 1 guard') && held.includes('found no heist'), 'the write retry rule alone holds 02, and the explorer found no heist');
  await shot(page, 'web-defend', true);

  // The link opens the same run, at its end, in another participant's browser.
  const friend = await newPage(browser, 'Katherine');
  await join(friend, 'Katherine', replayLink);
  await friend.waitForSelector('#over');
  check((await friend.textContent('#over')).includes('paid twice'), 'the replay link opens the run at its end: paid twice');
  check((await friend.textContent('.level-head')).includes('sandbox'), 'a replayed run is a sandbox play: it counts for nothing');
  check((await phaseOf(friend)) === endPhase, `the replayed run stops where the run stopped (phase ${endPhase})`);
  await friend.click('#debrief');
  await friend.waitForSelector('#verdict');
  check((await friend.textContent('#verdict')).includes('paid twice'), 'the replayed debrief gives the same verdict');
  await friend.close();

  // ----- 2. URL parameters: any level with chosen guards -----
  const teacher = await newPage(browser, 'Barbara');
  await join(teacher, 'Barbara', `${url}?level=07-look-it-up&guards=ledger,key_per_call`);
  await teacher.waitForSelector('#timeline');
  const head = await teacher.textContent('.level-head');
  check(head.includes('sandbox'), '?level=07-look-it-up&guards=… opens level 07 as a sandbox');
  const guardsOn = await teacher.$$eval('.chip.on', (chips) => chips.map((chip) => chip.textContent.trim()));
  check(guardsOn.length === 2 && guardsOn.some((text) => text.includes('ledger')), `only the chosen guards are on: ${guardsOn.join(', ')}`);

  // A bad link leaves a notice that stays until dismissed, and says what to do.
  const badLinks = [
    ['Mary', '?level=nope', 'no level `nope`', 'pick one from the list'],
    ['Joan', '?level=04-pause', 'is locked', 'Finish the levels it names first'],
    ['Radia', '?level=07-look-it-up&guards=nope', 'unknown guard', 'Fix the link'],
  ];
  for (const [name, query, said, advice] of badLinks) {
    const visitor = await newPage(browser, name);
    await join(visitor, name, `${url}${query}`);
    await visitor.waitForSelector('#alert:not([hidden])');
    await visitor.waitForSelector('[data-level="01-naive-retry"]');
    await visitor.waitForTimeout(1500);
    const alert = await visitor.textContent('#alert');
    check(alert.includes(said) && alert.includes(advice) && await visitor.isVisible('#alert'),
      `${query}: the notice is still there after 1.5 s on the level select, and says what to do`);
    if (query === '?level=nope') await shot(visitor, 'web-bad-link');
    await visitor.click('[data-fid="alert-dismiss"]');
    check(!(await visitor.isVisible('#alert')), `${query}: the notice goes when dismissed`);
    await visitor.close();
  }

  // ----- 3. the room's race: three browsers, one winner -----
  const presenter = await newPage(browser, 'presenter');
  await presenter.goto(presenterUrl);
  await presenter.waitForSelector('#open-race');
  await presenter.click('#show-people');
  await presenter.waitForSelector('#sessions');
  check((await presenter.textContent('#sessions')).includes('Ada'), 'the presenter sees who is in the room');
  await presenter.selectOption('#race-tape', '04-pause.lost-answer');
  await presenter.click('#open-race');
  await presenter.waitForSelector('#race-tries');
  const participants = [];
  const news = raceNews();
  for (const name of PARTICIPANTS) {
    const participant = await newPage(browser, name);
    await news.install(participant);
    await join(participant, name);
    await participant.waitForSelector('#race-completed');
    await participant.fill('#race-reason', `${name} found cr_0001 in billing`);
    participants.push({ name, page: participant });
  }
  await shot(participants[0].page, 'web-race');
  // Everyone at once: the ledger's compare-and-set picks the winner, not the order of clicks.
  // Each page decides on the race it shows (its news held back until every click is in).
  news.hold();
  await Promise.all(participants.map(({ page: participant }, index) =>
    participant.click(index % 2 === 0 ? '#race-completed' : '#race-failed')));
  news.release();
  const results = [];
  for (const { name, page: participant } of participants) {
    await participant.waitForSelector('#race-result');
    results.push({ name, text: await participant.textContent('#race-result') });
  }
  const winners = results.filter((result) => result.text.includes('You won'));
  check(winners.length === 1, `exactly one participant won the race: ${winners.map((winner) => winner.name).join(', ')}`);
  const winner = winners[0].name;
  for (const result of results.filter((candidate) => candidate.name !== winner)) {
    check(result.text.includes('409') && result.text.includes(winner), `${result.name} sees 409 and that ${winner} won`);
  }
  await presenter.waitForFunction((name) => {
    const element = document.querySelector('#race-winner');
    return element && element.textContent.includes(name);
  }, winner);
  await presenter.waitForFunction(() => document.querySelector('#race-tries').textContent.startsWith('3 resolves:'));
  check((await presenter.textContent('#race-tries')).includes('1 won'), 'the presenter sees one winner of three');
  check((await presenter.textContent('.board')).includes('Ada'), 'the scoreboard lists Ada\'s win of level 01');
  await presenter.waitForSelector('#race-winner');
  await shot(presenter, 'web-race-presenter', true);
} catch (error) {
  problems.push(`the flow stopped: ${error.message}`);
} finally {
  await browser.close();
}

finish('browser flow');
