// Twice in a browser: the presenter's page, to run a workshop from. Three views:
// - the room: one row per level (on it, finished, lost more than N times, stuck for M minutes),
//   who needs help, everyone on demand, the race and a compact scoreboard — sixty people fit;
// - the plan: the workshop's minute plan (the book's workshop plan, read by the server) with a clock, and the
//   chapter notes (levels/presenter-notes.ron) for the chapter under way;
// - the wall: the join page (/join: the address large and its QR code) and the stage (one level
//   shown large, played by the presenter in a tab of its own).
// The presenter's secret comes from the URL's fragment (#secret=…), which browsers never
// send to the server; it goes out only as the Authorization header of these requests.
'use strict';

/** How often the room and the plan are looked at, in milliseconds. */
const ROOM_POLL_MS = 2000;
/** The tape a race opens on unless the presenter picks another: the answer was lost
 *  after billing applied the credit, and the run waits in awaiting_reconciliation. */
const PREFERRED_RACE = '04-pause.lost-answer';
/** Names shown in the help list and a board before "show all". */
const SHORT_LIST = 8;
const BOARD_TOP = 3;

const fragment = new URLSearchParams(location.hash.slice(1));
const presenter = {
  secret: fragment.get('secret') || '',
  view: fragment.get('view') || 'room',
  room: null,
  plan: null,
  chosenTape: null,
  /** Thresholds for "needs help", sent with every look at the room. */
  lossesOver: 3,
  quietMinutes: 5,
  /** Which lists the presenter opened: kept across redraws. */
  opened: new Set(),
  /** The chapter whose notes the presenter picked (else the clock's), the minute typed to
   *  start the clock at, the plan's row last scrolled into view. */
  noteChapter: null,
  clockMinute: 0,
  shownRow: null,
};

const $ = (id) => document.getElementById(id);
const asPresenter = (method, path, body) => api(method, path, body, {Authorization: `Bearer ${presenter.secret}`});

/** What each part of the page last showed: a part is redrawn only when it changed, so a
 *  list the presenter has open or a box being clicked is not swept away every two seconds. */
const drawn = {};

function draw(id, value, make) {
  const element = $(id);
  if (!element) return;
  const shown = JSON.stringify([value, [...presenter.opened]]);
  if (drawn[id] === shown) return;
  drawn[id] = shown;
  render(element, make());
}

function toggle(name) {
  if (presenter.opened.has(name)) presenter.opened.delete(name); else presenter.opened.add(name);
  renderRoom();
}

function notPresenter(answer) {
  render($('room'), h('section', {class: 'panel'}, h('h1', {}, 'Not the presenter'),
    h('p', {class: 'error'}, problemText(answer)),
    h('p', {}, 'Open the presenter URL exactly as `twice-sim web` printed it (with #secret=…).')));
}

async function refresh() {
  if (presenter.view === 'plan') {
    const answer = await asPresenter('GET', '/api/presenter/plan');
    if (!answer.ok) return notPresenter(answer);
    presenter.plan = answer.data;
    renderPlan();
    return;
  }
  const query = `?losses_over=${presenter.lossesOver}&quiet_minutes=${presenter.quietMinutes}`;
  const answer = await asPresenter('GET', `/api/presenter/room${query}`);
  if (!answer.ok) return notPresenter(answer);
  presenter.room = answer.data;
  renderRoom();
}

function showView(view) {
  presenter.view = view;
  const params = new URLSearchParams(location.hash.slice(1));
  params.set('view', view);
  history.replaceState(null, '', `#${params}`);
  for (const id of Object.keys(drawn)) delete drawn[id];
  renderNav();
  render($('room'));
  refresh();
}

function renderNav() {
  const tab = (view, label) => h('button', {'data-fid': `view-${view}`, id: `view-${view}`,
    class: presenter.view === view ? 'chosen' : '', 'aria-pressed': presenter.view === view ? 'true' : 'false',
    onclick: () => showView(view)}, label);
  render($('presenter-nav'),
    tab('room', 'The room'), tab('plan', 'Plan & notes'),
    h('a', {class: 'button', href: '/join', target: '_blank', rel: 'noopener', id: 'open-join', 'data-fid': 'open-join'}, 'Join page ↗'),
    h('button', {id: 'open-stage', 'data-fid': 'open-stage', onclick: openStage,
      title: 'this browser becomes the stage: a tab that shows one level large for the room'}, 'Stage ↗'));
}

