// The script of every page this tool writes (report.html, ab.html, results.html), carried in the page and pinned
// by its sha256 in the page's Content-Security-Policy: no inline handler, nothing from elsewhere. Elements ask for
// what they do by their attributes: a table header sorts its table, a row with data-attention draws that
// sentence's attention maps (#attention's data-first when the page opens), #only-errors and #only-flag filter the
// sentences table, a cell's data-shade is its blue, and audio[data-audio] plays the FLAC the page carries under
// that key.

function sortBy(th) {
  const table = th.closest('table'), column = [...th.parentNode.children].indexOf(th);
  const body = table.tBodies[0], rows = [...body.rows], ascending = th.dataset.asc !== '1';
  th.dataset.asc = ascending ? '1' : '0';
  rows.sort((x, y) => {
    const a = x.cells[column].dataset.v ?? x.cells[column].innerText;
    const b = y.cells[column].dataset.v ?? y.cells[column].innerText;
    const na = parseFloat(a), nb = parseFloat(b);
    const order = (!isNaN(na) && !isNaN(nb)) ? na - nb : a.localeCompare(b);
    return ascending ? order : -order;
  });
  rows.forEach(r => body.appendChild(r));
}

function drawAttention(id) {
  const all = JSON.parse(document.getElementById('attention-data').textContent), d = all[id];
  if (!d) return;
  const box = document.getElementById('attention'), tokens = d.tokens, n = tokens.length;
  const cell = Math.max(4, Math.min(14, Math.floor(150 / n)));
  const pad = 8 + 6 * Math.max(...tokens.map(x => x.length)), size = pad + n * cell;
  document.getElementById('attention-title').textContent = id + ': ' + tokens.join(' ');
  box.innerHTML = '';
  d.w.forEach((layer, l) => {
    const row = document.createElement('div');
    row.className = 'heads';
    [...layer, null].forEach((head, h) => {
      const weights = head || layer[0].map((r, i) => r.map((_, j) =>
        layer.reduce((s, x) => s + x[i][j], 0) / layer.length));
      const figure = document.createElement('figure'), canvas = document.createElement('canvas');
      canvas.width = size;
      canvas.height = size;
      const g = canvas.getContext('2d');
      g.font = '10px monospace';
      for (let i = 0; i < n; i++) for (let j = 0; j < n; j++) {
        const x = pad + j * cell, y = pad + i * cell;
        if (j > i) {
          g.fillStyle = '#eee';
          g.fillRect(x, y, cell, cell);
          g.strokeStyle = '#ccc';
          g.beginPath();
          g.moveTo(x, y + cell);
          g.lineTo(x + cell, y);
          g.stroke();
        } else {
          const v = Math.sqrt(weights[i][j]);
          g.fillStyle = `rgb(${255 - 200 * v},${255 - 150 * v},255)`;
          g.fillRect(x, y, cell, cell);
        }
      }
      g.fillStyle = '#222';
      g.textAlign = 'right';
      g.textBaseline = 'middle';
      tokens.forEach((s, i) => {
        g.fillText(s, pad - 3, pad + i * cell + cell / 2);
        g.save();
        g.translate(pad + i * cell + cell / 2, pad - 3);
        g.rotate(-Math.PI / 2);
        g.textAlign = 'left';
        g.fillText(s, 0, 0);
        g.restore();
      });
      const caption = document.createElement('figcaption');
      caption.textContent = head ? `layer ${l + 1}, head ${h + 1}` : `layer ${l + 1}, mean over heads`;
      figure.append(canvas, caption);
      row.append(figure);
    });
    box.append(row);
  });
}

function playAudio() {
  const el = document.getElementById('audio-data');
  if (!el) return;
  const all = JSON.parse(el.textContent);
  document.querySelectorAll('audio[data-audio]').forEach(a => { a.src = 'data:audio/flac;base64,' + all[a.dataset.audio]; });
}

function filterRows() {
  const errors = document.getElementById('only-errors').checked, flag = document.getElementById('only-flag').value;
  document.querySelectorAll('#utts tbody tr').forEach(r => {
    const hide = (errors && r.dataset.errors === '0') || (flag === 'any' && !r.dataset.flags) ||
      (flag && flag !== 'any' && !r.dataset.flags.split(';').includes(flag));
    r.style.display = hide ? 'none' : '';
  });
}

document.addEventListener('click', e => {
  const th = e.target.closest('th');
  if (th && th.closest('thead')) return sortBy(th);
  const row = e.target.closest('tr[data-attention]');
  if (row) drawAttention(row.dataset.sentence);
});
document.addEventListener('change', e => {
  if (e.target.id === 'only-errors' || e.target.id === 'only-flag') filterRows();
});
document.querySelectorAll('td[data-shade]').forEach(td => {
  const s = td.dataset.shade;
  td.style.background = `rgb(${s},${s},255)`;
});
const first = document.getElementById('attention');
if (first && first.dataset.first) drawAttention(first.dataset.first);
playAudio();
