// Twice in a browser: the participant's page. It holds no simulation: every button is a
// request, the server answers with the whole level screen (`GameView`), and this draws it.
// Screens: title → levels → level → debrief, kept in the URL's fragment (#levels, …).
// URL parameters open a level with chosen defences: ?level=07-look-it-up&guards=ledger,key_per_call
'use strict';

/** Phases per second the play button runs at. */
const SPEEDS = [1, 2, 4, 8, 16];
/** Where this browser keeps the name and code it last joined with (the code is the only way
 *  back to a name, so it stays shown after leaving). */
const KEPT_CODE = 'twice.code';

const state = {
  me: null,
  levels: null,
  selected: null,
  game: null,
  screen: 'title',
  playing: false,
  speed: 1,
  busy: false,
  chosenCard: null,
  selectedKey: null,
  reason: '',
  rewindTo: null,
  wanted: null,
  /** Tool declaration drafts, by tool: {side_effect, attempts, takes_key}. */
  drafts: {},
  /** Defender mode on an unbeatable level: {level, on: [guard names], result, checking}. */
  defence: null,
  /** The code line whose aim choices are open (a crash aimed by clicking a line). */
  codeAimLine: null,
  /** A level was just opened: its first drawing scrolls the page to the top. */
  toTop: false,
};

const $ = (id) => document.getElementById(id);

// ----- start -----

async function start() {
  const params = new URLSearchParams(location.search);
  if (params.get('level')) {
    state.wanted = {
      level: params.get('level'),
      guards: params.get('guards') || undefined,
      seed: params.get('seed') ? Number(params.get('seed')) : undefined,
    };
  }
  document.addEventListener('keydown', onKey);
  window.addEventListener('hashchange', route);
  $('leave-confirm').addEventListener('click', leave);
  const me = await api('GET', '/api/me');
  if (me.ok) {
    state.me = me.data;
    await joined();
  } else {
    showTitle();
  }
}

async function joined() {
  keepCode(state.me);
  // Opening the room's address again (or joining again) lands where the participant was: on
  // their open level, not on the list.
  if (!location.hash && state.me.game && !state.wanted) {
    history.replaceState(null, '', `${location.pathname}#${state.me.stage ? 'stage' : 'level'}`);
  }
  document.body.classList.toggle('stage-view', Boolean(state.me.stage) && location.hash === '#stage');
  renderTop();
  followRace();
  if (state.wanted) {
    const wanted = state.wanted;
    state.wanted = null;
    // The parameters did their job: a reload must not open (and restart) the level again.
    history.replaceState(null, '', `${location.pathname}#levels`);
    if (await openLevel(wanted.level, wanted.guards, wanted.seed, linkAdvice)) return;
  }
  route();
}

/** A shared run (a debrief's replay link): opened at its end, as a sandbox play. */
async function openReplay(link) {
  // Replaced first: a reload must not open the run again.
  history.replaceState(null, '', `${location.pathname}#levels`);
  const answer = await api('POST', '/api/replay', {link});
  if (!answer.ok) {
    if (!lost(answer)) {
      alertProblem(problemText(answer), 'The replay link could not be opened: ask for the whole link again (it ends with the moves), or pick a level from the list below.');
      showLevels();
    }
    return;
  }
  state.game = answer.data;
  state.playing = false;
  go('level');
  notice('A shared run, opened at its end: open the debrief (Enter), or rewind to watch it.');
}

/** What to do about a link whose level could not be opened, by the server's error code. */
function linkAdvice(answer) {
  const code = answer.data && answer.data.code;
  if (code === 'unknown_level') return 'The link names a level this room does not have: pick one from the list below, or ask for a corrected link (?level= takes a level\'s file name, e.g. 01-naive-retry).';
  if (code === 'locked') return 'Finish the levels it names first (they are open in the list below), or ask the presenter to open the workshop\'s path for the room.';
  if (code === 'invalid_value') return 'Fix the link\'s guards= (guard names, comma-separated, or all / none), or pick a level from the list below and play it with its own guards.';
  return 'Pick a level from the list below.';
}

/**
 * A problem that stays until dismissed: a bad link, a locked level. It says what went
 * wrong and what to do; moving between screens does not take it away.
 */
function alertProblem(text, advice) {
  const element = $('alert');
  render(element,
    h('p', {}, h('strong', {}, '⚠ '), text),
    advice ? h('p', {class: 'hint'}, advice) : null,
    h('button', {'data-fid': 'alert-dismiss', onclick: () => { render(element); element.hidden = true; }}, 'Dismiss'));
  element.hidden = false;
}

function route() {
  if (!state.me) return showTitle();
  const screen = location.hash.slice(1) || 'levels';
  document.body.classList.toggle('stage-view', screen === 'stage');
  if (screen.startsWith('replay=')) return openReplay(screen);
  if (screen === 'level' || screen === 'stage') return showLevel();
  if (screen === 'debrief') return showDebrief();
  return showLevels();
}

function go(screen) {
  notice('');
  // The presenter's stage shows its level large: the level screen there is the stage.
  const target = screen === 'level' && state.me && state.me.stage ? 'stage' : screen;
  if (location.hash === `#${target}`) route(); else location.hash = target;
}

/** The name and code this browser joined with, kept so the code is still shown after leaving. */
function keepCode(me) {
  if (me && me.code && !me.stage) localStorage.setItem(KEPT_CODE, JSON.stringify({name: me.name, code: me.code}));
}

function keptCode() {
  try { return JSON.parse(localStorage.getItem(KEPT_CODE) || 'null'); } catch (_) { return null; }
}

/** The session ended (idle too long, or the server restarted): back to the title. */
function lost(answer) {
  if (answer.status !== 401) return false;
  state.me = null;
  state.game = null;
  state.playing = false;
  forgetRace();
  showTitle((answer.data && answer.data.error) || 'your session ended: join again');
  return true;
}

function renderTop() {
  if (!state.me) {
    render($('who'));
    render($('topnav'));
    return;
  }
  if (state.me.stage) {
    render($('who'), h('strong', {}, 'The stage'), h('span', {class: 'hint'}, ' · the presenter shows a level to the room'));
    render($('topnav'), h('button', {'data-fid': 'nav-levels', onclick: () => go('levels')}, 'Levels'));
    return;
  }
  render($('who'), h('strong', {class: 'who-name'}, state.me.name),
    h('span', {class: 'code', id: 'my-code', title: 'On another browser, join with your name and this code to carry on where you are'},
      ' · ', h('span', {class: 'code-label'}, 'your code '), h('strong', {class: 'mono', 'data-fid': 'my-code'}, state.me.code)),
    h('span', {class: 'who-path'}, state.me.unlock_all ? ' · every level is open'
      : state.me.path.length ? ` · the room's path is open: ${state.me.path_numbers.join(', ')}` : ''));
  render($('topnav'),
    h('button', {'data-fid': 'nav-levels', onclick: () => go('levels')}, 'Levels'),
    h('button', {'data-fid': 'nav-help', onclick: () => $('help').showModal(), title: 'keys', 'aria-label': 'keys'}, '?'),
    h('button', {'data-fid': 'nav-leave', id: 'nav-leave', onclick: askToLeave}, 'Leave the room'));
}

/** Leaving is asked twice, and says how to come back: the name and its code. */
function askToLeave() {
  const dialog = $('leave');
  render($('leave-text'),
    h('p', {}, 'Your progress stays in the room. To come back as ', h('strong', {}, state.me.name),
      ' — on this browser or any other — join with your name and this code:'),
    h('p', {class: 'big-code mono', id: 'leave-code'}, state.me.code),
    h('p', {class: 'hint'}, 'Write it down: nothing else brings your name back.'));
  dialog.showModal();
  const stay = dialog.querySelector('[data-fid="leave-stay"]');
  if (stay) stay.focus();
}

async function leave() {
  $('leave').close();
  const me = state.me;
  await api('POST', '/api/leave');
  state.me = null;
  state.game = null;
  state.playing = false;
  forgetRace();
  history.replaceState(null, '', location.pathname);
  keepCode(me);
  showTitle(null, `You left the room as ${me.name}. To come back, join with your name and your code ${me.code} (filled in below).`);
}

// ----- title -----