/** The stage: this browser plays as the presenter's stage, in a tab of its own. */
async function openStage() {
  const answer = await asPresenter('POST', '/api/presenter/stage');
  if (!answer.ok) {
    notice(problemText(answer), true);
    return;
  }
  window.open('/#levels', 'twice-stage');
}

// ----- the room -----

function renderRoom() {
  const room = presenter.room;
  if (!room) return;
  if (!$('levels-panel')) {
    for (const id of Object.keys(drawn)) delete drawn[id];
    render($('room'), h('div', {class: 'room'},
      h('div', {class: 'stack'},
        h('section', {class: 'panel', id: 'summary-panel', 'aria-label': 'the room'}),
        h('section', {class: 'panel', id: 'levels-panel', 'aria-label': 'the levels'}),
        h('section', {class: 'panel', id: 'help-panel', 'aria-label': 'who needs help'}),
        h('section', {class: 'panel', id: 'people-panel', 'aria-label': 'everyone'})),
      h('div', {class: 'stack'},
        h('section', {class: 'panel', 'aria-label': 'the race'}, h('h2', {}, 'The operator race'),
          h('div', {id: 'race-controls'}), h('div', {id: 'race-state'})),
        h('section', {class: 'panel', id: 'scoreboard-panel', 'aria-label': 'the scoreboard'}))));
  }
  draw('summary-panel', [room.kept, room.here, room.sessions_max, room.idle_minutes, room.unlock_all, room.path, room.thresholds], () => summaryPanel(room));
  draw('levels-panel', [room.levels, room.people], () => levelsPanel(room));
  draw('help-panel', room.help, () => helpPanel(room));
  draw('people-panel', room.people, () => peoplePanel(room));
  draw('race-controls', [room.race_candidates, room.race.open, presenter.chosenTape], () => raceControls(room));
  draw('race-state', room.race, () => raceState(room.race));
  draw('scoreboard-panel', room.scoreboard, () => scoreboardPanel(room));
}

function summaryPanel(room) {
  const away = room.kept - room.here;
  const number = (id, value, max, onchange) => h('input', {type: 'number', id, 'data-fid': id, min: 0, max, value,
    onchange: (event) => { onchange(Math.max(0, Math.min(max, Number(event.target.value) || 0))); refresh(); }});
  return [
    h('h2', {id: 'room-count'}, `The room: ${counted(room.kept, 'person', 'people')}`,
      h('span', {class: 'hint'}, `${room.here} here now${away ? `, ${away} away or gone` : ''} · ${room.sessions_max} places · `,
        `quiet for ${counted(room.idle_minutes, 'minute', 'minutes')} gives a place up (the room file keeps them)`)),
    room.path.length ? h('p', {id: 'room-path'}, 'Open to everyone on the room\'s path: ',
      // Numbered as every page numbers a level (2.1), with its file under the pointer.
      room.path.map((stem, index) => h('span', {class: 'chip', title: stem}, room.path_numbers[index]))) : null,
    h('div', {class: 'row'},
      h('label', {}, h('input', {type: 'checkbox', id: 'unlock-all', 'data-fid': 'unlock-all', checked: room.unlock_all ? true : undefined,
        onchange: async (event) => {
          const answer = await asPresenter('POST', '/api/presenter/unlock', {all: event.target.checked});
          notice(answer.ok ? (answer.data.unlock_all ? 'Every level is open to everyone.' : 'Levels open as their requirements are finished.') : problemText(answer), !answer.ok);
          refresh();
        }}), ' every level open to everyone')),
    h('div', {class: 'row thresholds'}, h('span', {}, 'Needs help: lost a level more than'),
      number('losses-over', room.thresholds.losses_over, 100, (value) => { presenter.lossesOver = value; }),
      h('span', {}, 'times, or no new level finished for'),
      number('quiet-minutes', room.thresholds.quiet_minutes, 240, (value) => { presenter.quietMinutes = value; }),
      h('span', {}, 'minutes')),
  ];
}

