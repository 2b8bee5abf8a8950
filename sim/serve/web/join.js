// Twice in a browser: the join page for the projector. The server says the room's address
// (the one this page was opened at, or --join-url) and draws its QR code (/join.svg).
'use strict';

document.addEventListener('DOMContentLoaded', async () => {
  const answer = await api('GET', '/api/join-card');
  const url = document.getElementById('join-url');
  if (!answer.ok) {
    url.textContent = problemText(answer);
    return;
  }
  url.textContent = answer.data.url;
  const advice = document.getElementById('join-advice');
  if (answer.data.advice) {
    advice.textContent = `⚠ ${answer.data.advice}`;
    advice.hidden = false;
  }
});