function showTitle(error, left) {
  state.screen = 'title';
  document.body.classList.remove('stage-view');
  renderTop();
  const kept = keptCode();
  const wanted = state.wanted
    ? h('p', {class: 'hint'}, `After you join, level ${state.wanted.level} opens`,
      state.wanted.guards ? ` with the guards ${state.wanted.guards} on` : '', '.')
    : location.hash.startsWith('#replay=') ? h('p', {class: 'hint'}, 'After you join, the run someone sent you opens at its end.')
      : null;
  const name = h('input', {type: 'text', id: 'name', name: 'name', maxlength: 32, required: true,
    autocomplete: 'nickname', 'data-fid': 'name', placeholder: 'e.g. Ada'});
  const problem = h('p', {class: 'error', role: 'alert'}, error || '');
  const code = h('input', {type: 'text', id: 'code', name: 'code', maxlength: 6, autocomplete: 'off',
    'data-fid': 'code', placeholder: 'e.g. K7M2QX', class: 'mono'});
  const codeRow = h('div', {class: 'stack', hidden: true},
    h('label', {for: 'code'}, 'Your code — shown beside your name on your old screen; it takes your name and progress back'),
    code);
  if (kept) {
    name.value = kept.name;
    code.value = kept.code;
    codeRow.hidden = false;
  }
  const form = h('form', {onsubmit: async (event) => {
    event.preventDefault();
    const body = {name: name.value};
    if (code.value.trim()) body.code = code.value.trim();
    const answer = await api('POST', '/api/join', body);
    if (!answer.ok) {
      problem.textContent = problemText(answer);
      if (answer.data && ['name_taken', 'wrong_code', 'too_many_tries'].includes(answer.data.code)) {
        codeRow.hidden = false;
        code.focus();
      }
      return;
    }
    state.me = answer.data;
    await joined();
  }},
  h('label', {for: 'name'}, 'Your name — the room and the presenter see it'),
  h('div', {class: 'row'}, name, h('button', {type: 'submit', class: 'primary', id: 'join', 'data-fid': 'join'}, 'Join the room')),
  codeRow,
  problem);
  render($('screen'), h('div', {class: 'title-screen panel'},
    h('h1', {}, 'Twice'),
    left ? h('p', {class: 'left-note', id: 'left-note', role: 'status'}, left) : null,
    kept && !left ? h('p', {class: 'hint', id: 'kept-code'}, `This browser last joined as ${kept.name}, code `,
      h('strong', {class: 'mono'}, kept.code), ' (filled in below: change the name to join as someone new).') : null,
    h('p', {class: 'tagline'}, 'Penny the refund bot pays customers through a ledger-backed agent runtime. ',
      'You are the heist crew: lose her answers, crash her workers, start twins — make her pay twice.'),
    h('p', {}, 'Every level switches a guard of the runtime off or on, so you see each one fail when it is absent ',
      'and hold when it is present. Nothing to install: the simulation runs on the presenter\'s server.'),
    wanted, form));
  name.focus();
}

// ----- level select -----

async function showLevels() {
  state.screen = 'levels';
  state.playing = false;
  const answer = await api('GET', '/api/levels');
  if (!answer.ok) {
    if (!lost(answer)) notice(problemText(answer), true);
    return;
  }
  state.levels = answer.data;
  const me = await api('GET', '/api/me');
  if (me.ok) { state.me = me.data; renderTop(); }
  if (!state.selected || !state.levels.some((level) => level.stem === state.selected)) {
    // The level open now first (coming back to the list is not a new start), else the next one.
    const open = state.levels.find((level) => level.open_now);
    const next = state.levels.find((level) => level.playable && level.state.word !== 'finished');
    state.selected = (open || next || state.levels[0]).stem;
  }
  renderLevels();
}

function renderLevels() {
  const list = [];
  let chapter = null;
  for (const level of state.levels) {
    if (level.chapter !== chapter) {
      chapter = level.chapter;
      list.push(h('h3', {}, `Chapter ${level.chapter} · ${level.chapter_title}`));
    }
    list.push(h('button', {
      class: level.stem === state.selected ? 'chosen' : '',
      'data-fid': `level-${level.stem}`,
      'data-level': level.stem,
      'aria-pressed': level.stem === state.selected ? 'true' : 'false',
      onclick: () => { state.selected = level.stem; renderLevels(); },
    }, lookSpan(level.state), h('span', {class: 'level-number mono'}, level.number), level.title,
    level.open_now ? h('span', {class: 'chip open-now', title: 'the level you have open'}, 'open') : null,
    level.on_path ? h('span', {class: 'chip', title: 'on the room\'s path: open to everyone'}, 'path') : null));
  }
  const level = state.levels.find((candidate) => candidate.stem === state.selected);
  render($('screen'), h('div', {class: 'levels'},
    h('nav', {class: 'panel level-list', 'aria-label': 'levels', 'data-scroll': 'levels'}, h('h2', {}, 'Choose a level'), list),
    level ? levelDetail(level) : null));
}

/** The level open elsewhere in this session, if it is not `level`. */
function otherOpen(level) {
  return state.levels.find((candidate) => candidate.open_now && candidate.stem !== level.stem);
}

function levelDetail(level) {
  const phase = level.open_now && level.open_now.phase !== null ? ` (phase ${level.open_now.phase})` : '';
  const label = !level.playable ? '⊘ Locked'
    : level.open_now ? `Carry on with “${level.title}”${phase}` : `Play “${level.title}”`;
  const open = h('button', {
    class: 'primary', id: 'open-level', 'data-fid': 'open-level', disabled: !level.playable,
    onclick: () => (level.open_now ? go('level') : openLevel(level.stem)),
  }, label);
  const other = level.playable && !level.open_now ? otherOpen(level) : null;
  return h('section', {class: 'panel level-detail stack'},
    h('p', {class: 'hint'}, `${level.number ? `${level.number} · ` : ''}Chapter ${level.chapter} · ${level.chapter_title} · `, lookSpan(level.state)),
    h('h1', {}, level.title),
    h('p', {class: 'briefing'}, level.briefing),
    h('p', {id: 'level-goal'}, h('strong', {}, 'Goal: '), level.goal_words.sentence),
    h('p', {}, h('strong', {}, 'Your hand: '),
      level.cards.length ? level.cards.map((card) => h('span', {class: 'chip'}, `${card.title} × ${card.count}`)) : 'no cards'),
    guardsLine(level.guards_listed),
    level.requires.length ? h('p', {class: 'hint'}, `Opens when you finish: ${level.requires.join(', ')}`) : null,
    level.best ? h('p', {}, h('strong', {}, 'Your best: '), lookSpan(level.best.outcome),
      ` with ${counted(level.best.cards, 'card', 'cards')} in ${counted(level.best.phases, 'phase', 'phases')}`) : null,
    level.par ? h('p', {class: 'hint'}, `Par: ${counted(level.par.cards, 'card', 'cards')}, ${counted(level.par.phases, 'phase', 'phases')}`) : null,
    h('div', {class: 'row'}, open,
      level.open_now ? h('span', {class: 'hint'}, 'Restart it from the level screen to play it from the start.') : null),
    other ? h('p', {class: 'hint', id: 'leaves-open'}, `You have “${other.title}” open${other.open_now.phase !== null ? ` at phase ${other.open_now.phase}` : ''}: `,
      'playing this one leaves that run (your progress on it stays).') : null);
}

/** The guards a level names, in the player's words: off here, the lesson's, the rest on demand. */
// A debrief line that says a guard did nothing here, or that its re-run cannot say: drawn dim.
function quietPart(part) {
  return part === 'not_needed' || part === 'cannot_say';
}

function guardsLine(listed) {
  const chip = (guard) => h('span', {class: `chip ${guard.on ? 'on' : 'off'}`, title: guard.describe, 'data-guard': guard.name},
    `${guard.on ? '✔' : '✘'} ${guard.words}`);
  return h('div', {class: 'guards-line', id: 'guards-line'},
    h('p', {}, h('strong', {}, 'Off here: '), listed.off.length ? listed.off.map(chip) : 'none — every guard is on'),
    listed.lesson_on.length ? h('p', {}, h('strong', {}, 'On, and what this level is about: '), listed.lesson_on.map(chip)) : null,
    listed.others_on.length ? h('details', {class: 'more-guards'},
      h('summary', {}, `${counted(listed.others_on.length, 'other guard', 'other guards')} on`),
      h('p', {}, listed.others_on.map(chip))) : null);
}

async function openLevel(name, guards, seed, advice) {
  const answer = await api('POST', '/api/game', {level: name, guards, seed});
  if (!answer.ok) {
    if (!lost(answer)) alertProblem(problemText(answer), (advice || levelAdvice)(answer));
    return false;
  }
  state.game = answer.data;
  state.chosenCard = null;
  state.selectedKey = null;
  state.reason = '';
  state.rewindTo = null;
  state.playing = false;
  // A level just opened starts at its top (the debrief's Next level is far down its page).
  state.toTop = true;
  go('level');
  return true;
}

/** What to do about a level that did not open from the level select. */
function levelAdvice(answer) {
  const code = answer.data && answer.data.code;
  if (code === 'locked') return 'Finish the levels it names first, or ask the presenter to open the workshop\'s path.';
  return 'Try again, or pick another level.';
}

// ----- the level screen -----

async function showLevel() {
  state.screen = 'level';
  if (!state.game) {
    const answer = await api('GET', '/api/game');
    if (!answer.ok) {
      if (!lost(answer)) go('levels');
      return;
    }
    state.game = answer.data;
  }
  renderLevel();
}