function levelsPanel(room) {
  const peopleOn = (stem) => room.people.filter((person) => person.stem === stem && person.place === 'here');
  const rows = [];
  for (const level of room.levels) {
    const open = presenter.opened.has(`level-${level.stem}`);
    const names = peopleOn(level.stem);
    rows.push(h('tr', {'data-level': level.stem},
      h('td', {class: 'mono'}, level.number), h('td', {}, level.title, level.on_path ? h('span', {class: 'chip'}, 'path') : null),
      h('td', {class: 'number'}, level.on_it), h('td', {class: 'number'}, level.finished),
      h('td', {class: `number ${level.lost_over ? 'tone-warn' : ''}`}, level.lost_over),
      h('td', {class: `number ${level.stuck ? 'tone-warn' : ''}`}, level.stuck),
      h('td', {}, names.length ? h('button', {class: 'link', 'data-fid': `level-people-${level.stem}`, 'aria-expanded': open ? 'true' : 'false',
        onclick: () => toggle(`level-${level.stem}`)}, open ? 'hide' : 'who') : null)));
    if (open) {
      rows.push(h('tr', {class: 'people-row'}, h('td', {}), h('td', {colspan: 6},
        names.map((person) => h('span', {class: `chip ${person.help.length ? 'off' : ''}`, title: person.help.join('; ') || 'fine'},
          `${person.name}${person.phase !== null ? ` · phase ${person.phase}` : ''}${person.losses_here ? ` · lost ${person.losses_here}` : ''}`)))));
    }
  }
  return [
    h('h2', {}, 'Levels', h('span', {class: 'hint'}, 'one row per level anyone is on, has played, or the path opens')),
    room.levels.length ? h('div', {class: 'table-scroll'}, h('table', {id: 'levels-table'},
      h('thead', {}, h('tr', {}, h('th', {}, '#'), h('th', {}, 'level'), h('th', {class: 'number'}, 'on it'),
        h('th', {class: 'number'}, 'finished'), h('th', {class: 'number'}, `lost > ${room.thresholds.losses_over}×`),
        h('th', {class: 'number'}, `stuck ≥ ${room.thresholds.quiet_minutes} min`), h('th', {}, ''))),
      h('tbody', {}, rows))) : h('p', {class: 'hint'}, 'Nobody is on a level yet.'),
  ];
}

function helpPanel(room) {
  const all = presenter.opened.has('help-all');
  const shown = all ? room.help : room.help.slice(0, SHORT_LIST);
  return [
    h('h2', {}, `Who needs help: ${room.help.length}`),
    room.help.length ? h('ul', {id: 'help-list', class: 'help-list'}, shown.map((person) => h('li', {},
      h('strong', {}, person.name), ` — ${person.help.join('; ')}`,
      person.number && !person.help.some((reason) => reason.includes(person.level)) ? h('span', {class: 'hint'}, ` (on ${person.number} ${person.level})`) : null))) : h('p', {class: 'hint', id: 'help-list'}, 'Nobody, by these thresholds.'),
    room.help.length > SHORT_LIST ? h('button', {class: 'link', 'data-fid': 'help-all', onclick: () => toggle('help-all')},
      all ? 'fewer' : `all ${room.help.length}`) : null,
  ];
}

function peoplePanel(room) {
  const open = presenter.opened.has('people');
  return [
    h('h2', {}, `Everyone: ${room.people.length}`,
      h('button', {class: 'link', id: 'show-people', 'data-fid': 'show-people', 'aria-expanded': open ? 'true' : 'false',
        onclick: () => toggle('people')}, open ? 'hide' : 'show')),
    open ? h('div', {class: 'table-scroll'}, h('table', {id: 'sessions'},
      h('thead', {}, h('tr', {}, h('th', {}, 'name'), h('th', {}, 'where'), h('th', {}, 'on level'), h('th', {class: 'number'}, 'phase'),
        h('th', {class: 'number'}, 'finished'), h('th', {}, 'wins (cards · phases)'), h('th', {class: 'number'}, 'idle'))),
      h('tbody', {}, room.people.map((person) => h('tr', {class: person.place === 'here' ? '' : 'faint'},
        h('td', {}, h('strong', {}, person.name)),
        h('td', {}, person.place),
        h('td', {}, person.level ? `${person.number} ${person.level}` : h('span', {class: 'faint'}, 'choosing'),
          person.mode === 'sandbox' ? h('span', {class: 'badge sandbox'}, 'sandbox') : null),
        h('td', {class: 'number'}, person.phase === null ? '—' : person.phase),
        h('td', {class: 'number'}, person.finished),
        h('td', {}, person.wins.length ? person.wins.map((win) => h('span', {class: 'chip', title: win.level_title},
          `${win.number} ${win.win.outcome.glyph} ${win.win.cards}·${win.win.phases}`)) : h('span', {class: 'faint'}, '—')),
        h('td', {class: 'number'}, `${person.idle_seconds} s`)))))) : null,
  ];
}

