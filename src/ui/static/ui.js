// mnemolog dashboard: progressive touches only; every page works without this file.
"use strict";
document.addEventListener("DOMContentLoaded", () => {
  // A filter (a select, the as-of slider) submits its form when it changes.
  for (const input of document.querySelectorAll("[data-autosubmit]")) {
    input.addEventListener("change", () => input.form.requestSubmit());
  }
});

// Back to a page kept whole by the browser: a filter form shows the page's own URL (the
// values it was rendered with), never the values chosen before leaving it.
window.addEventListener("pageshow", (event) => {
  if (!event.persisted) return;
  for (const form of document.querySelectorAll('form[method="get"]')) form.reset();
});

// The activity feed: follow /events (server-sent events) and put each new record on top.
// EventSource reconnects by itself, sending the last id it saw, so the feed resumes where it
// stopped; the page never shows more than FEED_MAX rows.
const FEED_MAX = 500;
document.addEventListener("DOMContentLoaded", () => {
  const table = document.querySelector("table[data-live]");
  if (!table) return;
  const body = table.tBodies[0];
  const state = document.getElementById("feed-state");
  const url = `${table.dataset.live}?since=${encodeURIComponent(table.dataset.since)}`;
  const source = new EventSource(url);
  const show = (text, name) => { state.textContent = text; state.dataset.state = name; };
  source.addEventListener("open", () => show("Live: new records appear at the top.", "live"));
  source.addEventListener("error", () => show("Connection lost: reconnecting…", "reconnecting"));
  // As the server renders each id: a memory's and a trace's link to their pages.
  const PAGES = { memoryId: "/ui/memories/", recallId: "/ui/traces/", traceId: "/ui/traces/",
    turnId: "/ui/traces/" };
  const idsCell = (ids) => {
    const cell = document.createElement("td");
    cell.className = "ids";
    for (const [name, value] of Object.entries(ids)) {
      const span = document.createElement("span");
      span.className = "id";
      span.append(`${name}: `);
      if (PAGES[name] && typeof value === "string") {
        const link = document.createElement("a");
        link.href = PAGES[name] + encodeURIComponent(value);
        link.textContent = value;
        span.append(link);
      } else {
        span.append(Array.isArray(value) ? value.join(", ") : String(value));
      }
      cell.append(span, " ");
    }
    return cell;
  };
  // One way for every instant on the dashboard: "2026-07-03 12:00:05 UTC".
  const when = (iso) => `${iso.slice(0, 10)} ${iso.slice(11, 19)} UTC`;
  const add = (message) => {
    const record = JSON.parse(message.data);
    const row = document.createElement("tr");
    row.dataset.seq = String(record.seq);
    const cells = [String(record.seq), when(record.time), record.kind,
      `${record.actor.agentId} via ${record.actor.protocol}`];
    cells.forEach((text, i) => {
      const cell = document.createElement("td");
      cell.textContent = text;  // text only: nothing from the stream is parsed as HTML
      if (i === 2) cell.className = "kind";
      row.appendChild(cell);
    });
    row.appendChild(idsCell(record.ids));
    const empty = body.querySelector("tr.empty-row");
    if (empty) empty.remove();
    body.insertBefore(row, body.firstChild);
    while (body.rows.length > FEED_MAX) body.deleteRow(body.rows.length - 1);
  };
  for (const kind of table.dataset.kinds.split(" ")) source.addEventListener(kind, add);
});