/** A move or a control: one request; the answer is the new level screen. */
async function move(path, body, quiet) {
  if (state.busy) return false;
  // Time never moves past a card waiting for its target: it would be dropped unplayed.
  if (state.chosenCard && (path === '/api/game/step' || path === '/api/game/run')) {
    state.playing = false;
    notice(`${cardTitle(state.chosenCard)} is not played yet: pick its target under the card, or Cancel, then step.`, true);
    renderLevel();
    const first = document.querySelector(`[data-fid="target-${state.chosenCard}-0"]`);
    if (first) first.focus();
    return false;
  }
  state.busy = true;
  const before = state.game;
  const answer = await api('POST', path, body);
  state.busy = false;
  if (!answer.ok) {
    state.playing = false;
    if (!lost(answer)) {
      notice(problemText(answer), true);
      if (state.screen === 'level') renderLevel();
    }
    return false;
  }
  state.game = answer.data;
  if (state.game.end && !(before && before.end)) {
    state.playing = false;
    notice(`The level is quiet: ${state.game.end.verdict.outcome.word}. Open the debrief (Enter).`);
  } else if (state.game.over && !state.game.end && !(before && before.over)) {
    state.playing = false;
    notice('Penny waits for an operator: you hold a move that can settle the call. Use the operator console.');
  } else if (!quiet && body && body.play) {
    notice(`Played: ${cardTitle(body.play)}`);
  }
  if (state.screen === 'level') renderLevel();
  return true;
}

function cardTitle(play) {
  const name = typeof play === 'string' ? play : Object.keys(play)[0];
  const card = state.game && state.game.hand.find((candidate) => candidate.card === name);
  return card ? card.title : name;
}

const step = () => move('/api/game/step', {phases: 1});
const runToEnd = () => { state.playing = false; return move('/api/game/run'); };
const restart = () => { state.playing = false; state.rewindTo = null; return move('/api/game/restart'); };
const play = (playValue) => { state.chosenCard = null; return move('/api/game/play', {play: playValue}); };

/** The code panel's aim: a crash card, aimed by clicking a line (the server holds the aim). */
const codeAim = () => ({
  line: state.codeAimLine,
  open: (line) => { state.codeAimLine = state.codeAimLine === line ? null : line; renderLevel(); },
  cancel: () => { state.codeAimLine = null; renderLevel(); },
  choose: (worker, line) => {
    state.codeAimLine = null;
    const aimed = state.game.code.lines[line - 1].aims.includes(worker);
    const played = state.game.played.length;
    return move('/api/game/aim', {worker, line}, true).then((ok) => {
      if (!ok) return;
      if (state.game.played.length > played) notice(`Played: Crash a worker — w${worker} is killed at line ${line}.`);
      else notice(aimed ? `Taken back: w${worker} is no longer aimed at line ${line}.`
        : `Aimed: w${worker} is killed when it reaches line ${line} (the card is played then).`);
    });
  },
});

function rewind(phase) {
  state.playing = false;
  state.rewindTo = null;
  return move('/api/game/rewind', {phase: Math.max(0, phase)}).then((ok) => {
    if (ok) {
      if (state.screen !== 'level') go('level');
      notice(`Rewound to phase ${state.game.phase}: re-simulated from the seed and your moves before it.`);
    }
    return ok;
  });
}

function togglePlaying() {
  if (!state.game) return;
  if (state.playing) {
    state.playing = false;
    renderLevel();
    return;
  }
  if (state.game.over) {
    notice('The level is quiet: rewind, restart, or open the debrief.', true);
    return;
  }
  state.playing = true;
  renderLevel();
  autoplay();
}

async function autoplay() {
  while (state.playing && state.screen === 'level') {
    const speed = SPEEDS[state.speed];
    // Above four phases a second, several phases per request: fewer requests for the room.
    const phases = Math.max(1, Math.round(speed / 4));
    const started = performance.now();
    const ok = await move('/api/game/step', {phases}, true);
    if (!ok || state.game.over) {
      state.playing = false;
      renderLevel();
      return;
    }
    const wait = (1000 * phases) / speed - (performance.now() - started);
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, wait)));
  }
}

function renderLevel() {
  const game = state.game;
  if (!game || state.screen !== 'level') return;
  // Panels arrive chapter by chapter, as in the window (the server says which: twice-world's rule).
  const desk = [game.panels.ledger ? ledgerPanel(game) : null, game.panels.console ? consolePanel(game) : null].filter(Boolean);
  // The presenter's stage shows the room the code beside the stage, large, a cursor per worker
  // moving as the presenter steps; a player's screen keeps it under the stage.
  const onStage = document.body.classList.contains('stage-view');
  const stage = h('div', {class: 'stage'}, pennyPanel(game), wirePanel(game), billingPanel(game));
  const code = codePanel(game.code, {aim: codeAim(), large: onStage});
  render($('screen'), h('div', {class: 'level-screen'},
    levelHead(game),
    controls(game),
    h('details', {class: 'briefing', open: game.phase === 0 ? true : undefined},
      h('summary', {}, 'Briefing'), h('p', {}, game.level.briefing),
      h('p', {}, h('strong', {}, 'Goal: '), game.level.goal_words.sentence),
      guardsLine(game.guards_listed)),
    game.end ? overBanner(game) : null,
    predictPanel(game),
    // A player's hand comes right under the stage, above the long code listing: at 1280×720
    // it is then on the first screen, beside what its cards hit.
    onStage ? [h('div', {class: 'stage-with-code'}, stage, code), hand(game)] : [stage, hand(game), code],
    game.declaration ? declarationPanel(game) : null,
    game.level.defender ? defendPanel(game) : null,
    desk.length ? h('div', {class: `desk ${desk.length === 1 ? 'single' : ''}`}, desk) : null,
    timelinePanel(game)));
  if (state.toTop) {
    state.toTop = false;
    window.scrollTo(0, 0);
  }
  if (onStage) followCursor();
}

/**
 * On the stage the loop scrolls in a box of its own: keep the first live cursor's line in view,
 * a third of the way down, so the room sees it move as the presenter steps.
 */
function followCursor() {
  const list = document.querySelector('.stage-with-code .code-lines');
  const lit = list && list.querySelector('.code-line.lit');
  if (!lit) return;
  // The list is positioned: a line's offsetTop is measured from the list's own top.
  list.scrollTop = Math.max(0, lit.offsetTop - list.clientHeight / 3);
}

/** A panel met here for the first time in the campaign: a mark and what it is for. */
function arrival(game, id) {
  const panel = game.panels.arriving.find((candidate) => candidate.id === id);
  return panel ? [h('span', {class: 'badge new', 'data-arrives': id}, 'new'), h('span', {class: 'hint'}, panel.introduction)] : null;
}

function levelHead(game) {
  const goal = game.level.goal_words;
  return h('div', {class: 'level-head'},
    h('h1', {}, game.level.number ? h('span', {class: 'level-number mono'}, game.level.number) : null, game.level.title),
    h('span', {class: 'hint chapter'}, `Chapter ${game.level.chapter} · ${game.level.chapter_title}`),
    h('span', {class: `badge ${game.mode}`}, game.mode === 'sandbox' ? 'sandbox: chosen guards, no progress' : 'campaign'),
    h('span', {class: 'phase', id: 'phase'}, `phase ${game.phase} / ${game.level.max_phases} · ${game.now_ms} ms`),
    h('span', {id: 'goal', title: goal.sentence}, 'Goal: ',
      goal.finish === 'heist' ? [lookSpan(goal.outcome), h('span', {class: 'hint'}, ` (${goal.short})`)] : h('strong', {class: 'tone-violet'}, goal.short)));
}

function controls(game) {
  const rewindTo = state.rewindTo === null ? Math.max(0, game.phase - 1) : state.rewindTo;
  const rewindInput = h('input', {type: 'number', min: 0, max: game.phase, value: rewindTo, id: 'rewind-phase',
    'data-fid': 'rewind-phase', 'aria-label': 'phase to rewind to',
    oninput: (event) => { state.rewindTo = Number(event.target.value); }});
  const speed = h('select', {'data-fid': 'speed', 'aria-label': 'speed', onchange: (event) => { state.speed = Number(event.target.value); }},
    SPEEDS.map((value, index) => h('option', {value: index, selected: index === state.speed ? true : undefined}, `${value} phase${value > 1 ? 's' : ''}/s`)));
  return h('div', {class: 'controls', role: 'toolbar', 'aria-label': 'controls'},
    h('button', {id: 'step', 'data-fid': 'step', onclick: step, disabled: game.over}, h('kbd', {}, '.'), 'Step'),
    h('button', {id: 'play', 'data-fid': 'play', onclick: togglePlaying, disabled: game.over && !state.playing},
      h('kbd', {}, 'Space'), state.playing ? '‖ Pause' : '▶ Play'),
    speed,
    h('button', {id: 'run', 'data-fid': 'run', onclick: runToEnd, disabled: game.over}, h('kbd', {}, 'E'), 'Run to end'),
    h('span', {class: 'row'}, rewindInput,
      h('button', {id: 'rewind', 'data-fid': 'rewind', onclick: () => rewind(Number(rewindInput.value)), disabled: game.phase === 0},
        h('kbd', {}, ','), '⟲ Rewind')),
    h('button', {id: 'restart', 'data-fid': 'restart', onclick: restart}, h('kbd', {}, 'R'), 'Restart'),
    h('a', {class: 'button', id: 'save-tape', 'data-fid': 'save-tape', href: '/api/game/tape', download: ''}, h('kbd', {}, 'S'), 'Save tape'),
    h('button', {id: 'debrief', class: game.end ? 'primary' : '', 'data-fid': 'debrief', disabled: !game.end, onclick: () => go('debrief')},
      h('kbd', {}, 'Enter'), 'Debrief'));
}