function raceControls(room) {
  const race = room.race;
  const candidates = room.race_candidates;
  if (!presenter.chosenTape) {
    const preferred = candidates.find((candidate) => candidate.tape === PREFERRED_RACE) || candidates[0];
    presenter.chosenTape = preferred ? preferred.tape : null;
  }
  const select = h('select', {id: 'race-tape', 'data-fid': 'race-tape', 'aria-label': 'the paused call to race on',
    onchange: (event) => { presenter.chosenTape = event.target.value; }},
  // The tape as the plan names it, its level as the pages number it (the title under the
  // pointer: the whole line would not fit the column), and the paused call.
  candidates.map((candidate) => h('option', {value: candidate.tape, selected: candidate.tape === presenter.chosenTape ? true : undefined,
    title: `${candidate.level_number} ${candidate.level_title}`},
    `${candidate.tape} · ${candidate.level_number} — ${candidate.key} ${candidate.status.glyph} ${candidate.status.word}`)));
  return h('div', {class: 'row'}, select,
    h('button', {class: 'primary', id: 'open-race', 'data-fid': 'open-race', disabled: !presenter.chosenTape, onclick: async () => {
      const answer = await asPresenter('POST', '/api/presenter/race', {tape: presenter.chosenTape});
      notice(answer.ok ? `Race #${answer.data.number} is open to the room: ${answer.data.key.key}` : problemText(answer), !answer.ok);
      refresh();
    }}, race.open ? 'Open a new race' : 'Open the race to the room'),
    race.open ? h('button', {id: 'close-race', 'data-fid': 'close-race', onclick: async () => {
      await asPresenter('DELETE', '/api/presenter/race');
      refresh();
    }}, 'Close it') : null);
}

function raceState(race) {
  const won = race.tries.filter((attempt) => attempt.won).length;
  return race.open ? [
    h('p', {}, `Race #${race.number}: `, keySpan(race.key), ` from ${race.tape} (${race.level_title}) — shown as `,
      lookSpan(race.opened_status), ', now ', lookSpan(race.status_now), '.'),
    h('p', {class: 'hint'}, `${race.amount} to ${race.account}; billing holds: `,
      race.billing.length ? race.billing.map((entry) => `${entry.id} ${entry.amount} (${entry.key_kept})`).join(', ') : 'nothing'),
    race.winner
      ? h('p', {id: 'race-winner', class: 'race-winner'}, '⚑ Won by ', h('strong', {}, race.winner.operator), ': ',
        lookSpan(race.winner.status), race.winner.reason ? h('span', {class: 'hint'}, ` “${race.winner.reason}”`) : null)
      : h('p', {}, h('strong', {}, 'Waiting for the first decision…')),
    h('p', {id: 'race-tries'}, `${counted(race.tries_total, 'resolve', 'resolves')}: ${won} won, `,
      `${race.tries_total - won} got 409 Conflict`),
    race.tries.length ? h('p', {}, race.tries.map((attempt) => h('span', {class: `chip ${attempt.won ? '' : 'on'}`},
      `${attempt.won ? '⚑' : '409'} ${attempt.name} ${attempt.status.glyph}`))) : null,
    race.after ? [h('h3', {}, 'What the decision did to the money'),
      h('p', {id: 'race-after'}, lookSpan(race.after.outcome)),
      race.after.diagnosis.length ? h('ul', {}, race.after.diagnosis.map((sentence) => h('li', {}, sentence))) : null,
      creditsTable(race.after)] : null,
  ] : [h('p', {class: 'hint'}, 'Pick a paused call and open it to the room: every participant may resolve it from their browser; ',
    'the ledger keeps exactly one decision and everyone else sees 409 and who won.')];
}

