// Twice in a browser: the presenter's page. The room at a glance — who is on which level,
// who won what, a scoreboard by par — every level open or not, and the room's race.
// The presenter's secret comes from the URL's fragment (#secret=…), which browsers never
// send to the server; it goes out only as the Authorization header of these requests.
'use strict';

/** How often the room is looked at, in milliseconds. */
const ROOM_POLL_MS = 2000;
/** The tape a race opens on unless the presenter picks another: the answer was lost
 *  after billing applied the credit, and the run waits in awaiting_reconciliation. */
const PREFERRED_RACE = '04-pause.lost-answer';

const presenter = {
  secret: new URLSearchParams(location.hash.slice(1)).get('secret') || '',
  room: null,
  chosenTape: null,
};

const $ = (id) => document.getElementById(id);
const asPresenter = (method, path, body) => api(method, path, body, {Authorization: `Bearer ${presenter.secret}`});

async function refresh() {
  const answer = await asPresenter('GET', '/api/presenter/room');
  if (!answer.ok) {
    render($('room'), h('section', {class: 'panel'}, h('h1', {}, 'Not the presenter'),
      h('p', {class: 'error'}, problemText(answer)),
      h('p', {}, 'Open the presenter URL exactly as `twice-sim web` printed it (with #secret=…).')));
    return;
  }
  presenter.room = answer.data;
  renderRoom();
}

/** What each part of the page last showed: a part is redrawn only when it changed, so a
 *  list the presenter has open or a box being clicked is not swept away every two seconds. */
const drawn = {};

function draw(id, value, make) {
  const shown = JSON.stringify(value);
  if (drawn[id] === shown) return;
  drawn[id] = shown;
  render($(id), make());
}

function renderRoom() {
  const room = presenter.room;
  render($('join-url'), 'Participants join at ', h('span', {class: 'big-url', id: 'participant-url'}, `${location.origin}/`));
  if (!$('sessions-panel')) {
    for (const id of Object.keys(drawn)) delete drawn[id];
    render($('room'), h('div', {class: 'room'},
      h('div', {class: 'stack'},
        h('section', {class: 'panel', id: 'sessions-panel', 'aria-label': 'the room'}),
        h('section', {class: 'panel', 'aria-label': 'the race'}, h('h2', {}, 'The operator race'),
          h('div', {id: 'race-controls'}), h('div', {id: 'race-state'}))),
      h('div', {class: 'stack'}, h('section', {class: 'panel', id: 'scoreboard-panel', 'aria-label': 'the scoreboard'}))));
  }
  draw('sessions-panel', [room.sessions, room.sessions_max, room.unlock_all, room.path], () => sessionsPanel(room));
  draw('race-controls', [room.race_candidates, room.race.open, presenter.chosenTape], () => raceControls(room));
  draw('race-state', room.race, () => raceState(room.race));
  draw('scoreboard-panel', room.scoreboard, () => scoreboardPanel(room));
}

function sessionsPanel(room) {
  return [
    h('h2', {}, `The room: ${room.sessions.length} of ${room.sessions_max}`,
      h('span', {class: 'hint'}, `a participant quiet for ${counted(room.idle_minutes, 'minute', 'minutes')} gives up their place (the room file keeps them)`)),
    room.path.length ? h('p', {id: 'room-path'}, 'Open to everyone on the room\'s path: ',
      room.path.map((stem) => h('span', {class: 'chip'}, stem))) : null,
    h('div', {class: 'row'},
      h('label', {}, h('input', {type: 'checkbox', id: 'unlock-all', 'data-fid': 'unlock-all', checked: room.unlock_all ? true : undefined,
        onchange: async (event) => {
          const answer = await asPresenter('POST', '/api/presenter/unlock', {all: event.target.checked});
          notice(answer.ok ? (answer.data.unlock_all ? 'Every level is open to everyone.' : 'Levels open as their requirements are finished.') : problemText(answer), !answer.ok);
          refresh();
        }}), ' every level open to everyone')),
    room.sessions.length
      ? h('table', {id: 'sessions'},
        h('thead', {}, h('tr', {}, h('th', {}, 'name'), h('th', {}, 'on level'), h('th', {class: 'number'}, 'phase'),
          h('th', {class: 'number'}, 'finished'), h('th', {}, 'wins (cards · phases)'), h('th', {class: 'number'}, 'idle'))),
        h('tbody', {}, room.sessions.map((session) => h('tr', {},
          h('td', {}, h('strong', {}, session.name)),
          h('td', {}, session.level || h('span', {class: 'faint'}, 'choosing'), session.mode === 'sandbox' ? h('span', {class: 'badge sandbox'}, 'sandbox') : null),
          h('td', {class: 'number'}, session.phase === null ? '—' : session.phase),
          h('td', {class: 'number'}, session.finished),
          h('td', {}, session.wins.length ? session.wins.map((win) => h('span', {class: 'chip', title: win.level_title},
            `${win.level} ${win.win.outcome.glyph} ${win.win.cards}·${win.win.phases}`)) : h('span', {class: 'faint'}, '—')),
          h('td', {class: 'number'}, `${session.idle_seconds} s`)))))
      : h('p', {class: 'hint'}, 'Nobody has joined yet: show the room the address above.')];
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
  candidates.map((candidate) => h('option', {value: candidate.tape, selected: candidate.tape === presenter.chosenTape ? true : undefined},
    `${candidate.tape} — ${candidate.key} ${candidate.status.glyph} ${candidate.status.word}`)));
  const controls = h('div', {class: 'row'}, select,
    h('button', {class: 'primary', id: 'open-race', 'data-fid': 'open-race', disabled: !presenter.chosenTape, onclick: async () => {
      const answer = await asPresenter('POST', '/api/presenter/race', {tape: presenter.chosenTape});
      notice(answer.ok ? `Race #${answer.data.number} is open to the room: ${answer.data.key.key}` : problemText(answer), !answer.ok);
      refresh();
    }}, race.open ? 'Open a new race' : 'Open the race to the room'),
    race.open ? h('button', {id: 'close-race', 'data-fid': 'close-race', onclick: async () => {
      await asPresenter('DELETE', '/api/presenter/race');
      refresh();
    }}, 'Close it') : null);
  return controls;
}