function overBanner(game) {
  const verdict = game.end.verdict;
  return h('div', {class: 'over-banner', id: 'over'},
    h('strong', {}, 'The level is quiet.'), lookSpan(game.end.headline),
    verdict.goal_reached ? h('span', {class: 'tone-crew'}, '★ the heist worked') : h('span', {class: 'hint'}, 'the heist did not reach its goal'),
    h('button', {class: 'primary', 'data-fid': 'banner-debrief', onclick: () => go('debrief')}, 'Open the debrief'),
    h('span', {class: 'hint', id: 'over-hint'}, game.out_of_phases ? 'the phase limit is reached'
      : game.level.goal_words.finish === 'defence' && !verdict.goal_reached
        ? 'the runtime held, as it does here: no play finishes this level; a defence that holds does (below)'
      : cardsLeft(game) > 0 ? `you still hold ${counted(cardsLeft(game), 'card', 'cards')}: rewind to play ${cardsLeft(game) === 1 ? 'it' : 'them'} at another moment`
        : 'no card left to play: rewind or restart to try again'));
}

/** The tally of scored predictions, in one line. */
function tallyText(tally) {
  if (!tally.predictions) return 'No prediction scored yet.';
  return `Your predictions: ${tally.verdicts_right} of ${tally.predictions} verdicts right` +
    (tally.guards_named ? `, ${tally.guards_right} of ${tally.guards_named} deciding guards right.` : '.');
}

/** Predict, then watch: before the run plays out, the verdict and (optionally) the deciding guard. */
function predictPanel(game) {
  const prediction = game.prediction;
  if (!prediction.open && !prediction.made) {
    return prediction.score ? null : h('section', {class: 'panel predict', id: 'predict'},
      h('p', {class: 'hint'}, `${tallyText(prediction.tally)} Restart or rewind to predict a run before it plays out.`));
  }
  if (prediction.made) {
    return h('section', {class: 'panel predict', id: 'predict'},
      h('p', {}, h('strong', {id: 'prediction-made'}, prediction.made.sentence),
        h('span', {class: 'hint'}, ` Made at phase ${prediction.made.at_phase}; scored against this run's counterfactual when it ends.`)));
  }
  const verdict = h('select', {'data-fid': 'predict-verdict', id: 'predict-verdict', 'aria-label': 'the verdict you predict'},
    h('option', {value: 'heist_fails'}, 'the heist fails'),
    h('option', {value: 'heist_works'}, 'the heist works'));
  // What can decide in this level, in words, "no guard" last (the world's own list).
  const guard = h('select', {'data-fid': 'predict-guard', id: 'predict-guard', 'aria-label': 'what you predict will decide it'},
    h('option', {value: ''}, 'decided by: I won\'t say'),
    prediction.choices.map((choice) => h('option', {value: choice.value, title: choice.promise},
      choice.on === null ? choice.words : `decided by ${choice.words} (${choice.on ? 'on' : 'off'})`)));
  return h('section', {class: 'panel predict row', id: 'predict', 'aria-label': 'predict this run'},
    h('strong', {}, 'Predict, then watch:'), verdict, guard,
    h('button', {id: 'predict-button', 'data-fid': 'predict', onclick: () => predict(verdict.value, guard.value)}, 'Predict'),
    h('span', {class: 'hint'}, prediction.counted ? tallyText(prediction.tally) : 'A sandbox play: the score is shown, the tally does not count it.'));
}

async function predict(verdict, guard) {
  if (await move('/api/game/predict', {verdict, guard: guard || null}, true)) {
    notice(state.game.prediction.made.sentence);
  }
}

/** Cards the player still holds (the hand's 1/1 … 0/0). */
function cardsLeft(game) {
  return game.hand.reduce((total, card) => total + card.left, 0);
}

/** A card played from the hand (not the console's or the declaration's). */
const fromTheHand = (card) => !card.operator && !card.declaration;

function hand(game) {
  const playable = !game.out_of_phases;
  // A chosen card whose targets went (the message arrived, the worker died) is chosen no more.
  const stillChosen = game.hand.find((card) => card.card === state.chosenCard);
  if (!stillChosen || stillChosen.targets.length === 0) state.chosenCard = null;
  const cards = game.hand.map((card, index) => {
    const spent = card.left === 0;
    const chosen = state.chosenCard === card.card;
    // The server says why a card cannot be played now, in this run's terms; its button is
    // then disabled and the reason stands where its effect would.
    const refused = fromTheHand(card) && card.refusal;
    const reasonId = `card-reason-${card.card}`;
    let action;
    if (card.operator) {
      action = h('button', {'data-fid': `card-${card.card}`, disabled: spent || !playable, onclick: focusReason}, 'Console');
    } else if (card.declaration) {
      action = h('button', {'data-fid': `card-${card.card}`, disabled: spent || !playable, onclick: focusDeclaration}, 'Declare ↓');
    } else {
      action = h('button', {class: 'primary', 'data-fid': `card-${card.card}`, 'data-card': card.card,
        'aria-describedby': reasonId, disabled: spent || !playable || Boolean(refused),
        onclick: () => chooseCard(card)}, chosen ? 'Target ↓' : 'Play');
    }
    const targets = chosen && fromTheHand(card)
      ? h('div', {class: 'targets', role: 'group', 'aria-label': `targets for ${card.title}`},
        // Until a target is picked nothing is played, and a step waits (see `move`).
        h('p', {class: 'hint', 'data-fid': `target-prompt-${card.card}`}, 'Not played yet: pick what it acts on.'),
        card.targets.map((target, targetIndex) => h('button', {'data-fid': `target-${card.card}-${targetIndex}`,
          onclick: () => play(target.play)}, target.label)),
        h('button', {'data-fid': `target-cancel-${card.card}`, onclick: () => { state.chosenCard = null; renderLevel(); }}, 'Cancel'))
      : null;
    return h('div', {class: `card ${spent ? 'spent' : ''} ${refused && !spent ? 'refused' : ''}`},
      h('div', {class: 'card-head'}, index < 9 ? h('kbd', {}, index + 1) : null, h('span', {class: 'card-title'}, card.title),
        h('span', {class: 'mono'}, `× ${card.left}`), action),
      refused && !spent
        ? h('div', {class: 'hint refusal', id: reasonId, 'data-fid': `card-refusal-${card.card}`}, `⊘ ${card.refusal}`)
        : h('div', {class: 'hint', id: reasonId}, card.effect),
      targets);
  });
  return h('section', {class: 'panel hand', 'aria-label': 'your hand'},
    h('h2', {}, 'Your hand', h('span', {class: 'hint'},
      game.armed.length ? '' : 'a card takes effect before the next phase')),
    game.armed.length ? h('p', {class: 'armed'}, `Armed: ${game.armed.join(' · ')}`) : null,
    cards.length ? h('div', {class: 'cards'}, cards) : h('p', {class: 'hint'}, 'This level gives you no cards: watch, step and rewind.'),
    game.played.length ? h('p', {class: 'hint'}, 'Played: ',
      game.played.map((played) => `${played.title} before phase ${played.at_phase}`).join(' · ')) : null);
}

function chooseCard(card) {
  if (card.refusal) {
    notice(`${card.title}: ${card.refusal}`, true);
    return;
  }
  if (card.plays_at_once) {
    play(card.targets[0].play);
    return;
  }
  state.chosenCard = card.card;
  renderLevel();
  const first = document.querySelector(`[data-fid="target-${card.card}-0"]`);
  if (first) first.focus();
}

function focusDeclaration() {
  const field = document.querySelector('[data-fid^="declare-side-effect-"]');
  if (field) field.focus();
}

/** The draft of a tool's declaration: what the form shows, starting from the tool as declared. */
function draftOf(tool) {
  const draft = state.drafts[tool.tool];
  if (draft) return draft;
  return {side_effect: tool.side_effect, attempts: tool.attempts, takes_key: tool.takes_key};
}