function scoreboardPanel(room) {
  return [
    h('h2', {}, 'Scoreboard', h('span', {class: 'hint'}, 'fewest cards, then fewest phases')),
    room.scoreboard.length ? room.scoreboard.map((board) => {
      const all = presenter.opened.has(`board-${board.level}`);
      const scores = all ? board.scores : board.scores.slice(0, BOARD_TOP);
      return h('div', {class: 'board', 'data-board': board.level},
        h('h3', {}, `${board.number} ${board.level_title}`, h('span', {class: 'hint'}, ` · ${counted(board.scores.length, 'win', 'wins')} · par `,
          board.par ? `${counted(board.par.cards, 'card', 'cards')}, ${counted(board.par.phases, 'phase', 'phases')}` : 'not set yet')),
        h('table', {}, h('tbody', {}, scores.map((score) => h('tr', {},
          h('td', {class: 'number'}, score.rank), h('td', {}, score.name), h('td', {class: 'number'}, `${score.cards} · ${score.phases}`),
          h('td', {}, score.over_par ? (score.over_par.cards || score.over_par.phases ? `+${score.over_par.cards} · +${score.over_par.phases}` : 'at par') : '—'),
          h('td', {}, lookSpan(score.outcome)))))),
        board.scores.length > BOARD_TOP ? h('button', {class: 'link', 'data-fid': `board-all-${board.level}`,
          onclick: () => toggle(`board-${board.level}`)}, all ? 'top three' : `all ${board.scores.length}`) : null);
    }) : h('p', {class: 'hint'}, 'Nobody has finished a level yet.')];
}

// ----- the plan -----

function clockText(seconds) {
  const minutes = Math.floor(seconds / 60);
  return `${minutes}:${String(seconds % 60).padStart(2, '0')}`;
}

function renderPlan() {
  const plan = presenter.plan;
  if (!plan) return;
  if (!$('plan-panel')) {
    for (const id of Object.keys(drawn)) delete drawn[id];
    render($('room'), h('div', {class: 'plan-view'},
      h('div', {class: 'stack'},
        h('section', {class: 'panel', id: 'clock-panel', 'aria-label': 'the clock'}),
        h('section', {class: 'panel', id: 'plan-panel', 'aria-label': 'the minute plan'})),
      h('section', {class: 'panel', id: 'notes-panel', 'aria-label': 'the chapter\'s notes'})));
  }
  draw('clock-panel', plan.clock, () => clockPanel(plan));
  draw('notes-panel', [plan.notes, plan.clock.chapter, presenter.noteChapter], () => notesPanel(plan));
  const row = plan.clock.row;
  draw('plan-panel', [plan.rows, row, plan.problem], () => planPanel(plan));
  // The row under way in view, once each time it changes (the presenter may scroll meanwhile).
  if (row !== null && presenter.shownRow !== row) {
    presenter.shownRow = row;
    const now = document.querySelector('#plan tr.now');
    if (now) now.scrollIntoView({block: 'nearest'});
  }
}

async function setClock(minute) {
  const answer = await asPresenter('POST', '/api/presenter/clock', {minute});
  if (!answer.ok) { notice(problemText(answer), true); return; }
  presenter.plan = answer.data;
  renderPlan();
}

