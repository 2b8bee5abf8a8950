// Twice in a browser: what both pages share. No framework and no build step: elements are
// made with `h`, and every text goes in as a text node, never as HTML, so a name or a
// reason another participant typed can only ever be shown.
'use strict';

/** Makes an element: `h('button', {class: 'primary', onclick: f}, 'Step', ...)`. */
function h(tag, attributes, ...children) {
  const element = document.createElement(tag);
  for (const [name, value] of Object.entries(attributes || {})) {
    if (value === undefined || value === null || value === false) continue;
    if (name.startsWith('on') && typeof value === 'function') {
      element.addEventListener(name.slice(2), value);
    } else if (name === 'dataset') {
      Object.assign(element.dataset, value);
    } else if (name === 'style') {
      // Through the CSSOM: the page's CSP refuses style attributes, not this.
      Object.assign(element.style, value);
    } else if (value === true) {
      element.setAttribute(name, '');
    } else {
      element.setAttribute(name, String(value));
    }
  }
  append(element, children);
  return element;
}

function append(element, children) {
  for (const child of children.flat(Infinity)) {
    if (child === undefined || child === null || child === false) continue;
    element.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return element;
}

/** A status of any kind: its glyph and its word, coloured by its tone. */
function lookSpan(look, extra) {
  if (!look) return null;
  return h('span', {class: `look tone-${look.tone}`, title: look.says},
    h('span', {class: 'glyph', 'aria-hidden': 'true'}, look.glyph), ' ', look.word, extra ? ` ${extra}` : '');
}

/** An idempotency key: its glyph and its name, in the key's colour. */
function keySpan(look, text) {
  if (!look) return h('span', {class: 'faint'}, '—');
  return h('span', {class: 'key', style: {color: look.colour}, title: `key ${look.key}`},
    h('span', {class: 'glyph', 'aria-hidden': 'true'}, look.glyph), text === undefined ? look.key : text);
}

/** A JSON request. Answers `{ok, status, data}`; an error's `data` is `{error, code, ...}`. */
async function api(method, path, body, headers) {
  const options = {method, headers: Object.assign({}, headers || {}), credentials: 'same-origin'};
  if (body !== undefined) {
    options.headers['Content-Type'] = 'application/json';
    options.body = JSON.stringify(body);
  }
  let response;
  try {
    response = await fetch(path, options);
  } catch (error) {
    return {ok: false, status: 0, data: {error: `the server cannot be reached (${error.message})`, code: 'unreachable'}};
  }
  let data = null;
  const text = await response.text();
  if (text) {
    try { data = JSON.parse(text); } catch (_) { data = {error: text.slice(0, 200), code: 'not_json'}; }
  }
  return {ok: response.ok, status: response.status, data};
}

let noticeTimer = null;
/** A line for a few seconds at the bottom: what a move did, or why it was refused. */
function notice(text, problem) {
  const element = document.getElementById('notice');
  if (!element) return;
  element.textContent = text;
  element.classList.toggle('problem', Boolean(problem));
  clearTimeout(noticeTimer);
  noticeTimer = setTimeout(() => { element.textContent = ''; }, problem ? 8000 : 4000);
}

/** An error answer in words, with its status and code. */
function problemText(answer) {
  const data = answer.data || {};
  return `${data.error || 'the request failed'} (${answer.status || 'no answer'}${data.code ? ` ${data.code}` : ''})`;
}

/**
 * Replaces `container`'s children with `children`, keeping keyboard focus on the element
 * with the same `data-fid` (a re-render must not throw a keyboard user back to the top)
 * and the scroll position of elements that carry a `data-scroll` name.
 */
function render(container, ...children) {
  const active = document.activeElement;
  const focused = active && container.contains(active) && active.dataset ? active.dataset.fid : null;
  // Where the caret was in a text field being typed in, to put it back there.
  const caret = focused && typeof active.selectionStart === 'number' ? [active.selectionStart, active.selectionEnd] : null;
  const scrolls = {};
  container.querySelectorAll('[data-scroll]').forEach((element) => {
    scrolls[element.dataset.scroll] = {
      top: element.scrollTop,
      atBottom: element.scrollTop + element.clientHeight >= element.scrollHeight - 4,
    };
  });
  container.replaceChildren();
  append(container, children);
  container.querySelectorAll('[data-scroll]').forEach((element) => {
    const saved = scrolls[element.dataset.scroll];
    if (!saved || saved.atBottom) {
      if (element.dataset.stick === 'bottom') element.scrollTop = element.scrollHeight;
    } else {
      element.scrollTop = saved.top;
    }
  });
  if (focused) {
    const again = container.querySelector(`[data-fid="${CSS.escape(focused)}"]`);
    if (again) {
      again.focus({preventScroll: true});
      if (caret && typeof again.setSelectionRange === 'function') again.setSelectionRange(caret[0], caret[1]);
    }
  }
}

/** A count with its noun, singular for one: `1 card`, `2 cards`, `0 cards`. */
function counted(count, one, many) {
  return `${count} ${count === 1 ? one : many}`;
}

/** `$25.00` from cents. */
function dollars(cents) {
  const sign = cents < 0 ? '-' : '';
  const absolute = Math.abs(cents);
  return `${sign}$${Math.floor(absolute / 100)}.${String(absolute % 100).padStart(2, '0')}`;
}

/** A verdict's credits as a table: each credit in words (its memo, its place in Penny's
 *  script counted from one), whose money it is, and what landed. */
function creditsTable(verdict) {
  // Each cell carries its column's name: a phone (app.css) lays a credit out as a card of
  // labelled lines, the outcome first, instead of a table scrolled sideways.
  const cell = (label, attributes, ...children) => h('td', {...attributes, 'data-label': label}, ...children);
  return h('div', {class: 'table-scroll'}, h('table', {class: 'credits'},
    h('thead', {}, h('tr', {}, h('th', {}, 'credit'), h('th', {}, 'to'), h('th', {class: 'number'}, 'owed'),
      h('th', {class: 'number'}, 'credits applied'), h('th', {class: 'number'}, 'net'), h('th', {}, 'keys'), h('th', {}, 'outcome'))),
    h('tbody', {}, verdict.credits.map((credit) => h('tr', {},
      cell('credit', {}, credit.label), cell('to', {title: credit.account}, credit.owner),
      cell('owed', {class: 'number'}, credit.owed), cell('credits applied', {class: 'number'}, credit.credits_applied),
      cell('net', {class: 'number'}, credit.net),
      cell('keys', {}, credit.keys.length ? credit.keys.map((key) => [keySpan(key), ' ']) : '—'),
      cell('outcome', {class: 'outcome'}, lookSpan(credit.outcome)))))));
}