/** The tool declaration: the player, as the developer, declares a tool before Penny's first call. */
function declarationPanel(game) {
  const desk = game.declaration;
  const blocked = game.out_of_phases ? 'the phase limit is reached'
    : desk.closed ? desk.closed
      : desk.left === 0 ? 'no declarations left in this level' : null;
  const tools = desk.tools.map((tool) => {
    const draft = draftOf(tool);
    const verdict = tool.drafts.find((candidate) => candidate.side_effect === draft.side_effect
      && candidate.attempts === draft.attempts && candidate.takes_key === draft.takes_key);
    const redraw = (change) => { state.drafts[tool.tool] = {...draft, ...change}; renderLevel(); };
    const sideEffect = h('select', {'data-fid': `declare-side-effect-${tool.tool}`, 'aria-label': `${tool.tool}: side effect`,
      onchange: (event) => redraw({side_effect: event.target.value})},
    desk.side_effects.map((name) => h('option', {value: name, selected: name === draft.side_effect ? true : undefined}, name)));
    const attempts = h('select', {'data-fid': `declare-attempts-${tool.tool}`, 'aria-label': `${tool.tool}: attempts`,
      onchange: (event) => redraw({attempts: Number(event.target.value)})},
    Array.from({length: desk.attempts_max}, (_, index) => index + 1).map((count) =>
      h('option', {value: count, selected: count === draft.attempts ? true : undefined}, `${count} attempt${count > 1 ? 's' : ''}`)));
    const key = h('input', {type: 'checkbox', 'data-fid': `declare-key-${tool.tool}`, id: `declare-key-${tool.tool}`,
      checked: draft.takes_key ? true : undefined, onchange: (event) => redraw({takes_key: event.target.checked})});
    const move = {DeclareTool: {tool: tool.tool, side_effect: draft.side_effect, attempts: draft.attempts, takes_key: draft.takes_key}};
    return h('div', {class: 'declared-tool'},
      h('p', {}, h('strong', {class: 'mono'}, tool.tool), ` is declared ${tool.summary}: `,
        h('span', {class: tool.passes ? 'tone-good' : 'tone-bad', 'data-fid': `declared-verdict-${tool.tool}`},
          tool.passes ? '✔ passes the contract check' : `✘ ${tool.violation}`)),
      h('div', {class: 'row'}, sideEffect, attempts, h('label', {for: `declare-key-${tool.tool}`}, key, ' takes the idempotency key'),
        h('button', {class: 'primary', 'data-fid': `declare-${tool.tool}`, disabled: Boolean(blocked), title: blocked || 'declare it',
          onclick: () => play(move)}, 'Declare')),
      verdict ? h('p', {class: verdict.passes && !verdict.policy ? 'tone-good' : 'tone-bad', 'data-fid': `draft-verdict-${tool.tool}`},
        verdict.passes
          ? (verdict.policy ? `This draft passes the contract check, but the ambiguity policy check (on here) refuses it: ${verdict.policy}` : 'This draft passes the contract check.')
          : `The check would say: ${verdict.violation}`) : null,
      verdict ? draftCode(verdict.code, `draft-code-${tool.tool}`) : null);
  });
  return h('section', {class: 'panel declaration', 'aria-label': 'tool declaration'},
    h('h2', {}, 'Tool declaration', h('span', {class: 'hint'},
      desk.check_on ? 'the contract check is on: a run whose tool fails it never starts'
        : 'the contract check is off: the runtime obeys the declaration')),
    tools,
    h('p', {class: 'hint'}, blocked ? `Declaring: ${blocked}` : `declarations left × ${desk.left} · legal before Penny's first call; the runs start again under it`));
}

/** Defender mode: switch guards on within the budget; the server checks them as the game does. */
function defendPanel(game) {
  if (!state.defence || state.defence.level !== game.level.stem) {
    state.defence = {level: game.level.stem, on: [], result: null, checking: false};
  }
  const defence = state.defence;
  const budget = game.level.defender.budget;
  const full = defence.on.length >= budget;
  const toggles = game.guards.map((guard) => {
    const on = defence.on.includes(guard.name);
    return h('label', {class: `chip ${on ? 'on' : 'off'}`, title: guard.describe},
      h('input', {type: 'checkbox', 'data-fid': `defend-${guard.name}`, checked: on ? true : undefined,
        disabled: (!on && full) || defence.checking ? true : undefined,
        onchange: (event) => {
          defence.on = event.target.checked ? [...defence.on, guard.name] : defence.on.filter((name) => name !== guard.name);
          defence.result = null;
          renderLevel();
        }}),
      ` ${guard.words}`);
  });
  const result = defence.result;
  return h('section', {class: 'panel defend', 'aria-label': 'defend this level', id: 'defend'},
    h('h2', {}, 'Defend', h('span', {class: 'hint'},
      `every guard off to start: switch on at most ${budget} so that no heist gets through`)),
    // What counts as a heist here, as the window says it: an unpaid customer is one too.
    h('p', {class: 'hint', id: 'defend-heist-means'}, 'A heist is any run that pays a customer twice or leaves one owed money nobody will pay.'),
    h('div', {class: 'row'}, toggles),
    h('div', {class: 'row'},
      h('button', {class: 'primary', id: 'defend-check', 'data-fid': 'defend-check', disabled: defence.checking ? true : undefined,
        onclick: checkDefence}, defence.checking ? 'Checking…' : `Check the defence (${defence.on.length} of ${budget})`),
      h('span', {class: 'hint'}, 'replays the known heists, then the explorer searches your hand for one that gets through')),
    result ? h('div', {class: 'stack', id: 'defence-result'},
      h('p', {}, h('strong', {class: result.holds ? 'tone-good' : 'tone-bad'},
        result.holds ? `✔ The defence holds with ${counted(result.on.length, 'guard', 'guards')}` : '✘ The defence falls'),
      result.holds ? (result.minimal ? ' — as few as the smallest known. The level is finished.' : ` — the smallest known needs ${result.minimum_size}; try fewer. The level is finished.`)
        : !result.within_budget ? ` — ${counted(result.on.length, 'guard', 'guards')} ${result.on.length === 1 ? 'is' : 'are'} over the budget of ${result.budget}.` : ''),
      h('ul', {}, result.heists.map((heist) => h('li', {class: heist.stopped ? '' : 'tone-bad'},
        heist.stopped ? '✔ held: ' : '✘ got through: ', heist.title, ' — ', lookSpan(heist.outcome)))),
      result.left_out ? h('p', {class: 'hint', id: 'defence-left-out'}, result.left_out) : null,
      result.searched === null ? h('p', {class: 'hint'}, 'A known heist got through, so the explorer was not needed.')
        : result.counter_example ? h('p', {class: 'tone-bad', id: 'counter-example'},
          `The explorer found a heist in ${counted(result.searched, 'schedule', 'schedules')}: `, result.counter_example.join(', '))
          : h('p', {class: 'hint'}, `The explorer tried ${counted(result.searched, 'schedule', 'schedules')} of your hand and found no heist: no way to pay twice or leave a customer owed.`)) : null);
}

async function checkDefence() {
  const defence = state.defence;
  defence.checking = true;
  renderLevel();
  const answer = await api('POST', '/api/defend', {level: defence.level, guards: defence.on});
  defence.checking = false;
  if (!answer.ok) {
    if (!lost(answer)) notice(problemText(answer), true);
  } else {
    defence.result = answer.data;
    if (answer.data.counted) notice('The defence holds: the level counts as finished.');
  }
  renderLevel();
}

function focusReason() {
  const input = document.querySelector('[data-fid="reason"]');
  if (input) input.focus();
}

function pennyPanel(game) {
  return h('section', {class: 'panel', 'aria-label': 'Penny and her workers'},
    h('h2', {}, 'Penny and her workers'),
    game.penny.speech ? h('div', {class: 'speech'}, game.penny.speech) : null,
    game.penny.runs.map((run) => h('p', {},
      h('strong', {}, `run ${run.id}: `), lookSpan(run.status),
      run.waiting_on ? [' on ', keySpan(run.waiting_on)] : null,
      // Steps are named as the task list and the debrief name them: r1/2 is run r1's second call.
      // Past its last step a run has no step of its own: the calls count was the next step's
      // (none), which read "step r1/3 of 3, 0 calls made" after three calls.
      h('span', {class: 'hint', 'data-fid': 'run-step'}, run.item >= run.items
        ? ` · ${run.items === 1 ? 'its step' : `all ${run.items} steps`} done`
        : ` · step ${run.id}/${run.item + 1} of ${run.items}, ${counted(run.calls_for_item, 'call', 'calls')} made for it`),
      run.last_told ? h('span', {class: 'hint'}, ` · told: ${run.last_told}`) : null,
      run.failed ? h('span', {class: 'hint'}, ` · failed: ${run.failed}`) : null,
      run.compensated.length ? h('span', {class: 'hint'}, ` · compensated by reflex: ${run.compensated.join(', ')}`) : null,
      run.retried_as ? h('span', {class: 'hint'}, ` · the workflow retried it as ${run.retried_as}, with new keys`) : null)),
    h('div', {class: 'workers'}, game.workers.map((worker) => h('div', {class: `worker ${worker.alive ? '' : 'gone'}`},
      h('strong', {}, worker.id), ' ', lookSpan(worker.look),
      h('span', {class: 'hint'}, ` · run ${worker.run} · phase: ${worker.phase}`,
        game.panels.checkpoints ? ` · checkpoint v${worker.loaded_version}` : ''),
      worker.key ? [' · ', keySpan(worker.key), worker.attempt ? h('span', {class: 'hint'}, ` attempt ${worker.attempt}`) : null] : null))));
}

