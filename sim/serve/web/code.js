// Twice in a browser: the code panel. The runtime's loop as this level runs it, a cursor per
// worker on its line, Penny's tools as declared, and what the model and billing last did; in
// the debrief, the fix as a diff. The server sends every line, cursor and word
// (twice_world::code, the game draws the same); this file only lays them out.
'use strict';

/** One worker's cursor: its glyph and name in its colour, struck when it crashed. */
function cursorTag(cursor) {
  return h('span', {class: `cursor ${cursor.state}`, style: {color: cursor.colour}, 'data-worker': cursor.worker,
    title: `${cursor.label} ${cursor.state === 'live' ? '' : `(${cursor.state}) `}${cursor.moment}`}, cursor.tag);
}

/** A guard's mark: ✔ its own line, ✖ the naive line it replaces; the guard's name on hover. */
function markSpan(mark) {
  if (!mark) return h('span', {class: 'mark', 'aria-hidden': 'true'}, ' ');
  return h('span', {class: `mark ${mark.on ? 'on' : 'off'}`, title: `${mark.guard}${mark.on ? '' : ' off'}`}, mark.glyph);
}

/** One line of the loop. `options.aim` opens a line's aim choices; `options.highlight` lights lines. */
function codeLine(line, code, options) {
  const lit = line.cursors.some((cursor) => cursor.state === 'live');
  const aimable = Boolean(options.aim) && code.can_aim && line.aimable;
  const highlighted = options.highlight && options.highlight.includes(line.number);
  const classes = ['code-line', lit ? 'lit' : '', line.mark ? (line.mark.on ? 'guard-on' : 'guard-off') : '',
    aimable ? 'aimable' : '', highlighted ? 'highlighted' : ''].filter(Boolean).join(' ');
  const title = [line.hover, ...line.cursors.map((cursor) => `${cursor.label}: ${cursor.moment}`),
    aimable ? 'click: kill a worker when it reaches this line' : null].filter(Boolean).join('\n');
  const open = () => options.aim.open(line.number);
  const row = h('li', {class: classes, 'data-fid': `code-line-${line.number}`, title: title || undefined,
    role: aimable ? 'button' : undefined, tabindex: aimable ? 0 : undefined,
    'aria-label': aimable ? `line ${line.number}: aim a crash here` : undefined,
    onclick: aimable ? open : undefined,
    onkeydown: aimable ? (event) => { if (event.key === 'Enter') { event.preventDefault(); event.stopPropagation(); open(); } } : undefined},
  h('span', {class: 'gutter'}, line.cursors.map(cursorTag),
    line.aims.map((worker) => h('span', {class: 'aimed', title: `a crash of w${worker} waits for this line`}, `☠ w${worker}`))),
  h('span', {class: 'number'}, line.number),
  markSpan(line.mark),
  h('code', {class: line.text.trimStart().startsWith('#') ? 'comment' : ''}, line.text));
  if (!aimable || options.aim.line !== line.number) return row;
  const choices = h('li', {class: 'aim-choices', role: 'group', 'aria-label': `aim a crash at line ${line.number}`},
    code.workers.length ? code.workers.map((worker) => h('button', {'data-fid': `aim-w${worker.worker}-${line.number}`,
      style: {borderColor: worker.colour}, onclick: () => options.aim.choose(worker.worker, line.number)},
    line.aims.includes(worker.worker) ? `take back: kill ${worker.label} at line ${line.number}`
      : `kill ${worker.label} when it reaches line ${line.number}`))
      : h('span', {class: 'hint'}, 'no worker is running'),
    h('button', {'data-fid': 'aim-cancel', onclick: options.aim.cancel}, 'Cancel'));
  return [row, choices];
}

/** What shows beside the code: the model's last decision, billing's last move, an operator's. */
function besideCode(beside) {
  const said = (who, tone, words) => h('div', {class: 'said'},
    h('strong', {class: `tone-${tone}`}, who),
    words ? h('p', {}, words.text, h('span', {class: 'hint'}, ` (phase ${words.phase})`)) : h('p', {class: 'hint'}, 'nothing yet'));
  return h('div', {class: 'beside'},
    said('The model decided', 'runtime', beside.model),
    said('Billing did', 'good', beside.billing),
    beside.operator ? said('An operator decided', 'violet', beside.operator) : null);
}

/** Penny's tools as the level declares them, billing's behaviour as comments above. */
function toolCode(tools) {
  return h('pre', {class: 'tool-code', 'aria-label': "Penny's tools, as declared"},
    tools.map((line) => h('span', {class: line.comment ? 'comment' : ''}, `${line.text}\n`)));
}

/**
 * The code panel. `options.aim`: `{line, open(line), choose(worker, line), cancel()}` to aim a
 * crash by clicking a line (the level screen); `options.large`: the presenter's larger copy.
 */
function codePanel(code, options) {
  const opts = options || {};
  return h('section', {class: `panel code ${opts.large ? 'large' : ''}`, 'aria-label': "Penny's runtime, as code", id: 'code'},
    h('h2', {}, "Penny's runtime, as code",
      h('span', {class: 'hint'}, code.can_aim && opts.aim
        ? ' a cursor per worker · click a line to kill a worker when it gets there'
        : ' a cursor per worker · ✔ a guard\'s line, ✖ the naive line it replaces')),
    h('p', {class: 'hint about'}, code.about),
    h('div', {class: 'code-columns'},
      h('ol', {class: 'code-lines', 'aria-label': 'the loop'}, code.lines.map((line) => codeLine(line, code, opts))),
      h('div', {class: 'code-side'}, besideCode(code.beside), h('h3', {}, "Penny's tools, as declared"), toolCode(code.tools))));
}

/** The fix as a diff (the debrief): this run's lines struck, the other run's added. */
function fixDiff(fix) {
  if (!fix || !fix.lines.length) return null;
  return h('div', {class: 'fix'},
    h('p', {class: 'hint'}, fix.caption),
    h('ol', {class: 'code-lines diff'}, fix.lines.map((line) => line.gap
      ? h('li', {class: 'gap hint'}, `… ${line.gap} unchanged line${line.gap === 1 ? '' : 's'}`)
      : h('li', {class: `code-line ${line.change}`, title: line.hover || undefined},
        h('span', {class: 'sign', 'aria-label': line.change}, line.sign),
        markSpan(line.mark),
        h('code', {}, line.text)))));
}

/** The debrief's code: the lines of the guards that decided, lit, then the fix as a diff. */
function debriefCode(code) {
  if (!code) return null;
  const lines = code.decided.map((line) => line.number);
  return h('section', {class: 'panel stack code', id: 'decided-code', 'aria-label': 'the code that decided'},
    h('h2', {}, code.decided.length === 1 ? 'The line that decided' : 'The lines that decided',
      h('span', {class: 'hint'}, ' numbered as the level screen shows the loop')),
    h('ol', {class: 'code-lines'}, code.decided.map((line) => codeLine(line, {can_aim: false, workers: []}, {highlight: lines}))),
    fixDiff(code.fix));
}

/** A draft of a tool's declaration, as the code it would be (the declaration panel). */
function draftCode(lines, fid) {
  return h('pre', {class: 'tool-code draft', 'data-fid': fid, 'aria-label': 'the draft, as code'}, lines.map((line) => `${line}\n`));
}