function raceState(race) {
  return race.open ? [
    h('p', {}, `Race #${race.number}: `, keySpan(race.key), ` from ${race.tape} (${race.level_title}) — shown as `,
      lookSpan(race.opened_status), ', now ', lookSpan(race.status_now), '.'),
    h('p', {class: 'hint'}, `${race.amount} to ${race.account}; billing holds: `,
      race.billing.length ? race.billing.map((entry) => `${entry.id} ${entry.amount} (${entry.key_kept})`).join(', ') : 'nothing'),
    race.winner
      ? h('p', {id: 'race-winner', class: 'race-winner'}, '⚑ Won by ', h('strong', {}, race.winner.operator), ': ',
        lookSpan(race.winner.status), race.winner.reason ? h('span', {class: 'hint'}, ` “${race.winner.reason}”`) : null)
      : h('p', {}, h('strong', {}, 'Waiting for the first decision…')),
    h('p', {id: 'race-tries'}, `${counted(race.tries_total, 'resolve', 'resolves')}: ${race.tries.filter((attempt) => attempt.won).length} won, `,
      `${race.tries_total - race.tries.filter((attempt) => attempt.won).length} got 409 Conflict`),
    race.tries.length ? h('p', {}, race.tries.map((attempt) => h('span', {class: `chip ${attempt.won ? '' : 'on'}`},
      `${attempt.won ? '⚑' : '409'} ${attempt.name} ${attempt.status.glyph}`))) : null,
    race.after ? [h('h3', {}, 'What the decision did to the money'), h('p', {class: 'summary'}, lookSpan(race.after.outcome), ` — ${race.after.summary}`),
      creditsTable(race.after)] : null,
  ] : [h('p', {class: 'hint'}, 'Pick a paused call and open it to the room: every participant may resolve it from their browser; ',
    'the ledger keeps exactly one decision and everyone else sees 409 and who won.')];
}

function scoreboardPanel(room) {
  return [
    h('h2', {}, 'Scoreboard', h('span', {class: 'hint'}, 'fewest cards, then fewest phases')),
    room.scoreboard.length ? room.scoreboard.map((board) => h('div', {class: 'board'},
      h('h3', {}, board.level_title, h('span', {class: 'hint'}, ` · ${board.level} · par `,
        board.par ? `${counted(board.par.cards, 'card', 'cards')}, ${counted(board.par.phases, 'phase', 'phases')}` : 'not set yet')),
      h('table', {}, h('thead', {}, h('tr', {}, h('th', {class: 'number'}, '#'), h('th', {}, 'name'), h('th', {class: 'number'}, 'cards'),
        h('th', {class: 'number'}, 'phases'), h('th', {}, 'over par'), h('th', {}, 'outcome'))),
      h('tbody', {}, board.scores.map((score) => h('tr', {},
        h('td', {class: 'number'}, score.rank), h('td', {}, score.name), h('td', {class: 'number'}, score.cards),
        h('td', {class: 'number'}, score.phases),
        h('td', {}, score.over_par ? (score.over_par.cards || score.over_par.phases ? `+${score.over_par.cards} · +${score.over_par.phases}` : 'at par') : '—'),
        h('td', {}, lookSpan(score.outcome)))))))) : h('p', {class: 'hint'}, 'Nobody has finished a level yet.')];
}

document.addEventListener('DOMContentLoaded', () => {
  refresh();
  setInterval(refresh, ROOM_POLL_MS);
});