function wirePanel(game) {
  return h('section', {class: 'panel', 'aria-label': 'the wire'},
    h('h2', {}, 'The wire'),
    game.wire.length === 0 ? h('p', {class: 'hint'}, 'nothing on the wire') : null,
    h('div', {class: 'wire'}, game.wire.map((message) => h('div', {class: `message ${message.direction}`},
      h('div', {}, message.direction === 'request' ? `w${message.worker} → billing ` : `billing → w${message.worker} `,
        keySpan(message.key), h('span', {class: 'hint'}, ` attempt ${message.attempt}`)),
      h('div', {class: 'hint'}, `${message.asks} · key sent: ${message.downstream_key || 'none'}`,
        message.answer ? ` · ${message.answer}` : '', ` · arrives at ${message.arrives_at_ms} ms`),
      message.lost ? h('div', {class: 'flags tone-bad'}, '✘ will be lost') : null,
      message.slowed ? h('div', {class: 'flags tone-warn'}, '◔ slowed past the timeout') : null))));
}

function billingPanel(game) {
  const billing = game.billing;
  const handling = {
    honour: 'billing honours idempotency keys: a repeat gets the first answer',
    metadata_only: 'billing keeps the key in metadata but does not check it',
    ignore: 'billing ignores idempotency keys',
  }[billing.key_handling];
  return h('section', {class: 'panel', 'aria-label': 'billing'},
    h('h2', {}, 'Billing'),
    h('p', {class: 'hint'}, handling),
    billing.accounts.map((account) => h('p', {}, `${account.owner} (${account.id}): `, h('span', {class: 'balance', id: `balance-${account.id}`}, account.balance))),
    billing.entries.length
      ? h('table', {}, h('thead', {}, h('tr', {}, h('th', {}, 'entry'), h('th', {class: 'number'}, 'amount'), h('th', {}, 'account'), h('th', {}, 'key'))),
        h('tbody', {}, billing.entries.map((entry) => h('tr', {},
          h('td', {}, entry.kind === 'credit' ? '+ ' : '↺ ', entry.id, entry.reverses ? ` (voids ${entry.reverses})` : ''),
          h('td', {class: 'number'}, entry.amount), h('td', {}, entry.account),
          h('td', {}, entry.key ? [keySpan(entry.key), h('span', {class: 'hint'}, ` ${entry.key_kept}`)] : h('span', {class: 'hint'}, entry.key_kept))))))
      : (recordsShown(billing) ? null : h('p', {class: 'hint'}, 'no credits yet')),
    recordsTable('Outbox', 'outbox', billing.outbox, 'email'),
    recordsTable('Owner history', 'owners', billing.owners, 'change'),
    recordsTable('Deleted records', 'deletions', billing.deletions, 'request'));
}

/** Whether the level's world holds emails, owner changes or deletes: then they are its stage. */
function recordsShown(billing) {
  return billing.outbox.length + billing.owners.length + billing.deletions.length > 0;
}

/** One kind of record, as the world words it: a row each, what went wrong marked. */
function recordsTable(title, id, rows, noun) {
  if (!rows.length) return null;
  return h('div', {class: 'records', id: `records-${id}`},
    h('h3', {}, title, h('span', {class: 'hint'}, ` ${rows.length} ${noun}${rows.length === 1 ? '' : 's'}`)),
    h('table', {}, h('tbody', {}, rows.map((row) => h('tr', {class: row.harm ? 'tone-bad' : ''},
      h('td', {class: 'mono'}, `${row.at_ms} ms`), h('td', {}, row.account), h('td', {}, row.what),
      h('td', {}, row.by), h('td', {}, row.harm ? `✖ ${row.harm}` : ''))))));
}

function ledgerPanel(game) {
  const selected = state.selectedKey;
  const rows = game.ledger.map((record) => h('tr', {class: `${record.key.key === selected ? 'selected' : ''}`},
    h('td', {}, h('button', {class: 'link', 'data-fid': `row-${record.key.key}`, title: 'select this call',
      onclick: () => { state.selectedKey = record.key.key; renderLevel(); }}, keySpan(record.key))),
    h('td', {}, lookSpan(record.status)),
    h('td', {class: 'number'}, record.attempts),
    h('td', {}, record.owner),
    h('td', {class: 'mono'}, record.result ? JSON.stringify(record.result).slice(0, 60) : '—')));
  const history = selected ? game.history.filter((entry) => entry.key === selected) : [];
  return h('section', {class: 'panel ledger', 'aria-label': 'the ledger', id: 'ledger-panel'},
    h('h2', {}, 'The ledger', arrival(game, 'ledger') || h('span', {class: 'hint'}, 'rows of the real SQLite ledger the workers write')),
    game.ledger.length
      ? h('div', {class: 'ledger-scroll', 'data-scroll': 'ledger'}, h('table', {id: 'ledger'},
        h('thead', {}, h('tr', {}, h('th', {}, 'idempotency key'), h('th', {}, 'status'), h('th', {class: 'number'}, 'attempts'), h('th', {}, 'owner'), h('th', {}, 'result'))),
        h('tbody', {}, rows)))
      : h('p', {class: 'hint'}, game.guards.find((guard) => guard.name === 'ledger' && !guard.on)
        ? 'the ledger guard is off: nothing is written down before the tool runs' : 'no rows yet'),
    game.panels.checkpoints && game.checkpoints.length ? h('p', {class: 'hint', id: 'checkpoints'}, 'Checkpoints: ', game.checkpoints.map((checkpoint) =>
      `${checkpoint.run_id} v${checkpoint.version} ${checkpoint.status_words} (saved by ${checkpoint.saved_by})`).join(' · ')) : null,
    selected ? h('div', {class: 'history', 'data-scroll': 'history'}, h('h3', {}, `History of ${selected}`),
      h('table', {}, h('tbody', {}, history.map((entry) => h('tr', {},
        h('td', {class: 'mono'}, `${entry.at_ms} ms`), h('td', {}, entry.actor),
        h('td', {title: entry.event_says || undefined, 'data-event': entry.event}, entry.event_words),
        h('td', {}, entry.from_status ? lookSpan(entry.from_status) : null, entry.to_status ? [' → ', lookSpan(entry.to_status)] : null),
        h('td', {}, entry.reason ? `“${entry.reason}”` : '', entry.detail ? h('span', {class: 'hint'}, ` ${entry.detail}`) : null)))))) : null);
}

/** A level that deals no operator move: its unknown calls, to watch (nothing to press). */
function unknownCallsPanel(game) {
  const desk = game.console;
  return h('section', {class: 'panel console', 'aria-label': 'unknown calls', id: 'unknown-calls'},
    h('h2', {}, 'Unknown calls', h('span', {class: 'hint'}, 'longest waiting first; this level deals no operator moves')),
    desk.unknown.length
      ? h('div', {class: 'row'}, desk.unknown.map((key) => h('button', {'data-fid': `unknown-${key.key}`,
        class: key.key === state.selectedKey ? 'chosen' : '', onclick: () => { state.selectedKey = key.key; renderLevel(); }}, keySpan(key))))
      : h('p', {class: 'hint'}, 'none: every call\'s outcome is known'));
}

function consolePanel(game) {
  const desk = game.console;
  if (desk.resolve_left === null && desk.compensate_left === null) return unknownCallsPanel(game);
  const record = game.ledger.find((row) => row.key.key === state.selectedKey);
  const reason = h('input', {type: 'text', id: 'reason', 'data-fid': 'reason', maxlength: 2000, value: state.reason,
    placeholder: 'reason (required), e.g. billing shows cr_0001', 'aria-label': 'reason',
    oninput: (event) => { state.reason = event.target.value; updateConsoleButtons(); }});
  const moves = [];
  if (record) {
    const common = game.out_of_phases ? 'the phase limit is reached' : (state.reason.trim() === '' ? 'type a reason first' : null);
    const resolveBlock = common
      || (!desk.resolve_left ? 'no resolve cards left in this level' : null)
      || (!record.unknown ? `it is already settled (${record.status.word})` : null);
    const compensateBlock = common
      || (!desk.compensate_left ? 'no compensate cards left in this level' : null)
      || (['failed', 'compensated'].includes(record.status_name) ? `it is ${record.status.word}: nothing stands to undo` : null);
    const resolve = (status) => ({OperatorResolve: {key: record.key.key, status, reason: state.reason.trim(), expected_status: record.status_name}});
    moves.push(
      consoleMove('resolve-completed', '✔ Resolve: it took effect (completed)', resolveBlock, () => resolve('completed')),
      consoleMove('resolve-failed', '✘ Resolve: it did not (failed)', resolveBlock, () => resolve('failed')),
      consoleMove('compensate', '↺ Compensate: undo it in billing', compensateBlock,
        () => ({OperatorCompensate: {key: record.key.key, reason: state.reason.trim()}})));
  }
  return h('section', {class: 'panel console', 'aria-label': 'the operator console', id: 'console-panel'},
    h('h2', {}, 'Operator console', arrival(game, 'console')),
    h('p', {class: 'hint'}, `you are ${desk.operator} · resolve × ${desk.resolve_left || 0} · compensate × ${desk.compensate_left || 0}`),
    h('p', {}, `Unknown calls, longest waiting first: ${desk.unknown.length}`),
    desk.unknown.length
      ? h('div', {class: 'row'}, desk.unknown.map((key) => h('button', {'data-fid': `unknown-${key.key}`,
        class: key.key === state.selectedKey ? 'chosen' : '', onclick: () => { state.selectedKey = key.key; renderLevel(); }}, keySpan(key))))
      : h('p', {class: 'hint'}, 'none: every call\'s outcome is known'),
    record ? h('p', {}, 'Selected: ', keySpan(record.key), ' ', lookSpan(record.status)) : h('p', {class: 'hint'}, 'select a call here or in the ledger'),
    h('div', {class: 'row'}, h('kbd', {}, 'O'), reason),
    h('div', {class: 'moves'}, moves));
}