function clockPanel(plan) {
  const clock = plan.clock;
  const row = clock.row !== null ? plan.rows[clock.row] : null;
  const start = h('input', {type: 'number', id: 'clock-minute', 'data-fid': 'clock-minute', min: 0, max: plan.minutes || 45,
    value: presenter.clockMinute || 0, 'aria-label': 'start the clock at this minute',
    oninput: (event) => { presenter.clockMinute = Number(event.target.value) || 0; }});
  return [
    h('div', {class: 'clock-line'},
      h('span', {class: 'clock mono', id: 'clock'}, clock.running ? clockText(clock.elapsed_s) : '–:––'),
      h('span', {class: 'hint'}, clock.running ? `of ${plan.minutes} minutes` : 'the clock is stopped'),
      row ? h('strong', {id: 'clock-row'}, `${row.from_minute}–${row.to_minute}: ${row.title || row.what}`) : null),
    h('div', {class: 'row'},
      h('button', {class: 'primary', id: 'clock-start', 'data-fid': 'clock-start', onclick: () => setClock(Number(start.value) || 0)},
        clock.running ? 'Set the clock to minute' : 'Start the clock at minute'), start,
      clock.running ? h('button', {id: 'clock-stop', 'data-fid': 'clock-stop', onclick: () => setClock(null)}, 'Stop') : null),
  ];
}

function notesPanel(plan) {
  const chapter = presenter.noteChapter || plan.clock.chapter || (plan.notes[0] && plan.notes[0].chapter);
  const notes = plan.notes.find((candidate) => candidate.chapter === chapter);
  return [
    h('h2', {}, 'Chapter notes', h('span', {class: 'hint'}, 'what to say and what to ask the room')),
    h('div', {class: 'row'}, plan.notes.map((candidate) => h('button', {'data-fid': `notes-${candidate.chapter}`,
      class: candidate.chapter === chapter ? 'chosen' : '',
      onclick: () => { presenter.noteChapter = candidate.chapter; renderPlan(); }}, `${candidate.chapter}`))),
    notes ? h('div', {class: 'notes', id: 'notes'},
      h('h3', {}, `Chapter ${notes.chapter} · ${notes.chapter_title}`, notes.minutes ? h('span', {class: 'hint'}, ` · ${notes.minutes} min in the plan`) : null),
      h('p', {class: 'say'}, notes.say),
      notes.ask.length ? [h('h3', {}, 'Ask the room'), h('ol', {}, notes.ask.map((question) => h('li', {}, question)))] : null)
      : h('p', {class: 'hint'}, 'No notes for this chapter.'),
  ];
}

function planPanel(plan) {
  if (plan.problem) return [h('h2', {}, 'The plan'), h('p', {class: 'error'}, `${plan.source}: ${plan.problem}`)];
  return [
    h('h2', {}, 'The plan', h('span', {class: 'hint'}, plan.source)),
    h('div', {class: 'table-scroll plan-scroll', 'data-scroll': 'plan'}, h('table', {id: 'plan'},
      h('thead', {}, h('tr', {}, h('th', {}, 'minute'), h('th', {}, 'what happens'), h('th', {}, 'the room does'))),
      h('tbody', {}, plan.rows.map((row, index) => [row, index, row.planned.filter((level) => level.position && level.position !== level.number)])
        .map(([row, index, renamed]) => h('tr', {class: index === plan.clock.row ? 'now' : '', 'data-row': index},
        h('td', {class: 'mono'}, `${row.from_minute}–${row.to_minute}`),
        h('td', {}, row.title ? h('strong', {}, row.title) : null, row.title ? ' ' : null, row.what.slice(row.title.length).replace(/^[.\s]+/, ''),
          // A plan that names a level by its file's number (an older plan, or one of the
          // presenter's own) gets the place the room's pages show it at; the book's plan names
          // places already, and a note "2.1 is 2.1" would say nothing.
          renamed.length ? h('span', {class: 'hint plan-positions'}, ' — on the pages: ',
            renamed.map((level) => `${level.number} is ${level.position}`).join(', ')) : null),
        h('td', {}, row.room)))))),
  ];
}

function tick() {
  // Between looks at the server the clock runs on here; each look sets it right again.
  const plan = presenter.plan;
  if (presenter.view !== 'plan' || !plan || !plan.clock.running) return;
  plan.clock.elapsed_s += 1;
  const clock = $('clock');
  if (clock) clock.textContent = clockText(plan.clock.elapsed_s);
}

document.addEventListener('DOMContentLoaded', () => {
  render($('join-url'), 'Participants join at ', h('a', {class: 'big-url', id: 'participant-url', href: '/join', target: '_blank', rel: 'noopener'}, `${location.origin}/`));
  renderNav();
  refresh();
  setInterval(refresh, ROOM_POLL_MS);
  setInterval(tick, 1000);
});
