// Twice in a browser: the room's race on a participant's page (and on the presenter's stage).
// The page waits on the server (`GET /api/race?seen=N` answers when the race changed), so a new
// race reaches every page at once and the buttons of an old one never linger. Open and
// undecided, the race is a panel with the buttons; decided, it folds to one line (details on
// demand) that the participant may hide until the next race.
'use strict';

/** How long to wait before asking again after the server could not be reached. */
const RACE_RETRY_MS = 3000;

const race = {
  view: null,
  reason: '',
  result: null,
  /** The race number whose decided line the participant hid. */
  hidden: Number(sessionStorage.getItem('twice.race.hidden') || 0),
  details: false,
  drawn: '',
  waiting: false,
  /** Bumped when the page leaves the room: a wait in flight then stops. */
  generation: 0,
};

/** Starts (once) the loop that follows the room's race. */
function followRace() {
  if (race.waiting) return;
  race.waiting = true;
  const generation = race.generation;
  (async () => {
    while (state.me && generation === race.generation) {
      const seen = race.view ? `?seen=${race.view.version}` : '';
      const answer = await api('GET', `/api/race${seen}`);
      if (generation !== race.generation) break;
      if (!answer.ok) {
        if (lost(answer)) break;
        await new Promise((resolve) => setTimeout(resolve, RACE_RETRY_MS));
        continue;
      }
      showRace(answer.data);
    }
    race.waiting = false;
  })();
}

/** The page left the room: no race, and the loop stops. */
function forgetRace() {
  race.generation += 1;
  race.view = null;
  race.result = null;
  renderRace();
}

function showRace(view) {
  if (race.view && view.number !== race.view.number) {
    race.result = null;
    race.details = false;
  }
  race.view = view;
  renderRace();
}

async function resolveRace(status) {
  const view = race.view;
  if (!view || !view.can_resolve) return;
  const answer = await api('POST', '/api/race/resolve', {race: view.number, status, reason: race.reason});
  if (answer.ok) {
    race.result = {won: true, text: `You won the race: your decision (${status}) is the one the ledger kept.`};
    showRace(answer.data);
    return;
  }
  if (answer.status === 409 && answer.data && answer.data.winner) {
    const winner = answer.data.winner;
    race.result = {won: false, text: `409 Conflict — ${winner.operator} decided first: ${winner.status.glyph} ${winner.status.word}${winner.reason ? ` — “${winner.reason}”` : ''}`};
  } else if (answer.data && answer.data.code === 'race_changed') {
    race.result = {won: false, text: 'That race is over: a new one is open (shown now).'};
    race.view = null; // the next answer, without `seen`, is the new race
  } else {
    race.result = {won: false, text: problemText(answer)};
  }
  renderRace();
}

function hideDecided() {
  race.hidden = race.view.number;
  sessionStorage.setItem('twice.race.hidden', String(race.hidden));
  renderRace();
}

/** What the winning decision did, as the world's debrief says it. */
function raceAfter(after) {
  return h('div', {class: 'race-after', id: 'race-after'},
    h('p', {}, h('strong', {}, 'What the decision did to the money: '), lookSpan(after.outcome)),
    after.diagnosis.length ? h('ul', {}, after.diagnosis.map((sentence) => h('li', {}, sentence))) : null,
    creditsTable(after));
}

function renderRace() {
  const view = race.view;
  const section = $('race');
  if (!view || !view.open || !state.me) {
    section.hidden = true;
    race.drawn = '';
    return;
  }
  const decided = Boolean(view.winner);
  if (decided && race.hidden === view.number) {
    section.hidden = true;
    race.drawn = '';
    return;
  }
  section.hidden = false;
  section.classList.toggle('decided', decided);
  // Redraw only what changed: a reason being typed keeps its field.
  const drawn = JSON.stringify([view, race.result, race.details, decided]);
  if (drawn === race.drawn) return;
  race.drawn = drawn;
  if (decided) {
    render(section,
      h('div', {class: 'race-line'},
        h('strong', {}, `⚑ Race #${view.number} decided by ${view.winner.operator}: `), lookSpan(view.winner.status),
        view.after ? [' → ', lookSpan(view.after.outcome)] : null,
        race.result ? h('span', {id: 'race-result', class: race.result.won ? 'tone-good' : 'tone-warn'}, ` ${race.result.text}`) : null,
        h('button', {'data-fid': 'race-details', 'aria-expanded': race.details ? 'true' : 'false',
          onclick: () => { race.details = !race.details; renderRace(); }}, race.details ? 'Less' : 'What it did'),
        h('button', {'data-fid': 'race-hide', id: 'race-hide', onclick: hideDecided}, 'Hide')),
      race.details ? [
        view.winner.reason ? h('p', {class: 'hint', id: 'race-winner'}, `${view.winner.operator}'s reason: “${view.winner.reason}”`) : null,
        view.after ? raceAfter(view.after) : null] : null);
    return;
  }
  const reason = h('input', {type: 'text', id: 'race-reason', 'data-fid': 'race-reason', maxlength: 2000, value: race.reason,
    placeholder: 'your reason (required): what did you find?', 'aria-label': 'your reason',
    oninput: (event) => { race.reason = event.target.value; }});
  render(section,
    h('h2', {}, `The room's race #${view.number}: settle `, keySpan(view.key)),
    h('p', {}, `${view.level_title} — ${view.title}. Penny's run is paused on this call, shown to the room as `,
      lookSpan(view.opened_status), `: ${view.amount} to ${view.account} (“${view.memo}”). Now it is `, lookSpan(view.status_now), '.'),
    h('p', {class: 'hint'}, `Billing holds for ${view.account}: `,
      view.billing.length ? view.billing.map((entry) => `${entry.id} ${entry.amount} (${entry.key_kept})`).join(', ') : 'nothing'),
    view.can_resolve ? [
      h('p', {}, 'Every participant may resolve it; the ledger keeps exactly one decision (compare-and-set). Your name is your operator id.'),
      h('div', {class: 'row'}, reason,
        h('button', {id: 'race-completed', 'data-fid': 'race-completed', onclick: () => resolveRace('completed')}, '✔ It took effect (completed)'),
        h('button', {id: 'race-failed', 'data-fid': 'race-failed', onclick: () => resolveRace('failed')}, '✘ It did not (failed)'))]
      : decided ? null : h('p', {class: 'hint'}, 'The room is deciding: the first resolve the ledger takes wins.'),
    race.result ? h('p', {id: 'race-result', class: race.result.won ? 'tone-good' : 'tone-warn'}, h('strong', {}, race.result.text)) : null,
    view.winner ? h('p', {id: 'race-winner'}, 'Decided by ', h('strong', {}, view.winner.operator), ': ', lookSpan(view.winner.status),
      view.winner.reason ? ` — “${view.winner.reason}”` : '') : null,
    view.after ? raceAfter(view.after) : null);
}