function consoleMove(id, label, blocked, makePlay) {
  return h('button', {id: `console-${id}`, 'data-fid': `console-${id}`, 'data-blocked': blocked || '',
    disabled: Boolean(blocked), title: blocked || label, onclick: () => play(makePlay())}, label,
  blocked ? h('span', {class: 'hint'}, ` — ${blocked}`) : null);
}

/** Typing a reason enables the console's buttons without redrawing the field being typed in. */
function updateConsoleButtons() {
  const typed = state.reason.trim() !== '';
  document.querySelectorAll('.console .moves button').forEach((button) => {
    const blocked = button.dataset.blocked;
    if (blocked === 'type a reason first' && typed) {
      button.disabled = false;
      const hint = button.querySelector('.hint');
      if (hint) hint.remove();
    }
  });
}

/** A timeline row's lanes in words, for a screen too narrow for the lanes: "w1", "billing → w1". */
function whoLine(lanes, row) {
  const here = lanes[row.lane].label;
  const from = row.from_lane === null ? null : lanes[row.from_lane];
  return from ? `${from.label} → ${here}` : here;
}

function timelinePanel(game) {
  const timeline = game.timeline;
  const lanes = timeline.lanes;
  const head = h('tr', {}, h('th', {}, 'phase'), h('th', {}, 'ms'),
    lanes.map((lane) => h('th', {scope: 'col', class: 'lane', title: lane.id}, lane.label)), h('th', {class: 'text'}, 'what happened'));
  let lastPhase = null;
  const rows = timeline.rows.map((row) => {
    const firstOfPhase = row.phase !== lastPhase;
    lastPhase = row.phase;
    const low = row.from_lane === null ? row.lane : Math.min(row.from_lane, row.lane);
    const high = row.from_lane === null ? row.lane : Math.max(row.from_lane, row.lane);
    const cells = lanes.map((lane, index) => {
      if (index === row.lane) {
        return h('td', {class: 'lane here', title: lane.label}, row.key ? keySpan(row.key, '') : h('span', {class: 'faint'}, '•'));
      }
      if (row.from_lane !== null && index >= low && index <= high) {
        // An arrow from the lane the key was last in: ○ where it came from, → or ← into here.
        const rightward = row.from_lane < row.lane;
        const adjacent = Math.abs(row.from_lane - row.lane) === 1;
        let path = '──';
        if (index === row.from_lane) {
          path = rightward ? (adjacent ? '○→' : '○─') : (adjacent ? '←○' : '─○');
        } else if (index === (rightward ? row.lane - 1 : row.lane + 1)) {
          path = rightward ? '─→' : '←─';
        }
        return h('td', {class: 'lane path', 'aria-hidden': 'true'}, path);
      }
      return h('td', {class: 'lane'});
    });
    // A guard's row is green with its mark only while nobody in the finished run is owed or
    // paid twice (the server tells: `guard_holding`); otherwise it says what the run still did.
    const guardClass = row.guard_holding ? 'guard' : 'guard-noted';
    const kind = row.guard ? guardClass : (lanes[row.lane] && lanes[row.lane].id === 'crew' ? 'crew' : row.kind);
    const guardChip = !row.guard ? null : row.guard_holding
      ? h('span', {class: 'chip'}, `◈ ${row.guard_words}`)
      : h('span', {class: 'chip noted'}, `⚠ ${row.guard_words}`);
    return h('tr', {class: kind},
      h('td', {class: 'phase'}, firstOfPhase
        ? h('button', {'data-fid': `rewind-${row.phase}`, title: `rewind to just before phase ${row.phase}`,
          'aria-label': `rewind to phase ${row.phase}`, onclick: () => rewind(row.phase)}, `⟲${row.phase}`)
        : null),
      h('td', {class: 'time'}, row.time_ms),
      cells,
      h('td', {class: 'text'}, guardChip,
        // A phone hides the lanes (app.css): who acted, and where from, is said here instead.
        h('span', {class: 'who'}, lanes[row.lane] ? `${whoLine(lanes, row)} · ` : ''),
        h('span', {class: 'hint'}, `${row.kind}: `), row.key ? [keySpan(row.key), ' '] : null, row.text));
  });
  return h('section', {class: 'panel', 'aria-label': 'the timeline'},
    h('h2', {}, 'Timeline', h('span', {class: 'hint'}, 'one lane per actor, one colour and glyph per key; ⟲ rewinds there')),
    timeline.keys.length ? h('p', {class: 'legend'}, 'Keys: ', timeline.keys.map((key) => [keySpan(key), '  '])) : null,
    timeline.rows_left_out ? h('p', {class: 'hint'}, `${timeline.rows_left_out} older entries left out`) : null,
    h('div', {class: 'timeline-scroll', 'data-scroll': 'timeline', 'data-stick': 'bottom'},
      h('table', {class: 'timeline', id: 'timeline'}, h('thead', {}, head), h('tbody', {}, rows))));
}

// ----- debrief -----

async function showDebrief() {
  state.screen = 'debrief';
  state.playing = false;
  if (!state.game) {
    const answer = await api('GET', '/api/game');
    if (!answer.ok) {
      if (!lost(answer)) go('levels');
      return;
    }
    state.game = answer.data;
  }
  const game = state.game;
  if (!game.end) {
    notice('The level is not over yet: play on, or run it to the end (E).', true);
    go('level');
    return;
  }
  const end = game.end;
  const verdict = end.verdict;
  const told = end.debrief;
  const headline = told.headline;
  const stars = told.par ? ['☆☆', '★☆', '★★'][(told.par.cards <= told.par.par_cards ? 1 : 0) + (told.par.cards <= told.par.par_cards && told.par.phases <= told.par.par_phases ? 1 : 0)] : null;
  render($('screen'), h('div', {class: 'debrief stack'},
    h('section', {class: 'panel stack', id: 'verdict'},
      h('p', {class: 'hint'}, `${game.level.title} · debrief`),
      // The verdict as the player's goal reads it (a lost heist is a ✖, never the money's ✔).
      h('div', {class: 'verdict-big', id: 'headline'}, lookSpan(end.headline)),
      h('p', {}, h('strong', {}, headline), game.level.goal_words.finish === 'heist'
        ? [' The goal was ', lookSpan(verdict.goal), verdict.goal_reached ? ' — reached.' : ' — not reached.']
        : ` ${game.level.goal_words.sentence}`),
      h('p', {}, end.counted
        ? (end.finished ? `Finished with ${counted(end.cards, 'card', 'cards')} in ${counted(end.phases, 'phase', 'phases')}: it counts on the room's scoreboard.`
          : game.level.goal_words.finish === 'defence'
            ? 'Not finished: no play finishes this level; back on the level screen, a defence that holds does.'
            : 'Not finished: rewind or restart and try again.')
        : 'A sandbox play (guards you chose): it does not count for progress.'),
      h('ul', {class: 'diagnosis', id: 'diagnosis'}, told.diagnosis.map((sentence) => h('li', {}, sentence))),
      told.par ? h('p', {id: 'par'}, h('strong', {}, stars), ` ${counted(told.par.cards, 'card', 'cards')} in ${counted(told.par.phases, 'phase', 'phases')} · par: ${counted(told.par.par_cards, 'card', 'cards')} in ${counted(told.par.par_phases, 'phase', 'phases')}`) : null,
      creditsTable(verdict)),
    h('section', {class: 'panel stack', id: 'decided'},
      h('h2', {}, 'What decided this run'),
      end.decided.otherwise ? h('p', {}, `${end.decided.otherwise[0].toUpperCase()}${end.decided.otherwise.slice(1)}.`) : null,
      // The world's lines, drawn as they come: a shield only where one is holding.
      end.decided.lines.length ? h('ul', {class: 'guard-lines'}, end.decided.lines.map((line) => h('li', {
        'data-guard': line.guards.join(' '), 'data-part': line.part,
        class: line.holding ? 'tone-good' : (quietPart(line.part) ? 'hint' : ''),
      }, `${line.holding ? '🛡' : (quietPart(line.part) ? '·' : '⇄')} ${line.sentence}`))) : null,
      end.decided.what_if.some((_, index) => !end.decided.lines.some((line) => line.what_if === index))
        ? h('ul', {class: 'hint'}, end.decided.what_if
          .filter((_, index) => !end.decided.lines.some((line) => line.what_if === index))
          .map((sentence) => h('li', {}, sentence))) : null,
      verdict.violations.length ? [h('h3', {}, 'Broken promises'), h('ul', {}, verdict.violations.map((text) => h('li', {class: 'tone-bad'}, `✘ ${text}`)))] : null),
    debriefCode(end.code),
    game.prediction.score ? h('section', {class: 'panel stack', id: 'prediction-score'},
      h('h2', {}, 'Your prediction'),
      h('p', {}, h('strong', {class: game.prediction.score.points > 0 ? 'tone-good' : 'tone-bad'},
        `${game.prediction.score.points} point${game.prediction.score.points === 1 ? '' : 's'}: `), game.prediction.score.sentence),
      h('p', {class: 'hint', id: 'prediction-tally'}, game.prediction.counted ? tallyText(game.prediction.tally)
        : 'A sandbox play: the tally does not count it.')) : null,
    h('section', {class: 'panel lesson stack'},
      h('h2', {}, 'The lesson'),
      h('p', {class: 'rule', id: 'rule'}, end.decided.rule),
      told.story ? h('p', {id: 'story'}, told.story) : null,
      end.lesson.guards.length ? h('p', {class: 'hint'}, `About: ${end.lesson.guards.join(', ')}`) : null),
    h('div', {class: 'row'},
      end.next ? h('button', {class: 'primary', id: 'next-level', 'data-fid': 'next-level', onclick: () => openLevel(end.next)}, 'Next level') : null,
      h('button', {id: 'back-to-level', 'data-fid': 'back-to-level', onclick: () => go('level')}, 'Back to the level (rewind, restart)'),
      h('a', {class: 'button', id: 'debrief-tape', 'data-fid': 'debrief-tape', href: '/api/game/tape', download: ''}, 'Save the tape'),
      takeHomeButton(end.take_home),
      h('button', {'data-fid': 'debrief-levels', onclick: () => go('levels')}, 'Levels')),
    takeHomeNote(end.take_home),
    game.replay_link ? shareRun(game) : null,
    timelinePanel(game)));
  const first = document.querySelector('[data-fid="next-level"]') || document.querySelector('[data-fid="back-to-level"]');
  if (first) first.focus({preventScroll: true});
  window.scrollTo(0, 0);
}

/** "Take it home": this run as a cargo project against twice-runtime, one archive named after
 *  the level; disabled, with the export's reason, when the run cannot be exported. */
function takeHomeButton(offer) {
  if (offer.href) {
    return h('button', {id: 'take-home', 'data-fid': 'take-home', onclick: () => downloadTakeHome(offer),
      title: 'this run as a small Rust program against twice-runtime: unpack it, then cargo run prints this verdict'},
    '↓ Take it home');
  }
  return h('button', {id: 'take-home', 'data-fid': 'take-home', disabled: true,
    title: `This run cannot be exported: ${offer.why_not}`}, '↓ Take it home');
}

/** Fetches the archive and saves it under its name; an answer that is not the archive (the run
 *  could not be exported after all) is said on the page, not saved as a file. */
async function downloadTakeHome(offer) {
  let response;
  try {
    response = await fetch(offer.href, {credentials: 'same-origin'});
  } catch (error) {
    notice(`Take it home: the server cannot be reached (${error.message})`, true);
    return;
  }
  if (!response.ok) {
    const text = await response.text();
    let data;
    try { data = JSON.parse(text); } catch (_) { data = {error: text.slice(0, 200), code: 'not_json'}; }
    const said = `Take it home failed: ${problemText({status: response.status, data})}`;
    const note = document.getElementById('take-home-note');
    if (note) note.textContent = said;
    notice(said, true);
    return;
  }
  const url = URL.createObjectURL(await response.blob());
  const link = h('a', {href: url, download: offer.file});
  document.body.append(link);
  link.click();
  link.remove();
  // The download has its bytes once it started; the URL is let go a minute later.
  setTimeout(() => URL.revokeObjectURL(url), 60_000);
}

/** What the take-home gives, or why it is off: in words on the page (a phone has no hover). */
function takeHomeNote(offer) {
  return h('p', {class: 'hint', id: 'take-home-note'}, offer.href
    ? `Take it home: ${offer.file} holds this run as a cargo project against twice-runtime, with the level and your tape; unpack it and cargo run prints this verdict.`
    : `Take it home is off for this run: ${offer.why_not}.`);
}

/** "Send this heist to a friend": the run as a link that opens it at its end. */
function shareRun(game) {
  const url = `${location.origin}${location.pathname}#${game.replay_link}`;
  const field = h('input', {type: 'text', readonly: true, value: url, id: 'replay-link', 'data-fid': 'replay-link',
    class: 'mono', 'aria-label': 'this run as a link', onfocus: (event) => event.target.select()});
  const copied = h('span', {class: 'hint', role: 'status'});
  return h('section', {class: 'panel stack', 'aria-label': 'share this run'},
    h('h2', {}, 'Send this heist to a friend'),
    h('p', {class: 'hint'}, 'The link holds the level, the seed, the guards and your moves: it opens this run at its end in any room serving the campaign.'),
    h('div', {class: 'row'}, field,
      h('button', {'data-fid': 'copy-replay-link', onclick: async () => {
        field.select();
        try {
          await navigator.clipboard.writeText(url);
          copied.textContent = 'copied';
        } catch (_) {
          copied.textContent = 'selected: press Ctrl+C to copy';
        }
      }}, 'Copy'), copied));
}

// ----- keys -----

// The keys are the window's wherever both editions have the action (twice-world's
// keys::LEVEL_KEYS; index.html's `?` list is held to it): a player moving between them
// finds S saving the tape and . stepping in both.
function onKey(event) {
  const target = event.target;
  if (target.closest && target.closest('input, select, textarea')) {
    if (event.key === 'Escape') target.blur();
    return;
  }
  if (event.ctrlKey || event.metaKey || event.altKey || $('help').open || $('leave').open) return;
  const onControl = target.closest && target.closest('button, a');
  if (event.key === '?' || event.key === 'F1') {
    $('help').showModal();
    event.preventDefault();
    return;
  }
  if (state.screen === 'debrief') {
    if (event.key === 'Escape') { event.preventDefault(); go('levels'); }
    if (event.key === 'Enter' && !onControl && state.game && state.game.end && state.game.end.next) {
      event.preventDefault();
      openLevel(state.game.end.next);
    }
    return;
  }
  if (state.screen !== 'level' || !state.game) return;
  const key = event.key;
  if (key === ' ' && !onControl) { event.preventDefault(); togglePlaying(); return; }
  if (key === 'Enter' && !onControl) { if (state.game.end) go('debrief'); return; }
  switch (key) {
    case '.': case 'ArrowRight': event.preventDefault(); state.playing = false; step(); return;
    case ',': case 'ArrowLeft': event.preventDefault(); if (state.game.phase > 0) rewind(state.game.phase - 1); return;
    case 'Home': event.preventDefault(); if (state.game.phase > 0) rewind(0); return;
    case '+': case '=': event.preventDefault(); changeSpeed(1); return;
    case '-': event.preventDefault(); changeSpeed(-1); return;
    case 'Escape': event.preventDefault(); go('levels'); return;
    default: break;
  }
  switch (key.toLowerCase()) {
    case 'e': event.preventDefault(); runToEnd(); return;
    case 'r': event.preventDefault(); restart(); return;
    case 's': event.preventDefault(); $('save-tape').click(); return;
    case 'o': event.preventDefault(); focusReason(); return;
    case 'd': event.preventDefault(); focusDeclaration(); return;
    case 'v': event.preventDefault(); focusPrediction(); return;
    default: break;
  }
  if (/^[1-9]$/.test(key)) {
    const card = state.game.hand[Number(key) - 1];
    if (!card || state.game.out_of_phases) return;
    event.preventDefault();
    if (card.operator) { if (card.left > 0) focusReason(); } else if (card.declaration) { if (card.left > 0) focusDeclaration(); } else chooseCard(card);
  }
}

/** + and −: the speed one step faster or slower, as the window's keys change it. */
function changeSpeed(by) {
  state.speed = Math.min(SPEEDS.length - 1, Math.max(0, state.speed + by));
  renderLevel();
  notice(`Speed: ${SPEEDS[state.speed]} phase${SPEEDS[state.speed] > 1 ? 's' : ''}/s`);
}

/** V: the prediction's first choice, when a prediction can be made now. */
function focusPrediction() {
  const field = $('predict-verdict');
  if (field) field.focus();
  else notice('No prediction to make now: restart or rewind to phase 0 to predict a run before it plays out.', true);
}

document.addEventListener('DOMContentLoaded', start);
